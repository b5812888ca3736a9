#include "tessera/util/random.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(RandomTest, DeterministicForASeed) {
  Random a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next64();
    EXPECT_EQ(x, b.Next64());
    differs |= (x != c.Next64());
  }
  EXPECT_TRUE(differs);
}

TEST(RandomTest, UniformStaysInRangeAndCoversIt) {
  Random r(7);
  int seen[10] = {};
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = r.Uniform(10);
    ASSERT_LT(v, 10u);
    seen[v]++;
  }
  for (int c : seen) EXPECT_GT(c, 800);
}

}  // namespace
}  // namespace tessera
