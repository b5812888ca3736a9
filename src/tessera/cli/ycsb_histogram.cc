#include "tessera/cli/ycsb_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::cli::ycsb {
namespace {

// kSubBits bits of precision: values below 2^kSubBits are exact; above, a value keeps its top
// kSubBits bits, of which the leading one is implied, so 2^(kSubBits-1) buckets per power of 2.
constexpr int kSubBits = 8;
constexpr uint64_t kExact = uint64_t{1} << kSubBits;       // 256 exact buckets
constexpr uint64_t kHalf = uint64_t{1} << (kSubBits - 1);  // 128 buckets per power of two
// Shifts run from 1 (values in [2^8, 2^9)) to 64 - kSubBits (values in [2^63, 2^64)).
constexpr int kMaxShift = 64 - kSubBits;
constexpr size_t kBuckets = kExact + kMaxShift * kHalf;

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kBuckets, 0) {}

size_t LatencyHistogram::BucketOf(uint64_t nanos) {
  if (nanos < kExact) return nanos;
  const int msb = 63 - std::countl_zero(nanos);  // >= kSubBits
  const int shift = msb - (kSubBits - 1);        // >= 1
  const uint64_t top = nanos >> shift;           // in [kHalf, kExact)
  return kExact + (shift - 1) * kHalf + (top - kHalf);
}

uint64_t LatencyHistogram::BucketHigh(size_t bucket) {
  if (bucket < kExact) return bucket;
  const size_t shift = (bucket - kExact) / kHalf + 1;
  const uint64_t top = kHalf + (bucket - kExact) % kHalf;
  const uint64_t low = top << shift;
  return low + ((uint64_t{1} << shift) - 1);  // the last bucket ends at UINT64_MAX
}

void LatencyHistogram::Record(uint64_t nanos) {
  counts_[BucketOf(nanos)]++;
  count_++;
  min_ = std::min(min_, nanos);
  max_ = std::max(max_, nanos);
  sum_ += nanos;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; i++) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  // The rank of the value sought, 1-based: ceil(p * count), at least the first.
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; i++) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(BucketHigh(i), min_, max_);
  }
  return max_;
}

}  // namespace tessera::cli::ycsb
