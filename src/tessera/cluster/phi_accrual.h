// The phi-accrual failure detector (Hayashibara et al.; Cassandra §5.3.1) for one peer.
//
// Instead of a yes/no answer it gives phi, a suspicion level: phi = -log10(P_later(t)), where t
// is the time since the last heartbeat arrived and P_later(t) the probability, under a model of
// the inter-arrival times, that a heartbeat comes later than t. Phi = 1 means a 10 % chance that
// convicting now is a mistake, phi = 2 1 %, phi = 5 0.001 %. The model is fitted to a sliding
// window of the last `window_size` inter-arrival times:
//   kExponential  P_later(t) = exp(-t / mean)              (the paper's choice for gossip)
//                 phi = t / (mean * ln 10): phi 5 waits 11.5 mean gaps.
//   kNormal       P_later(t) = 1 - CDF_normal(t; mean, sd), sd = max(window sd, min_std_dev)
//                 phi = -log10(erfc(((t - mean) / sd) / sqrt 2) / 2)   (Hayashibara's choice)
// Gaps longer than `max_sample_us` (a node that was down or cut off) are not added to the
// window, so a return does not teach the detector that long silences are normal. The first
// arrival seeds the window with one gap of `bootstrap_interval_us`, so phi is defined at once.
//
// Time is whatever the caller passes (microseconds on one monotonic clock): the detector reads
// no clock itself.
//
// Thread-safety: not thread-safe; the owner (one Gossiper) serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::cluster {

enum class PhiModel { kExponential, kNormal };

// Samples are stored in 32 bits (a cluster of N nodes holds N^2 windows).
inline constexpr int64_t kMaxSampleUs = INT32_MAX;

const char* PhiModelName(PhiModel model);

struct PhiAccrualOptions {
  PhiModel model = PhiModel::kExponential;
  // Inter-arrival times kept. Cassandra keeps 1000. >= 1.
  int window_size = 1000;
  // kNormal only: the standard deviation used is at least this (a very regular peer must not
  // turn a small delay into a conviction). > 0 for kNormal.
  int64_t min_std_dev_us = 100'000;
  // Gaps above this are not samples of the arrival process (see above). In (0, kMaxSampleUs].
  int64_t max_sample_us = 10'000'000;
  // The gap the window starts with at the first arrival. > 0.
  int64_t bootstrap_interval_us = 2'000'000;
};

class PhiAccrualDetector {
 public:
  // REQUIRES: options are valid (see PhiAccrualOptions).
  explicit PhiAccrualDetector(const PhiAccrualOptions& options);

  // A heartbeat arrived at `now_us`. REQUIRES: now_us >= the previous arrival's time.
  void Report(int64_t now_us);
  // Suspicion at `now_us`: 0 before the first arrival; grows without bound while nothing
  // arrives (capped at kMaxPhi).
  double Phi(int64_t now_us) const;
  // Forgets every arrival (the peer restarted with a new generation).
  void Reset();

  bool has_arrivals() const { return last_arrival_us_ >= 0; }
  int64_t last_arrival_us() const { return last_arrival_us_; }
  int sample_count() const { return static_cast<int>(samples_.size()); }
  double mean_us() const;
  double std_dev_us() const;  // of the window (population), before min_std_dev

  static constexpr double kMaxPhi = 1e6;

 private:
  void AddSample(int64_t gap_us);
  void Recompute();

  const PhiAccrualOptions options_;
  std::vector<int32_t> samples_;  // ring buffer of up to window_size gaps, in microseconds
  size_t next_ = 0;               // where the next sample goes once the ring is full
  double sum_ = 0;
  double sum_squares_ = 0;
  int adds_since_recompute_ = 0;  // running sums are recomputed exactly every window_size adds
  int64_t last_arrival_us_ = -1;
};

// Phi of the two models for a gap of `t_us`, given the window's statistics; exposed so tests can
// check them against hand-computed values.
double ExponentialPhi(double t_us, double mean_us);
double NormalPhi(double t_us, double mean_us, double std_dev_us);

}  // namespace tessera::cluster
