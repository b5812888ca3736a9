// The long simulations (label `slow`): an hour of lossy, jittery network at the paper's settings
// and at Tessera's defaults, and a join into 1000 nodes. TESSERA_SEED=<seed> replays a failure.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/testing/scenarios.h"

namespace tessera::testing {

using cluster::DefaultGossipOptions;
using cluster::GossipOptions;
using cluster::PaperGossipOptions;
namespace {

#define SEED_TRACE(seed) SCOPED_TRACE(::testing::Message() << "replay with TESSERA_SEED=" << (seed))

void ExpectNoFalseConviction(GossipOptions gossip, int64_t duration_s) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  ScenarioOptions o;
  o.scenario = Scenario::kLoss;
  o.nodes = 100;
  o.seed = seed;
  o.gossip = gossip;
  o.network.loss = 0.01;
  o.network.jitter_us = 50'000;
  o.measure_rounds = 20;
  o.duration_s = duration_s;
  auto r = RunScenario(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->false_convictions_per_hour, 0.0);
  EXPECT_LT(*r->max_phi_live, gossip.convict_phi);
}

TEST(SimulatorSlowTest, AnHourOfLossAtOneSecondConvictsNobody) {
  ExpectNoFalseConviction(PaperGossipOptions(), 3600);
}

// Five rounds a second make the full hour ~3 CPU minutes: a quarter of it here, the hour in
// `tessera_sim --scenario loss` (docs/cluster_membership.md).
TEST(SimulatorSlowTest, AQuarterHourOfLossAtTesseraDefaultsConvictsNobody) {
  ExpectNoFalseConviction(DefaultGossipOptions(), 900);
}

TEST(SimulatorSlowTest, JoinIntoAThousandNodes) {
  const uint64_t seed = TestSeed();
  SEED_TRACE(seed);
  ScenarioOptions o;
  o.scenario = Scenario::kJoin;
  o.nodes = 1000;
  o.seed = seed;
  o.gossip = PaperGossipOptions();
  o.measure_rounds = 3;
  auto r = RunScenario(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->converge_rounds.has_value());
  EXPECT_LE(*r->converge_rounds, 3 + 2 * std::log2(1000));
}

}  // namespace
}  // namespace tessera::testing
