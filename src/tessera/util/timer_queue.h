// The queue of an executor: tasks ordered by due time, then by the order they were added, each
// with an id that cancels it. Shared by the thread pool (executor.cc) and the simulated
// executor (sim_executor.h) so that both order and cancel tasks the same way.
//
// Thread-safety: none; the owning executor guards it with its mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "tessera/util/executor.h"

namespace tessera {

class TimerQueue {
 public:
  // Ids start at 1 and are never reused.
  TimerId Add(int64_t due_micros, std::function<void()> task) {
    const TimerId id = next_id_++;
    tasks_.emplace(std::make_pair(due_micros, id), std::move(task));
    due_of_.emplace(id, due_micros);
    return id;
  }

  // True when the task was queued (it is removed and will not run).
  bool Cancel(TimerId id) {
    auto it = due_of_.find(id);
    if (it == due_of_.end()) return false;
    tasks_.erase(std::make_pair(it->second, id));
    due_of_.erase(it);
    return true;
  }

  bool empty() const { return tasks_.empty(); }
  size_t size() const { return tasks_.size(); }
  std::optional<int64_t> NextDue() const {
    if (tasks_.empty()) return std::nullopt;
    return tasks_.begin()->first.first;
  }

  // REQUIRES: !empty(). Removes and returns the first task.
  std::function<void()> PopFirst() {
    auto it = tasks_.begin();
    std::function<void()> task = std::move(it->second);
    due_of_.erase(it->first.second);
    tasks_.erase(it);
    return task;
  }

  void Clear() {
    tasks_.clear();
    due_of_.clear();
  }

 private:
  TimerId next_id_ = 1;
  std::map<std::pair<int64_t, TimerId>, std::function<void()>> tasks_;
  std::map<TimerId, int64_t> due_of_;
};

}  // namespace tessera
