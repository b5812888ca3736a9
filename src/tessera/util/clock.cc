#include "tessera/util/clock.h"

#include <chrono>
#include <thread>

namespace tessera {
namespace {

class SystemClockImpl final : public Clock {
 public:
  int64_t NowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t MonotonicMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepForMicros(int64_t micros) override {
    if (micros > 0) std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }
};

}  // namespace

Clock* SystemClock() {
  static SystemClockImpl instance;
  return &instance;
}

}  // namespace tessera
