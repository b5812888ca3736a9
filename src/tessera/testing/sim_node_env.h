// What one node of a simulated cluster (sim_cluster.h) runs on besides its file system: a clock
// of its own that may drift from the simulation's time, and a view of the simulation's executor
// that knows the node's tasks, so that a crash can drop them and a pause can hold them.
//
// Thread-safety: both are safe to use from any thread (the simulation runs one task at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"

namespace tessera::testing {

// A node's clock: the simulation's time seen with an offset and a rate. From the moment
// SetDrift is called, the node's time advances `rate` microseconds per simulated microsecond,
// and its wall time (NowMicros) is shifted by `offset_us` besides (monotonic time has no
// offset: it never jumps). With no drift it reads exactly the simulation's clock.
class DriftingClock final : public Clock {
 public:
  // `base` (the simulation's clock) must outlive this clock.
  explicit DriftingClock(ManualClock* base);

  int64_t NowMicros() const override;
  int64_t MonotonicMicros() const override;
  // Advances the simulation's clock by the simulated time `micros` of this clock take.
  void SleepForMicros(int64_t micros) override;

  // REQUIRES: rate > 0.
  void SetDrift(int64_t offset_us, double rate);
  // Simulated microseconds that `micros` of this clock take (rounded up).
  int64_t ToBaseMicros(int64_t micros) const;

 private:
  int64_t LocalMicros(int64_t base_now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  ManualClock* const base_;
  mutable absl::Mutex mu_;
  int64_t offset_us_ ABSL_GUARDED_BY(mu_) = 0;
  double rate_ ABSL_GUARDED_BY(mu_) = 1.0;
  // The base time at the last SetDrift, and this clock's monotonic time then.
  int64_t anchor_base_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t anchor_local_ ABSL_GUARDED_BY(mu_) = 0;
};

// One node's tasks on the simulation's executor. Delays are in the node's time (`clock`), so
// a timer and the node's clock agree under drift. DropAll() cancels every task of the node that
// has not run (a crash); Hold(until) postpones every task that comes due before `until` to
// `until` (a paused process), in the order they came due.
class NodeExecutor final : public Executor {
 public:
  // `executor` and `clock` must outlive this object. Drops its tasks when destroyed.
  NodeExecutor(Executor* executor, DriftingClock* clock, ManualClock* base);
  ~NodeExecutor() override;

  void Schedule(std::function<void()> task) override;
  TimerId ScheduleAfter(int64_t delay_micros, std::function<void()> task) override;
  bool Cancel(TimerId id) override;

  void DropAll();
  // `until_us` is on the simulation's monotonic clock.
  void Hold(int64_t until_us);
  // Tasks of the node not yet run.
  size_t pending() const;

 private:
  // Queues `task` under `id` after `base_delay_us` of simulated time.
  void Queue(TimerId id, int64_t base_delay_us, std::function<void()> task);
  void Run(TimerId id, const std::function<void()>& task);

  Executor* const executor_;
  DriftingClock* const clock_;
  ManualClock* const base_;
  mutable absl::Mutex mu_;
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<TimerId, TimerId> queued_ ABSL_GUARDED_BY(mu_);  // this node's id -> executor's id
  int64_t held_until_us_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::testing
