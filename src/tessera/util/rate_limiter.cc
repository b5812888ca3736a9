#include "tessera/util/rate_limiter.h"

#include <algorithm>

namespace tessera {

RateLimiter::RateLimiter(int64_t bytes_per_second, Clock* clock)
    : clock_(clock), rate_(bytes_per_second), last_refill_micros_(clock->MonotonicMicros()) {}

void RateLimiter::SetBytesPerSecond(int64_t bytes_per_second) {
  absl::MutexLock l(&mu_);
  rate_ = bytes_per_second;
}

int64_t RateLimiter::bytes_per_second() const {
  absl::MutexLock l(&mu_);
  return rate_;
}

void RateLimiter::RefillLocked() {
  const int64_t now = clock_->MonotonicMicros();
  // Capped at one second's worth so an idle period does not allow a huge burst.
  available_ = std::min<double>(static_cast<double>(rate_),
                                available_ + (now - last_refill_micros_) * rate_ / 1e6);
  last_refill_micros_ = now;
}

int64_t RateLimiter::Reserve(int64_t bytes) {
  absl::MutexLock l(&mu_);
  if (rate_ <= 0 || bytes <= 0) return 0;
  RefillLocked();
  available_ -= static_cast<double>(bytes);
  if (available_ >= 0) return 0;
  return static_cast<int64_t>(-available_ * 1e6 / static_cast<double>(rate_)) + 1;
}

void RateLimiter::Request(int64_t bytes) {
  while (bytes > 0) {
    int64_t wait_micros = 0;
    {
      absl::MutexLock l(&mu_);
      if (rate_ <= 0) return;
      RefillLocked();
      int64_t piece = std::min<int64_t>(bytes, rate_);
      if (available_ >= piece) {
        available_ -= piece;
        bytes -= piece;
        continue;
      }
      wait_micros = static_cast<int64_t>((piece - available_) * 1e6 / rate_) + 1;
    }
    // Never sleep while holding the lock.
    clock_->SleepForMicros(wait_micros);
  }
}

}  // namespace tessera
