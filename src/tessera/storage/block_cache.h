// BlockCache: a bounded cache of decoded table blocks shared by every table of an engine,
// keyed by (cache id, block offset). Each open table takes its own id from NewId(), so ids
// are never reused within a process and a closed table's blocks simply age out.
//
// The cache is 16 independently locked LRU shards; an entry is charged Block::charge() bytes
// and each shard evicts its least recently used entries to stay within capacity/16. Values are
// std::shared_ptr<const Block>: eviction drops the cache's reference only, so a block that an
// iterator still reads stays alive until the iterator lets go of it (the capacity bounds what
// the cache holds, not blocks pinned by readers). A block larger than a shard's capacity is
// not cached.
//
// Thread-safety: all methods are thread-safe. No lock is held while a block is freed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tessera/storage/block.h"

namespace tessera::storage {

class BlockCache {
 public:
  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t inserts = 0;
    uint64_t evictions = 0;
    uint64_t entries = 0;
    size_t usage = 0;     // bytes charged by cached blocks
    size_t capacity = 0;  // bytes
  };

  // `capacity_bytes` bounds the total charge of cached blocks; 0 caches nothing.
  explicit BlockCache(size_t capacity_bytes);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A process-unique id for one table's blocks (never 0).
  uint64_t NewId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // The cached block or null; a hit makes the block the most recently used of its shard.
  std::shared_ptr<const Block> Lookup(uint64_t cache_id, uint64_t offset);

  // Caches `block` (replacing any block under the same key) and evicts least recently used
  // blocks of the shard to stay within capacity. REQUIRES: block != nullptr.
  void Insert(uint64_t cache_id, uint64_t offset, std::shared_ptr<const Block> block);

  void Erase(uint64_t cache_id, uint64_t offset);

  size_t capacity() const { return capacity_; }
  // Sums over shards; each shard is read under its lock, so the sum is not one snapshot.
  Stats GetStats() const;

 private:
  static constexpr int kNumShards = 16;
  class Shard;  // defined in the .cc
  Shard& ShardFor(uint64_t cache_id, uint64_t offset);

  const size_t capacity_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace tessera::storage
