#include "tessera/replication/nearest_replica.h"

#include <map>

#include "gtest/gtest.h"

namespace tessera::replication {
namespace {

// Six nodes: a1..a3 on racks r1..r3 of dc1, b1..b3 on racks r1..r3 of dc2; x not a replica,
// on rack r1 of dc1 with a1.
class NearestReplicaTest : public ::testing::Test {
 protected:
  NearestReplicaTest() {
    where_ = {{"a1", {"dc1", "r1", true}}, {"a2", {"dc1", "r2", true}},
              {"a3", {"dc1", "r3", true}}, {"b1", {"dc2", "r1", true}},
              {"b2", {"dc2", "r2", true}}, {"b3", {"dc2", "r3", true}},
              {"x", {"dc1", "r1", true}}};
    locate_ = [this](const std::string& e) -> std::optional<NodeLocation> {
      auto it = where_.find(e);
      if (it == where_.end()) return std::nullopt;
      return it->second;
    };
  }

  static catalog::TabletConfig Config(std::vector<std::string> replicas, size_t primary) {
    catalog::TabletConfig c;
    c.tablet_id = 7;
    c.epoch = 1;
    c.replicas = std::move(replicas);
    c.primary = primary;
    return c;
  }

  std::string Nearest(const catalog::TabletConfig& c, const std::string& self,
                      const std::set<std::string>& avoid = {}) {
    return NearestReplica(c, self, locate_, avoid);
  }

  std::map<std::string, NodeLocation> where_;
  LocateNode locate_;
};

TEST_F(NearestReplicaTest, OwnReplicaFirst) {
  EXPECT_EQ(Nearest(Config({"b1", "a2", "a1"}, 0), "a1"), "a1");
}

TEST_F(NearestReplicaTest, ThenSameRackThenSameDcThenPrimary) {
  // x is on a1's rack: a1 even though a2 is in dc1 and b1 is the primary.
  EXPECT_EQ(Nearest(Config({"b1", "a2", "a1"}, 0), "x"), "a1");
  // No replica on x's rack: the one in dc1.
  EXPECT_EQ(Nearest(Config({"b1", "a2", "b2"}, 0), "x"), "a2");
  // None in dc1 at all: the primary, not the first in placement order.
  EXPECT_EQ(Nearest(Config({"b1", "b2", "b3"}, 2), "x"), "b3");
}

TEST_F(NearestReplicaTest, TiesGoToThePrimaryThenPlacementOrder) {
  EXPECT_EQ(Nearest(Config({"a2", "a3", "b1"}, 1), "x"), "a3");
  EXPECT_EQ(Nearest(Config({"a2", "a3", "b1"}, 2), "x"), "a2");
}

TEST_F(NearestReplicaTest, PassesOverRebuildingDownAndFailedReplicas) {
  catalog::TabletConfig c = Config({"b1", "a1", "a2"}, 0);
  c.needs_rebuild = {1};  // a1
  EXPECT_EQ(Nearest(c, "x"), "a2");
  c.needs_rebuild.clear();
  where_["a1"].live = false;
  EXPECT_EQ(Nearest(c, "x"), "a2");
  EXPECT_EQ(Nearest(c, "x", {"a2"}), "b1");  // a2 failed a try: the primary
  // Even its own replica, once it failed.
  where_["a1"].live = true;
  EXPECT_EQ(Nearest(c, "a1", {"a1"}), "a2");
}

TEST_F(NearestReplicaTest, ADeadPrimaryLeavesAReplicaInAnotherDc) {
  where_["a1"].live = false;
  EXPECT_EQ(Nearest(Config({"a1", "b1", "b2"}, 0), "x"), "b1");
}

TEST_F(NearestReplicaTest, NothingLeftGivesThePrimary) {
  EXPECT_EQ(Nearest(Config({"a1", "b1"}, 1), "x", {"a1", "b1"}), "b1");
}

TEST_F(NearestReplicaTest, UnknownNodesAreFarButUsable) {
  // "y" is not known to the locator: treated as another dc, but not as down.
  EXPECT_EQ(Nearest(Config({"y", "b1"}, 1), "x"), "b1");
  EXPECT_EQ(Nearest(Config({"y", "b1"}, 1), "x", {"b1"}), "y");
  // A self unknown to the locator ranks only itself and the primary.
  EXPECT_EQ(Nearest(Config({"a1", "b1"}, 1), "z"), "b1");
}

TEST_F(NearestReplicaTest, WithoutALocatorOwnReplicaElseThePrimary) {
  EXPECT_EQ(NearestReplica(Config({"a1", "a2"}, 1), "a1", nullptr, {}), "a1");
  EXPECT_EQ(NearestReplica(Config({"a1", "a2"}, 1), "x", nullptr, {}), "a2");
  EXPECT_EQ(NearestReplica(Config({"a1", "a2"}, 1), "a1", nullptr, {"a1"}), "a2");
}

}  // namespace
}  // namespace tessera::replication
