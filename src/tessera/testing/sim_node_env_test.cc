// A simulated node's clock and its view of the simulation's executor (sim_node_env.h).
#include "tessera/testing/sim_node_env.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/sim_executor.h"

namespace tessera::testing {
namespace {

constexpr int64_t kStart = 1'000'000'000;

TEST(DriftingClockTest, ReadsTheSimulationsTimeUntilItDrifts) {
  ManualClock base(kStart);
  DriftingClock clock(&base);
  base.Advance(500);
  EXPECT_EQ(clock.MonotonicMicros(), kStart + 500);
  EXPECT_EQ(clock.NowMicros(), kStart + 500);
  clock.SetDrift(/*offset_us=*/-7000, /*rate=*/2.0);
  base.Advance(1000);
  EXPECT_EQ(clock.MonotonicMicros(), kStart + 500 + 2000);
  EXPECT_EQ(clock.NowMicros(), kStart + 500 + 2000 - 7000);
  EXPECT_EQ(clock.ToBaseMicros(3000), 1500);
  clock.SetDrift(0, 1.0);  // the time gained stays; the rate is back
  base.Advance(10);
  EXPECT_EQ(clock.MonotonicMicros(), kStart + 500 + 2000 + 10);
}

TEST(NodeExecutorTest, TimersFollowTheNodesClock) {
  ManualClock base(kStart);
  SimExecutor sim(&base);
  DriftingClock clock(&base);
  clock.SetDrift(0, 2.0);  // the node's time runs twice as fast
  NodeExecutor node(&sim, &clock, &base);
  int64_t ran_at = 0;
  node.ScheduleAfter(10'000, [&] { ran_at = base.MonotonicMicros(); });
  sim.RunFor(100'000);
  EXPECT_EQ(ran_at, kStart + 5'000);
}

TEST(NodeExecutorTest, DropAllCancelsOnlyThisNodesTasks) {
  ManualClock base(kStart);
  SimExecutor sim(&base);
  DriftingClock clock(&base);
  NodeExecutor a(&sim, &clock, &base);
  NodeExecutor b(&sim, &clock, &base);
  std::vector<std::string> ran;
  a.Schedule([&] { ran.push_back("a1"); });
  b.ScheduleAfter(10, [&] { ran.push_back("b1"); });
  a.ScheduleAfter(20, [&] { ran.push_back("a2"); });
  const TimerId cancelled = b.ScheduleAfter(30, [&] { ran.push_back("b2"); });
  EXPECT_EQ(a.pending(), 2u);
  EXPECT_TRUE(b.Cancel(cancelled));
  EXPECT_FALSE(b.Cancel(cancelled));
  a.DropAll();
  EXPECT_EQ(a.pending(), 0u);
  sim.RunFor(1000);
  EXPECT_EQ(ran, std::vector<std::string>({"b1"}));
}

TEST(NodeExecutorTest, HeldTasksRunWhenThePauseEndsInTheirOrder) {
  ManualClock base(kStart);
  SimExecutor sim(&base);
  DriftingClock clock(&base);
  NodeExecutor node(&sim, &clock, &base);
  std::vector<std::pair<std::string, int64_t>> ran;
  auto note = [&](std::string what) {
    return [&ran, &base, what] { ran.emplace_back(what, base.MonotonicMicros() - kStart); };
  };
  node.ScheduleAfter(100, note("first"));
  node.ScheduleAfter(200, note("second"));
  node.ScheduleAfter(5000, note("after"));
  node.Hold(kStart + 1000);
  sim.RunFor(10'000);
  EXPECT_EQ(ran, (std::vector<std::pair<std::string, int64_t>>{
                     {"first", 1000}, {"second", 1000}, {"after", 5000}}));
  EXPECT_EQ(node.pending(), 0u);
}

}  // namespace
}  // namespace tessera::testing
