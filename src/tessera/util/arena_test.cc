#include "tessera/util/arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tessera/util/random.h"

namespace tessera {
namespace {

TEST(ArenaTest, ManyAllocationsKeepTheirContents) {
  Arena arena(4096);
  Random rnd(301);
  std::vector<std::pair<size_t, char*>> allocated;
  size_t bytes = 0;
  for (int i = 0; i < 5000; ++i) {
    size_t s = (i % 100 == 0) ? rnd.Uniform(6000) + 1 : rnd.Uniform(40) + 1;
    char* r = (i % 3 == 0) ? arena.AllocateAligned(s) : arena.Allocate(s);
    if (i % 3 == 0) EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(r) % 8);
    std::memset(r, i % 256, s);
    bytes += s;
    allocated.emplace_back(s, r);
    EXPECT_GE(arena.MemoryUsage(), bytes);
  }
  for (size_t i = 0; i < allocated.size(); ++i) {
    for (size_t b = 0; b < allocated[i].first; ++b) {
      ASSERT_EQ(static_cast<int>(i % 256), allocated[i].second[b] & 0xff);
    }
  }
}

TEST(ArenaTest, AnArenaThatHoldsLittleReservesLittle) {
  Arena arena(1 << 20);
  arena.Allocate(100);
  EXPECT_LT(arena.MemoryUsage(), 2 * Arena::kFirstBlockSize);
  // Blocks double: 1 MiB of small allocations takes about 1 MiB plus a partly filled block.
  size_t bytes = 100;
  while (bytes < (1 << 20)) bytes += arena.Allocate(1000) != nullptr ? 1000 : 0;
  EXPECT_GE(arena.MemoryUsage(), bytes);
  EXPECT_LT(arena.MemoryUsage(), 3 * bytes);
}

TEST(ArenaTest, TheSharedCounterHoldsTheMemoryOfTheLiveArenas) {
  auto shared = std::make_shared<std::atomic<size_t>>(0);
  {
    Arena a(1 << 16, shared);
    Arena b(4096, shared);
    Random rnd(7);
    for (int i = 0; i < 2000; ++i) {
      a.Allocate(rnd.Uniform(200) + 1);
      b.AllocateAligned(rnd.Uniform(3000) + 1);  // some larger than a quarter block
      ASSERT_EQ(a.MemoryUsage() + b.MemoryUsage(), shared->load());
    }
    const size_t of_a = a.MemoryUsage();
    {
      Arena c(4096, shared);
      c.Allocate(10);
      EXPECT_EQ(of_a + b.MemoryUsage() + c.MemoryUsage(), shared->load());
    }
    EXPECT_EQ(of_a + b.MemoryUsage(), shared->load());
  }
  EXPECT_EQ(0u, shared->load());
}

}  // namespace
}  // namespace tessera
