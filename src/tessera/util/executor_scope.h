// A view of an Executor whose tasks end with their owner. An object whose tasks reach it (or
// its peers) through raw pointers schedules them through a scope and closes the scope before it
// goes, since the executor it shares may outlive it: after Close() none of its tasks starts.
//
// Contract:
//   * Schedule, ScheduleAfter and Cancel behave as the base executor's (executor.h), in its
//     order, until Close().
//   * ScheduleAfter(delay, task, dropped): if Close() comes before the task starts, `dropped`
//     runs instead (on Close's thread, after the scope is closed), so that whoever waits for the
//     task's outcome gets an answer. A task the caller cancels runs neither.
//   * Close() closes the scope: delayed tasks not started are cancelled in the base executor
//     (their captures released at once) and their `dropped` callbacks run; immediate tasks not
//     started become no-ops; Close returns once every task of the scope that is running has
//     ended, except one running on Close's own thread (a task may close its scope). Later
//     Schedule calls drop their task, later ScheduleAfter calls return 0 and run nothing.
//     Idempotent; the destructor closes.
//   * The base executor must outlive the scope's tasks in its queue (they hold only a shared
//     state, never the scope).
//
// Thread-safety: every method may be called from any thread, including from a task.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "tessera/util/executor.h"

namespace tessera {

class ExecutorScope final : public Executor {
 public:
  explicit ExecutorScope(Executor* base);
  ~ExecutorScope() override;  // Close()
  ExecutorScope(const ExecutorScope&) = delete;
  ExecutorScope& operator=(const ExecutorScope&) = delete;

  void Schedule(std::function<void()> task) override;
  TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task) override {
    return ScheduleAfter(delay_micros, std::move(task), nullptr);
  }
  TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task,
                        std::function<void()> dropped);
  bool Cancel(TimerId id) override;

  void Close();

 private:
  struct State;
  const std::shared_ptr<State> state_;
};

}  // namespace tessera
