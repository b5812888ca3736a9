#include "tessera/storage/format.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include <utility>
#include <vector>

#include "tessera/storage/block.h"
#include "tessera/storage/block_builder.h"
#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::storage {
namespace {

constexpr size_t kFooterHandlesEnd = 48;
constexpr size_t kFooterNameEnd = 112;
constexpr size_t kFooterVersionOffset = 112;
constexpr size_t kFooterCrcOffset = 116;
constexpr size_t kFooterMagicOffset = 120;
static_assert(kFooterMagicOffset + 8 == Footer::kEncodedLength);
static_assert(kFooterHandlesEnd + 1 + Footer::kMaxComparatorNameLength == kFooterNameEnd);

// One decompression context per thread: creating one per block costs more than decompressing
// a small block.
struct ZstdDCtxDeleter {
  void operator()(ZSTD_DCtx* ctx) const { ZSTD_freeDCtx(ctx); }
};
ZSTD_DCtx* ThreadZstdDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

uint32_t BlockChecksum(std::string_view stored, char type) {
  uint32_t crc = crc32c::Value(stored.data(), stored.size());
  return crc32c::Mask(crc32c::Extend(crc, &type, 1));
}

std::unique_ptr<char[]> AllocateUninitialized(size_t n) {
  // new char[n] leaves the bytes uninitialized (make_unique<char[]> would zero them).
  return std::unique_ptr<char[]>(new char[n == 0 ? 1 : n]);
}

// Property names (persisted).
constexpr std::string_view kDataSize = "data_size";
constexpr std::string_view kFilterKeyExtractor = "filter_key_extractor";
constexpr std::string_view kFilterSize = "filter_size";
constexpr std::string_view kIndexSize = "index_size";
constexpr std::string_view kLargestKey = "largest_key";
constexpr std::string_view kNumDataBlocks = "num_data_blocks";
constexpr std::string_view kNumEntries = "num_entries";
constexpr std::string_view kRawKeySize = "raw_key_size";
constexpr std::string_view kRawValueSize = "raw_value_size";
constexpr std::string_view kSmallestKey = "smallest_key";
constexpr std::string_view kUserProperties = "user_properties";

}  // namespace

void TableProperties::EncodeTo(std::string* dst) const {
  std::vector<std::pair<std::string_view, std::string>> entries;
  auto add_number = [&entries](std::string_view name, uint64_t v) {
    std::string encoded;
    PutVarint64(&encoded, v);
    entries.emplace_back(name, std::move(encoded));
  };
  add_number(kDataSize, data_size);
  entries.emplace_back(kFilterKeyExtractor, filter_key_extractor);
  add_number(kFilterSize, filter_size);
  add_number(kIndexSize, index_size);
  entries.emplace_back(kLargestKey, largest_key);
  add_number(kNumDataBlocks, num_data_blocks);
  add_number(kNumEntries, num_entries);
  add_number(kRawKeySize, raw_key_size);
  add_number(kRawValueSize, raw_value_size);
  entries.emplace_back(kSmallestKey, smallest_key);
  entries.emplace_back(kUserProperties, user_properties);
  std::sort(entries.begin(), entries.end());  // a block's keys must be sorted
  BlockBuilder builder(1);
  for (const auto& [name, value] : entries) builder.Add(name, value);
  dst->append(builder.Finish());
}

Status TableProperties::DecodeFrom(std::string_view block, std::string_view file_name,
                                   uint64_t offset) {
  *this = TableProperties();
  // The view is only used inside this call, so the block may borrow `block`.
  ASSIGN_OR_RETURN(std::shared_ptr<const Block> decoded,
                   Block::Create(BlockContents{block, nullptr}, file_name, offset));
  const std::pair<std::string_view, uint64_t*> numbers[] = {
      {kDataSize, &data_size},         {kFilterSize, &filter_size},
      {kIndexSize, &index_size},       {kNumDataBlocks, &num_data_blocks},
      {kNumEntries, &num_entries},     {kRawKeySize, &raw_key_size},
      {kRawValueSize, &raw_value_size}};
  const std::pair<std::string_view, std::string*> strings[] = {
      {kFilterKeyExtractor, &filter_key_extractor},
      {kLargestKey, &largest_key},
      {kSmallestKey, &smallest_key},
      {kUserProperties, &user_properties}};
  BlockIter it;
  it.Init(BytewiseComparator(), std::move(decoded), file_name, offset);
  // Names not listed come from newer writers and are ignored.
  for (it.SeekToFirst(); it.Valid(); it.Next()) {
    for (const auto& [name, number] : numbers) {
      if (it.key() != name) continue;
      std::string_view value = it.value();
      if (!GetVarint64(&value, number) || !value.empty()) {
        return CorruptionError(file_name, offset, StrCat("bad value of table property ", name));
      }
    }
    for (const auto& [name, str] : strings) {
      if (it.key() == name) str->assign(it.value());
    }
  }
  return it.status();
}

void BlockHandle::EncodeTo(std::string* dst) const {
  PutVarint64(dst, offset);
  PutVarint64(dst, size);
}

bool BlockHandle::DecodeFrom(std::string_view* input) {
  return GetVarint64(input, &offset) && GetVarint64(input, &size);
}

void Footer::EncodeTo(std::string* dst) const {
  const size_t start = dst->size();
  for (const BlockHandle* h : {&metaindex, &index, &filter}) {
    PutFixed64(dst, h->offset);
    PutFixed64(dst, h->size);
  }
  const size_t name_len = std::min(comparator_name.size(), kMaxComparatorNameLength);
  dst->push_back(static_cast<char>(name_len));
  dst->append(comparator_name.data(), name_len);
  dst->append(kMaxComparatorNameLength - name_len, '\0');
  PutFixed32(dst, format_version);
  PutFixed32(dst, crc32c::Mask(crc32c::Value(dst->data() + start, kFooterCrcOffset)));
  PutFixed64(dst, kTableMagicNumber);
}

Status Footer::DecodeFrom(std::string_view input, std::string_view file_name, uint64_t offset) {
  if (input.size() != kEncodedLength) {
    return CorruptionError(file_name, offset, "footer is truncated");
  }
  const char* p = input.data();
  if (DecodeFixed64(p + kFooterMagicOffset) != kTableMagicNumber) {
    return CorruptionError(file_name, offset, "bad magic number: not an sstable");
  }
  const uint32_t expected = crc32c::Unmask(DecodeFixed32(p + kFooterCrcOffset));
  if (crc32c::Value(p, kFooterCrcOffset) != expected) {
    return CorruptionError(file_name, offset, "footer checksum mismatch");
  }
  BlockHandle* handles[] = {&metaindex, &index, &filter};
  for (int i = 0; i < 3; ++i) {
    handles[i]->offset = DecodeFixed64(p + 16 * i);
    handles[i]->size = DecodeFixed64(p + 16 * i + 8);
  }
  const size_t name_len = static_cast<uint8_t>(p[kFooterHandlesEnd]);
  if (name_len > kMaxComparatorNameLength) {
    return CorruptionError(file_name, offset, "bad comparator name length in footer");
  }
  comparator_name.assign(p + kFooterHandlesEnd + 1, name_len);
  format_version = DecodeFixed32(p + kFooterVersionOffset);
  return Status();
}

BlockCompressor::BlockCompressor(CompressionType type, int zstd_level)
    : type_(type), zstd_level_(zstd_level) {
  if (type_ == CompressionType::kZstd) zstd_ = ZSTD_createCCtx();
}

BlockCompressor::~BlockCompressor() {
  if (zstd_ != nullptr) ZSTD_freeCCtx(zstd_);
}

std::string_view BlockCompressor::Compress(std::string_view raw, CompressionType* type) {
  *type = CompressionType::kNone;
  if (type_ == CompressionType::kNone || raw.empty() || raw.size() > kMaxBlockSize) return raw;

  // Stored compressed block := varint32 uncompressed size, then the compressed bytes.
  char header[5];
  const size_t header_len = EncodeVarint32(header, static_cast<uint32_t>(raw.size())) - header;
  size_t compressed_len = 0;
  if (type_ == CompressionType::kLz4) {
    const int bound = LZ4_compressBound(static_cast<int>(raw.size()));
    if (bound <= 0) return raw;
    buf_.resize(header_len + bound);
    const int n = LZ4_compress_default(raw.data(), buf_.data() + header_len,
                                       static_cast<int>(raw.size()), bound);
    if (n <= 0) return raw;
    compressed_len = n;
  } else if (type_ == CompressionType::kZstd) {
    if (zstd_ == nullptr) return raw;
    const size_t bound = ZSTD_compressBound(raw.size());
    buf_.resize(header_len + bound);
    const size_t n = ZSTD_compressCCtx(zstd_, buf_.data() + header_len, bound, raw.data(),
                                       raw.size(), zstd_level_);
    if (ZSTD_isError(n)) return raw;
    compressed_len = n;
  } else {
    return raw;
  }
  const size_t stored_len = header_len + compressed_len;
  // Keep compression only when it saves at least 1/8 of the block.
  if (stored_len > raw.size() - raw.size() / 8) return raw;
  std::memcpy(buf_.data(), header, header_len);
  *type = type_;
  return std::string_view(buf_.data(), stored_len);
}

void AppendBlockTrailer(std::string_view stored, CompressionType type, std::string* dst) {
  char trailer[kBlockTrailerSize];
  trailer[0] = static_cast<char>(type);
  EncodeFixed32(trailer + 1, BlockChecksum(stored, trailer[0]));
  dst->append(trailer, kBlockTrailerSize);
}

Status DecodeStoredBlock(std::string_view stored, std::string_view file_name, uint64_t offset,
                         BlockContents* result) {
  result->owned.reset();
  result->data = {};
  if (stored.size() < kBlockTrailerSize) {
    return CorruptionError(file_name, offset, "block is too short for its trailer");
  }
  const size_t n = stored.size() - kBlockTrailerSize;
  const char type = stored[n];
  const uint32_t expected = DecodeFixed32(stored.data() + n + 1);
  if (BlockChecksum(stored.substr(0, n), type) != expected) {
    return CorruptionError(file_name, offset, "block checksum mismatch");
  }
  std::string_view input = stored.substr(0, n);
  switch (static_cast<CompressionType>(type)) {
    case CompressionType::kNone:
      result->data = input;
      return Status();
    case CompressionType::kLz4:
    case CompressionType::kZstd:
      break;
    default:
      return CorruptionError(
          file_name, offset,
          StrCat("unknown block compression type ", static_cast<int>(static_cast<uint8_t>(type))));
  }

  uint32_t raw_size = 0;
  if (!GetVarint32(&input, &raw_size) || raw_size == 0 || raw_size > kMaxBlockSize) {
    return CorruptionError(file_name, offset, "bad uncompressed size in compressed block");
  }
  std::unique_ptr<char[]> out;
  if (static_cast<CompressionType>(type) == CompressionType::kLz4) {
    // LZ4 expands at most ~255x; a larger claim is corruption (and would be a huge allocation).
    if (raw_size > input.size() * 255 + 16) {
      return CorruptionError(file_name, offset, "bad uncompressed size in lz4 block");
    }
    out = AllocateUninitialized(raw_size);
    const int got = LZ4_decompress_safe(input.data(), out.get(), static_cast<int>(input.size()),
                                        static_cast<int>(raw_size));
    if (got < 0 || static_cast<uint32_t>(got) != raw_size) {
      return CorruptionError(file_name, offset, "lz4 block does not decompress");
    }
  } else {
    const unsigned long long frame_size = ZSTD_getFrameContentSize(input.data(), input.size());
    if (frame_size != raw_size) {
      return CorruptionError(file_name, offset, "bad zstd frame header");
    }
    ZSTD_DCtx* dctx = ThreadZstdDCtx();
    if (dctx == nullptr) return absl::ResourceExhaustedError("cannot allocate a zstd context");
    out = AllocateUninitialized(raw_size);
    const size_t got = ZSTD_decompressDCtx(dctx, out.get(), raw_size, input.data(), input.size());
    if (ZSTD_isError(got) || got != raw_size) {
      return CorruptionError(file_name, offset, "zstd block does not decompress");
    }
  }
  result->data = std::string_view(out.get(), raw_size);
  result->owned = std::move(out);
  return Status();
}

Status ReadExactly(const RandomAccessFile& file, std::string_view file_name, uint64_t offset,
                   size_t n, char* scratch, std::string_view* result) {
  StatusOr<std::string_view> read = file.Read(offset, n, scratch);
  if (!read.ok()) return Annotate(read.status(), StrCat(file_name, " at offset ", offset));
  if (read->size() != n) {
    return CorruptionError(file_name, offset,
                           StrCat("truncated read: wanted ", n, " bytes, got ", read->size()));
  }
  *result = *read;
  return Status();
}

Status ReadBlock(const RandomAccessFile& file, std::string_view file_name,
                 const BlockHandle& handle, ReadStats* stats, BlockContents* result) {
  if (handle.size > kMaxBlockSize) {
    return CorruptionError(file_name, handle.offset, "block size is out of range");
  }
  const size_t n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  std::unique_ptr<char[]> buf = AllocateUninitialized(n);
  std::string_view stored;
  RETURN_IF_ERROR(ReadExactly(file, file_name, handle.offset, n, buf.get(), &stored));
  if (stats != nullptr) {
    stats->blocks_read_from_file++;
    stats->bytes_read += n;
  }
  if (stored.data() != buf.get()) {
    // The file handed out its own memory; copy so the block owns its bytes (a cached block
    // may outlive the file object).
    std::memcpy(buf.get(), stored.data(), n);
    stored = std::string_view(buf.get(), n);
  }
  RETURN_IF_ERROR(DecodeStoredBlock(stored, file_name, handle.offset, result));
  if (result->owned == nullptr) result->owned = std::move(buf);  // stored uncompressed
  return Status();
}

}  // namespace tessera::storage
