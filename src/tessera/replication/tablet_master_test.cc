// The master's choice of a new primary (tablet_master.h, ChooseNewPrimary): the highest
// sequence among the sealed replicas whose content is in the lineage, never a diverged one.
#include "tessera/replication/tablet_master.h"

#include "gtest/gtest.h"

namespace tessera::replication {
namespace {

catalog::TabletConfig EpochFive() {
  catalog::TabletConfig c;
  c.tablet_id = 7;
  c.epoch = 5;
  c.epoch_start_sequence = 207;
  c.state = catalog::TabletConfigState::kServing;
  c.replicas = {"a:1", "b:1", "c:1"};
  c.primary = 0;
  c.history = {{4, 150}, {5, 207}};
  return c;
}

TEST(ChooseNewPrimaryTest, TheHighestSequenceOfTheLineageWins) {
  // b and c joined epoch 5; c holds more of it.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {210, 5}}, {2, {212, 5}}}), 2u);
  // Equal sequences: the lower index.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {212, 5}}, {2, {212, 5}}}), 1u);
}

TEST(ChooseNewPrimaryTest, ADivergedReplicaIsNeverChosenThoughItHoldsMore) {
  // c last took mutations from epoch 4's primary, up to 215: beyond what epoch 5 kept (207),
  // so its 208..215 are not the lineage's; b joined epoch 5 and may hold an acknowledged 210.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {210, 5}}, {2, {215, 4}}}), 1u);
  // A replica of epoch 4 that holds no more than epoch 5 kept is in the lineage.
  EXPECT_EQ(ChooseNewPrimary(EpochFive(), {{1, {150, 5}}, {2, {200, 4}}}), 2u);
  // Nobody qualifies: no choice.
  EXPECT_FALSE(ChooseNewPrimary(EpochFive(), {{2, {215, 4}}}).has_value());
  // A lineage older than the history reaches: not chosen either.
  EXPECT_FALSE(ChooseNewPrimary(EpochFive(), {{1, {100, 2}}}).has_value());
}

}  // namespace
}  // namespace tessera::replication
