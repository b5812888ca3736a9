// Options for writing and reading one SSTable (see docs/sstable_format.md for the format).
//
// TableOptions is given to both the builder and the reader; the fields the reader uses are
// marked. TableReadOptions applies to one iterator or read. ReadStats counts what reads did,
// so callers (and tests) can see how many blocks a seek touched.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/storage/comparator.h"
#include "tessera/storage/filter_key.h"

namespace tessera::storage {

// How a block is compressed on disk. Stored in each block's trailer, so a table may mix types
// and the reader needs no option for it. Values are persisted: never renumber.
enum class CompressionType : uint8_t {
  kNone = 0,
  kLz4 = 1,
  kZstd = 2,
};

struct TableOptions {
  // ---- Behaviour ----

  // Orders the keys. Its Name() is stored in the footer and checked when a table is opened:
  // opening a table written with another comparator fails with InvalidArgument.
  // Must outlive every builder and table using these options. Used by builder and reader.
  const Comparator* comparator = BytewiseComparator();

  // Maps each key to the key of the whole-file bloom filter; null builds no filter. The reader
  // uses a table's filter only when this extractor has the name the table was built with
  // (see filter_key.h); otherwise KeyMayMatch() answers true. Must outlive builder and table.
  // Used by builder and reader.
  const FilterKeyExtractor* filter_key_extractor = nullptr;

  // ---- Performance (builder only; changing them never changes what is read back) ----

  // Target size in bytes of the uncompressed contents of a data block. A block is cut once it
  // reaches this size, so a block may exceed it by one entry. Clamped to [1 KiB, 256 MiB].
  size_t block_size = 64 * 1024;

  // Keys between restart points, where prefix compression restarts and Seek's binary search
  // lands. Smaller = faster seeks, larger blocks. Clamped to [1, 65536].
  int block_restart_interval = 16;

  // Compression of data blocks, and of the index and properties blocks (the filter and
  // metaindex blocks are never compressed). A block is stored uncompressed when compression
  // saves less than 12.5%.
  CompressionType compression = CompressionType::kLz4;

  // zstd level (1 = fastest; 3 = zstd's default). Only for kZstd.
  int zstd_level = 3;

  // Bloom filter size: bits per distinct filter key. 10 gives about 1% false positives.
  // Clamped to [1, 40].
  int bloom_bits_per_key = 10;
};

// What reads did. Plain counters: give each thread (or each iterator) its own, or synchronize.
struct ReadStats {
  uint64_t blocks_read_from_file = 0;  // blocks read (and checked) from the file
  uint64_t blocks_from_cache = 0;      // blocks found in the block cache
  uint64_t blocks_from_memory = 0;     // blocks served by an in-memory table
  uint64_t bytes_read = 0;             // bytes read from the file, block trailers included

  void Clear() { *this = ReadStats(); }
};

struct TableReadOptions {
  // Insert blocks read from the file into the block cache. Turn off for scans that should not
  // evict the working set (compactions, full-table scans).
  bool fill_cache = true;
  // With fill_cache, an iterator inserts only the first this many blocks it reads from the
  // file, and reads the rest without caching them: a long scan then neither evicts the working
  // set nor pays for inserting and evicting a block per block it passes (a short scan, which
  // is read again soon, is still cached). Point reads leave it unbounded.
  uint64_t fill_cache_blocks = UINT64_MAX;
  // When not 0, an iterator that reads from the file the block right after the last one it
  // read there (a forward scan) reads ahead and takes the next blocks from what it read: 16 KiB
  // the first time, twice as much each next time, up to this many bytes -- one system call per
  // this many bytes instead of one per block once a scan is long, and little read in vain by a
  // short one. The first block read and every jump (a seek, a cache hit in between) read only
  // their block.
  size_t readahead_bytes = 0;
  // When not null, reads add to these counters. Must outlive the iterator. Not synchronized.
  ReadStats* stats = nullptr;
};

}  // namespace tessera::storage
