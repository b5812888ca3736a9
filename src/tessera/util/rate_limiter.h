// A token bucket that bounds background I/O (compaction writes, replica rebuild streams) to a
// number of bytes per second, so foreground reads and writes keep their latency while a large
// compaction or copy runs. Two ways to pass: Request blocks the calling thread (a compaction
// thread of its own); Reserve never blocks and says how long to wait (work driven by an
// Executor, which must not sleep). The bucket holds at most one second's worth, so an idle
// period does not allow a burst.
//
// Thread-safety: safe to call from many threads.
#pragma once

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "tessera/util/clock.h"

namespace tessera {

class RateLimiter {
 public:
  // `bytes_per_second` <= 0 means unlimited. `clock` must outlive the limiter.
  RateLimiter(int64_t bytes_per_second, Clock* clock);
  // Blocks (via clock->SleepForMicros) until `bytes` may pass. Requests larger than one second's
  // budget are let through in one-second pieces.
  void Request(int64_t bytes);
  // Takes `bytes` now, borrowing from the future when the bucket is short, and returns the
  // micros to wait before using them (0: at once). Later callers wait behind what was
  // borrowed, so a caller that waits the answer keeps the rate.
  int64_t Reserve(int64_t bytes);
  void SetBytesPerSecond(int64_t bytes_per_second);
  int64_t bytes_per_second() const;

 private:
  void RefillLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock* const clock_;
  mutable absl::Mutex mu_;
  int64_t rate_ ABSL_GUARDED_BY(mu_);
  double available_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_refill_micros_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
