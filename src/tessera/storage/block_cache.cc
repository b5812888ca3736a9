#include "tessera/storage/block_cache.h"

#include <list>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tessera::storage {
namespace {

struct CacheKey {
  uint64_t cache_id;
  uint64_t offset;

  bool operator==(const CacheKey& o) const { return cache_id == o.cache_id && offset == o.offset; }
  template <typename H>
  friend H AbslHashValue(H h, const CacheKey& k) {
    return H::combine(std::move(h), k.cache_id, k.offset);
  }
};

inline uint64_t MixKey(uint64_t cache_id, uint64_t offset) {
  uint64_t z = cache_id * 0x9e3779b97f4a7c15ull ^ offset;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

// One LRU: a list ordered most recently used first, and a map from key to list node.
class alignas(64) BlockCache::Shard {
 public:
  void set_capacity(size_t capacity) { capacity_ = capacity; }

  std::shared_ptr<const Block> Lookup(const CacheKey& key) {
    absl::MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->block;
  }

  void Insert(const CacheKey& key, std::shared_ptr<const Block> block) {
    const size_t charge = block->charge();
    if (charge > capacity_) return;
    // Blocks dropped here are freed after the lock is released.
    std::vector<std::shared_ptr<const Block>> dropped;
    {
      absl::MutexLock lock(&mu_);
      ++inserts_;
      auto [it, inserted] = map_.try_emplace(key);
      if (!inserted) {
        usage_ -= it->second->charge;
        dropped.push_back(std::move(it->second->block));
        it->second->block = std::move(block);
        it->second->charge = charge;
        lru_.splice(lru_.begin(), lru_, it->second);
      } else {
        lru_.push_front(Entry{key, std::move(block), charge});
        it->second = lru_.begin();
      }
      usage_ += charge;
      while (usage_ > capacity_ && lru_.size() > 1) {
        Entry& victim = lru_.back();
        usage_ -= victim.charge;
        ++evictions_;
        dropped.push_back(std::move(victim.block));
        map_.erase(victim.key);
        lru_.pop_back();
      }
    }
  }

  void Erase(const CacheKey& key) {
    std::shared_ptr<const Block> dropped;
    absl::MutexLock lock(&mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return;
    usage_ -= it->second->charge;
    dropped = std::move(it->second->block);
    lru_.erase(it->second);
    map_.erase(it);
    // `dropped` outlives `lock` (declared first), so the block is freed after unlocking.
  }

  void AddStats(Stats* stats) const {
    absl::MutexLock lock(&mu_);
    stats->hits += hits_;
    stats->misses += misses_;
    stats->inserts += inserts_;
    stats->evictions += evictions_;
    stats->entries += map_.size();
    stats->usage += usage_;
  }

 private:
  struct Entry {
    CacheKey key;
    std::shared_ptr<const Block> block;
    size_t charge;
  };

  size_t capacity_ = 0;  // set before the cache is shared
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<CacheKey, std::list<Entry>::iterator> map_ ABSL_GUARDED_BY(mu_);
  size_t usage_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t inserts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
};

BlockCache::BlockCache(size_t capacity_bytes)
    : capacity_(capacity_bytes), shards_(new Shard[kNumShards]) {
  const size_t per_shard = (capacity_bytes + kNumShards - 1) / kNumShards;
  for (int i = 0; i < kNumShards; ++i) shards_[i].set_capacity(per_shard);
}

BlockCache::~BlockCache() = default;

BlockCache::Shard& BlockCache::ShardFor(uint64_t cache_id, uint64_t offset) {
  return shards_[MixKey(cache_id, offset) >> 60];  // top 4 bits: 16 shards
}

std::shared_ptr<const Block> BlockCache::Lookup(uint64_t cache_id, uint64_t offset) {
  return ShardFor(cache_id, offset).Lookup(CacheKey{cache_id, offset});
}

void BlockCache::Insert(uint64_t cache_id, uint64_t offset, std::shared_ptr<const Block> block) {
  ShardFor(cache_id, offset).Insert(CacheKey{cache_id, offset}, std::move(block));
}

void BlockCache::Erase(uint64_t cache_id, uint64_t offset) {
  ShardFor(cache_id, offset).Erase(CacheKey{cache_id, offset});
}

BlockCache::Stats BlockCache::GetStats() const {
  Stats stats;
  stats.capacity = capacity_;
  for (int i = 0; i < kNumShards; ++i) shards_[i].AddStats(&stats);
  return stats;
}

}  // namespace tessera::storage
