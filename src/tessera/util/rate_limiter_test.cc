#include "tessera/util/rate_limiter.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(RateLimiterTest, PacesToTheConfiguredRate) {
  ManualClock clock;
  RateLimiter limiter(1'000'000, &clock);  // 1 MB/s
  int64_t start = clock.MonotonicMicros();
  for (int i = 0; i < 50; ++i) limiter.Request(100'000);  // 5 MB
  double seconds = (clock.MonotonicMicros() - start) / 1e6;
  EXPECT_GT(seconds, 4.5);
  EXPECT_LT(seconds, 5.5);
}

TEST(RateLimiterTest, UnlimitedNeverWaits) {
  ManualClock clock;
  RateLimiter limiter(0, &clock);
  int64_t start = clock.MonotonicMicros();
  limiter.Request(1'000'000'000);
  EXPECT_EQ(start, clock.MonotonicMicros());
}

TEST(RateLimiterTest, LargeRequestsPassInPieces) {
  ManualClock clock;
  RateLimiter limiter(1000, &clock);
  int64_t start = clock.MonotonicMicros();
  limiter.Request(10'000);
  double seconds = (clock.MonotonicMicros() - start) / 1e6;
  EXPECT_GT(seconds, 9.0);
  EXPECT_LT(seconds, 11.0);
}

TEST(RateLimiterTest, ReserveSaysHowLongToWaitWithoutBlocking) {
  ManualClock clock;
  RateLimiter limiter(1000, &clock);  // 1000 B/s, empty at first
  const int64_t start = clock.MonotonicMicros();
  EXPECT_NEAR(limiter.Reserve(500), 500'000, 10);
  EXPECT_NEAR(limiter.Reserve(500), 1'000'000, 10);  // behind what the first borrowed
  EXPECT_EQ(clock.MonotonicMicros(), start);         // it never slept
  clock.Advance(1'000'000);
  EXPECT_LE(limiter.Reserve(0), 0);
  EXPECT_NEAR(limiter.Reserve(1000), 1'000'000, 10);
  limiter.SetBytesPerSecond(0);
  EXPECT_EQ(limiter.Reserve(1'000'000'000), 0);
}

}  // namespace
}  // namespace tessera
