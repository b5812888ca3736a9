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

}  // namespace
}  // namespace tessera
