// A latency histogram: counts of nanosecond values in log-linear buckets (HdrHistogram's
// layout), so percentiles are within 1/128 (0.8 %) of the recorded values, at any scale, in a
// fixed 60 KiB.
//
// Values below 256 ns have a bucket each. Above, each power of two [2^m, 2^(m+1)) is cut into
// 128 equal buckets. Percentile() answers the highest value its bucket holds, clamped to the
// largest value recorded, so a percentile never understates a latency.
//
// Thread-safety: not thread-safe; each thread records into its own and Merge() combines them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::cli::ycsb {

class LatencyHistogram {
 public:
  LatencyHistogram();

  void Record(uint64_t nanos);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min_nanos() const { return count_ == 0 ? 0 : min_; }
  uint64_t max_nanos() const { return max_; }
  double mean_nanos() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / count_; }

  // The smallest recorded value v (to bucket precision) such that at least a fraction `p` of
  // the values are <= v. 0 when empty. REQUIRES: 0 <= p <= 1.
  uint64_t Percentile(double p) const;

  // Bucket arithmetic, exposed for tests.
  static size_t BucketOf(uint64_t nanos);
  static uint64_t BucketHigh(size_t bucket);  // the largest value of the bucket

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace tessera::cli::ycsb
