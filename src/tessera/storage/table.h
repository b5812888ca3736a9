// Table: an open, immutable SSTable (format: docs/sstable_format.md) that serves reads.
//
// Open() reads the footer, the index block, the properties and the filter and keeps them in
// memory; data blocks are read on demand, through the block cache when one is given. A Seek
// consults the in-memory index and reads only the data block that can hold the target, so
// reading one cell of a very wide row costs one block, not the row.
//
// With `in_memory`, Open() reads the whole file at once, checks and decodes every block, and
// serves all reads from memory without touching the file or the cache again (Bigtable's
// in-memory locality groups).
//
// Every block read is checksum-verified. Corrupt data yields DataLoss naming the file and the
// block offset, never wrong data and never a crash, whatever the file holds. A corrupt filter
// block is the one exception that does not fail: the table then works without its filter
// (KeyMayMatch always true) and filter_status() reports the DataLoss.
//
// Thread-safety: after Open() a Table is immutable; every method may be called concurrently.
// Each iterator is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/storage/block.h"
#include "tessera/storage/block_cache.h"
#include "tessera/storage/bloom.h"
#include "tessera/storage/format.h"
#include "tessera/storage/iterator.h"
#include "tessera/storage/table_options.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage {

class Table {
 private:
  struct PassKey {};

 public:
  // Opens the table in `file` of `file_size` bytes. `file_name` names it in errors.
  // `cache` (may be null) must outlive the table; `cache_id` must come from cache->NewId() and
  // be used by no other table. options.comparator (and filter_key_extractor, when set) must
  // outlive the table.
  // Errors: DataLoss for a damaged or truncated file, InvalidArgument when the file was written
  // with another comparator or by a newer format version; file errors pass through.
  static StatusOr<std::unique_ptr<Table>> Open(const TableOptions& options, std::string file_name,
                                               std::unique_ptr<RandomAccessFile> file,
                                               uint64_t file_size, BlockCache* cache,
                                               uint64_t cache_id, bool in_memory);

  // Use Open().
  Table(PassKey, const TableOptions& options, std::string file_name,
        std::unique_ptr<RandomAccessFile> file, uint64_t file_size, BlockCache* cache,
        uint64_t cache_id);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // Iterates all entries. The table must outlive the iterator. Errors (a corrupt block, a
  // failed read) make it !Valid() for good, with the error in status().
  std::unique_ptr<Iterator> NewIterator(const TableReadOptions& read_options) const;

  // False only when no key of the table has `filter_key` as its filter key. True when the
  // table has no usable filter.
  bool KeyMayMatch(std::string_view filter_key) const;
  // Whether KeyMayMatch can ever say false.
  bool has_filter() const { return filter_.has_value(); }
  // OK, or the DataLoss error that made Open() drop a corrupt filter block.
  const Status& filter_status() const { return filter_status_; }

  // The approximate file offset where the data for `key` starts (or would). Monotone in `key`;
  // a key past the last one gives properties().data_size.
  uint64_t ApproximateOffsetOf(std::string_view key) const;

  // Loads into the block cache every data block that may hold keys in [start_key, end_key)
  // (an empty end_key means no upper bound). Does nothing without a cache or when in memory.
  Status WarmBlocksFor(std::string_view start_key, std::string_view end_key) const;

  const TableProperties& properties() const { return properties_; }
  const std::string& file_name() const { return file_name_; }
  uint64_t file_size() const { return file_size_; }
  bool in_memory() const { return file_contents_ != nullptr; }
  // Memory held by the table itself (index, filter and, when in memory, the file and decoded
  // blocks); blocks in the cache are not counted.
  size_t ApproximateMemoryUsage() const;

 private:
  friend class TableIterator;

  // Reads and decodes the metadata, and the whole file when `in_memory`.
  Status Load(bool in_memory);
  // The stored block `handle` from the in-memory file or the file, checked and uncompressed.
  Status ReadMetaBlock(const BlockHandle& handle, BlockContents* contents) const;
  Status CheckHandle(const BlockHandle& handle, std::string_view what) const;
  Status LoadFilter();
  Status LoadAllDataBlocks();
  // The data block `handle`, from memory, the cache or the file (read through `via` when not
  // null: a view of file_, such as a read-ahead); sets *from_file (when not null) if it was
  // read from the file.
  Status GetDataBlock(const BlockHandle& handle, const TableReadOptions& read_options,
                      std::shared_ptr<const Block>* block, bool* from_file = nullptr,
                      const RandomAccessFile* via = nullptr) const;
  // Decodes the handle at the index iterator's position; errors name the index block.
  Status DecodeIndexValue(std::string_view value, BlockHandle* handle) const;

  const TableOptions options_;
  const std::string file_name_;
  const std::unique_ptr<RandomAccessFile> file_;
  const uint64_t file_size_;
  BlockCache* const cache_;
  const uint64_t cache_id_;

  // Set by Open() and never changed afterwards.
  Footer footer_;
  uint64_t footer_offset_ = 0;  // data of every block lies before this
  TableProperties properties_;
  std::shared_ptr<const Block> index_block_;
  BlockContents filter_contents_;
  std::optional<BloomFilterReader> filter_;
  Status filter_status_;
  // In-memory tables: the whole file, and every data block decoded, sorted by offset.
  // Uncompressed blocks point into file_contents_.
  std::unique_ptr<char[]> file_contents_;
  std::vector<std::pair<uint64_t, std::shared_ptr<const Block>>> memory_blocks_;
  size_t memory_blocks_bytes_ = 0;
};

}  // namespace tessera::storage
