#include "tessera/cli/ycsb_histogram.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::cli::ycsb {
namespace {

TEST(LatencyHistogramTest, BucketsCoverEveryValueWithinOnePercent) {
  Random rng(1);
  for (int i = 0; i < 100000; i++) {
    const uint64_t v = i < 1000 ? i : rng.Skewed(63);
    const size_t b = LatencyHistogram::BucketOf(v);
    const uint64_t high = LatencyHistogram::BucketHigh(b);
    ASSERT_GE(high, v) << v;
    if (b > 0) {
      ASSERT_LT(LatencyHistogram::BucketHigh(b - 1), v) << v;
    }
    if (v < 256) {
      ASSERT_EQ(high, v);
    } else {
      ASSERT_LE(static_cast<double>(high - v), static_cast<double>(v) / 128) << v;
    }
  }
  EXPECT_EQ(LatencyHistogram::BucketHigh(LatencyHistogram::BucketOf(UINT64_MAX)), UINT64_MAX);
}

TEST(LatencyHistogramTest, EmptyAndSingle) {
  LatencyHistogram h;
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.count(), 0u);
  h.Record(123456);
  EXPECT_EQ(h.Percentile(0), 123456u);
  EXPECT_EQ(h.Percentile(0.5), 123456u);
  EXPECT_EQ(h.Percentile(1), 123456u);
  EXPECT_EQ(h.min_nanos(), 123456u);
  EXPECT_EQ(h.max_nanos(), 123456u);
  EXPECT_DOUBLE_EQ(h.mean_nanos(), 123456);
  h.Record(UINT64_MAX);
  EXPECT_EQ(h.Percentile(1), UINT64_MAX);
}

TEST(LatencyHistogramTest, PercentilesOfAUniformSpread) {
  LatencyHistogram h;
  // 1, 2, ..., 10000 microseconds, in a scrambled order.
  for (uint64_t i = 0; i < 10000; i++) h.Record(((i * 7919) % 10000 + 1) * 1000);
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_NEAR(h.Percentile(0.50), 5000e3, 5000e3 / 128);
  EXPECT_NEAR(h.Percentile(0.99), 9900e3, 9900e3 / 128);
  EXPECT_NEAR(h.Percentile(0.999), 9990e3, 9990e3 / 128);
  EXPECT_EQ(h.Percentile(1.0), 10000000u);
  EXPECT_GE(h.Percentile(0.50), 5000000u);  // never understated
  EXPECT_DOUBLE_EQ(h.mean_nanos(), 5000.5e3);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 200; v++) h.Record(v);
  EXPECT_EQ(h.Percentile(0.5), 100u);
  EXPECT_EQ(h.Percentile(0.99), 198u);
  EXPECT_EQ(h.Percentile(0.995), 199u);
}

TEST(LatencyHistogramTest, TailIsSeen) {
  LatencyHistogram h;
  for (int i = 0; i < 9990; i++) h.Record(100000);  // 100 us
  for (int i = 0; i < 10; i++) h.Record(50000000);  // 50 ms
  EXPECT_LE(h.Percentile(0.99), 100000u * 129 / 128);
  EXPECT_NEAR(h.Percentile(0.9995), 50000000, 50000000 / 128);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverything) {
  LatencyHistogram a;
  LatencyHistogram b;
  LatencyHistogram all;
  Random rng(2);
  for (int i = 0; i < 5000; i++) {
    const uint64_t v = rng.Skewed(30);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min_nanos(), all.min_nanos());
  EXPECT_EQ(a.max_nanos(), all.max_nanos());
  EXPECT_DOUBLE_EQ(a.mean_nanos(), all.mean_nanos());
  for (double p : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(a.Percentile(p), all.Percentile(p)) << p;
  }
}

}  // namespace
}  // namespace tessera::cli::ycsb
