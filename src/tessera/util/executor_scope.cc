#include "tessera/util/executor_scope.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

namespace {
struct Delayed {
  TimerId base_id = 0;  // 0 until the base executor has answered
  std::function<void()> task;
  std::function<void()> dropped;
};
}  // namespace

// Shared by the scope and its tasks in the base executor's queue, so that a task that starts
// after the scope is gone finds it closed.
struct ExecutorScope::State {
  explicit State(Executor* b) : base(b) {}

  // The scopes whose tasks the current thread is running (innermost last): Close does not wait
  // for the task that calls it.
  static thread_local std::vector<const State*> running_here;

  bool Enter() {
    absl::MutexLock l(&mu);
    if (closed) return false;
    ++running;
    running_here.push_back(this);
    return true;
  }
  void Leave() {
    running_here.pop_back();
    absl::MutexLock l(&mu);
    --running;
  }
  // The delayed task under `key` is due.
  void RunDelayed(uint64_t key) {
    Delayed d;
    {
      absl::MutexLock l(&mu);
      auto it = delayed.find(key);
      if (it == delayed.end()) return;  // cancelled, or dropped by Close
      d = std::move(it->second);
      delayed.erase(it);
      ++running;
      running_here.push_back(this);
    }
    d.task();
    d = Delayed();  // its captures go before the scope counts the task as ended
    Leave();
  }

  Executor* const base;
  absl::Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;
  int running ABSL_GUARDED_BY(mu) = 0;
  uint64_t next_key ABSL_GUARDED_BY(mu) = 0;
  absl::flat_hash_map<uint64_t, Delayed> delayed ABSL_GUARDED_BY(mu);
};

thread_local std::vector<const ExecutorScope::State*> ExecutorScope::State::running_here;

ExecutorScope::ExecutorScope(Executor* base) : state_(std::make_shared<State>(base)) {}

ExecutorScope::~ExecutorScope() { Close(); }

void ExecutorScope::Schedule(std::function<void()> task) {
  {
    absl::MutexLock l(&state_->mu);
    if (state_->closed) return;
  }
  state_->base->Schedule([state = state_, task = std::move(task)] {
    if (!state->Enter()) return;
    task();
    state->Leave();
  });
}

TimerId ExecutorScope::ScheduleAfter(int64_t delay_micros, std::function<void()> task,
                                     std::function<void()> dropped) {
  uint64_t key;
  {
    absl::MutexLock l(&state_->mu);
    if (state_->closed) return 0;
    key = ++state_->next_key;
    Delayed& d = state_->delayed[key];
    d.task = std::move(task);
    d.dropped = std::move(dropped);
  }
  const TimerId id =
      state_->base->ScheduleAfter(delay_micros, [state = state_, key] { state->RunDelayed(key); });
  absl::MutexLock l(&state_->mu);
  auto it = state_->delayed.find(key);
  if (id == 0) {  // the base executor is stopping: nothing runs
    if (it != state_->delayed.end()) state_->delayed.erase(it);
    return 0;
  }
  if (it != state_->delayed.end()) it->second.base_id = id;
  // Else it already ran, or Close took it (and cancels it or finds it starting).
  return key;
}

bool ExecutorScope::Cancel(TimerId key) {
  TimerId base_id;
  {
    absl::MutexLock l(&state_->mu);
    auto it = state_->delayed.find(key);
    if (it == state_->delayed.end() || it->second.base_id == 0) return false;
    base_id = it->second.base_id;
  }
  if (!state_->base->Cancel(base_id)) return false;  // starting: RunDelayed takes it
  Delayed d;  // its captures go outside the lock
  {
    absl::MutexLock l(&state_->mu);
    auto it = state_->delayed.find(key);
    if (it != state_->delayed.end()) {
      d = std::move(it->second);
      state_->delayed.erase(it);
    }
  }
  return true;
}

void ExecutorScope::Close() {
  std::vector<Delayed> dropped;
  {
    absl::MutexLock l(&state_->mu);
    if (state_->closed) return;
    state_->closed = true;
    dropped.reserve(state_->delayed.size());
    for (auto& [key, d] : state_->delayed) dropped.push_back(std::move(d));
    state_->delayed.clear();
  }
  // A task found starting returns without running (its key is gone): either way it is dropped.
  for (Delayed& d : dropped) {
    if (d.base_id != 0) state_->base->Cancel(d.base_id);
  }
  for (Delayed& d : dropped) {
    if (d.dropped) d.dropped();
    d = Delayed();
  }
  // Then the tasks running elsewhere end (Close runs under none of them but its own).
  struct Waiting {
    State* state;
    int mine;
    static bool Done(Waiting* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // under state->mu
      return w->state->running <= w->mine;
    }
  } waiting{state_.get(), static_cast<int>(std::count(State::running_here.begin(),
                                                      State::running_here.end(), state_.get()))};
  absl::MutexLock l(&state_->mu);
  state_->mu.Await(absl::Condition(&Waiting::Done, &waiting));
}

}  // namespace tessera
