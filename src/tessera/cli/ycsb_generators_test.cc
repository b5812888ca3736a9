#include "tessera/cli/ycsb_generators.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::cli::ycsb {
namespace {

TEST(KeyNameTest, MatchesYcsbHashedKeys) {
  // The first record of every YCSB load is user6284781860667377211.
  EXPECT_EQ(KeyName(0), "user6284781860667377211");
  EXPECT_EQ(KeyName(1), "user8517097267634966620");
  EXPECT_EQ(KeyName(12345), "user1792800413050876852");
  EXPECT_EQ(FnvHash64(99999999), 3767403666534399336ull);
  std::string reused = "something long that must be replaced entirely";
  KeyName(0, &reused);
  EXPECT_EQ(reused, "user6284781860667377211");
}

TEST(UniformGeneratorTest, CoversRangeEvenly) {
  Random rng(1);
  UniformGenerator g(10, 19);
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 100000; i++) counts[g.Next(&rng)]++;
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, 10u);
  EXPECT_EQ(counts.rbegin()->first, 19u);
  for (const auto& [v, n] : counts) EXPECT_NEAR(n, 10000, 500) << v;
}

TEST(ZipfianGeneratorTest, ZetaOfTenBillionMatchesYcsbConstant) {
  // zeta(10^10) = zeta(10^6) summed exactly + the tail as an integral (midpoint rule), which is
  // accurate to ~1e-9 this far out.
  constexpr double kTheta = ZipfianGenerator::kZipfianConstant;
  const double head = ZipfianGenerator::Zeta(0, 1000000, kTheta);
  const double tail =
      (std::pow(1e10 + 0.5, 1 - kTheta) - std::pow(1e6 + 0.5, 1 - kTheta)) / (1 - kTheta);
  EXPECT_NEAR(head + tail, ScrambledZipfianGenerator::kZetan, 1e-6);
}

TEST(ZipfianGeneratorTest, FrequenciesFollowZipfsLaw) {
  constexpr uint64_t kItems = 1000;
  constexpr int kDraws = 400000;
  constexpr double kTheta = ZipfianGenerator::kZipfianConstant;
  Random rng(7);
  ZipfianGenerator g(100, 100 + kItems - 1);
  std::vector<int> counts(kItems, 0);
  for (int i = 0; i < kDraws; i++) {
    const uint64_t v = g.Next(&rng);
    ASSERT_GE(v, 100u);
    ASSERT_LT(v, 100 + kItems);
    counts[v - 100]++;
  }
  const double zetan = ZipfianGenerator::Zeta(0, kItems, kTheta);
  // The two most popular items are drawn with their exact probabilities.
  EXPECT_NEAR(counts[0] / double(kDraws), 1 / zetan, 0.01);
  EXPECT_NEAR(counts[1] / double(kDraws), 1 / std::pow(2, kTheta) / zetan, 0.01);
  // The rest follow an approximation: check the mass of the top 10 and top 100.
  auto mass = [&](int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m += counts[i];
    return m / kDraws;
  };
  EXPECT_NEAR(mass(10), ZipfianGenerator::Zeta(0, 10, kTheta) / zetan, 0.03);
  EXPECT_NEAR(mass(100), ZipfianGenerator::Zeta(0, 100, kTheta) / zetan, 0.03);
  // Popularity falls with rank.
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], counts[10]);
  EXPECT_GT(mass(10) - mass(1), mass(1000) - mass(990));
}

TEST(ZipfianGeneratorTest, GrowingPopulationUpdatesZetaIncrementally) {
  Random rng(3);
  ZipfianGenerator grown(0, 99);
  for (int i = 0; i < 10; i++) grown.NextOf(&rng, 100 + i * 100);
  // The same population from scratch draws the same numbers from the same random stream.
  ZipfianGenerator fresh(0, 999);
  Random a(11);
  Random b(11);
  for (int i = 0; i < 1000; i++) ASSERT_EQ(grown.NextOf(&a, 1000), fresh.Next(&b)) << i;
  // Shrinking recomputes.
  for (int i = 0; i < 1000; i++) ASSERT_LT(grown.NextOf(&a, 10), 10u);
}

TEST(ZipfianGeneratorTest, TinyPopulations) {
  Random rng(5);
  ZipfianGenerator one(42, 42);
  ZipfianGenerator two(0, 1);
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(one.Next(&rng), 42u);
    ASSERT_LE(two.Next(&rng), 1u);
  }
}

TEST(ScrambledZipfianGeneratorTest, HotItemsAreScatteredWithZipfianPopularity) {
  constexpr uint64_t kItems = 10000;
  constexpr int kDraws = 300000;
  Random rng(9);
  ScrambledZipfianGenerator g(0, kItems - 1);
  std::vector<int> counts(kItems, 0);
  for (int i = 0; i < kDraws; i++) {
    const uint64_t v = g.Next(&rng);
    ASSERT_LT(v, kItems);
    counts[v]++;
  }
  std::vector<uint64_t> order(kItems);
  for (uint64_t i = 0; i < kItems; i++) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint64_t a, uint64_t b) { return counts[a] > counts[b]; });
  // The hottest item is zipfian item 0 of 10^10: 1/zeta(10^10) of the draws.
  EXPECT_NEAR(counts[order[0]] / double(kDraws), 1 / ScrambledZipfianGenerator::kZetan, 0.005);
  EXPECT_EQ(order[0], FnvHash64(0) % kItems);
  // The ten hottest are spread over the key space rather than packed at one end.
  const auto [lo, hi] = std::minmax_element(order.begin(), order.begin() + 10);
  EXPECT_GT(*hi - *lo, kItems / 2);
}

TEST(AcknowledgedCounterTest, LastAdvancesOnlyOverContiguousAcknowledgements) {
  AcknowledgedCounter c(100);
  EXPECT_EQ(c.Last(), 99u);
  const uint64_t a = c.Next();
  const uint64_t b = c.Next();
  const uint64_t d = c.Next();
  EXPECT_EQ(a, 100u);
  EXPECT_EQ(d, 102u);
  c.Acknowledge(d);
  EXPECT_EQ(c.Last(), 99u);
  c.Acknowledge(b);
  EXPECT_EQ(c.Last(), 99u);
  c.Acknowledge(a);
  EXPECT_EQ(c.Last(), 102u);
}

TEST(AcknowledgedCounterTest, ConcurrentInsertersLeaveNoGap) {
  AcknowledgedCounter c(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; i++) c.Acknowledge(c.Next());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Last(), 8000u);
}

TEST(SkewedLatestGeneratorTest, NewestRecordsAreTheMostPopular) {
  AcknowledgedCounter c(1000);
  SkewedLatestGenerator g(&c, ZipfianGenerator::Zeta(0, 1000, ZipfianGenerator::kZipfianConstant));
  Random rng(13);
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 50000; i++) {
    const uint64_t v = g.Next(&rng);
    ASSERT_LE(v, 999u);
    counts[v]++;
  }
  EXPECT_GT(counts[999], counts[998]);
  EXPECT_GT(counts[998], counts[900]);
  EXPECT_GT(counts[999], 50000 / 10);  // 1/zeta(1000) ~ 13 %

  for (int i = 0; i < 100; i++) c.Acknowledge(c.Next());
  counts.clear();
  for (int i = 0; i < 50000; i++) {
    const uint64_t v = g.Next(&rng);
    ASSERT_LE(v, 1099u);
    counts[v]++;
  }
  EXPECT_GT(counts[1099], counts[999] * 5);
}

TEST(ValueGeneratorTest, ValuesArePrintableAndVaried) {
  ValueGenerator g(1, 100);
  const std::string a(g.Next());
  const std::string b(g.Next());
  ASSERT_EQ(a.size(), 100u);
  ASSERT_EQ(b.size(), 100u);
  EXPECT_NE(a, b);
  for (char c : a + b) {
    EXPECT_GE(c, ' ');
    EXPECT_LE(c, '~');
  }
}

}  // namespace
}  // namespace tessera::cli::ycsb
