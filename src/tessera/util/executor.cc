#include "tessera/util/executor.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tessera/util/clock.h"
#include "tessera/util/timer_queue.h"

namespace tessera {
namespace {

class ThreadPoolExecutor final : public Executor {
 public:
  ThreadPoolExecutor(int threads, Clock* clock) : clock_(clock ? clock : SystemClock()) {
    for (int i = 0; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { Run(); });
  }

  ~ThreadPoolExecutor() override {
    TimerQueue dropped;  // destroyed after the lock is released: a capture may schedule
    {
      absl::MutexLock l(&mu_);
      stopping_ = true;
      std::swap(dropped, queue_);
      cv_.SignalAll();
    }
    for (auto& t : workers_) t.join();
  }

  void Schedule(std::function<void()> task) override { ScheduleAfter(0, std::move(task)); }

  TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task) override {
    const int64_t due = clock_->MonotonicMicros() + std::max<int64_t>(delay_micros, 0);
    absl::MutexLock l(&mu_);
    if (stopping_) return 0;
    const TimerId id = queue_.Add(due, std::move(task));
    cv_.Signal();
    return id;
  }

  bool Cancel(TimerId id) override {
    absl::MutexLock l(&mu_);
    return queue_.Cancel(id);
  }

 private:
  void Run() {
    absl::MutexLock l(&mu_);
    while (!stopping_) {
      const std::optional<int64_t> due = queue_.NextDue();
      if (!due.has_value()) {
        cv_.Wait(&mu_);
        continue;
      }
      const int64_t now = clock_->MonotonicMicros();
      if (*due > now) {
        // Woken early when a task arrives (it may be due sooner) or the pool stops.
        cv_.WaitWithTimeout(&mu_, absl::Microseconds(*due - now));
        continue;
      }
      std::function<void()> task = queue_.PopFirst();
      mu_.Unlock();
      task();
      task = nullptr;  // the captures are destroyed outside the lock too
      mu_.Lock();
    }
  }

  Clock* const clock_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  TimerQueue queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Executor> NewThreadPoolExecutor(int threads, Clock* clock) {
  return std::make_unique<ThreadPoolExecutor>(threads, clock);
}

}  // namespace tessera
