#include "tessera/util/latency_histogram.h"

#include <algorithm>

namespace tessera {

void LatencyHistogram::Record(int64_t micros) {
  micros = std::max<int64_t>(micros, 0);
  const size_t bucket =
      std::lower_bound(kBoundsMicros.begin(), kBoundsMicros.end(), micros) - kBoundsMicros.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(micros), std::memory_order_relaxed);
}

void LatencyHistogram::Snapshot::Add(const Snapshot& other) {
  if (bounds_seconds.empty()) {
    bounds_seconds = other.bounds_seconds;
    cumulative.assign(other.cumulative.size(), 0);
  }
  for (size_t i = 0; i < cumulative.size() && i < other.cumulative.size(); ++i) {
    cumulative[i] += other.cumulative[i];
  }
  count += other.count;
  sum_seconds += other.sum_seconds;
}

LatencyHistogram::Snapshot LatencyHistogram::Read() const {
  Snapshot s;
  uint64_t running = 0;
  for (size_t i = 0; i < kBoundsMicros.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.bounds_seconds.push_back(static_cast<double>(kBoundsMicros[i]) / 1e6);
    s.cumulative.push_back(running);
  }
  s.count = running + buckets_.back().load(std::memory_order_relaxed);
  s.sum_seconds = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  return s;
}

}  // namespace tessera
