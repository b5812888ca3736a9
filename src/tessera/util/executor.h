// Background work and timers. Library code never starts threads or sleeps of its own: it
// schedules tasks on an Executor, now or after a delay, so that a simulation can run the same
// code one task at a time on simulated time (sim_executor.h), and a server on a thread pool.
//
// Contract:
//   * Schedule(task) runs `task` once, later, on some thread of the executor.
//   * ScheduleAfter(delay, task) runs it once, no earlier than `delay_micros` after the call by
//     the executor's clock (Clock::MonotonicMicros), and returns a TimerId for Cancel.
//   * Cancel(id) stops a task that has not started: it returns true when the task will never
//     run, false when it already ran, is running, or the id is unknown.
//   * Tasks due at the same time run in the order they were scheduled when the executor runs
//     one task at a time (the simulated executor and a pool of one thread); a pool of many
//     threads may overlap them.
//   * Destroying the executor drops the tasks that have not started and waits for the running
//     ones. A task may schedule more tasks and cancel timers, including from within itself.
//
// Thread-safety: every method may be called from any thread, including from a running task.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace tessera {

class Clock;

using TimerId = uint64_t;

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Schedule(std::function<void()> task) = 0;
  virtual TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task) = 0;
  virtual bool Cancel(TimerId id) = 0;
};

// Runs `task` as a task of `executor`, or right here when it is null.
inline void RunOn(Executor* executor, std::function<void()> task) {
  if (executor == nullptr) {
    task();
  } else {
    executor->Schedule(std::move(task));
  }
}

// A fixed pool of `threads` worker threads (>= 1) whose timers follow `clock`'s monotonic time
// (the real clock when null). Waits for a due time with the real clock's condition-variable
// timeouts, so a ManualClock only works with it when tests also advance real time.
std::unique_ptr<Executor> NewThreadPoolExecutor(int threads, Clock* clock = nullptr);

}  // namespace tessera
