// A deterministic executor for simulations: nothing runs until the test says so, and then the
// tasks run one at a time on the calling thread, in order of due time and then of scheduling,
// with a ManualClock moved to each task's due time before it runs. Given the same tasks
// scheduled in the same order, a run is the same every time: this is what lets whole nodes
// (their gossip rounds, elections, flushes and compactions) run in one test process from one
// seed (docs/simulation.md).
//
// Time: the clock is advanced (ManualClock::Set) to a task's due time when that is later than
// now; it never moves backwards. A task's due time is the clock's MonotonicMicros() at
// scheduling plus the delay, so code that reads the clock and code that sets timers agree.
//
// Thread-safety: Schedule, ScheduleAfter and Cancel may be called from any thread (a gRPC
// thread, a test thread); the Run* methods from one thread at a time, never from a task.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/timer_queue.h"

namespace tessera {

class SimExecutor final : public Executor {
 public:
  // `clock` must outlive the executor.
  explicit SimExecutor(ManualClock* clock) : clock_(clock) {}
  ~SimExecutor() override;

  void Schedule(std::function<void()> task) override;
  TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task) override;
  bool Cancel(TimerId id) override;

  // Runs the first task, moving the clock to its due time first. False when none is queued.
  bool RunNext();
  // Runs every task due at or before `deadline_micros` (monotonic), including the ones those
  // tasks schedule in time, then leaves the clock at the deadline (or later, if it already
  // was). At most `max_tasks` tasks; returns how many ran.
  uint64_t RunUntil(int64_t deadline_micros, uint64_t max_tasks = UINT64_MAX);
  uint64_t RunFor(int64_t micros, uint64_t max_tasks = UINT64_MAX) {
    return RunUntil(clock_->MonotonicMicros() + micros, max_tasks);
  }
  // Runs the tasks that are due now (without moving the clock), until none is.
  uint64_t RunReady(uint64_t max_tasks = UINT64_MAX) {
    return RunUntil(clock_->MonotonicMicros(), max_tasks);
  }

  uint64_t pending() const;
  std::optional<int64_t> NextDueMicros() const;
  uint64_t tasks_run() const;

 private:
  ManualClock* const clock_;
  mutable absl::Mutex mu_;
  TimerQueue queue_ ABSL_GUARDED_BY(mu_);
  uint64_t tasks_run_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera
