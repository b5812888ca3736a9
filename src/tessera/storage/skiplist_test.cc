#include "tessera/storage/skiplist.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/arena.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

// Keys in these tests are 8-byte native-endian integers.
uint64_t Decode(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

struct U64Compare {
  int operator()(const char* a, const char* b) const {
    uint64_t x = Decode(a), y = Decode(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
};
using IntList = SkipList<U64Compare>;

// A search key on the stack.
struct K {
  explicit K(uint64_t v) { std::memcpy(buf, &v, 8); }
  operator const char*() const { return buf; }
  char buf[8];
};

void Insert(IntList* list, uint64_t v) {
  char* key = list->AllocateKey(8);
  std::memcpy(key, &v, 8);
  list->Insert(key);
}

TEST(SkipListTest, Empty) {
  Arena arena;
  IntList list(U64Compare(), &arena, 1);
  EXPECT_FALSE(list.Contains(K(10)));
  IntList::Iterator it(&list);
  EXPECT_FALSE(it.Valid());
  it.SeekToFirst();
  EXPECT_FALSE(it.Valid());
  it.Seek(K(100));
  EXPECT_FALSE(it.Valid());
  it.SeekToLast();
  EXPECT_FALSE(it.Valid());
}

// Random inserts checked against std::set: membership, full scans both ways, and random walks.
TEST(SkipListTest, MatchesStdSet) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  Random rnd(seed);
  Arena arena;
  IntList list(U64Compare(), &arena, rnd.Next64());
  std::set<uint64_t> model;

  constexpr int kInserts = 4000;
  constexpr uint64_t kRange = 10000;
  for (int i = 0; i < kInserts; i++) {
    uint64_t k = rnd.Uniform(kRange);
    if (model.insert(k).second) Insert(&list, k);
  }
  for (uint64_t k = 0; k < kRange; k++) {
    ASSERT_EQ(list.Contains(K(k)), model.count(k) == 1) << k;
  }

  // Forward and backward scans.
  {
    IntList::Iterator it(&list);
    it.SeekToFirst();
    for (uint64_t k : model) {
      ASSERT_TRUE(it.Valid());
      ASSERT_EQ(Decode(it.key()), k);
      it.Next();
    }
    EXPECT_FALSE(it.Valid());
    it.SeekToLast();
    for (auto k = model.rbegin(); k != model.rend(); ++k) {
      ASSERT_TRUE(it.Valid());
      ASSERT_EQ(Decode(it.key()), *k);
      it.Prev();
    }
    EXPECT_FALSE(it.Valid());
  }

  // Random walks: Seek then a few steps either way.
  IntList::Iterator it(&list);
  for (int i = 0; i < 2000; i++) {
    uint64_t target = rnd.Uniform(kRange + 10);
    it.Seek(K(target));
    auto m = model.lower_bound(target);
    for (int step = 0; step < 8; step++) {
      ASSERT_EQ(it.Valid(), m != model.end()) << "target " << target << " step " << step;
      if (!it.Valid()) break;
      ASSERT_EQ(Decode(it.key()), *m);
      if (rnd.OneIn(2)) {
        it.Next();
        ++m;
      } else {
        it.Prev();
        if (m == model.begin()) {
          ASSERT_FALSE(it.Valid());
          break;
        }
        --m;
      }
    }
  }
}

// Insert() skips the search when a key goes right after the previous one. Ascending runs starting
// at random places (where the hint is right) mixed with descending runs and jumps (where it is
// wrong and must be detected) are checked against std::set, at every level through Seek.
TEST(SkipListTest, SequentialRunsAndJumps) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  Random rnd(seed);
  Arena arena;
  IntList list(U64Compare(), &arena, rnd.Next64());
  std::set<uint64_t> model;
  for (int run = 0; run < 300; run++) {
    uint64_t k = rnd.Uniform(1000000);
    const bool ascending = !rnd.OneIn(4);
    const int len = static_cast<int>(rnd.Uniform(40));
    for (int i = 0; i < len; i++) {
      if (model.insert(k).second) Insert(&list, k);
      k = ascending ? k + 1 + rnd.Uniform(3) : k - 1 - rnd.Uniform(3);
    }
  }
  IntList::Iterator it(&list);
  it.SeekToFirst();
  for (uint64_t k : model) {
    ASSERT_TRUE(it.Valid());
    ASSERT_EQ(Decode(it.key()), k);
    it.Next();
  }
  EXPECT_FALSE(it.Valid());
  for (int i = 0; i < 2000; i++) {
    uint64_t target = rnd.Uniform(1000100);
    it.Seek(K(target));
    auto m = model.lower_bound(target);
    ASSERT_EQ(it.Valid(), m != model.end());
    if (it.Valid()) {
      ASSERT_EQ(Decode(it.key()), *m);
    }
  }
}

// The height distribution follows the branching factor: about 1/4 of nodes reach level 2. Checked
// indirectly through memory: nodes average 1 + 1/3 links plus an 8-byte key, so 100k nodes take
// well under 100k * 40 bytes (a broken RandomHeight giving tall nodes would exceed it).
TEST(SkipListTest, NodesAreSmall) {
  Arena arena;
  IntList list(U64Compare(), &arena, 7);
  for (uint64_t k = 0; k < 100000; k++) Insert(&list, k * 7919 % 100003);
  EXPECT_LT(arena.MemoryUsage(), size_t{100000} * 40);
  EXPECT_GT(arena.MemoryUsage(), size_t{100000} * 16);
}

// One writer inserts a random permutation of [0, kKeys) while two readers scan and probe. Each
// reader snapshots how many keys were published before it starts a scan; the scan must be strictly
// increasing, must contain every key published before it started, and may contain only keys from
// the permutation. Bounded to about a second of wall time.
TEST(SkipListTest, ConcurrentReadersSeeSortedConsistentView) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  constexpr uint32_t kKeys = 60000;
  Random rnd(seed);
  std::vector<uint64_t> order(kKeys);
  std::iota(order.begin(), order.end(), 0);
  for (uint32_t i = kKeys - 1; i > 0; i--) std::swap(order[i], order[rnd.Uniform(i + 1)]);

  Arena arena;
  IntList list(U64Compare(), &arena, seed);
  std::atomic<uint32_t> published{0};
  std::atomic<bool> done{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);

  std::thread writer([&] {
    for (uint32_t i = 0; i < kKeys; i++) {
      Insert(&list, order[i]);
      published.store(i + 1, std::memory_order_release);
      if (i % 64 == 0) {
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::yield();  // let the readers interleave on a busy machine
      }
    }
    done.store(true, std::memory_order_release);
  });

  std::atomic<int> failures{0};
  std::atomic<int> scans{0};
  auto reader = [&](uint64_t reader_seed) {
    Random r(reader_seed);
    std::vector<uint32_t> seen_at(kKeys, 0);  // scan number + 1 that saw the key
    uint32_t scan = 0;
    while (failures.load() == 0) {
      bool last = done.load(std::memory_order_acquire);
      scan++;
      const uint32_t before = published.load(std::memory_order_acquire);
      IntList::Iterator it(&list);
      it.SeekToFirst();
      uint64_t prev = 0;
      bool first = true;
      for (; it.Valid(); it.Next()) {
        uint64_t k = Decode(it.key());
        if (k >= kKeys || (!first && k <= prev)) {
          failures++;
          ADD_FAILURE() << "out of order or unknown key " << k << " after " << prev;
          return;
        }
        seen_at[k] = scan;
        prev = k;
        first = false;
      }
      const uint32_t after = published.load(std::memory_order_acquire);
      for (uint32_t i = 0; i < before; i++) {
        if (seen_at[order[i]] != scan) {
          failures++;
          ADD_FAILURE() << "scan missed key " << order[i] << " published at " << i;
          return;
        }
      }
      // Seeks and Contains for published keys; a Seek lands on the key itself.
      for (int probe = 0; probe < 200 && after > 0; probe++) {
        uint64_t k = order[r.Uniform(after)];
        it.Seek(K(k));
        if (!list.Contains(K(k)) || !it.Valid() || Decode(it.key()) != k) {
          failures++;
          ADD_FAILURE() << "published key " << k << " not found";
          return;
        }
      }
      scans++;
      if (last || std::chrono::steady_clock::now() > deadline + std::chrono::milliseconds(200)) {
        break;
      }
    }
  };
  std::thread reader1(reader, seed + 1);
  std::thread reader2(reader, seed + 2);
  writer.join();
  reader1.join();
  reader2.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(scans.load(), 2);
  // The final state is complete.
  const uint32_t n = published.load();
  for (uint32_t i = 0; i < n; i++) ASSERT_TRUE(list.Contains(K(order[i])));
}

}  // namespace
}  // namespace tessera::storage
