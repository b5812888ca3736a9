#include "tessera/cluster/endpoint_state.h"

#include <gtest/gtest.h>

namespace tessera::cluster {
namespace {

EndpointState State(int64_t generation, int64_t heartbeat, AppStates apps = {}) {
  EndpointState s;
  s.generation = generation;
  s.heartbeat_version = heartbeat;
  s.app_states = std::move(apps);
  return s;
}

TEST(EndpointStateTest, MaxVersions) {
  EndpointState s = State(7, 12, {{"load", {"10", 3}}, {"status", {"normal", 15}}});
  EXPECT_EQ(s.MaxVersion(), 15);
  EXPECT_EQ(s.MaxAppVersion(), 15);
  s.heartbeat_version = 20;
  EXPECT_EQ(s.MaxVersion(), 20);
  EXPECT_EQ(State(1, 4).MaxAppVersion(), 0);
  ASSERT_NE(s.Find("load"), nullptr);
  EXPECT_EQ(*s.Find("load"), "10");
  EXPECT_EQ(s.Find("rack"), nullptr);
}

TEST(EndpointStateTest, MakeDeltaKeepsOnlyNewerStates) {
  EndpointState s = State(7, 12, {{"dc", {"dc1", 1}}, {"load", {"10", 9}}, {"tablets", {"t", 11}}});
  EndpointDelta d = MakeDelta("n1", s, 8);
  EXPECT_EQ(d.endpoint, "n1");
  EXPECT_EQ(d.generation, 7);
  EXPECT_EQ(d.from_version, 8);
  EXPECT_EQ(d.heartbeat_version, 12);
  ASSERT_EQ(d.app_states.size(), 2u);
  EXPECT_EQ(d.app_states.count("load"), 1u);
  EXPECT_EQ(d.app_states.count("tablets"), 1u);
  EXPECT_EQ(MakeDelta("n1", s, 0).app_states.size(), 3u);
  EXPECT_TRUE(MakeDelta("n1", s, 11).app_states.empty());
}

TEST(EndpointStateTest, HigherGenerationReplacesTheWholeState) {
  EndpointState copy = State(5, 100, {{"load", {"old", 90}}, {"rack", {"r1", 2}}});
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 6;
  d.from_version = 0;
  d.heartbeat_version = 3;
  d.app_states = {{"load", {"new", 2}}};
  MergeResult r = MergeDelta(d, &copy);
  EXPECT_EQ(r.outcome, MergeOutcome::kNewGeneration);
  EXPECT_FALSE(r.heartbeat_advanced);
  EXPECT_EQ(copy, State(6, 3, {{"load", {"new", 2}}}));  // rack is gone: a new process
}

TEST(EndpointStateTest, PartialDeltaOfANewGenerationIsRefused) {
  EndpointState copy = State(5, 100);
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 6;
  d.from_version = 4;  // the receiver would miss versions 1..4 of the new generation
  d.heartbeat_version = 9;
  EXPECT_EQ(MergeDelta(d, &copy).outcome, MergeOutcome::kRejectedHole);
  EXPECT_EQ(copy, State(5, 100));
}

TEST(EndpointStateTest, LowerGenerationIsIgnored) {
  EndpointState copy = State(5, 10);
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 4;
  d.heartbeat_version = 1000;
  EXPECT_EQ(MergeDelta(d, &copy).outcome, MergeOutcome::kStaleGeneration);
  EXPECT_EQ(copy, State(5, 10));
}

TEST(EndpointStateTest, SameGenerationHigherVersionWinsPerKey) {
  EndpointState copy = State(5, 10, {{"load", {"a", 8}}, {"status", {"normal", 9}}});
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 5;
  d.from_version = 7;
  d.heartbeat_version = 14;
  d.app_states = {{"load", {"b", 12}}, {"master", {"term-3", 13}}};
  MergeResult r = MergeDelta(d, &copy);
  EXPECT_EQ(r.outcome, MergeOutcome::kUpdated);
  EXPECT_TRUE(r.heartbeat_advanced);
  EXPECT_EQ(
      copy,
      State(5, 14, {{"load", {"b", 12}}, {"master", {"term-3", 13}}, {"status", {"normal", 9}}}));
}

TEST(EndpointStateTest, OlderValuesNeverOverwriteNewerOnes) {
  EndpointState copy = State(5, 20, {{"load", {"new", 18}}});
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 5;
  d.from_version = 3;
  d.heartbeat_version = 15;  // older heartbeat: keeps 20
  d.app_states = {{"load", {"old", 4}}};
  MergeResult r = MergeDelta(d, &copy);
  EXPECT_EQ(r.outcome, MergeOutcome::kUnchanged);
  EXPECT_FALSE(r.heartbeat_advanced);
  EXPECT_EQ(copy, State(5, 20, {{"load", {"new", 18}}}));
}

TEST(EndpointStateTest, DeltaStartingAboveTheCopyLeavesAHole) {
  EndpointState copy = State(5, 10, {{"load", {"a", 8}}});
  EndpointDelta d;
  d.endpoint = "n1";
  d.generation = 5;
  d.from_version = 12;  // versions 11..12 would be missing while the copy claimed them
  d.heartbeat_version = 15;
  d.app_states = {{"load", {"c", 13}}};
  EXPECT_EQ(MergeDelta(d, &copy).outcome, MergeOutcome::kRejectedHole);
  EXPECT_EQ(copy, State(5, 10, {{"load", {"a", 8}}}));
}

TEST(EndpointStateTest, MergingIsOrderIndependent) {
  // The owner's history: versions 1..6.
  EndpointState owner = State(3, 6, {{"dc", {"dc1", 1}}, {"load", {"5", 5}}, {"rack", {"r", 2}}});
  // Two deltas arriving in either order converge to the owner's state.
  EndpointDelta whole = MakeDelta("n", owner, 0);
  EndpointDelta recent = MakeDelta("n", owner, 4);
  for (int order = 0; order < 2; ++order) {
    EndpointState copy = State(3, 2, {{"dc", {"dc1", 1}}, {"rack", {"r", 2}}});
    if (order == 0) {
      MergeDelta(whole, &copy);
      MergeDelta(recent, &copy);
    } else {
      EXPECT_EQ(MergeDelta(recent, &copy).outcome, MergeOutcome::kRejectedHole);  // 3..4 unknown
      MergeDelta(whole, &copy);
      MergeDelta(recent, &copy);
    }
    EXPECT_EQ(copy, owner) << "order " << order;
  }
}

TEST(EndpointStateTest, FirstCopyNeedsAWholeDelta) {
  EndpointState owner = State(3, 6, {{"dc", {"dc1", 1}}});
  std::optional<EndpointState> s = StateFromDelta(MakeDelta("n", owner, 0));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, owner);
  EXPECT_FALSE(StateFromDelta(MakeDelta("n", owner, 2)).has_value());
}

}  // namespace
}  // namespace tessera::cluster
