// Fuzzes the SSTable read path. The input is used four ways:
//   1. as a whole table file (opened from a MemFileSystem, read on demand and in memory, then
//      iterated both ways and probed with seeks);
//   2. as a raw decoded block;
//   3. as stored block contents given a valid trailer, so that corrupt compressed data reaches
//      the decompressors (checksums would stop nearly all fuzzed bytes before that);
//   4. as entries and options for a table that is built, read back and compared with a
//      std::map, then damaged at one bit and read again: every entry returned must still be
//      the model's, and a failure must be DataLoss (a violation traps).
// Nothing may crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/storage/block.h"
#include "tessera/storage/block_cache.h"
#include "tessera/storage/format.h"
#include "tessera/storage/table.h"
#include "tessera/storage/table_builder.h"
#include "tessera/util/mem_file_system.h"

namespace {

using tessera::storage::Block;
using tessera::storage::BlockCache;
using tessera::storage::BlockContents;
using tessera::storage::BytewiseComparator;
using tessera::storage::CompressionType;
using tessera::storage::FilterKeyExtractor;
using tessera::storage::Iterator;
using tessera::storage::Table;
using tessera::storage::TableBuilder;
using tessera::storage::TableOptions;
using tessera::storage::TableReadOptions;

// Limits the work per input.
constexpr int kMaxSteps = 20000;

class PrefixExtractor final : public FilterKeyExtractor {
 public:
  std::string_view FilterKey(std::string_view key) const override {
    return key.substr(0, key.find('/'));
  }
  const char* Name() const override { return "fuzz.prefix"; }
};

void Exercise(Iterator* it, std::string_view input) {
  int steps = 0;
  for (it->SeekToFirst(); it->Valid() && steps < kMaxSteps; it->Next(), ++steps) {
    (void)it->key().size();
    (void)it->value().size();
  }
  steps = 0;
  for (it->SeekToLast(); it->Valid() && steps < kMaxSteps; it->Prev(), ++steps) {
    (void)it->key().size();
  }
  const std::string_view targets[] = {
      "", "a", "m", "row/col", "\xff\xff", input.substr(0, 8), input.substr(input.size() / 2, 5)};
  for (std::string_view target : targets) {
    it->Seek(target);
    for (int i = 0; i < 3 && it->Valid(); ++i) it->Next();
    it->Seek(target);
    for (int i = 0; i < 3 && it->Valid(); ++i) it->Prev();
  }
  (void)it->status();
}

std::unique_ptr<char[]> Copy(std::string_view bytes) {
  auto copy = std::unique_ptr<char[]>(new char[bytes.size() + 1]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  return copy;
}

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

// Every entry returned, forward and backward, must be the model's; errors must be DataLoss.
void CheckAgainstModel(const Table& table, const std::map<std::string, std::string>& model) {
  auto it = table.NewIterator(TableReadOptions());
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    Check(m != model.end() && it->key() == m->first && it->value() == m->second);
  }
  Check(it->status().ok() ? m == model.end() : absl::IsDataLoss(it->status()));
  auto r = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
    Check(r != model.rend() && it->key() == r->first && it->value() == r->second);
  }
  Check(it->status().ok() ? r == model.rend() : absl::IsDataLoss(it->status()));
  for (const auto& [k, v] : model) {
    auto seek = table.NewIterator(TableReadOptions());
    seek->Seek(k);
    Check(seek->Valid() ? seek->key() == k && seek->value() == v
                        : absl::IsDataLoss(seek->status()));
  }
}

void RoundTrip(std::string_view input, const FilterKeyExtractor* extractor) {
  if (input.size() < 4) return;
  const uint8_t flags = static_cast<uint8_t>(input[0]);
  const uint16_t damage_at =
      static_cast<uint8_t>(input[1]) | (static_cast<uint16_t>(static_cast<uint8_t>(input[2])) << 8);
  const int damage_bit = static_cast<uint8_t>(input[3]) % 8;
  std::string_view rest = input.substr(4);
  // entry := key_len:uint8 key value_len:uint8 value
  std::map<std::string, std::string> model;
  while (rest.size() >= 2) {
    const size_t key_len = std::min<size_t>(static_cast<uint8_t>(rest[0]), rest.size() - 1);
    std::string key(rest.substr(1, key_len));
    rest.remove_prefix(1 + key_len);
    if (rest.empty()) break;
    const size_t value_len = std::min<size_t>(static_cast<uint8_t>(rest[0]) * 4, rest.size() - 1);
    model[std::move(key)] = std::string(rest.substr(1, value_len));
    rest.remove_prefix(1 + value_len);
  }

  TableOptions options;
  options.compression = static_cast<CompressionType>(flags % 3);
  options.block_size = 1024;
  options.block_restart_interval = 1 + (flags >> 2) % 16;
  options.filter_key_extractor = (flags & 0x40) != 0 ? extractor : nullptr;
  const bool in_memory = (flags & 0x80) != 0;
  tessera::MemFileSystem fs;
  {
    auto file = fs.NewWritableFile("/rt.sst");
    Check(file.ok());
    TableBuilder builder(options, file->get());
    for (const auto& [k, v] : model) builder.Add(k, v);
    Check(builder.Finish().ok());
    Check((*file)->Close().ok());
  }
  const uint64_t size = *fs.GetFileSize("/rt.sst");
  auto open = [&]() {
    auto file = fs.NewRandomAccessFile("/rt.sst");
    Check(file.ok());
    return Table::Open(options, "/rt.sst", std::move(*file), size, nullptr, 0, in_memory);
  };
  {
    auto table = open();
    Check(table.ok());
    Check((*table)->properties().num_entries == model.size());
    CheckAgainstModel(**table, model);
    for (const auto& [k, v] : model) {
      Check(options.filter_key_extractor == nullptr ||
            (*table)->KeyMayMatch(extractor->FilterKey(k)));
    }
  }
  Check(fs.FlipBitForTesting("/rt.sst", damage_at % size, damage_bit).ok());
  auto table = open();
  if (!table.ok()) {
    Check(absl::IsDataLoss(table.status()));
    return;
  }
  CheckAgainstModel(**table, model);
  for (const auto& [k, v] : model) {
    Check(options.filter_key_extractor == nullptr ||
          (*table)->KeyMayMatch(extractor->FilterKey(k)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. A whole table file.
  tessera::MemFileSystem fs;
  if (!tessera::WriteStringToFile(&fs, "/fuzz.sst", input, /*sync=*/false).ok()) return 0;
  PrefixExtractor extractor;
  TableOptions options;
  options.filter_key_extractor = &extractor;
  BlockCache cache(1 << 20);
  for (bool in_memory : {false, true}) {
    auto file = fs.NewRandomAccessFile("/fuzz.sst");
    if (!file.ok()) return 0;
    auto table =
        Table::Open(options, "/fuzz.sst", std::move(*file), size, &cache, cache.NewId(), in_memory);
    if (!table.ok()) continue;
    auto it = (*table)->NewIterator(TableReadOptions());
    Exercise(it.get(), input);
    (void)(*table)->KeyMayMatch("row");
    (void)(*table)->KeyMayMatch(input.substr(0, 4));
    (void)(*table)->ApproximateOffsetOf("m");
    (void)(*table)->WarmBlocksFor("a", "n");
    (void)(*table)->properties().num_entries;
  }

  // 2. A decoded block.
  {
    std::unique_ptr<char[]> copy = Copy(input);
    const std::string_view view(copy.get(), size);
    auto block = Block::Create(BlockContents{view, std::move(copy)}, "raw", 0);
    if (block.ok()) {
      auto it = Block::NewIterator(*block, BytewiseComparator(), "raw", 0);
      Exercise(it.get(), input);
    }
  }

  // 3. Stored block contents with a correct trailer: input[0] picks the compression type.
  if (size >= 1) {
    const std::string_view contents_in = input.substr(1);
    const auto type = static_cast<CompressionType>(static_cast<uint8_t>(input[0]) % 4);
    std::string stored(contents_in);
    tessera::storage::AppendBlockTrailer(contents_in, type, &stored);
    BlockContents contents;
    if (tessera::storage::DecodeStoredBlock(stored, "stored", 0, &contents).ok()) {
      if (contents.owned == nullptr) {
        std::unique_ptr<char[]> copy = Copy(contents.data);
        contents.data = std::string_view(copy.get(), contents.data.size());
        contents.owned = std::move(copy);
      }
      auto block = Block::Create(std::move(contents), "stored", 0);
      if (block.ok()) {
        auto it = Block::NewIterator(*block, BytewiseComparator(), "stored", 0);
        Exercise(it.get(), input);
      }
    }
  }

  // 4. Build, compare, damage, compare.
  RoundTrip(input, &extractor);
  return 0;
}
