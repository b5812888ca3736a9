// The tablet configuration record: round trip, validation, every way bytes can be malformed,
// and the names under which it is stored.
#include "tessera/catalog/tablet_config.h"

#include <string>

#include "gtest/gtest.h"
#include "tessera/catalog/tablet_id.h"

namespace tessera::catalog {
namespace {

TabletConfig Sample() {
  TabletConfig c;
  c.tablet_id = MakeTabletId(42, 3);
  c.epoch = 7;
  c.epoch_start_sequence = 1234;
  c.state = TabletConfigState::kServing;
  c.replicas = {"10.0.0.1:8086", "10.0.0.2:8086", "10.0.0.3:8086"};
  c.primary = 1;
  c.needs_rebuild = {2};
  c.history = {{5, 1000}, {6, 1200}, {7, 1234}};
  return c;
}

TEST(TabletConfigTest, RoundTrip) {
  const TabletConfig c = Sample();
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  auto back = TabletConfig::Decode(c.Encode());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(back->primary_endpoint(), "10.0.0.2:8086");
  EXPECT_EQ(back->live_members(), 2u);
  EXPECT_EQ(TabletConfigStateName(back->state), "serving");
  // One replica, a new tablet.
  TabletConfig one;
  one.tablet_id = 1;
  one.epoch = 1;
  one.replicas = {"127.0.0.1:8086"};
  one.history = {{1, 0}};
  auto single = TabletConfig::Decode(one.Encode());
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->state, TabletConfigState::kCreating);
  EXPECT_EQ(*single, one);
}

TEST(TabletConfigTest, ValidateNamesTheProblem) {
  auto expect_bad = [](TabletConfig c, std::string_view what) {
    Status s = c.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_NE(std::string(s.message()).find(what), std::string::npos) << s;
  };
  TabletConfig c = Sample();
  c.tablet_id = 0;
  expect_bad(c, "tablet id 0");
  c = Sample();
  c.epoch = 0;
  expect_bad(c, "epoch 0");
  c = Sample();
  c.state = static_cast<TabletConfigState>(9);
  expect_bad(c, "unknown state 9");
  c = Sample();
  c.replicas.clear();
  c.needs_rebuild.clear();
  expect_bad(c, "no replicas");
  c = Sample();
  c.replicas[0] = "";
  expect_bad(c, "empty replica endpoint");
  c = Sample();
  c.replicas[2] = c.replicas[0];
  expect_bad(c, "listed twice");
  c = Sample();
  c.primary = 3;
  expect_bad(c, "primary index 3 of 3 replicas");
  c = Sample();
  c.needs_rebuild = {2, 0};
  expect_bad(c, "out of order");
  c = Sample();
  c.needs_rebuild = {5};
  expect_bad(c, "rebuild index 5");
  c = Sample();
  c.needs_rebuild = {1};
  expect_bad(c, "the primary 10.0.0.2:8086 cannot need a rebuild");
  c = Sample();
  c.history.clear();
  expect_bad(c, "a history of 0 epochs");
  c = Sample();
  c.history = {{6, 1200}, {5, 1000}, {7, 1234}};
  expect_bad(c, "history epochs out of order");
  c = Sample();
  c.history.back().start_sequence = 1;
  expect_bad(c, "does not end with epoch 7");
}

TEST(TabletConfigTest, NextEpochExtendsTheHistory) {
  TabletConfig c = Sample();
  c.needs_rebuild.clear();
  TabletConfig next = c.NextEpoch(2, 1300);
  EXPECT_EQ(next.epoch, 8u);
  EXPECT_EQ(next.primary, 2u);
  EXPECT_EQ(next.epoch_start_sequence, 1300u);
  EXPECT_EQ(next.history.back(), (EpochStart{8, 1300}));
  EXPECT_TRUE(next.Validate().ok()) << next.Validate();
  for (int i = 0; i < 20; ++i) next = next.NextEpoch(0, 1300 + i);
  EXPECT_EQ(next.history.size(), TabletConfig::kMaxHistory);
  EXPECT_TRUE(next.Validate().ok()) << next.Validate();
}

// docs/replication.md, "The lineage check".
TEST(TabletConfigTest, LineageAllowsOnlyMutationsEveryLaterEpochKept) {
  const TabletConfig c = Sample();  // epochs 5 (from 1000), 6 (from 1200), 7 (from 1234)
  EXPECT_TRUE(c.LineageAllows(0, 0));      // holds nothing
  EXPECT_TRUE(c.LineageAllows(7, 99999));  // already in this epoch
  EXPECT_FALSE(c.LineageAllows(8, 5));     // joined a newer epoch: not this configuration's
  // Joined 6 and took up to 1234 from its primary: epoch 7 started there, fine.
  EXPECT_TRUE(c.LineageAllows(6, 1234));
  EXPECT_FALSE(c.LineageAllows(6, 1235));  // one mutation of epoch 6 that epoch 7 dropped
  // Joined 5: must hold no more than epoch 6 kept (1200) and epoch 7 kept.
  EXPECT_TRUE(c.LineageAllows(5, 1200));
  EXPECT_FALSE(c.LineageAllows(5, 1201));
  EXPECT_TRUE(c.LineageAllows(4, 1000));
  // Joined 3: epoch 4 is not in the history, nothing can be said: rebuild.
  EXPECT_FALSE(c.LineageAllows(3, 10));
}

TEST(TabletConfigTest, MalformedBytesAreDataLoss) {
  const std::string good = Sample().Encode();
  auto expect_bad = [](const std::string& bytes, std::string_view what) {
    auto c = TabletConfig::Decode(bytes);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kDataLoss) << what;
    EXPECT_NE(std::string(c.status().message()).find(what), std::string::npos) << c.status();
  };
  expect_bad("", "empty");
  expect_bad(std::string(1, '\x02') + good.substr(1), "unknown format byte 2");
  for (size_t cut = 1; cut < good.size(); ++cut) {
    EXPECT_EQ(TabletConfig::Decode(good.substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
  expect_bad(good + "x", "1 trailing bytes");
  // Decodes, but does not validate.
  TabletConfig c = Sample();
  c.primary = 2;  // the replica needing a rebuild
  expect_bad(c.Encode(), "cannot need a rebuild");
}

TEST(TabletConfigTest, NamesListInIdOrderAndParseBack) {
  EXPECT_EQ(TabletConfigName(0x2a0003), "tablets/00000000002a0003");
  EXPECT_LT(TabletConfigName(9), TabletConfigName(16));
  EXPECT_LT(TabletConfigName(MakeTabletId(42, 1)), TabletConfigName(MakeTabletId(43, 0)));
  for (uint64_t id : {uint64_t{1}, MakeTabletId(kLocalPrefixBit | 5, 65535), ~uint64_t{0}}) {
    auto back = ParseTabletConfigName(TabletConfigName(id));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, id);
  }
  for (std::string_view bad : {"", "tablets/", "tablets/00000000002A0003", "tablets/2a",
                               "schema/00000000002a0003", "tablets/00000000002a00031"}) {
    EXPECT_EQ(ParseTabletConfigName(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace tessera::catalog
