#include "tessera/testing/sim_node_env.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::testing {

// --- DriftingClock --------------------------------------------------------------------------

DriftingClock::DriftingClock(ManualClock* base)
    : base_(base), anchor_base_(base->MonotonicMicros()), anchor_local_(anchor_base_) {}

int64_t DriftingClock::LocalMicros(int64_t base_now) const {
  return anchor_local_ +
         static_cast<int64_t>(std::llround(static_cast<double>(base_now - anchor_base_) * rate_));
}

int64_t DriftingClock::MonotonicMicros() const {
  absl::ReaderMutexLock l(&mu_);
  return LocalMicros(base_->MonotonicMicros());
}

int64_t DriftingClock::NowMicros() const {
  absl::ReaderMutexLock l(&mu_);
  // The simulation's wall and monotonic clocks are one ManualClock.
  return LocalMicros(base_->NowMicros()) + offset_us_;
}

void DriftingClock::SleepForMicros(int64_t micros) { base_->Advance(ToBaseMicros(micros)); }

void DriftingClock::SetDrift(int64_t offset_us, double rate) {
  absl::MutexLock l(&mu_);
  const int64_t base_now = base_->MonotonicMicros();
  anchor_local_ = LocalMicros(base_now);
  anchor_base_ = base_now;
  offset_us_ = offset_us;
  rate_ = rate;
}

int64_t DriftingClock::ToBaseMicros(int64_t micros) const {
  absl::ReaderMutexLock l(&mu_);
  if (micros <= 0) return 0;
  return static_cast<int64_t>(std::ceil(static_cast<double>(micros) / rate_));
}

// --- NodeExecutor ---------------------------------------------------------------------------

NodeExecutor::NodeExecutor(Executor* executor, DriftingClock* clock, ManualClock* base)
    : executor_(executor), clock_(clock), base_(base) {}

NodeExecutor::~NodeExecutor() { DropAll(); }

void NodeExecutor::Schedule(std::function<void()> task) { ScheduleAfter(0, std::move(task)); }

TimerId NodeExecutor::ScheduleAfter(int64_t delay_micros, std::function<void()> task) {
  TimerId id;
  {
    absl::MutexLock l(&mu_);
    id = next_id_++;
  }
  Queue(id, clock_->ToBaseMicros(delay_micros), std::move(task));
  return id;
}

void NodeExecutor::Queue(TimerId id, int64_t base_delay_us, std::function<void()> task) {
  absl::MutexLock l(&mu_);
  queued_[id] = executor_->ScheduleAfter(base_delay_us,
                                         [this, id, task = std::move(task)] { Run(id, task); });
}

void NodeExecutor::Run(TimerId id, const std::function<void()>& task) {
  {
    absl::MutexLock l(&mu_);
    const int64_t now = base_->MonotonicMicros();
    if (now < held_until_us_) {
      // Paused: due again when the pause ends, under the same id.
      queued_[id] =
          executor_->ScheduleAfter(held_until_us_ - now, [this, id, task] { Run(id, task); });
      return;
    }
    queued_.erase(id);
  }
  task();
}

bool NodeExecutor::Cancel(TimerId id) {
  absl::MutexLock l(&mu_);
  auto it = queued_.find(id);
  if (it == queued_.end()) return false;
  const bool cancelled = executor_->Cancel(it->second);
  queued_.erase(it);
  return cancelled;
}

void NodeExecutor::DropAll() {
  absl::MutexLock l(&mu_);
  for (const auto& [id, queued] : queued_) executor_->Cancel(queued);
  queued_.clear();
}

void NodeExecutor::Hold(int64_t until_us) {
  absl::MutexLock l(&mu_);
  held_until_us_ = std::max(held_until_us_, until_us);
}

size_t NodeExecutor::pending() const {
  absl::MutexLock l(&mu_);
  return queued_.size();
}

}  // namespace tessera::testing
