#include "tessera/util/executor_scope.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tessera/util/clock.h"
#include "tessera/util/sim_executor.h"

namespace tessera {
namespace {

class ExecutorScopeTest : public ::testing::Test {
 protected:
  ManualClock clock_;
  SimExecutor base_{&clock_};
};

TEST_F(ExecutorScopeTest, RunsTasksAsTheBaseDoesUntilClosed) {
  ExecutorScope scope(&base_);
  std::vector<int> order;
  scope.ScheduleAfter(2000, [&] { order.push_back(3); });
  scope.Schedule([&] { order.push_back(1); });
  base_.Schedule([&] { order.push_back(2); });  // the base's order holds across the view
  const TimerId cancelled = scope.ScheduleAfter(1000, [&] { order.push_back(99); });
  EXPECT_TRUE(scope.Cancel(cancelled));
  EXPECT_FALSE(scope.Cancel(cancelled));
  base_.RunFor(1500);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  base_.RunFor(1000);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(0u, base_.pending());
}

TEST_F(ExecutorScopeTest, CloseDropsWhatHasNotStartedAndAnswersForTheDelayedTasks) {
  auto scope = std::make_unique<ExecutorScope>(&base_);
  int ran = 0, dropped = 0, cancelled_dropped = 0;
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  scope->ScheduleAfter(1000, [&ran, held] { ran += *held; }, [&] { ++dropped; });
  const TimerId cancelled =
      scope->ScheduleAfter(1000, [&] { ++ran; }, [&] { ++cancelled_dropped; });
  scope->Schedule([&ran, held = std::move(held)] { ran += *held; });
  ASSERT_TRUE(scope->Cancel(cancelled));
  scope->Close();
  EXPECT_EQ(1, dropped);
  EXPECT_EQ(0, cancelled_dropped);  // the caller cancelled it: nobody waits for it
  // The delayed task left the base at once; the immediate one stays queued, as a no-op.
  EXPECT_EQ(1u, base_.pending());
  EXPECT_FALSE(watch.expired());
  // Later tasks are refused; the scope may go before its tasks leave the base's queue.
  scope->Schedule([&] { ++ran; });
  EXPECT_EQ(0u, scope->ScheduleAfter(10, [&] { ++ran; }, [&] { ++dropped; }));
  scope.reset();
  base_.RunFor(5000);
  EXPECT_EQ(0, ran);
  EXPECT_EQ(1, dropped);
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(0u, base_.pending());
}

TEST_F(ExecutorScopeTest, ATaskMayCloseItsOwnScope) {
  ExecutorScope scope(&base_);
  int later = 0, dropped = 0;
  scope.Schedule([&] {
    scope.ScheduleAfter(100, [&] { ++later; }, [&] { ++dropped; });
    scope.Close();  // does not wait for itself
    EXPECT_EQ(0u, scope.ScheduleAfter(100, [&] { ++later; }));
  });
  base_.RunFor(1000);
  EXPECT_EQ(0, later);
  EXPECT_EQ(1, dropped);
}

// On a pool of threads Close waits for a task that is running, and no task of the scope starts
// after Close has returned.
TEST(ExecutorScopeThreadsTest, CloseWaitsForTheRunningTasks) {
  auto pool = NewThreadPoolExecutor(2);
  ExecutorScope scope(pool.get());
  absl::Notification started, release;
  std::atomic<bool> finished{false};
  scope.Schedule([&] {
    started.Notify();
    release.WaitForNotification();
    finished = true;
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    scope.Close();
    closed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load());
  release.Notify();
  closer.join();
  EXPECT_TRUE(finished.load());

  // Many short tasks racing a Close: none runs once Close has returned.
  auto pool2 = NewThreadPoolExecutor(2);
  for (int round = 0; round < 20; ++round) {
    auto racing = std::make_unique<ExecutorScope>(pool2.get());
    std::atomic<bool> after_close{false};
    std::atomic<int> ran{0}, answered{0};
    for (int i = 0; i < 200; ++i) {
      racing->Schedule([&] {
        if (after_close.load()) ADD_FAILURE() << "a task ran after Close returned";
        ran.fetch_add(1);
      });
      racing->ScheduleAfter(i % 3, [&] {
        if (after_close.load()) ADD_FAILURE() << "a timer ran after Close returned";
        answered.fetch_add(1);
      }, [&] { answered.fetch_add(1); });
    }
    racing->Close();
    after_close = true;
    EXPECT_EQ(200, answered.load());  // each delayed task ran or was answered for, once
    racing.reset();
  }
  pool2.reset();  // the no-ops left in its queue run or go; none reaches a closed scope
}

}  // namespace
}  // namespace tessera
