// Background work. The engine schedules flushes and compactions on an Executor instead of
// starting threads of its own, so tests can control when background work runs.
//
// Thread-safety: Schedule may be called from any thread, including from a running task.
#pragma once

#include <functional>
#include <memory>

namespace tessera {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` at some later time on some thread. Tasks scheduled before the executor is
  // destroyed either run or are dropped: the destructor waits for running tasks to finish.
  virtual void Schedule(std::function<void()> task) = 0;
};

// A fixed pool of `threads` worker threads. The destructor drains nothing: queued tasks that have
// not started are dropped, running ones are waited for.
std::unique_ptr<Executor> NewThreadPoolExecutor(int threads);

}  // namespace tessera
