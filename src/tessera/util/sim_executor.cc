#include "tessera/util/sim_executor.h"

#include <algorithm>
#include <utility>

namespace tessera {

SimExecutor::~SimExecutor() {
  TimerQueue dropped;  // destroyed without the lock: a capture's destructor may schedule
  absl::MutexLock l(&mu_);
  std::swap(dropped, queue_);
}

void SimExecutor::Schedule(std::function<void()> task) { ScheduleAfter(0, std::move(task)); }

TimerId SimExecutor::ScheduleAfter(int64_t delay_micros, std::function<void()> task) {
  const int64_t due = clock_->MonotonicMicros() + std::max<int64_t>(delay_micros, 0);
  absl::MutexLock l(&mu_);
  return queue_.Add(due, std::move(task));
}

bool SimExecutor::Cancel(TimerId id) {
  absl::MutexLock l(&mu_);
  return queue_.Cancel(id);
}

bool SimExecutor::RunNext() {
  std::function<void()> task;
  {
    absl::MutexLock l(&mu_);
    if (queue_.empty()) return false;
    const int64_t due = *queue_.NextDue();
    if (due > clock_->MonotonicMicros()) clock_->Set(due);
    task = queue_.PopFirst();
    ++tasks_run_;
  }
  task();
  return true;
}

uint64_t SimExecutor::RunUntil(int64_t deadline_micros, uint64_t max_tasks) {
  uint64_t ran = 0;
  while (ran < max_tasks) {
    {
      absl::MutexLock l(&mu_);
      std::optional<int64_t> due = queue_.NextDue();
      if (!due.has_value() || *due > deadline_micros) break;
    }
    RunNext();
    ++ran;
  }
  if (ran < max_tasks && clock_->MonotonicMicros() < deadline_micros) clock_->Set(deadline_micros);
  return ran;
}

uint64_t SimExecutor::pending() const {
  absl::MutexLock l(&mu_);
  return queue_.size();
}

std::optional<int64_t> SimExecutor::NextDueMicros() const {
  absl::MutexLock l(&mu_);
  return queue_.NextDue();
}

uint64_t SimExecutor::tasks_run() const {
  absl::MutexLock l(&mu_);
  return tasks_run_;
}

}  // namespace tessera
