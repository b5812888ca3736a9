#include "tessera/cluster/phi_accrual.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::cluster {
namespace {

constexpr int64_t kSecond = 1'000'000;

PhiAccrualOptions Options(PhiModel model, int window = 1000) {
  PhiAccrualOptions o;
  o.model = model;
  o.window_size = window;
  o.min_std_dev_us = 100'000;
  o.max_sample_us = 10 * kSecond;
  o.bootstrap_interval_us = kSecond;
  return o;
}

// Hand-computed: phi = t / (mean ln 10).
TEST(PhiAccrualTest, ExponentialFormula) {
  EXPECT_NEAR(ExponentialPhi(1 * kSecond, 1 * kSecond), 0.4342944819, 1e-9);
  EXPECT_NEAR(ExponentialPhi(2 * kSecond, 1 * kSecond), 0.8685889638, 1e-9);
  EXPECT_NEAR(ExponentialPhi(2 * kSecond, 2 * kSecond), 0.4342944819, 1e-9);
  // The "phi 5 waits 11.5 mean gaps".
  EXPECT_NEAR(ExponentialPhi(11.512925465 * kSecond, kSecond), 5.0, 1e-6);
  EXPECT_EQ(ExponentialPhi(0, kSecond), 0);
}

// Hand-computed: phi = -log10(erfc(z / sqrt 2) / 2), z = (t - mean) / sd.
TEST(PhiAccrualTest, NormalFormula) {
  EXPECT_NEAR(NormalPhi(1.0 * kSecond, kSecond, 0.1 * kSecond), 0.3010299957, 1e-9);  // z = 0
  EXPECT_NEAR(NormalPhi(1.2 * kSecond, kSecond, 0.1 * kSecond), 1.6430160801, 1e-9);  // z = 2
  EXPECT_NEAR(NormalPhi(1.3 * kSecond, kSecond, 0.1 * kSecond), 2.8696990360, 1e-9);  // z = 3
  // Far tail, where erfc underflows: the asymptotic series (values from 50-digit arithmetic).
  EXPECT_NEAR(NormalPhi(5.0 * kSecond, kSecond, 0.1 * kSecond), 349.4370064593, 1e-4);   // z=40
  EXPECT_NEAR(NormalPhi(11.0 * kSecond, kSecond, 0.1 * kSecond), 2173.871542869, 1e-4);  // z=100
  // Continuous where the two methods meet (x = z / sqrt 2 = 20).
  const double z_at_switch = 20 * std::sqrt(2.0);
  const double below = NormalPhi(kSecond + (z_at_switch - 1e-6) * 1000, kSecond, 1000);
  const double above = NormalPhi(kSecond + (z_at_switch + 1e-6) * 1000, kSecond, 1000);
  EXPECT_NEAR(below, above, 1e-3);
  // Early arrivals are not suspicious.
  EXPECT_LT(NormalPhi(0, kSecond, 0.1 * kSecond), 1e-6);
}

TEST(PhiAccrualTest, NoArrivalsMeansNoSuspicion) {
  PhiAccrualDetector d(Options(PhiModel::kExponential));
  EXPECT_FALSE(d.has_arrivals());
  EXPECT_EQ(d.Phi(100 * kSecond), 0);
}

TEST(PhiAccrualTest, ExponentialDetectorOverItsWindow) {
  PhiAccrualDetector d(Options(PhiModel::kExponential));
  d.Report(0);  // seeds the window with the 1 s bootstrap gap
  d.Report(1 * kSecond);
  d.Report(2 * kSecond);
  EXPECT_EQ(d.sample_count(), 3);
  EXPECT_DOUBLE_EQ(d.mean_us(), 1.0 * kSecond);
  EXPECT_NEAR(d.Phi(3 * kSecond), 0.4342944819, 1e-9);
  EXPECT_NEAR(d.Phi(4 * kSecond), 0.8685889638, 1e-9);
  // A 3 s gap raises the mean to (1 + 1 + 1 + 3) / 4 = 1.5 s.
  d.Report(5 * kSecond);
  EXPECT_DOUBLE_EQ(d.mean_us(), 1.5 * kSecond);
  EXPECT_NEAR(d.Phi(5 * kSecond + 3 * kSecond), 3 / (1.5 * std::log(10.0)), 1e-9);
  // Phi grows without bound while nothing arrives.
  EXPECT_GT(d.Phi(5 * kSecond + 100 * kSecond), 25);
}

TEST(PhiAccrualTest, NormalDetectorUsesWindowStatistics) {
  PhiAccrualDetector d(Options(PhiModel::kNormal));
  d.Report(0);          // 1.0 s (bootstrap)
  d.Report(800'000);    // 0.8 s
  d.Report(2'000'000);  // 1.2 s
  EXPECT_DOUBLE_EQ(d.mean_us(), 1.0 * kSecond);
  // Population sd of {1.0, 0.8, 1.2} = sqrt(0.08 / 3) s.
  const double sd = std::sqrt(0.08 / 3) * kSecond;
  EXPECT_NEAR(d.std_dev_us(), sd, 1e-3);
  // Two standard deviations past the mean: phi 1.643.
  EXPECT_NEAR(d.Phi(2'000'000 + static_cast<int64_t>(kSecond + 2 * sd)), 1.6430160801, 1e-5);
}

TEST(PhiAccrualTest, NormalDetectorHonoursMinimumStdDev) {
  PhiAccrualDetector d(Options(PhiModel::kNormal));
  for (int i = 0; i <= 10; ++i) d.Report(i * kSecond);  // perfectly regular: sd 0
  EXPECT_NEAR(d.std_dev_us(), 0, 1e-6);
  // sd is taken as the 0.1 s floor: 1.2 s after the last arrival is z = 2.
  EXPECT_NEAR(d.Phi(10 * kSecond + 1'200'000), 1.6430160801, 1e-9);
}

TEST(PhiAccrualTest, WindowSlides) {
  PhiAccrualDetector d(Options(PhiModel::kExponential, /*window=*/3));
  int64_t t = 0;
  d.Report(t);  // 1 s bootstrap
  for (int i = 0; i < 3; ++i) d.Report(t += 4 * kSecond);
  // Only the last three gaps (4 s each) remain.
  EXPECT_EQ(d.sample_count(), 3);
  EXPECT_DOUBLE_EQ(d.mean_us(), 4.0 * kSecond);
  for (int i = 0; i < 3; ++i) d.Report(t += 2 * kSecond);
  EXPECT_DOUBLE_EQ(d.mean_us(), 2.0 * kSecond);
}

TEST(PhiAccrualTest, RunningSumsStayExactOverManyWindows) {
  PhiAccrualDetector d(Options(PhiModel::kNormal, /*window=*/10));
  int64_t t = 0;
  d.Report(t);
  for (int i = 0; i < 100'000; ++i) d.Report(t += 1'000'000 + (i % 7) * 123'457);
  // The last ten gaps: i = 99990 .. 99999.
  double sum = 0, sum_sq = 0;
  for (int i = 99'990; i < 100'000; ++i) {
    const double g = 1'000'000 + (i % 7) * 123'457;
    sum += g;
    sum_sq += g * g;
  }
  EXPECT_NEAR(d.mean_us(), sum / 10, 1e-3);
  EXPECT_NEAR(d.std_dev_us(), std::sqrt(sum_sq / 10 - (sum / 10) * (sum / 10)), 1e-2);
}

TEST(PhiAccrualTest, LongSilenceIsNotASample) {
  PhiAccrualDetector d(Options(PhiModel::kExponential));
  d.Report(0);
  d.Report(kSecond);
  d.Report(2 * kSecond);
  // Down for a minute (more than max_sample_us), then back.
  d.Report(62 * kSecond);
  EXPECT_EQ(d.sample_count(), 3);
  EXPECT_DOUBLE_EQ(d.mean_us(), 1.0 * kSecond);
  // Marked up again: phi measures from the return, not from before the outage.
  EXPECT_NEAR(d.Phi(63 * kSecond), 0.4342944819, 1e-9);
}

TEST(PhiAccrualTest, ResetForgetsEverything) {
  PhiAccrualDetector d(Options(PhiModel::kExponential));
  d.Report(0);
  d.Report(5 * kSecond);
  d.Reset();
  EXPECT_FALSE(d.has_arrivals());
  EXPECT_EQ(d.sample_count(), 0);
  EXPECT_EQ(d.Phi(100 * kSecond), 0);
  d.Report(100 * kSecond);
  EXPECT_DOUBLE_EQ(d.mean_us(), 1.0 * kSecond);  // the bootstrap gap again
}

}  // namespace
}  // namespace tessera::cluster
