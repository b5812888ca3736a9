#include "tessera/storage/block_cache.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/block_builder.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

// A valid block of about `bytes` bytes whose single value is `fill`.
std::shared_ptr<const Block> MakeBlock(size_t bytes, char fill = 'x') {
  BlockBuilder builder(16);
  builder.Add("k", std::string(bytes, fill));
  std::string_view data = builder.Finish();
  auto owned = std::unique_ptr<char[]>(new char[data.size()]);
  std::memcpy(owned.get(), data.data(), data.size());
  auto block = Block::Create(
      BlockContents{std::string_view(owned.get(), data.size()), std::move(owned)}, "cache.sst", 0);
  EXPECT_TRUE(block.ok());
  return *block;
}

TEST(BlockCacheTest, HitMissAndStats) {
  BlockCache cache(1 << 20);
  const uint64_t id = cache.NewId();
  EXPECT_EQ(cache.Lookup(id, 0), nullptr);
  auto block = MakeBlock(100);
  cache.Insert(id, 0, block);
  EXPECT_EQ(cache.Lookup(id, 0), block);
  EXPECT_EQ(cache.Lookup(id, 1), nullptr);
  EXPECT_EQ(cache.Lookup(id + 1, 0), nullptr);
  const BlockCache::Stats stats = cache.GetStats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.inserts, 1u);
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.usage, block->charge());
  EXPECT_EQ(stats.capacity, size_t{1} << 20);
}

TEST(BlockCacheTest, IdsAreUnique) {
  BlockCache cache(0);
  std::set<uint64_t> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(cache.NewId());
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(ids.count(0), 0u);
}

TEST(BlockCacheTest, ReplaceAndEraseKeepUsageRight) {
  BlockCache cache(1 << 20);
  auto a = MakeBlock(100);
  auto b = MakeBlock(300);
  cache.Insert(7, 64, a);
  cache.Insert(7, 64, b);
  EXPECT_EQ(cache.Lookup(7, 64), b);
  EXPECT_EQ(cache.GetStats().usage, b->charge());
  EXPECT_EQ(cache.GetStats().entries, 1u);
  cache.Erase(7, 64);
  cache.Erase(7, 64);  // absent: no-op
  EXPECT_EQ(cache.Lookup(7, 64), nullptr);
  EXPECT_EQ(cache.GetStats().usage, 0u);
  EXPECT_EQ(cache.GetStats().entries, 0u);
}

TEST(BlockCacheTest, UsageStaysWithinCapacity) {
  constexpr size_t kCapacity = 64 * 1024;
  BlockCache cache(kCapacity);
  auto block = MakeBlock(1000);
  for (uint64_t i = 0; i < 1000; ++i) cache.Insert(1, i * 4096, block);
  const BlockCache::Stats stats = cache.GetStats();
  EXPECT_LE(stats.usage, kCapacity);
  EXPECT_GT(stats.usage, kCapacity / 2);
  EXPECT_GT(stats.evictions, 900u);
  EXPECT_EQ(stats.entries * block->charge(), stats.usage);
}

TEST(BlockCacheTest, RecentlyUsedBlockSurvives) {
  // Each shard holds about two blocks.
  auto hot = MakeBlock(1000, 'h');
  BlockCache cache(16 * (2 * hot->charge() + 100));
  cache.Insert(1, 0, hot);
  for (uint64_t i = 1; i < 2000; ++i) {
    ASSERT_EQ(cache.Lookup(1, 0), hot) << i;
    cache.Insert(1, i * 4096, MakeBlock(1000));
  }
  EXPECT_GT(cache.GetStats().evictions, 1000u);
}

TEST(BlockCacheTest, EvictedBlockStaysAliveWhileUsed) {
  BlockCache cache(16 * 2000);
  std::shared_ptr<const Block> pinned = MakeBlock(1500, 'p');
  const std::string_view data = pinned->data();
  cache.Insert(1, 0, pinned);
  std::weak_ptr<const Block> weak = pinned;
  pinned.reset();
  std::shared_ptr<const Block> user = cache.Lookup(1, 0);
  ASSERT_NE(user, nullptr);
  for (uint64_t i = 1; i < 200; ++i) cache.Insert(1, i * 4096, MakeBlock(1500));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);  // evicted...
  EXPECT_FALSE(weak.expired());            // ...but alive while `user` holds it
  EXPECT_EQ(user->data(), data);
  EXPECT_EQ(data[10], 'p');
  user.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(BlockCacheTest, OversizedBlockIsNotCached) {
  BlockCache cache(16 * 1024);  // 1 KiB per shard
  cache.Insert(1, 0, MakeBlock(4096));
  EXPECT_EQ(cache.Lookup(1, 0), nullptr);
  EXPECT_EQ(cache.GetStats().usage, 0u);
  BlockCache disabled(0);
  disabled.Insert(1, 0, MakeBlock(10));
  EXPECT_EQ(disabled.Lookup(1, 0), nullptr);
}

TEST(BlockCacheTest, ConcurrentUse) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  constexpr size_t kCapacity = 256 * 1024;
  BlockCache cache(kCapacity);
  std::vector<std::shared_ptr<const Block>> blocks;
  for (int i = 0; i < 64; ++i)
    blocks.push_back(MakeBlock(500 + 40 * i, static_cast<char>('a' + i % 26)));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Random rnd(seed + t);
      for (int i = 0; i < 20000; ++i) {
        const uint64_t key = rnd.Uniform(blocks.size() * 4);
        const auto& expected = blocks[key % blocks.size()];
        if (rnd.OneIn(3)) {
          cache.Insert(9, key, expected);
        } else if (auto got = cache.Lookup(9, key); got != nullptr && got != expected) {
          wrong++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const BlockCache::Stats stats = cache.GetStats();
  EXPECT_LE(stats.usage, kCapacity);
  EXPECT_GT(stats.hits, 0u);
}

}  // namespace
}  // namespace tessera::storage
