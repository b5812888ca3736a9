#include "tessera/storage/table.h"

#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/table_builder.h"
#include "tessera/storage/table_test_util.h"

namespace tessera::storage {
namespace {

using testing::BuildTableForTesting;
using testing::KVMap;
using testing::OpenTableForTesting;
using testing::RandomRowsForTesting;
using testing::RowExtractorForTesting;

const char* CompressionName(CompressionType t) {
  switch (t) {
    case CompressionType::kNone:
      return "none";
    case CompressionType::kLz4:
      return "lz4";
    case CompressionType::kZstd:
      return "zstd";
  }
  return "?";
}

// Checks a full forward and backward scan and random seeks (with steps either way) against the
// model.
void CheckAgainstModel(const Table& table, const KVMap& model, Random* rnd,
                       const TableReadOptions& read_options = {}) {
  std::unique_ptr<Iterator> it = table.NewIterator(read_options);
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    ASSERT_NE(m, model.end());
    ASSERT_EQ(it->key(), m->first);
    ASSERT_EQ(it->value(), m->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
  ASSERT_EQ(m, model.end());

  auto r = model.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
    ASSERT_NE(r, model.rend());
    ASSERT_EQ(it->key(), r->first);
    ASSERT_EQ(it->value(), r->second);
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
  ASSERT_EQ(r, model.rend());

  for (int i = 0; i < 300; ++i) {
    std::string target;
    if (!model.empty() && rnd->OneIn(2)) {
      target = std::next(model.begin(), rnd->Uniform(model.size()))->first;
      if (rnd->OneIn(2)) target.push_back('\0');  // just past an existing key
    } else {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "row%06d", static_cast<int>(rnd->Uniform(1000000)));
      target = buf;
    }
    auto want = model.lower_bound(target);
    it->Seek(target);
    ASSERT_EQ(it->Valid(), want != model.end()) << target;
    if (!it->Valid()) continue;
    ASSERT_EQ(it->key(), want->first);
    ASSERT_EQ(it->value(), want->second);
    const int steps = static_cast<int>(rnd->Uniform(5));
    if (rnd->OneIn(2)) {
      for (int s = 0; s < steps && it->Valid(); ++s) {
        it->Next();
        ++want;
        ASSERT_EQ(it->Valid(), want != model.end());
        if (it->Valid()) {
          ASSERT_EQ(it->key(), want->first);
        }
      }
    } else {
      for (int s = 0; s < steps && it->Valid(); ++s) {
        it->Prev();
        ASSERT_EQ(it->Valid(), want != model.begin());
        if (!it->Valid()) break;
        --want;
        ASSERT_EQ(it->key(), want->first);
        ASSERT_EQ(it->value(), want->second);
      }
    }
  }
  ASSERT_TRUE(it->status().ok()) << it->status();
}

struct RoundTripParam {
  CompressionType compression;
  bool in_memory;
  bool use_cache;
};

class TableRoundTripTest : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(TableRoundTripTest, MatchesModel) {
  const RoundTripParam p = GetParam();
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  MemFileSystem fs;
  RowExtractorForTesting extractor;
  BlockCache cache(1 << 20);
  for (int round = 0; round < 3; ++round) {
    TableOptions options;
    options.compression = p.compression;
    options.block_size = 1024 << rnd.Uniform(4);
    options.block_restart_interval = 1 + static_cast<int>(rnd.Uniform(20));
    options.filter_key_extractor = rnd.OneIn(2) ? &extractor : nullptr;
    const KVMap model = RandomRowsForTesting(&rnd, 1 + rnd.Uniform(100), 30, 300);
    SCOPED_TRACE(::testing::Message() << "round=" << round << " entries=" << model.size()
                                      << " block_size=" << options.block_size);
    const std::string path = "/t" + std::to_string(round) + ".sst";
    ASSERT_TRUE(BuildTableForTesting(&fs, path, options, model, "user-props").ok());
    auto table =
        OpenTableForTesting(&fs, path, options, p.use_cache ? &cache : nullptr, p.in_memory);
    ASSERT_TRUE(table.ok()) << table.status();
    EXPECT_EQ((*table)->in_memory(), p.in_memory);
    const TableProperties& props = (*table)->properties();
    EXPECT_EQ(props.num_entries, model.size());
    EXPECT_EQ(props.smallest_key, model.begin()->first);
    EXPECT_EQ(props.largest_key, model.rbegin()->first);
    EXPECT_EQ(props.user_properties, "user-props");
    EXPECT_GT(props.num_data_blocks, 0u);
    EXPECT_LE(props.data_size, (*table)->file_size());
    ReadStats stats;
    TableReadOptions read_options;
    read_options.stats = &stats;
    CheckAgainstModel(**table, model, &rnd, read_options);
    if (p.in_memory) {
      EXPECT_EQ(stats.blocks_read_from_file, 0u);
      EXPECT_GT(stats.blocks_from_memory, 0u);
    } else {
      EXPECT_GT(stats.blocks_read_from_file, 0u);
      EXPECT_EQ(stats.blocks_from_cache > 0, p.use_cache);
    }
    if (options.filter_key_extractor != nullptr) {
      EXPECT_TRUE((*table)->has_filter());
      for (const auto& [k, v] : model) ASSERT_TRUE((*table)->KeyMayMatch(extractor.FilterKey(k)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, TableRoundTripTest,
                         ::testing::Values(RoundTripParam{CompressionType::kNone, false, false},
                                           RoundTripParam{CompressionType::kLz4, false, false},
                                           RoundTripParam{CompressionType::kZstd, false, false},
                                           RoundTripParam{CompressionType::kNone, false, true},
                                           RoundTripParam{CompressionType::kLz4, false, true},
                                           RoundTripParam{CompressionType::kZstd, false, true},
                                           RoundTripParam{CompressionType::kNone, true, false},
                                           RoundTripParam{CompressionType::kLz4, true, false},
                                           RoundTripParam{CompressionType::kZstd, true, true}),
                         [](const ::testing::TestParamInfo<RoundTripParam>& info) {
                           return std::string(CompressionName(info.param.compression)) +
                                  (info.param.in_memory ? "_InMemory" : "_File") +
                                  (info.param.use_cache ? "_Cache" : "_NoCache");
                         });

TEST(TableTest, EmptyTable) {
  MemFileSystem fs;
  TableOptions options;
  ASSERT_TRUE(BuildTableForTesting(&fs, "/empty.sst", options, {}).ok());
  for (bool in_memory : {false, true}) {
    auto table = OpenTableForTesting(&fs, "/empty.sst", options, nullptr, in_memory);
    ASSERT_TRUE(table.ok()) << table.status();
    EXPECT_EQ((*table)->properties().num_entries, 0u);
    EXPECT_EQ((*table)->properties().num_data_blocks, 0u);
    auto it = (*table)->NewIterator({});
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid());
    it->SeekToLast();
    EXPECT_FALSE(it->Valid());
    it->Seek("a");
    EXPECT_FALSE(it->Valid());
    EXPECT_TRUE(it->status().ok());
    EXPECT_EQ((*table)->ApproximateOffsetOf("a"), 0u);
  }
}

TEST(TableTest, CompressionShrinksCompressibleDataAndSkipsIncompressible) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  KVMap compressible, random;
  for (int i = 0; i < 2000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "key%08d", i);
    compressible[key] = std::string(100, static_cast<char>('a' + i % 3));
    random[key] = rnd.Bytes(100);
  }
  MemFileSystem fs;
  // Bytes of data blocks as stored.
  auto data_size = [&](const KVMap& m, CompressionType t) -> uint64_t {
    TableOptions options;
    options.compression = t;
    EXPECT_TRUE(BuildTableForTesting(&fs, "/c.sst", options, m).ok());
    auto table = OpenTableForTesting(&fs, "/c.sst", options);
    EXPECT_TRUE(table.ok());
    return (*table)->properties().data_size;
  };
  const uint64_t plain = data_size(compressible, CompressionType::kNone);
  EXPECT_LT(data_size(compressible, CompressionType::kLz4), plain / 3);
  EXPECT_LT(data_size(compressible, CompressionType::kZstd), plain / 3);
  // Random values: compression saves < 12.5%, so data blocks stay uncompressed (same size).
  const uint64_t random_plain = data_size(random, CompressionType::kNone);
  EXPECT_EQ(data_size(random, CompressionType::kLz4), random_plain);
  EXPECT_EQ(data_size(random, CompressionType::kZstd), random_plain);
}

TEST(TableTest, BuilderRejectsOutOfOrderKeys) {
  MemFileSystem fs;
  auto file = *fs.NewWritableFile("/bad.sst");
  TableBuilder builder(TableOptions(), file.get());
  builder.Add("b", "1");
  EXPECT_TRUE(builder.status().ok());
  builder.Add("a", "2");
  EXPECT_EQ(builder.status().code(), absl::StatusCode::kInvalidArgument);
  builder.Add("c", "3");  // ignored after the error
  EXPECT_EQ(builder.NumEntries(), 1u);
  EXPECT_EQ(builder.Finish().code(), absl::StatusCode::kInvalidArgument);

  auto file2 = *fs.NewWritableFile("/dup.sst");
  TableBuilder dup(TableOptions(), file2.get());
  dup.Add("a", "1");
  dup.Add("a", "2");
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kInvalidArgument);
  dup.Abandon();
}

TEST(TableTest, AbandonWritesNothingMore) {
  MemFileSystem fs;
  auto file = *fs.NewWritableFile("/a.sst");
  TableBuilder builder(TableOptions(), file.get());
  for (int i = 0; i < 10; ++i) builder.Add("key" + std::to_string(i), "value");
  builder.Abandon();
  EXPECT_EQ(file->Size(), 0u);  // everything was still buffered
}

// Counts Append calls and their sizes.
class CountingFile final : public WritableFile {
 public:
  Status Append(std::string_view data) override {
    appends.push_back(data.size());
    size += data.size();
    return Status();
  }
  Status Flush() override { return Status(); }
  Status Sync() override { return Status(); }
  Status Close() override { return Status(); }
  uint64_t Size() const override { return size; }
  std::vector<size_t> appends;
  uint64_t size = 0;
};

TEST(TableTest, BuilderAppendsInLargePieces) {
  CountingFile file;
  TableOptions options;
  options.block_size = 1024;
  options.compression = CompressionType::kNone;
  TableBuilder builder(options, &file);
  for (int i = 0; i < 20000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "key%08d", i);
    builder.Add(key, "some value");
  }
  ASSERT_TRUE(builder.Finish().ok());
  EXPECT_EQ(builder.FileSize(), file.size);
  ASSERT_GT(file.appends.size(), 3u);
  for (size_t i = 0; i + 1 < file.appends.size(); ++i) EXPECT_GE(file.appends[i], 64u * 1024);
}

class ReverseComparator final : public Comparator {
 public:
  int Compare(std::string_view a, std::string_view b) const override { return b.compare(a); }
  const char* Name() const override { return "test.Reverse"; }
};

TEST(TableTest, ComparatorMismatchIsInvalidArgument) {
  MemFileSystem fs;
  TableOptions options;
  ASSERT_TRUE(BuildTableForTesting(&fs, "/t.sst", options, {{"a", "1"}}).ok());
  ReverseComparator reverse;
  options.comparator = &reverse;
  auto table = OpenTableForTesting(&fs, "/t.sst", options);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find("tessera.Bytewise"), absl::string_view::npos);
}

TEST(TableTest, CustomComparatorOrdersTable) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  ReverseComparator reverse;
  TableOptions options;
  options.comparator = &reverse;
  options.block_size = 1024;
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back(rnd.Bytes(1 + rnd.Uniform(12)));
  std::sort(keys.begin(), keys.end(), std::greater<>());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  MemFileSystem fs;
  auto file = *fs.NewWritableFile("/r.sst");
  TableBuilder builder(options, file.get());
  for (const auto& k : keys) builder.Add(k, k);
  ASSERT_TRUE(builder.Finish().ok());
  auto table = OpenTableForTesting(&fs, "/r.sst", options);
  ASSERT_TRUE(table.ok()) << table.status();
  auto it = (*table)->NewIterator({});
  size_t i = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++i) ASSERT_EQ(it->key(), keys[i]);
  EXPECT_EQ(i, keys.size());
  for (int n = 0; n < 100; ++n) {
    const size_t j = rnd.Uniform(keys.size());
    it->Seek(keys[j]);
    ASSERT_TRUE(it->Valid());
    ASSERT_EQ(it->value(), keys[j]);
  }
}

// The engine's setup: internal keys, a filter over the user key's row.
TEST(TableTest, InternalKeysWithRowFilter) {
  MemFileSystem fs;
  testing::InternalRowExtractorForTesting extractor;
  TableOptions options;
  options.comparator = InternalKeyComparator();
  options.filter_key_extractor = &extractor;
  options.block_size = 1024;
  auto file = *fs.NewWritableFile("/ik.sst");
  TableBuilder builder(options, file.get());
  for (int row = 0; row < 200; row += 2) {
    for (int version = 3; version >= 1; --version) {
      char user[32];
      std::snprintf(user, sizeof(user), "r%04d/c", row);
      builder.Add(MakeInternalKey(user, 100 * row + version, ValueType::kValue),
                  std::to_string(version));
    }
  }
  ASSERT_TRUE(builder.Finish().ok());
  auto table = OpenTableForTesting(&fs, "/ik.sst", options);
  ASSERT_TRUE(table.ok()) << table.status();
  int false_positives = 0;
  for (int row = 0; row < 200; ++row) {
    char r[16];
    std::snprintf(r, sizeof(r), "r%04d", row);
    if (row % 2 == 0) {
      ASSERT_TRUE((*table)->KeyMayMatch(r));
    } else {
      false_positives += (*table)->KeyMayMatch(r);
    }
  }
  EXPECT_LT(false_positives, 10);
  // Seek for the newest version visible at a sequence: (user, seq) finds the entry with the
  // largest sequence <= seq.
  auto it = (*table)->NewIterator({});
  it->Seek(MakeInternalKey("r0010/c", 1002, kValueTypeForSeek));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(ExtractSequence(it->key()), 1002u);
  EXPECT_EQ(it->value(), "2");
}

TEST(TableTest, FilterFalsePositiveRateAndExtractorChecks) {
  MemFileSystem fs;
  RowExtractorForTesting extractor;
  TableOptions options;
  options.filter_key_extractor = &extractor;
  KVMap model;
  for (int row = 0; row < 5000; ++row) {
    for (int col = 0; col < 3; ++col) {
      model["in" + std::to_string(row) + "/c" + std::to_string(col)] = "v";
    }
  }
  ASSERT_TRUE(BuildTableForTesting(&fs, "/f.sst", options, model).ok());
  auto table = OpenTableForTesting(&fs, "/f.sst", options);
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE((*table)->has_filter());
  EXPECT_TRUE((*table)->filter_status().ok());
  // Consecutive keys of a row were added once: ~5000 keys at 10 bits.
  EXPECT_LE((*table)->properties().filter_size, 5000 * 10 / 8 + 16);
  EXPECT_EQ((*table)->properties().filter_key_extractor, "test.row");
  for (int row = 0; row < 5000; ++row)
    ASSERT_TRUE((*table)->KeyMayMatch("in" + std::to_string(row)));
  int fp = 0;
  for (int row = 0; row < 10000; ++row) fp += (*table)->KeyMayMatch("out" + std::to_string(row));
  EXPECT_LT(fp, 200);  // ~1% expected

  // A reader with another extractor (or none) must not use the filter.
  RowExtractorForTesting other("test.other");
  TableOptions other_options = options;
  other_options.filter_key_extractor = &other;
  auto other_table = OpenTableForTesting(&fs, "/f.sst", other_options);
  ASSERT_TRUE(other_table.ok());
  EXPECT_FALSE((*other_table)->has_filter());
  EXPECT_TRUE((*other_table)->KeyMayMatch("out1"));
  TableOptions no_filter = options;
  no_filter.filter_key_extractor = nullptr;
  auto plain = OpenTableForTesting(&fs, "/f.sst", no_filter);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->has_filter());
  EXPECT_TRUE((*plain)->KeyMayMatch("out1"));
}

// A seek to one column of a row spread over many blocks reads one block, not the row.
TEST(TableTest, SeekIntoWideRowReadsOneOrTwoBlocks) {
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 4096;
  KVMap model;
  char key[64];
  for (int col = 0; col < 20000; ++col) {
    std::snprintf(key, sizeof(key), "the-wide-row/family:qualifier%08d", col);
    model[key] = std::string(40, 'v');
  }
  model["a-narrow-row/x"] = "1";
  model["z-narrow-row/x"] = "2";
  ASSERT_TRUE(BuildTableForTesting(&fs, "/wide.sst", options, model).ok());
  auto table = OpenTableForTesting(&fs, "/wide.sst", options);
  ASSERT_TRUE(table.ok());
  ASSERT_GT((*table)->properties().num_data_blocks, 200u);

  for (int col : {0, 1, 7777, 12345, 19999}) {
    ReadStats stats;
    TableReadOptions read_options;
    read_options.stats = &stats;
    auto it = (*table)->NewIterator(read_options);
    std::snprintf(key, sizeof(key), "the-wide-row/family:qualifier%08d", col);
    it->Seek(key);
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), key);
    EXPECT_GE(stats.blocks_read_from_file, 1u);
    EXPECT_LE(stats.blocks_read_from_file, 2u) << col;
    EXPECT_LE(stats.bytes_read, 2 * (options.block_size + 200));
  }
}

// Counts the reads that reach the file: what a read-ahead saves.
class CountingReadsFile final : public RandomAccessFile {
 public:
  CountingReadsFile(std::unique_ptr<RandomAccessFile> base, int* reads, uint64_t* bytes = nullptr)
      : base_(std::move(base)), reads_(reads), bytes_(bytes) {}
  StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    ++*reads_;
    if (bytes_ != nullptr) *bytes_ += n;
    return base_->Read(offset, n, scratch);
  }
  StatusOr<uint64_t> Size() const override { return base_->Size(); }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  int* const reads_;
  uint64_t* const bytes_;
};

TEST(TableTest, AForwardScanReadsAheadAndYieldsTheSameEntries) {
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 4096;
  Random rnd(17);
  const KVMap model = RandomRowsForTesting(&rnd, 3000, 4, 200);
  ASSERT_TRUE(BuildTableForTesting(&fs, "/ra.sst", options, model).ok());
  int reads = 0;
  uint64_t bytes = 0;
  auto file = std::make_unique<CountingReadsFile>(fs.NewRandomAccessFile("/ra.sst").value(), &reads,
                                                  &bytes);
  const uint64_t size = fs.GetFileSize("/ra.sst").value();
  BlockCache cache(1u << 20);
  auto table = Table::Open(options, "/ra.sst", std::move(file), size, &cache, cache.NewId(),
                           /*in_memory=*/false);
  ASSERT_TRUE(table.ok()) << table.status();
  const uint64_t blocks = (*table)->properties().num_data_blocks;
  ASSERT_GT(blocks, 100u);

  // A block in the middle is cached: the scan passes it, then reads on from the file.
  const auto middle = std::next(model.begin(), static_cast<long>(model.size() / 2));
  {
    auto warm = (*table)->NewIterator(TableReadOptions{});
    warm->Seek(middle->first);
    ASSERT_TRUE(warm->Valid());
  }
  for (size_t readahead : {size_t{0}, size_t{64 * 1024}}) {
    SCOPED_TRACE(readahead);
    TableReadOptions ro;
    ro.fill_cache = false;
    ro.readahead_bytes = readahead;
    reads = 0;
    auto it = (*table)->NewIterator(ro);
    auto want = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++want) {
      ASSERT_NE(want, model.end());
      ASSERT_EQ(it->key(), want->first);
      ASSERT_EQ(it->value(), want->second);
    }
    ASSERT_TRUE(it->status().ok()) << it->status();
    EXPECT_EQ(want, model.end());
    if (readahead == 0) {
      EXPECT_EQ(static_cast<uint64_t>(reads), blocks - 1);  // one per block, the cached one aside
    } else {
      // 64 KiB of blocks per read once grown (16, 32, then 64 KiB), give or take the two jumps
      // (the start, the cached block).
      EXPECT_LT(static_cast<uint64_t>(reads), blocks / 8);
      EXPECT_GE(static_cast<uint64_t>(reads), (*table)->properties().data_size / (64 * 1024));
    }
    // A short scan (a seek, then entries over two or three blocks) reads its block, then a
    // small read-ahead: not the whole read-ahead.
    reads = 0;
    bytes = 0;
    {
      auto short_scan = (*table)->NewIterator(ro);
      short_scan->Seek(std::next(middle, 100)->first);
      auto next = std::next(middle, 100);
      for (int i = 0; i < 60 && short_scan->Valid(); ++i, short_scan->Next(), ++next) {
        ASSERT_EQ(short_scan->key(), next->first);
      }
      ASSERT_TRUE(short_scan->status().ok()) << short_scan->status();
    }
    EXPECT_GE(reads, 2);  // at least two blocks: 60 entries of up to ~200 bytes and a key
    EXPECT_LE(bytes, uint64_t{2 * 4096 + 16 * 1024});
    // A seek is a jump: it reads its block alone, then reads ahead from there.
    reads = 0;
    auto seeker = (*table)->NewIterator(ro);
    seeker->Seek(std::next(middle, 7)->first);
    ASSERT_TRUE(seeker->Valid());
    EXPECT_EQ(seeker->key(), std::next(middle, 7)->first);
    auto next = std::next(middle, 7);
    for (int i = 0; i < 500 && seeker->Valid(); ++i, seeker->Next(), ++next) {
      ASSERT_EQ(seeker->key(), next->first);
    }
  }
}

TEST(TableTest, CacheServesRepeatedReads) {
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 1024;
  Random rnd(42);
  const KVMap model = RandomRowsForTesting(&rnd, 50, 20, 100);
  ASSERT_TRUE(BuildTableForTesting(&fs, "/c.sst", options, model).ok());
  BlockCache cache(8 << 20);
  auto table = OpenTableForTesting(&fs, "/c.sst", options, &cache);
  ASSERT_TRUE(table.ok());
  const uint64_t blocks = (*table)->properties().num_data_blocks;

  ASSERT_GT(blocks, 6u);
  auto scan = [&](bool fill_cache, uint64_t fill_cache_blocks = UINT64_MAX) {
    ReadStats stats;
    TableReadOptions read_options;
    read_options.stats = &stats;
    read_options.fill_cache = fill_cache;
    read_options.fill_cache_blocks = fill_cache_blocks;
    auto it = (*table)->NewIterator(read_options);
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    EXPECT_EQ(n, model.size());
    EXPECT_TRUE(it->status().ok()) << it->status();
    return stats;
  };
  ReadStats s = scan(/*fill_cache=*/false);
  EXPECT_EQ(s.blocks_read_from_file, blocks);
  EXPECT_EQ(cache.GetStats().entries, 0u);
  s = scan(true, /*fill_cache_blocks=*/0);
  EXPECT_EQ(cache.GetStats().entries, 0u);
  // An iterator caches the first blocks it reads from the file, up to its bound; the blocks it
  // finds cached do not count, so the next iterator caches the next three.
  s = scan(true, 3);
  EXPECT_EQ(s.blocks_read_from_file, blocks);
  EXPECT_EQ(cache.GetStats().entries, 3u);
  s = scan(true, 3);
  EXPECT_EQ(s.blocks_from_cache, 3u);
  EXPECT_EQ(s.blocks_read_from_file, blocks - 3);
  EXPECT_EQ(cache.GetStats().entries, 6u);
  s = scan(true);
  EXPECT_EQ(s.blocks_read_from_file, blocks - 6);
  EXPECT_EQ(cache.GetStats().entries, blocks);
  s = scan(true);
  EXPECT_EQ(s.blocks_read_from_file, 0u);
  EXPECT_EQ(s.blocks_from_cache, blocks);
}

TEST(TableTest, WarmBlocksForLoadsTheRange) {
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 1024;
  KVMap model;
  for (int i = 0; i < 5000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "key%06d", i);
    model[key] = std::string(20, 'x');
  }
  ASSERT_TRUE(BuildTableForTesting(&fs, "/w.sst", options, model).ok());
  BlockCache cache(8 << 20);
  auto table = OpenTableForTesting(&fs, "/w.sst", options, &cache);
  ASSERT_TRUE(table.ok());
  ASSERT_TRUE((*table)->WarmBlocksFor("key001000", "key002000").ok());
  const uint64_t warmed = cache.GetStats().entries;
  EXPECT_GT(warmed, 10u);
  EXPECT_LT(warmed, (*table)->properties().num_data_blocks / 2);

  ReadStats stats;
  TableReadOptions read_options;
  read_options.stats = &stats;
  auto it = (*table)->NewIterator(read_options);
  int n = 0;
  for (it->Seek("key001000"); it->Valid() && it->key() < "key002000"; it->Next()) ++n;
  EXPECT_EQ(n, 1000);
  EXPECT_EQ(stats.blocks_read_from_file, 0u);

  ASSERT_TRUE((*table)->WarmBlocksFor("key004000", "").ok());  // to the end
  EXPECT_GT(cache.GetStats().entries, warmed + 5);
}

TEST(TableTest, ApproximateOffsetOfIsMonotone) {
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 1024;
  options.compression = CompressionType::kNone;
  Random rnd(7);
  KVMap model;
  for (int i = 0; i < 3000; ++i) {
    char key[32];
    std::snprintf(key, sizeof(key), "key%06d", i * 10);
    model[key] = rnd.Bytes(100);
  }
  ASSERT_TRUE(BuildTableForTesting(&fs, "/o.sst", options, model).ok());
  auto table = OpenTableForTesting(&fs, "/o.sst", options);
  ASSERT_TRUE(table.ok());
  const uint64_t data_size = (*table)->properties().data_size;
  EXPECT_EQ((*table)->ApproximateOffsetOf(""), 0u);
  EXPECT_EQ((*table)->ApproximateOffsetOf("key000000"), 0u);
  EXPECT_EQ((*table)->ApproximateOffsetOf("zzz"), data_size);
  uint64_t previous = 0;
  for (int i = 0; i < 30000; i += 7) {
    char key[32];
    std::snprintf(key, sizeof(key), "key%06d", i);
    const uint64_t offset = (*table)->ApproximateOffsetOf(key);
    ASSERT_GE(offset, previous) << key;
    previous = offset;
  }
  // Roughly proportional: the middle key is near the middle of the data.
  const uint64_t mid = (*table)->ApproximateOffsetOf("key015000");
  EXPECT_GT(mid, data_size * 4 / 10);
  EXPECT_LT(mid, data_size * 6 / 10);
}

TEST(TableTest, ConcurrentReaders) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  MemFileSystem fs;
  TableOptions options;
  options.block_size = 2048;
  const KVMap model = RandomRowsForTesting(&rnd, 100, 20, 100);
  ASSERT_TRUE(BuildTableForTesting(&fs, "/cc.sst", options, model).ok());
  BlockCache cache(64 * 1024);  // small: forces evictions while others read
  auto table = OpenTableForTesting(&fs, "/cc.sst", options, &cache);
  ASSERT_TRUE(table.ok());
  std::vector<std::string> keys;
  for (const auto& [k, v] : model) keys.push_back(k);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Random r(seed + t + 1);
      auto it = (*table)->NewIterator({});
      for (int i = 0; i < 500; ++i) {
        const std::string& k = keys[r.Uniform(keys.size())];
        it->Seek(k);
        if (!it->Valid() || it->key() != k || it->value() != model.at(k)) errors++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
}

}  // namespace
}  // namespace tessera::storage
