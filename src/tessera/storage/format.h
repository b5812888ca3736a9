// The SSTable's on-disk pieces shared by writer and readers: block handles, the footer, block
// trailers (compression type + checksum), and the one routine every read path uses to check
// and uncompress a stored block. The format is written down in docs/sstable_format.md.
//
//   stored block := contents  type:uint8  masked_crc32c(contents + type):fixed32
//
// Every reader goes through DecodeStoredBlock / ReadBlock, so checksums are always verified
// and every length decoded from the file is bounds-checked before use.
//
// Thread-safety: free functions are thread-safe; BlockCompressor is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/storage/table_options.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

struct ZSTD_CCtx_s;

namespace tessera::storage {

// The last 8 bytes of every table file.
inline constexpr uint64_t kTableMagicNumber = 0x8f1d3c0a7e55e7a1ull;
// Bumped whenever the layout changes incompatibly; readers refuse other versions.
inline constexpr uint32_t kTableFormatVersion = 1;
// 1 byte compression type + 4 bytes masked crc32c.
inline constexpr size_t kBlockTrailerSize = 5;
// Upper bound on a block's uncompressed size; larger claimed sizes are corruption. Keeps a
// corrupt length from asking for an absurd allocation.
inline constexpr uint64_t kMaxBlockSize = uint64_t{1} << 30;

// Where a block lives: its offset in the file and the size of its stored contents (the trailer
// follows and is not counted).
struct BlockHandle {
  // varint64 offset + varint64 size.
  static constexpr size_t kMaxEncodedLength = 20;

  uint64_t offset = 0;
  uint64_t size = 0;

  void EncodeTo(std::string* dst) const;
  // Advances `input` past the handle. False when malformed or truncated.
  bool DecodeFrom(std::string_view* input);
};

// The fixed-size record at the end of every table.
//
//   [0,48)    metaindex, index, filter handles (offset, size), each fixed64
//   [48,112)  comparator name: length byte (<= 63), name, zero padding
//   [112,116) format version, fixed32
//   [116,120) masked crc32c of [0,116)
//   [120,128) magic, fixed64
struct Footer {
  static constexpr size_t kEncodedLength = 128;
  static constexpr size_t kMaxComparatorNameLength = 63;

  BlockHandle metaindex;
  BlockHandle index;
  BlockHandle filter;  // size 0: the table has no filter
  std::string comparator_name;
  uint32_t format_version = kTableFormatVersion;

  // REQUIRES: comparator_name.size() <= kMaxComparatorNameLength.
  void EncodeTo(std::string* dst) const;
  // Decodes and checks magic, checksum and name length (not the version: the caller decides).
  // `input` must be kEncodedLength bytes; `file_name` and `offset` name it in errors, which are
  // DataLoss.
  Status DecodeFrom(std::string_view input, std::string_view file_name, uint64_t offset);
};

// Names in the metaindex block (name -> BlockHandle of a meta block).
inline constexpr std::string_view kPropertiesBlockName = "tessera.properties";

// What the properties block records about a table. Stored as a block of name -> value entries
// (numbers as varint64); readers ignore names they do not know, so fields can be added.
struct TableProperties {
  uint64_t num_entries = 0;
  uint64_t num_data_blocks = 0;
  uint64_t data_size = 0;       // bytes of data blocks as stored (trailers included); data
                                // blocks start at offset 0, so this is where they end
  uint64_t index_size = 0;      // stored size of the index block
  uint64_t filter_size = 0;     // stored size of the filter block (0: no filter)
  uint64_t raw_key_size = 0;    // sum of key sizes as added
  uint64_t raw_value_size = 0;  // sum of value sizes as added
  std::string smallest_key;     // empty when the table is empty
  std::string largest_key;
  std::string filter_key_extractor;  // Name() of the extractor the filter was built with
  std::string user_properties;       // opaque bytes set by TableBuilder::SetUserProperties

  // Appends the encoded properties block (not yet compressed or trailed).
  void EncodeTo(std::string* dst) const;
  // Decodes a properties block. Errors are DataLoss naming `file_name` and `offset`.
  Status DecodeFrom(std::string_view block, std::string_view file_name, uint64_t offset);
};

// A block's uncompressed contents: `data` points into `owned` or, when that is null, into
// memory that the producer says outlives it.
struct BlockContents {
  std::string_view data;
  std::unique_ptr<char[]> owned;
};

// Compresses blocks for a builder; keeps the compression context and output buffer between
// calls. Not thread-safe.
class BlockCompressor {
 public:
  BlockCompressor(CompressionType type, int zstd_level);
  ~BlockCompressor();
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;

  // Returns what to store for `raw` and sets `*type` to how it is stored: compressed when that
  // saves at least 12.5%, else `raw` itself with kNone. The result is valid until the next call.
  std::string_view Compress(std::string_view raw, CompressionType* type);

 private:
  const CompressionType type_;
  const int zstd_level_;
  std::string buf_;
  ZSTD_CCtx_s* zstd_ = nullptr;
};

// Appends the 5-byte trailer for `stored` (already compressed per `type`) to `dst`.
void AppendBlockTrailer(std::string_view stored, CompressionType type, std::string* dst);

// Checks the trailer of `stored` (contents followed by the trailer) and uncompresses. When the
// block is stored uncompressed, result->data points into `stored` and result->owned is null;
// otherwise result->owned holds the uncompressed bytes. Errors are DataLoss naming `file_name`
// and `offset` (the block's offset in the file).
Status DecodeStoredBlock(std::string_view stored, std::string_view file_name, uint64_t offset,
                         BlockContents* result);

// Reads the block `handle` from `file` (one read, one allocation for an uncompressed block),
// verifies and uncompresses it; result->owned is always set. Short reads are DataLoss.
// `stats` may be null.
Status ReadBlock(const RandomAccessFile& file, std::string_view file_name,
                 const BlockHandle& handle, ReadStats* stats, BlockContents* result);

// Reads exactly `n` bytes at `offset` into `scratch` (which must hold `n` bytes); a short read
// is DataLoss ("truncated"). On success `*result` has `n` bytes.
Status ReadExactly(const RandomAccessFile& file, std::string_view file_name, uint64_t offset,
                   size_t n, char* scratch, std::string_view* result);

}  // namespace tessera::storage
