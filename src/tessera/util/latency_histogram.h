// LatencyHistogram: how long something took, counted in fixed buckets — the shape of a
// Prometheus histogram (cumulative counts per upper bound, a count and a sum), kept by a layer
// that knows nothing of Prometheus (the engine's commit-log syncs) and read by the metrics.
//
// Thread-safety: Record and Read may run concurrently from any threads; Record is a few relaxed
// atomic additions. A Read concurrent with Records sees each bucket at some moment, not one
// snapshot of all: a figure for operators.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace tessera {

class LatencyHistogram {
 public:
  // Upper bounds of the buckets, in microseconds: 50 µs to 5 s, about 2.5x apart (an fdatasync
  // takes from tens of microseconds on a write cache to seconds on a struggling disk).
  static constexpr std::array<int64_t, 16> kBoundsMicros = {
      50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000,
      500'000, 1'000'000, 2'500'000, 5'000'000};

  struct Snapshot {
    std::vector<double> bounds_seconds;  // kBoundsMicros in seconds
    std::vector<uint64_t> cumulative;    // per bound: how many took at most that long
    uint64_t count = 0;                  // all, the slowest beyond the last bound included
    double sum_seconds = 0;

    // Adds `other`'s counts to these (the bounds are the same for every histogram; an empty
    // snapshot takes `other`'s).
    void Add(const Snapshot& other);
  };

  void Record(int64_t micros);
  Snapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsMicros.size() + 1> buckets_{};  // last: beyond
  std::atomic<uint64_t> sum_micros_{0};
};

}  // namespace tessera
