// A table's placement (table_placement.h): the option or the node's default, a strategy alone
// taking the default replication factor, the checks against the live nodes, the stored form
// the master reads (old tables included), and a ring table's split keys.
#include "tessera/catalog/table_placement.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::catalog {
namespace {

using Strategy = PlacementPolicy::Strategy;

std::vector<PlacementNode> Nodes(const std::vector<std::string>& dcs) {
  std::vector<PlacementNode> out;
  for (size_t i = 0; i < dcs.size(); ++i) {
    PlacementNode node;
    node.endpoint = "n" + std::to_string(i);
    node.dc = dcs[i];
    node.rack = "r";
    out.push_back(std::move(node));
  }
  return out;
}

std::string Resolved(std::string_view option, std::string_view node_default,
                     const std::vector<PlacementNode>& live) {
  StatusOr<PlacementPolicy> policy = ResolveTablePlacement(option, node_default, live);
  if (!policy.ok()) return std::string(policy.status().ToString());
  return FormatPlacementPolicy(*policy);
}

TEST(TablePlacementTest, TheOptionOrTheNodesDefault) {
  const auto three = Nodes({"dc1", "dc1", "dc1"});
  EXPECT_EQ(Resolved("", "", three), "tablets:3");
  EXPECT_EQ(Resolved("", "ring", three), "ring:3");
  EXPECT_EQ(Resolved("", "ring:rack:2", three), "ring:rack:2");
  EXPECT_EQ(Resolved("tablets:1", "ring", three), "tablets:1");
  EXPECT_EQ(Resolved("ring", "tablets:2", three), "ring:3");
  // A strategy alone takes min(3, live nodes).
  EXPECT_EQ(Resolved("ring", "", Nodes({"dc1"})), "ring:1");
  EXPECT_EQ(Resolved("tablets", "", Nodes({"a", "a", "b", "b", "b"})), "tablets:3");
  EXPECT_EQ(Resolved("tablets:dc2=1,dc1=2", "", Nodes({"dc1", "dc2", "dc1"})),
            "tablets:dc1=2,dc2=1");
}

TEST(TablePlacementTest, RefusalsNameTheProblem) {
  const auto three = Nodes({"dc1", "dc1", "dc2"});
  auto refused = [&](std::string_view option) {
    StatusOr<PlacementPolicy> policy = ResolveTablePlacement(option, "", three);
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument) << option;
    return std::string(policy.status().message());
  };
  EXPECT_NE(refused("hash:3").find("unknown strategy \"hash\""), std::string::npos);
  EXPECT_NE(refused("ring:0").find("replication factor must be in [1, 64], got 0"),
            std::string::npos);
  EXPECT_NE(refused("ring:").find("no replication factor"), std::string::npos);
  EXPECT_EQ(refused("tablets:4"), "placement \"tablets:4\" needs 4 nodes, the cluster has 3 live");
  EXPECT_EQ(refused("ring:dc1=1,dc3=1"),
            "placement \"ring:dc1=1,dc3=1\": datacenter dc3 has no live nodes");
  EXPECT_EQ(refused("ring:rack:dc2=2"),
            "placement \"ring:rack:dc2=2\" needs 2 nodes in datacenter dc2, it has 1 live");
  // A bad node default is refused too (the flag is checked at start: ValidatePlacementText).
  EXPECT_FALSE(ResolveTablePlacement("", "rings", three).ok());
  EXPECT_TRUE(ValidatePlacementText("ring").ok());
  EXPECT_EQ(ValidatePlacementText("tablets:rack:3").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ValidatePlacementText("").ok());
}

TEST(TablePlacementTest, StoredPlacementOfOldTablesIsTodaysTablets) {
  StatusOr<PlacementPolicy> old = StoredTablePlacement("", 5, 3);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(FormatPlacementPolicy(*old), "tablets:3");
  EXPECT_EQ(FormatPlacementPolicy(*StoredTablePlacement("", 2, 3)), "tablets:2");
  EXPECT_EQ(FormatPlacementPolicy(*StoredTablePlacement("", 5, 1)), "tablets:1");
  EXPECT_EQ(FormatPlacementPolicy(*StoredTablePlacement("ring:rack:2", 1, 3)), "ring:rack:2");
  EXPECT_EQ(StoredTablePlacement("ring", 3, 3).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TablePlacementTest, MetadataHasItsOwnReplicasInEveryDatacenter) {
  auto placed = [](const std::vector<std::string>& dcs, int max_rf) {
    return FormatPlacementPolicy(MetadataPlacement(Nodes(dcs), max_rf));
  };
  EXPECT_EQ(placed({"dc1"}, 3), "tablets:1");
  EXPECT_EQ(placed({"dc1", "dc1", "dc1", "dc1", "dc1"}, 3), "tablets:3");
  EXPECT_EQ(placed({"dc1", "dc1", "dc1", "dc1"}, 1), "tablets:1");
  // Two datacenters of three: a whole copy in each, so either alone can locate every tablet.
  EXPECT_EQ(placed({"dc1", "dc1", "dc1", "dc2", "dc2", "dc2"}, 3), "tablets:dc1=3,dc2=3");
  EXPECT_EQ(placed({"dc2", "dc1", "dc1", "dc1", "dc1"}, 3), "tablets:dc1=3,dc2=1");
  EXPECT_EQ(placed({"dc1", "dc1", "dc2", "dc2"}, 1), "tablets:dc1=1,dc2=1");
  // What it gives can be placed on the nodes it was given.
  const std::vector<PlacementNode> live = Nodes({"a", "b", "b", "c", "c", "c", "c"});
  EXPECT_TRUE(
      ResolveTablePlacement(FormatPlacementPolicy(MetadataPlacement(live, 3)), "", live).ok());
}

TEST(TablePlacementTest, RingTablesAreCutAtTheTokens) {
  std::vector<PlacementNode> ring = Nodes({"dc1", "dc1", "dc1"});
  ring[0].token = "m";
  ring[1].token = "c";
  // ring[2] has no token yet: not on the ring.
  PlacementPolicy policy = *ParsePlacementPolicy("ring:2");
  EXPECT_EQ(TableSplitKeys(policy, ring, {"q", "c"}),
            (std::vector<std::string>{"q", "c", "c", "m"}));
  policy.strategy = Strategy::kTablets;
  EXPECT_EQ(TableSplitKeys(policy, ring, {"q"}), (std::vector<std::string>{"q"}));
}

}  // namespace
}  // namespace tessera::catalog
