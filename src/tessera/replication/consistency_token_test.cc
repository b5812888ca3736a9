// Consistency tokens (consistency_token.h): both versions' text, and when a tablet of a token
// is reached across a failover.
#include "tessera/replication/consistency_token.h"

#include "gtest/gtest.h"

namespace tessera::replication {
namespace {

// Epochs 1..5 of one tablet, each begun at the sequence given (epoch 1 at 0).
catalog::TabletConfig EpochFive() {
  catalog::TabletConfig c;
  c.tablet_id = 7;
  c.epoch = 1;
  c.state = catalog::TabletConfigState::kServing;
  c.replicas = {"a:1", "b:1", "c:1"};
  c.history = {{1, 0}};
  for (uint64_t start : {110, 120, 150, 207}) c = c.NextEpoch(c.epoch % 3, start);
  return c;
}

TEST(ConsistencyTokenTest, AVersionTwoTokenRoundTripsAndSaysItsVersion) {
  ConsistencyToken token{"projects/p/instances/i/tables/t",
                         {{7, 5, 210}, {0x8000000000000001, 1, 0}}};
  const std::string text = token.Encode();
  EXPECT_EQ(text.substr(0, 2), "2:");
  StatusOr<ConsistencyToken> back = ConsistencyToken::Decode(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, token);
  EXPECT_FALSE(IsSingleNodeToken(text));
}

TEST(ConsistencyTokenTest, TextThatIsNotAVersionTwoTokenIsInvalidAndNamed) {
  const ConsistencyToken valid{"projects/p/instances/i/tables/t", {{7, 5, 210}}};
  const std::string encoded = valid.Encode();
  for (const std::string& text :
       {std::string(""), std::string("tessera-consistency-12"),
        std::string("3:") + encoded.substr(2), std::string("2:not base64!"), std::string("2:AAAA"),
        ConsistencyToken{"projects/p/instances/i/tables/t", {}}.Encode(),
        ConsistencyToken{"", {{7, 5, 210}}}.Encode()}) {
    StatusOr<ConsistencyToken> token = ConsistencyToken::Decode(text);
    ASSERT_FALSE(token.ok()) << text;
    EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(token.status().message().find(StrCat("\"", text, "\"")), std::string::npos)
        << token.status();
  }
}

TEST(ConsistencyTokenTest, VersionOneTokensAreRecognised) {
  EXPECT_EQ(SingleNodeToken(42), "tessera-consistency-42");
  EXPECT_TRUE(IsSingleNodeToken(SingleNodeToken(0)));
  EXPECT_FALSE(IsSingleNodeToken("tessera-consistency-"));
  EXPECT_FALSE(IsSingleNodeToken("tessera-consistency-4x"));
  EXPECT_FALSE(IsSingleNodeToken("other-42"));
}

TEST(ConsistencyTokenTest, TheRequiredSequenceIsTheTokensUnlessALaterEpochBeganBelowIt) {
  const catalog::TabletConfig c = EpochFive();
  // Taken in the current epoch: its own sequence.
  EXPECT_EQ(RequiredSequence({7, 5, 230}, c), 230u);
  // Taken in epoch 4 at 180: epoch 5 began at 207, above it: 180 stays.
  EXPECT_EQ(RequiredSequence({7, 4, 180}, c), 180u);
  // Taken in epoch 4 at 215: 208..215 were never acknowledged (epoch 5 kept up to 207).
  EXPECT_EQ(RequiredSequence({7, 4, 215}, c), 207u);
  // Taken in epoch 2 at 160: epoch 3 began at 120, so 121..160 were lost then.
  EXPECT_EQ(RequiredSequence({7, 2, 160}, c), 120u);
  // Taken in epoch 1 at 160: every later start caps it, the lowest (epoch 2's) wins.
  EXPECT_EQ(RequiredSequence({7, 1, 160}, c), 110u);
  // The history no longer reaches epoch 2: the token's own sequence.
  catalog::TabletConfig trimmed = c;
  trimmed.history.erase(trimmed.history.begin(), trimmed.history.begin() + 2);
  EXPECT_EQ(RequiredSequence({7, 1, 160}, trimmed), 160u);
}

TEST(ConsistencyTokenTest, AReplicaReachesATokenWithTheLineagesMutationsOnly) {
  const catalog::TabletConfig c = EpochFive();
  EXPECT_TRUE(ReplicaReached(c, 5, 210, 210));
  EXPECT_FALSE(ReplicaReached(c, 5, 209, 210));
  // Nothing required, nothing held.
  EXPECT_TRUE(ReplicaReached(c, 0, 0, 0));
  // Joined epoch 4, holds 200 <= 207: the lineage's.
  EXPECT_TRUE(ReplicaReached(c, 4, 200, 200));
  // Joined epoch 4 and holds 215: 208..215 are not the lineage's, whatever its count says.
  EXPECT_FALSE(ReplicaReached(c, 4, 215, 207));
  // It knows a newer configuration than the checker: not reached yet, by this configuration.
  EXPECT_FALSE(ReplicaReached(c, 6, 230, 210));
}

}  // namespace
}  // namespace tessera::replication
