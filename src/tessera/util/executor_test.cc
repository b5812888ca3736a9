#include "tessera/util/executor.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tessera/util/clock.h"
#include "tessera/util/env.h"
#include "tessera/util/sim_executor.h"

namespace tessera {
namespace {

TEST(ThreadPoolExecutorTest, RunsScheduledTasks) {
  auto pool = NewThreadPoolExecutor(2);
  std::atomic<int> ran{0};
  absl::Notification done;
  for (int i = 0; i < 100; ++i) {
    pool->Schedule([&] {
      if (ran.fetch_add(1) + 1 == 100) done.Notify();
    });
  }
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(ran.load(), 100);
}

TEST(ThreadPoolExecutorTest, TimersRunInDueOrderAndNotEarly) {
  auto pool = NewThreadPoolExecutor(1);
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  const int64_t start = SystemClock()->MonotonicMicros();
  int64_t first_at = 0;
  pool->ScheduleAfter(60'000, [&] {
    absl::MutexLock l(&mu);
    order.push_back(2);
    done.Notify();
  });
  pool->ScheduleAfter(20'000, [&] {
    absl::MutexLock l(&mu);
    first_at = SystemClock()->MonotonicMicros();
    order.push_back(1);
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock l(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(first_at - start, 20'000);
}

TEST(ThreadPoolExecutorTest, CancelStopsATimerThatHasNotStarted) {
  auto pool = NewThreadPoolExecutor(1);
  std::atomic<bool> cancelled_ran{false};
  absl::Notification later_ran;
  TimerId id = pool->ScheduleAfter(30'000, [&] { cancelled_ran = true; });
  EXPECT_TRUE(pool->Cancel(id));
  EXPECT_FALSE(pool->Cancel(id));  // once only
  pool->ScheduleAfter(60'000, [&] { later_ran.Notify(); });
  ASSERT_TRUE(later_ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(cancelled_ran.load());
}

TEST(ThreadPoolExecutorTest, DestructorDropsPendingTimers) {
  std::atomic<bool> ran{false};
  {
    auto pool = NewThreadPoolExecutor(1);
    pool->ScheduleAfter(10'000'000, [&] { ran = true; });
  }  // must not wait ten seconds
  EXPECT_FALSE(ran.load());
}

TEST(SimExecutorTest, NothingRunsUntilAsked) {
  ManualClock clock(1000);
  SimExecutor sim(&clock);
  int ran = 0;
  sim.Schedule([&] { ++ran; });
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(sim.pending(), 1u);
  EXPECT_TRUE(sim.RunNext());
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(sim.RunNext());
  EXPECT_EQ(clock.MonotonicMicros(), 1000);  // a task due now does not move time
}

TEST(SimExecutorTest, RunsInDueThenSchedulingOrderAndMovesTheClock) {
  ManualClock clock(0);
  SimExecutor sim(&clock);
  std::vector<std::pair<int, int64_t>> seen;
  auto record = [&](int tag) {
    return [&, tag] { seen.push_back({tag, clock.MonotonicMicros()}); };
  };
  sim.ScheduleAfter(500, record(3));
  sim.ScheduleAfter(100, record(1));
  sim.ScheduleAfter(100, record(2));  // same due time: after the one scheduled first
  EXPECT_EQ(sim.RunUntil(1000), 3u);
  EXPECT_EQ(seen, (std::vector<std::pair<int, int64_t>>{{1, 100}, {2, 100}, {3, 500}}));
  EXPECT_EQ(clock.MonotonicMicros(), 1000);
}

TEST(SimExecutorTest, TasksScheduledByTasksRunWhenDueInsideTheWindow) {
  ManualClock clock(0);
  SimExecutor sim(&clock);
  int ticks = 0;
  std::function<void()> tick = [&] {
    ++ticks;
    sim.ScheduleAfter(100, tick);  // a periodic timer, as a gossip round is
  };
  sim.ScheduleAfter(100, tick);
  EXPECT_EQ(sim.RunFor(1000), 10u);  // at 100, 200, ..., 1000
  EXPECT_EQ(ticks, 10);
  EXPECT_EQ(sim.pending(), 1u);
  EXPECT_EQ(sim.NextDueMicros(), std::optional<int64_t>(1100));
}

TEST(SimExecutorTest, CancelAndBoundedRuns) {
  ManualClock clock(0);
  SimExecutor sim(&clock);
  int ran = 0;
  TimerId a = sim.ScheduleAfter(10, [&] { ++ran; });
  sim.ScheduleAfter(20, [&] { ++ran; });
  sim.ScheduleAfter(30, [&] { ++ran; });
  EXPECT_TRUE(sim.Cancel(a));
  EXPECT_EQ(sim.RunUntil(100, /*max_tasks=*/1), 1u);
  EXPECT_EQ(clock.MonotonicMicros(), 20);  // stopped by the bound: time stays at the last task
  EXPECT_EQ(sim.RunReady(), 0u);
  EXPECT_EQ(sim.RunUntil(100), 1u);
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(sim.tasks_run(), 2u);
}

TEST(SimExecutorTest, SameScheduleSameRun) {
  auto run = [](uint64_t seed) {
    ManualClock clock(0);
    SimExecutor sim(&clock);
    Env env{.clock = &clock, .executor = &sim, .seed = seed};
    Random rnd = env.NewRandom("test");
    std::vector<int64_t> times;
    for (int i = 0; i < 50; ++i) {
      sim.ScheduleAfter(static_cast<int64_t>(rnd.Uniform(10'000)),
                        [&] { times.push_back(clock.MonotonicMicros()); });
    }
    sim.RunUntil(20'000);
    return times;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(EnvTest, RandomStreamsAreIndependentAndReplayable) {
  Env env{.seed = 42};
  Random a1 = env.NewRandom("gossip");
  Random a2 = env.NewRandom("gossip");
  Random b = env.NewRandom("election");
  const uint64_t x = a1.Next64();
  EXPECT_EQ(x, a2.Next64());
  EXPECT_NE(x, b.Next64());
  Env other{.seed = 43};
  EXPECT_NE(x, other.NewRandom("gossip").Next64());
}

TEST(EnvTest, SystemEnvIsTheRealMachine) {
  SystemEnv system(1);
  const Env& env = system.env();
  EXPECT_EQ(env.fs, PosixFileSystem());
  EXPECT_EQ(env.clock, SystemClock());
  ASSERT_NE(env.executor, nullptr);
  absl::Notification ran;
  env.executor->Schedule([&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

}  // namespace
}  // namespace tessera
