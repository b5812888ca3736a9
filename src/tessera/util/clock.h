// Time, injected. Production code uses SystemClock; tests use ManualClock so that time-based
// behaviour (GC max age, periodic sync, rate limits) is deterministic.
//
// Thread-safety: both implementations are safe to use from many threads.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in microseconds since the Unix epoch.
  virtual int64_t NowMicros() const = 0;
  // Monotonic time in microseconds (arbitrary origin), for intervals.
  virtual int64_t MonotonicMicros() const = 0;
  virtual void SleepForMicros(int64_t micros) = 0;
};

// The process's real clock. Never null; lives for the whole process.
Clock* SystemClock();

// A clock that moves only when told to. SleepForMicros advances it instead of sleeping.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_micros = 1'700'000'000'000'000) : now_(start_micros) {}
  int64_t NowMicros() const override { return now_.load(std::memory_order_relaxed); }
  int64_t MonotonicMicros() const override { return now_.load(std::memory_order_relaxed); }
  void SleepForMicros(int64_t micros) override { Advance(micros); }
  void Advance(int64_t micros) { now_.fetch_add(micros, std::memory_order_relaxed); }
  void Set(int64_t micros) { now_.store(micros, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace tessera
