#include "tessera/util/latency_histogram.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(LatencyHistogramTest, CountsEachDurationInTheFirstBucketItFitsCumulatively) {
  LatencyHistogram h;
  h.Record(50);        // exactly the first bound: in it
  h.Record(51);        // the second
  h.Record(-3);        // a clock step back counts as 0
  h.Record(7'000'000);  // beyond every bound: in the count only
  const LatencyHistogram::Snapshot s = h.Read();
  ASSERT_EQ(s.bounds_seconds.size(), LatencyHistogram::kBoundsMicros.size());
  EXPECT_DOUBLE_EQ(s.bounds_seconds[0], 50e-6);
  EXPECT_EQ(s.cumulative[0], 2u);
  EXPECT_EQ(s.cumulative[1], 3u);
  EXPECT_EQ(s.cumulative.back(), 3u);
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.sum_seconds, (50 + 51 + 0 + 7'000'000) / 1e6);
}

// Per-table figures sum their tablets' histograms.
TEST(LatencyHistogramTest, SnapshotsAddUp) {
  LatencyHistogram a, b;
  a.Record(10);
  b.Record(10);
  b.Record(2'000);
  LatencyHistogram::Snapshot sum;
  sum.Add(a.Read());
  sum.Add(b.Read());
  EXPECT_EQ(sum.count, 3u);
  EXPECT_DOUBLE_EQ(sum.sum_seconds, 0.00202);
  ASSERT_EQ(sum.bounds_seconds.size(), LatencyHistogram::kBoundsMicros.size());
  EXPECT_EQ(sum.cumulative[0], 2u);      // <= 50 µs
  EXPECT_EQ(sum.cumulative.back(), 3u);  // <= 5 s
}

TEST(LatencyHistogramTest, ConcurrentRecordsAreAllCounted) {
  LatencyHistogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10'000; ++i) h.Record(t * 1000 + i % 7);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.Read().count, 40'000u);
}

}  // namespace
}  // namespace tessera
