#include "tessera/util/executor.h"

#include <deque>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tessera {
namespace {

class ThreadPoolExecutor final : public Executor {
 public:
  explicit ThreadPoolExecutor(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
  }

  ~ThreadPoolExecutor() override {
    {
      absl::MutexLock l(&mu_);
      stopping_ = true;
      queue_.clear();
    }
    for (auto& t : workers_) t.join();
  }

  void Schedule(std::function<void()> task) override {
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    queue_.push_back(std::move(task));
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> task;
      {
        absl::MutexLock l(&mu_);
        mu_.Await(absl::Condition(
            +[](ThreadPoolExecutor* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
              return self->stopping_ || !self->queue_.empty();
            },
            this));
        if (stopping_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Executor> NewThreadPoolExecutor(int threads) {
  return std::make_unique<ThreadPoolExecutor>(threads);
}

}  // namespace tessera
