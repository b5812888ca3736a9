// Whole-cluster simulations that run in a few seconds. The hour-long and 1000-node runs are in
// simulator_slow_test.cc. Every test prints its seed on failure: TESSERA_SEED=<seed> replays it.
#include "tessera/testing/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tessera/testing/scenarios.h"

namespace tessera::testing {

using cluster::DefaultGossipOptions;
using cluster::GossipOptions;
using cluster::Liveness;
using cluster::PaperGossipOptions;
namespace {

constexpr int64_t kSecond = 1'000'000;

SimulatorOptions Options(int nodes, GossipOptions gossip, uint64_t seed) {
  SimulatorOptions o;
  o.nodes = nodes;
  o.seed = seed;
  o.gossip = std::move(gossip);
  o.gossip.cluster_name = "sim";
  return o;
}

// Runs whole rounds until the views converge; false if they do not within `max_rounds`.
bool RunUntilConverged(Simulator* sim, int max_rounds) {
  for (int i = 0; i < max_rounds; ++i) {
    sim->RunFor(sim->options().gossip.interval_ms * 1000);
    if (sim->Converged()) return true;
  }
  return false;
}

#define SEED_TRACE(seed) SCOPED_TRACE(::testing::Message() << "replay with TESSERA_SEED=" << (seed))

TEST(SimulatorTest, SameSeedSameRun) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  auto run = [](uint64_t s) {
    SimulatorOptions o = Options(10, DefaultGossipOptions(), s);
    o.network.loss = 0.05;
    auto sim = Simulator::Create(o);
    EXPECT_TRUE(sim.ok()) << sim.status();
    (*sim)->RunFor(5 * kSecond);
    (*sim)->Crash(3);
    (*sim)->RunFor(10 * kSecond);
    std::vector<std::string> trace;
    for (const auto& e : (*sim)->events()) {
      trace.push_back(StrCat(e.at_us, " ", e.observer, " ", e.endpoint, " ", LivenessName(e.from),
                             "->", LivenessName(e.to)));
    }
    return std::pair{trace, (*sim)->bytes_sent()};
  };
  auto a = run(seed);
  auto b = run(seed);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_FALSE(a.first.empty());
  auto c = run(seed + 1);
  EXPECT_NE(a.second, c.second);  // another seed, another run
}

TEST(SimulatorTest, RejectsBadOptions) {
  SimulatorOptions o = Options(0, DefaultGossipOptions(), 1);
  EXPECT_FALSE(Simulator::Create(o).ok());
  o = Options(3, DefaultGossipOptions(), 1);
  o.network.loss = 1.5;
  EXPECT_FALSE(Simulator::Create(o).ok());
  o = Options(3, DefaultGossipOptions(), 1);
  o.gossip.interval_ms = 0;
  EXPECT_FALSE(Simulator::Create(o).ok());
}

TEST(SimulatorTest, HundredNodesAtOneSecondEveryLiveNodeConvictsACrash) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  auto sim = Simulator::Create(Options(100, PaperGossipOptions(), seed));
  ASSERT_TRUE(sim.ok()) << sim.status();
  Simulator& s = **sim;
  ASSERT_TRUE(RunUntilConverged(&s, 60));
  s.RunFor(30 * kSecond);
  s.ClearEvents();
  const int victim = 1 + static_cast<int>(Random(seed).Uniform(99));
  const int64_t crashed_at = s.now_us();
  s.Crash(victim);
  s.RunFor(60 * kSecond);
  std::set<int> convicted_by;
  for (const auto& e : s.events()) {
    if (e.to != Liveness::kDown) continue;
    // Nobody else was convicted.
    ASSERT_EQ(e.endpoint, s.IdOf(victim)) << "observer " << s.IdOf(e.observer);
    EXPECT_TRUE(convicted_by.insert(e.observer).second);
    // Not before the exponential model allows (phi 5: 11.5 mean gaps of >= 1 s).
    EXPECT_GE(e.at_us - crashed_at, 10 * kSecond);
  }
  EXPECT_EQ(convicted_by.size(), 99u);
  for (int i : s.RunningNodes()) {
    EXPECT_EQ(s.node(i)->LivenessOf(s.IdOf(victim)), Liveness::kDown) << s.IdOf(i);
  }
}

TEST(SimulatorTest, DefaultsDetectACrashWithinFiveSeconds) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  ScenarioOptions o;
  o.scenario = Scenario::kCrash;
  o.nodes = 100;
  o.seed = seed;
  o.trials = 2;
  o.measure_rounds = 50;
  auto r = RunScenario(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->missed_detections, 0);
  ASSERT_TRUE(r->detect_median_s.has_value());
  EXPECT_LE(*r->detect_median_s, 5.0);
  EXPECT_LE(*r->detect_p99_s, 6.0);
  EXPECT_GT(*r->detect_median_s, 2.0);  // phi 5 still waits ~11.5 mean gaps
}

TEST(SimulatorTest, LossAndJitterConvictNobody) {
  // Five simulated minutes here; simulator_slow_test.cc runs the full hour.
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  ScenarioOptions o;
  o.scenario = Scenario::kLoss;
  o.nodes = 100;
  o.seed = seed;
  o.gossip = PaperGossipOptions();
  o.network.loss = 0.01;
  o.network.jitter_us = 50'000;
  o.measure_rounds = 20;
  o.duration_s = 300;
  auto r = RunScenario(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->false_convictions_per_hour, 0.0);
  EXPECT_LT(*r->max_phi_live, o.gossip.convict_phi);
  EXPECT_GT(*r->max_phi_live, 0.0);
}

TEST(SimulatorTest, PartitionHealsAndViewsConverge) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  ScenarioOptions o;
  o.scenario = Scenario::kPartition;
  o.nodes = 100;
  o.seed = seed;
  o.gossip = PaperGossipOptions();
  o.measure_rounds = 20;
  o.partition_s = 60;
  auto r = RunScenario(o);
  ASSERT_TRUE(r.ok()) << r.status();
  // Both halves convicted each other while split ...
  EXPECT_EQ(r->partition_convicted_fraction, 1.0);
  // ... and after the heal everyone sees everyone up with the loads set during the split.
  ASSERT_TRUE(r->converge_rounds.has_value());
  EXPECT_LE(*r->converge_rounds, 15);
}

TEST(SimulatorTest, MinorityWithoutSeedsFindsItsWayBack) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  auto sim = Simulator::Create(Options(20, DefaultGossipOptions(), seed));
  ASSERT_TRUE(sim.ok()) << sim.status();
  Simulator& s = **sim;
  ASSERT_TRUE(RunUntilConverged(&s, 60));
  std::vector<int> group_of(20, 0);
  for (int i = 17; i < 20; ++i) group_of[i] = 1;  // three non-seed nodes cut off
  s.SetPartition(group_of);
  s.RunFor(20 * kSecond);
  EXPECT_EQ(s.node(0)->LivenessOf(s.IdOf(18)), Liveness::kDown);
  EXPECT_EQ(s.node(18)->LivenessOf(s.IdOf(0)), Liveness::kDown);
  s.Heal();
  EXPECT_TRUE(RunUntilConverged(&s, 50));
}

TEST(SimulatorTest, CrashedNodeRestartsWithANewGeneration) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  auto sim = Simulator::Create(Options(10, DefaultGossipOptions(), seed));
  ASSERT_TRUE(sim.ok()) << sim.status();
  Simulator& s = **sim;
  ASSERT_TRUE(RunUntilConverged(&s, 60));
  const int64_t old_generation = s.node(4)->generation();
  s.Crash(4);
  s.RunFor(10 * kSecond);
  EXPECT_EQ(s.node(0)->LivenessOf(s.IdOf(4)), Liveness::kDown);
  ASSERT_TRUE(s.Restart(4).ok());
  EXPECT_FALSE(s.Restart(4).ok());  // already running
  EXPECT_GT(s.node(4)->generation(), old_generation);
  EXPECT_TRUE(RunUntilConverged(&s, 30));  // everyone: new generation, up
  EXPECT_EQ(s.node(0)->stats().recoveries, 1u);
}

TEST(SimulatorTest, NodeOfAnotherClusterIsRefusedEverywhere) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  auto sim = Simulator::Create(Options(10, DefaultGossipOptions(), seed));
  ASSERT_TRUE(sim.ok()) << sim.status();
  Simulator& s = **sim;
  auto stranger = s.AddNode("other-cluster");
  ASSERT_TRUE(stranger.ok());
  s.RunFor(20 * kSecond);
  uint64_t refused = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(s.node(i)->LivenessOf(s.IdOf(*stranger)).has_value()) << s.IdOf(i);
    refused += s.node(i)->stats().refused_cluster_name;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(s.node(*stranger)->KnownEndpoints(), 1u);           // it learned nothing either
  EXPECT_EQ(s.node(*stranger)->stats().messages_received, 0u);  // no ACK ever came back
}

int JoinRounds(int nodes, uint64_t seed) {
  ScenarioOptions o;
  o.scenario = Scenario::kJoin;
  o.nodes = nodes;
  o.seed = seed;
  o.gossip = PaperGossipOptions();
  o.measure_rounds = 5;
  auto r = RunScenario(o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  EXPECT_TRUE(r->converge_up_rounds.has_value());
  EXPECT_GE(*r->converge_up_rounds, *r->converge_rounds);
  return *r->converge_rounds;
}

TEST(SimulatorTest, JoinConvergesInLogarithmicRounds) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  const int r10 = JoinRounds(10, seed);
  const int r100 = JoinRounds(100, seed);
  // Push-pull gossip spreads in about log2(N) rounds plus a little.
  EXPECT_GE(r10, 1);
  EXPECT_LE(r10, 3 + 2 * std::log2(10));
  EXPECT_LE(r100, 3 + 2 * std::log2(100));
}

}  // namespace
}  // namespace tessera::testing
