#include "tessera/cluster/phi_accrual.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace tessera::cluster {

const char* PhiModelName(PhiModel model) {
  switch (model) {
    case PhiModel::kExponential:
      return "exponential";
    case PhiModel::kNormal:
      return "normal";
  }
  return "unknown";
}

double ExponentialPhi(double t_us, double mean_us) {
  if (t_us <= 0) return 0;
  // -log10(exp(-t/mean)) = t / (mean ln 10).
  return std::min(PhiAccrualDetector::kMaxPhi,
                  t_us / (std::max(mean_us, 1.0) * std::numbers::ln10));
}

double NormalPhi(double t_us, double mean_us, double std_dev_us) {
  const double x = (t_us - mean_us) / (std::max(std_dev_us, 1.0) * std::numbers::sqrt2);
  // P_later = erfc(x) / 2. erfc underflows near x = 26; past 20 use its asymptotic series,
  // ln erfc(x) ~ -x^2 - ln(x sqrt(pi)) + ln(1 - 1/(2x^2) + 3/(4x^4)), good to ~1e-6 there.
  double log10_p;
  if (x < 20) {
    log10_p = std::log10(std::erfc(x) / 2);
  } else {
    const double x2 = x * x;
    const double ln_erfc = -x2 - std::log(x * std::sqrt(std::numbers::pi)) +
                           std::log1p(-1 / (2 * x2) + 3 / (4 * x2 * x2));
    log10_p = (ln_erfc - std::numbers::ln2) / std::numbers::ln10;
  }
  return std::clamp(-log10_p, 0.0, PhiAccrualDetector::kMaxPhi);
}

PhiAccrualDetector::PhiAccrualDetector(const PhiAccrualOptions& options) : options_(options) {
  assert(options_.window_size >= 1);
  assert(options_.max_sample_us > 0 && options_.max_sample_us <= kMaxSampleUs);
  assert(options_.bootstrap_interval_us > 0 && options_.bootstrap_interval_us <= kMaxSampleUs);
  assert(options_.model != PhiModel::kNormal || options_.min_std_dev_us > 0);
}

void PhiAccrualDetector::Report(int64_t now_us) {
  if (last_arrival_us_ < 0) {
    AddSample(options_.bootstrap_interval_us);
  } else {
    const int64_t gap = std::max<int64_t>(0, now_us - last_arrival_us_);
    if (gap <= options_.max_sample_us) AddSample(gap);
  }
  last_arrival_us_ = now_us;
}

void PhiAccrualDetector::Reset() {
  samples_.clear();
  next_ = 0;
  sum_ = 0;
  sum_squares_ = 0;
  adds_since_recompute_ = 0;
  last_arrival_us_ = -1;
}

void PhiAccrualDetector::AddSample(int64_t gap_us) {
  const double g = static_cast<double>(gap_us);
  if (samples_.size() < static_cast<size_t>(options_.window_size)) {
    samples_.push_back(static_cast<int32_t>(gap_us));
  } else {
    const double old = static_cast<double>(samples_[next_]);
    sum_ -= old;
    sum_squares_ -= old * old;
    samples_[next_] = static_cast<int32_t>(gap_us);
    next_ = (next_ + 1) % samples_.size();
  }
  sum_ += g;
  sum_squares_ += g * g;
  // Adding and subtracting forever lets rounding error creep into the sums (and the variance,
  // a difference of large numbers): start again from the samples once per window.
  if (++adds_since_recompute_ >= options_.window_size) Recompute();
}

void PhiAccrualDetector::Recompute() {
  sum_ = 0;
  sum_squares_ = 0;
  for (int32_t s : samples_) {
    const double g = static_cast<double>(s);
    sum_ += g;
    sum_squares_ += g * g;
  }
  adds_since_recompute_ = 0;
}

double PhiAccrualDetector::mean_us() const {
  return samples_.empty() ? 0 : sum_ / static_cast<double>(samples_.size());
}

double PhiAccrualDetector::std_dev_us() const {
  if (samples_.empty()) return 0;
  const double n = static_cast<double>(samples_.size());
  const double mean = sum_ / n;
  return std::sqrt(std::max(0.0, sum_squares_ / n - mean * mean));
}

double PhiAccrualDetector::Phi(int64_t now_us) const {
  if (last_arrival_us_ < 0) return 0;
  const double t = static_cast<double>(now_us - last_arrival_us_);
  switch (options_.model) {
    case PhiModel::kExponential:
      return ExponentialPhi(t, mean_us());
    case PhiModel::kNormal:
      return NormalPhi(t, mean_us(),
                       std::max(std_dev_us(), static_cast<double>(options_.min_std_dev_us)));
  }
  return 0;
}

}  // namespace tessera::cluster
