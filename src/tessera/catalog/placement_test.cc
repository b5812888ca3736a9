// Placement: the policy's text form, both strategies (plain, rack-aware, datacenter-aware) on 1,
// 3 and 6 nodes, ring ownership against RingSplits at the boundaries and round the wrap, load
// balance, independence from input order, the errors, and token choice.
#include "tessera/catalog/placement.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/coding.h"

namespace tessera::catalog {
namespace {

using Strategy = PlacementPolicy::Strategy;
using Endpoints = std::vector<std::string>;

PlacementNode Node(std::string endpoint, std::string dc, std::string rack, std::string token,
                   uint64_t load = 0) {
  return PlacementNode{.endpoint = std::move(endpoint),
                       .dc = std::move(dc),
                       .rack = std::move(rack),
                       .token = std::move(token),
                       .load = load};
}

PlacementPolicy Policy(std::string_view text) {
  StatusOr<PlacementPolicy> policy = ParsePlacementPolicy(text);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return policy.value_or(PlacementPolicy{});
}

Endpoints MustPlace(std::string_view policy, const std::vector<PlacementNode>& live,
                    std::string start_row = "", std::string end_row = "") {
  StatusOr<Endpoints> replicas =
      Place(Policy(policy), live,
            TabletRange{.tablet_id = 7, .start_row = start_row, .end_row = end_row});
  EXPECT_TRUE(replicas.ok()) << policy << " [" << start_row << "): " << replicas.status();
  return replicas.value_or(Endpoints{});
}

const PlacementNode& Find(const std::vector<PlacementNode>& nodes, std::string_view endpoint) {
  return *std::find_if(nodes.begin(), nodes.end(),
                       [&](const PlacementNode& n) { return n.endpoint == endpoint; });
}

std::set<std::pair<std::string, std::string>> Racks(const std::vector<PlacementNode>& nodes,
                                                    const Endpoints& chosen) {
  std::set<std::pair<std::string, std::string>> racks;
  for (const std::string& e : chosen) racks.emplace(Find(nodes, e).dc, Find(nodes, e).rack);
  return racks;
}

std::map<std::string, int> PerDc(const std::vector<PlacementNode>& nodes, const Endpoints& chosen) {
  std::map<std::string, int> count;
  for (const std::string& e : chosen) ++count[Find(nodes, e).dc];
  return count;
}

// Three nodes on one rack with tokens b, d, f.
std::vector<PlacementNode> ThreeNodes() {
  return {Node("n1", "dc1", "r1", "d"), Node("n2", "dc1", "r1", "b"), Node("n3", "dc1", "r1", "f")};
}

// Six nodes, two per rack, with racks repeating along the ring: tokens b..l in steps.
std::vector<PlacementNode> SixNodesThreeRacks() {
  return {Node("a", "dc1", "r1", "b"), Node("b", "dc1", "r1", "d"), Node("c", "dc1", "r2", "f"),
          Node("d", "dc1", "r2", "h"), Node("e", "dc1", "r3", "j"), Node("f", "dc1", "r3", "l")};
}

// 2 DCs × 3 racks × 2 nodes, DCs alternating round the ring, and each DC's two nodes of a rack
// next to each other in its own ring order: dc1 is n0 n2 (r1) n4 n6 (r2) n8 n10 (r3), dc2 is
// n1 n3 (r1) n5 n7 (r2) n9 n11 (r3).
std::vector<PlacementNode> TwoDcsThreeRacks() {
  std::vector<PlacementNode> nodes;
  for (int i = 0; i < 12; ++i) {
    const std::string dc = i % 2 == 0 ? "dc1" : "dc2";
    const std::string rack = tessera::StrCat("r", (i / 4) % 3 + 1);
    nodes.push_back(Node(tessera::StrCat("n", i), dc, rack, std::string(1, 'b' + 2 * i),
                         /*load=*/0));
  }
  return nodes;
}

TEST(PlacementPolicyTest, TextRoundTrips) {
  for (std::string_view text :
       {"ring:1", "ring:3", "ring:rack:3", "ring:dc1=3,dc2=2", "ring:rack:dc1=2,dc2=2", "tablets:3",
        "tablets:64", "tablets:dc1=2,dc2=1", "ring:east-1=1,west.b=2"}) {
    SCOPED_TRACE(text);
    StatusOr<PlacementPolicy> policy = ParsePlacementPolicy(text);
    ASSERT_TRUE(policy.ok()) << policy.status();
    EXPECT_TRUE(policy->Validate().ok());
    EXPECT_EQ(FormatPlacementPolicy(*policy), text);
  }
  const PlacementPolicy dc = Policy("ring:rack:dc2=2,dc1=3");
  EXPECT_EQ(dc.strategy, Strategy::kRing);
  EXPECT_TRUE(dc.rack_aware);
  EXPECT_EQ(dc.replication_factor, 0);
  EXPECT_EQ(dc.per_dc_rf, (std::map<std::string, int, std::less<>>{{"dc1", 3}, {"dc2", 2}}));
  EXPECT_EQ(dc.TotalReplicas(), 5);
  EXPECT_EQ(FormatPlacementPolicy(dc), "ring:rack:dc1=3,dc2=2");  // datacenters in name order
  const PlacementPolicy tablets = Policy("tablets:2");
  EXPECT_EQ(tablets.strategy, Strategy::kTablets);
  EXPECT_FALSE(tablets.rack_aware);
  EXPECT_EQ(tablets.TotalReplicas(), 2);
}

TEST(PlacementPolicyTest, BadTextNamesTheProblem) {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"", "expected <strategy>:<replication>"},
      {"ring", "expected <strategy>:<replication>"},
      {"RING:3", "unknown strategy \"RING\", expected ring or tablets"},
      {"hash:3", "unknown strategy \"hash\""},
      {"ring:", "no replication factor"},
      {"ring:rack:", "no replication factor"},
      {"ring:rack", "replication factor \"rack\" is not a number"},
      {"ring:x", "replication factor \"x\" is not a number"},
      {"ring:+3", "replication factor \"+3\" is not a number"},
      {"ring: 3", "replication factor \" 3\" is not a number"},
      {"ring:0", "replication factor must be in [1, 64], got 0"},
      {"tablets:65", "replication factor must be in [1, 64], got 65"},
      {"ring:9999999999", "is not a number"},
      {"tablets:rack:3", "the tablets strategy always spreads replicas over racks"},
      {"ring:dc1=3,dc1=2", "datacenter dc1 is given twice"},
      {"ring:dc1=0", "replication factor of datacenter dc1 must be in [1, 64], got 0"},
      {"ring:dc1=x", "replication factor \"x\" of datacenter dc1 is not a number"},
      {"ring:=3", "a datacenter name is empty"},
      {"ring:dc1=3,", "\"\" is not <datacenter>=<replication factor>"},
      {"ring:dc1=3,dc2", "\"dc2\" is not <datacenter>=<replication factor>"},
      {"ring:dc 1=3", "datacenter name \"dc 1\" holds the reserved character ' '"},
      {"ring:dc1=40,dc2=40", "replication factors add up to 80, above 64"},
  };
  for (const auto& [text, what] : cases) {
    StatusOr<PlacementPolicy> policy = ParsePlacementPolicy(text);
    ASSERT_FALSE(policy.ok()) << text;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument) << text;
    const std::string message(policy.status().message());
    EXPECT_TRUE(message.starts_with(tessera::StrCat("invalid placement \"", text, "\": ")))
        << message;
    EXPECT_NE(message.find(what), std::string::npos) << text << ": " << message;
  }
}

TEST(PlacementPolicyTest, ValidateRefusesWhatTheTextCannotSay) {
  PlacementPolicy policy;  // no replication factor yet
  EXPECT_EQ(policy.Validate().code(), absl::StatusCode::kInvalidArgument);
  policy.replication_factor = 3;
  EXPECT_TRUE(policy.Validate().ok());
  policy.per_dc_rf = {{"dc1", 2}};
  EXPECT_NE(std::string(policy.Validate().message()).find("beside per-datacenter ones"),
            std::string::npos)
      << policy.Validate();
  policy.replication_factor = 0;
  EXPECT_TRUE(policy.Validate().ok());
  policy.per_dc_rf = {{"dc:1", 2}};
  EXPECT_NE(std::string(policy.Validate().message()).find("reserved character ':'"),
            std::string::npos);
  policy = PlacementPolicy();
  policy.strategy = static_cast<Strategy>(5);
  policy.replication_factor = 1;
  EXPECT_NE(std::string(policy.Validate().message()).find("unknown placement strategy 5"),
            std::string::npos);
}

TEST(PlacementTest, DefaultReplicationFactor) {
  EXPECT_EQ(DefaultReplicationFactor(0), 1);
  EXPECT_EQ(DefaultReplicationFactor(1), 1);
  EXPECT_EQ(DefaultReplicationFactor(2), 2);
  EXPECT_EQ(DefaultReplicationFactor(3), 3);
  EXPECT_EQ(DefaultReplicationFactor(6), 3);
}

TEST(RingPlacementTest, OneNodeOwnsEverything) {
  const std::vector<PlacementNode> one = {Node("solo", "dc1", "r1", "m")};
  for (std::string start : {"", "a", "m", "z"}) {
    EXPECT_EQ(MustPlace("ring:1", one, start), Endpoints{"solo"});
    EXPECT_EQ(MustPlace("ring:rack:1", one, start), Endpoints{"solo"});
    EXPECT_EQ(MustPlace("ring:dc1=1", one, start), Endpoints{"solo"});
  }
  EXPECT_EQ(RingSplits(one), Endpoints{"m"});
}

TEST(RingPlacementTest, ThreeNodesClockwiseWithWrapAround) {
  const std::vector<PlacementNode> nodes = ThreeNodes();  // n2=b, n1=d, n3=f
  ASSERT_EQ(RingSplits(nodes), (Endpoints{"b", "d", "f"}));
  EXPECT_EQ(MustPlace("ring:3", nodes, "", "b"), (Endpoints{"n2", "n1", "n3"}));
  EXPECT_EQ(MustPlace("ring:3", nodes, "b", "d"), (Endpoints{"n1", "n3", "n2"}));
  EXPECT_EQ(MustPlace("ring:3", nodes, "d", "f"), (Endpoints{"n3", "n2", "n1"}));
  // [f, "") wraps to the smallest token, as ["", b) does.
  EXPECT_EQ(MustPlace("ring:3", nodes, "f", ""), (Endpoints{"n2", "n1", "n3"}));
  EXPECT_EQ(MustPlace("ring:2", nodes, "d", "f"), (Endpoints{"n3", "n2"}));
  EXPECT_EQ(MustPlace("ring:1", nodes, "f", ""), Endpoints{"n2"});
}

TEST(RingPlacementTest, SixNodesRackUnawareTakesTheNextNodes) {
  const std::vector<PlacementNode> nodes = SixNodesThreeRacks();
  EXPECT_EQ(MustPlace("ring:3", nodes, "", "b"), (Endpoints{"a", "b", "c"}));
  EXPECT_EQ(MustPlace("ring:3", nodes, "h", "j"), (Endpoints{"e", "f", "a"}));
  EXPECT_EQ(MustPlace("ring:6", nodes, "j", "l"), (Endpoints{"f", "a", "b", "c", "d", "e"}));
}

// Every key of a RingSplits range has the primary of the tablet covering that range, probed at
// the range's first key, just after it, and just before its end; and every token belongs to the
// range it starts. Tokens from ChooseToken: raw bytes, one of them all zeros.
TEST(RingPlacementTest, OwnershipMatchesRingSplitsAtBoundaries) {
  std::vector<PlacementNode> nodes;
  std::vector<std::string> tokens;
  for (int i = 0; i < 6; ++i) {
    tokens.push_back(ChooseToken(tokens));
    nodes.push_back(
        Node(tessera::StrCat("n", i), "dc1", tessera::StrCat("r", i % 3), tokens.back()));
  }
  const std::vector<std::string> splits = RingSplits(nodes);
  ASSERT_EQ(splits.size(), 6u);
  ASSERT_TRUE(std::is_sorted(splits.begin(), splits.end()));
  ASSERT_EQ(splits.front(), std::string(kTokenBytes, '\0'));
  auto owner_of_token = [&](const std::string& token) {
    for (const PlacementNode& n : nodes) {
      if (n.token == token) return n.endpoint;
    }
    return std::string();
  };
  // Range i is [splits[i-1], splits[i]) with "" at both ends; range 6 is [t_last, "").
  for (size_t i = 0; i <= splits.size(); ++i) {
    const std::string start = i == 0 ? "" : splits[i - 1];
    const std::string end = i == splits.size() ? "" : splits[i];
    const std::string expected = owner_of_token(i == splits.size() ? splits[0] : splits[i]);
    SCOPED_TRACE(i);
    const Endpoints tablet = MustPlace("ring:3", nodes, start, end);
    ASSERT_EQ(tablet.size(), 3u);
    EXPECT_EQ(tablet.front(), expected);
    std::vector<std::string> probes = {start, start + '\0', start + "\xff\xff"};
    if (!end.empty()) {
      probes.push_back(end.substr(0, end.size() - 1));  // a prefix sorts before it
      const uint64_t end_position = DecodeBigEndian64(end.data());
      if (end_position > 0) probes.push_back(BigEndian64String(end_position - 1) + "\xff\xff");
    }
    int probed = 0;
    for (const std::string& key : probes) {
      if (key < start || (!end.empty() && key >= end)) continue;
      ++probed;
      EXPECT_EQ(MustPlace("ring:3", nodes, key), tablet) << "key of " << key.size() << " bytes";
    }
    EXPECT_GE(probed, 3);
  }
}

TEST(RingPlacementTest, RackAwareUsesEveryRackBeforeRepeating) {
  const std::vector<PlacementNode> nodes = SixNodesThreeRacks();
  // Clockwise from a: a(r1), b(r1) skipped, c(r2), d(r2) skipped, e(r3).
  EXPECT_EQ(MustPlace("ring:rack:3", nodes, "", "b"), (Endpoints{"a", "c", "e"}));
  EXPECT_EQ(MustPlace("ring:rack:3", nodes, "b", "d"), (Endpoints{"b", "c", "e"}));
  EXPECT_EQ(MustPlace("ring:rack:3", nodes, "j", "l"), (Endpoints{"f", "a", "c"}));
  // Racks run out: the rest fill clockwise, in ring order.
  EXPECT_EQ(MustPlace("ring:rack:4", nodes, "", "b"), (Endpoints{"a", "b", "c", "e"}));
  for (const std::string& start : RingSplits(nodes)) {
    EXPECT_EQ(Racks(nodes, MustPlace("ring:rack:3", nodes, start)).size(), 3u) << start;
    EXPECT_EQ(Racks(nodes, MustPlace("ring:rack:2", nodes, start)).size(), 2u) << start;
  }
  // Fewer racks than replicas: every rack once, then clockwise.
  const std::vector<PlacementNode> two_racks = {
      Node("p", "dc1", "r1", "b"), Node("q", "dc1", "r1", "d"), Node("r", "dc1", "r2", "f"),
      Node("s", "dc1", "r2", "h")};
  EXPECT_EQ(MustPlace("ring:rack:3", two_racks, "", "b"), (Endpoints{"p", "q", "r"}));
  // A rack is named within its datacenter: these are two racks.
  const std::vector<PlacementNode> same_name = {
      Node("x", "dc1", "r1", "b"), Node("y", "dc1", "r1", "d"), Node("z", "dc2", "r1", "f")};
  EXPECT_EQ(MustPlace("ring:rack:2", same_name, "", "b"), (Endpoints{"x", "z"}));
}

TEST(RingPlacementTest, DatacenterAwareCountsPerDcOnDistinctRacks) {
  const std::vector<PlacementNode> nodes = TwoDcsThreeRacks();
  std::vector<std::string> starts = RingSplits(nodes);
  starts.insert(starts.begin(), "");
  for (const std::string& start : starts) {
    SCOPED_TRACE(start);
    const Endpoints rack_aware = MustPlace("ring:rack:dc1=3,dc2=3", nodes, start);
    EXPECT_EQ(PerDc(nodes, rack_aware), (std::map<std::string, int>{{"dc1", 3}, {"dc2", 3}}));
    EXPECT_EQ(Racks(nodes, rack_aware).size(), 6u);
    const Endpoints counts = MustPlace("ring:dc1=2,dc2=1", nodes, start);
    EXPECT_EQ(PerDc(nodes, counts), (std::map<std::string, int>{{"dc1", 2}, {"dc2", 1}}));
    // The primary is the owner of the start row: both DCs are listed.
    EXPECT_EQ(rack_aware.front(), MustPlace("ring:1", nodes, start).front());
    EXPECT_EQ(counts.front(), rack_aware.front());
  }
  // In ring order, both DCs' racks: rack-aware skips n2, n3, n6, n7; rack-unaware does not.
  EXPECT_EQ(MustPlace("ring:rack:dc1=3,dc2=3", nodes, "", "b"),
            (Endpoints{"n0", "n1", "n4", "n5", "n8", "n9"}));
  EXPECT_EQ(MustPlace("ring:dc1=3,dc2=3", nodes, "", "b"),
            (Endpoints{"n0", "n1", "n2", "n3", "n4", "n5"}));
  // Only dc2: the owner (n0, of dc1) is passed over; the first dc2 node clockwise is primary.
  EXPECT_EQ(MustPlace("ring:dc2=2", nodes, "", "b"), (Endpoints{"n1", "n3"}));
  EXPECT_EQ(MustPlace("ring:rack:dc2=3", nodes, "", "b"), (Endpoints{"n1", "n5", "n9"}));
}

TEST(TabletsPlacementTest, LeastLoadedThenLighterRackThenEndpoint) {
  EXPECT_EQ(MustPlace("tablets:1", {Node("solo", "dc1", "r1", "", 40)}), Endpoints{"solo"});
  const std::vector<PlacementNode> three = {Node("n3", "dc1", "r1", "", 5),
                                            Node("n1", "dc1", "r1", "", 5),
                                            Node("n2", "dc1", "r1", "", 2)};
  EXPECT_EQ(MustPlace("tablets:1", three), Endpoints{"n2"});
  EXPECT_EQ(MustPlace("tablets:2", three), (Endpoints{"n2", "n1"}));
  EXPECT_EQ(MustPlace("tablets:3", three), (Endpoints{"n2", "n1", "n3"}));
  std::vector<PlacementNode> six = SixNodesThreeRacks();
  const std::vector<uint64_t> loads = {9, 3, 4, 1, 8, 2};  // racks r1 r1 r2 r2 r3 r3
  for (size_t i = 0; i < six.size(); ++i) six[i].load = loads[i];
  // The three least loaded are d, f, b: one per rack.
  EXPECT_EQ(MustPlace("tablets:3", six), (Endpoints{"d", "f", "b"}));
  // Every rack is used: the fourth goes by load alone.
  EXPECT_EQ(MustPlace("tablets:4", six), (Endpoints{"d", "f", "b", "c"}));
  // The token plays no part.
  for (PlacementNode& n : six) n.token.clear();
  EXPECT_EQ(MustPlace("tablets:3", six), (Endpoints{"d", "f", "b"}));
  // Between equal loads the lighter rack goes first (r2 holds 1, r1 holds 6), then the
  // endpoint; the replicas come back by (load, endpoint).
  const std::vector<PlacementNode> racks = {
      Node("a", "dc1", "r1", "", 1), Node("x", "dc1", "r1", "", 5), Node("b", "dc1", "r2", "", 1)};
  EXPECT_EQ(MustPlace("tablets:1", racks), Endpoints{"b"});
  EXPECT_EQ(MustPlace("tablets:2", racks), (Endpoints{"a", "b"}));
}

TEST(TabletsPlacementTest, SpreadsOverRacksBeforeLoad) {
  const std::vector<PlacementNode> nodes = {
      Node("a", "dc1", "r1", "", 0), Node("b", "dc1", "r1", "", 1), Node("c", "dc1", "r1", "", 2),
      Node("d", "dc1", "r2", "", 7), Node("e", "dc1", "r3", "", 9)};
  EXPECT_EQ(MustPlace("tablets:3", nodes), (Endpoints{"a", "d", "e"}));
  EXPECT_EQ(MustPlace("tablets:2", nodes), (Endpoints{"a", "d"}));
  EXPECT_EQ(MustPlace("tablets:4", nodes), (Endpoints{"a", "b", "d", "e"}));
}

TEST(TabletsPlacementTest, DatacenterAwareCountsPerDcOnDistinctRacks) {
  std::vector<PlacementNode> nodes = TwoDcsThreeRacks();
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].load = (i * 7) % 5;
  const Endpoints replicas = MustPlace("tablets:dc1=3,dc2=2", nodes);
  EXPECT_EQ(PerDc(nodes, replicas), (std::map<std::string, int>{{"dc1", 3}, {"dc2", 2}}));
  EXPECT_EQ(Racks(nodes, replicas).size(), 5u);
  for (size_t i = 1; i < replicas.size(); ++i) {
    EXPECT_LE(Find(nodes, replicas[i - 1]).load, Find(nodes, replicas[i]).load);
  }
}

// Places `tablets` tablets one after another, counting each replica in its node's load, and
// returns the largest spread (max - min load) seen within one datacenter.
uint64_t WorstSpread(std::string_view policy, std::vector<PlacementNode> nodes, int tablets) {
  uint64_t worst = 0;
  for (int tablet = 0; tablet < tablets; ++tablet) {
    for (const std::string& e : MustPlace(policy, nodes)) {
      ++std::find_if(nodes.begin(), nodes.end(), [&](const PlacementNode& n) {
          return n.endpoint == e;
        })->load;
    }
    std::map<std::string, std::pair<uint64_t, uint64_t>> min_max;
    for (const PlacementNode& n : nodes) {
      auto [it, fresh] = min_max.emplace(n.dc, std::pair(n.load, n.load));
      it->second.first = std::min(it->second.first, n.load);
      it->second.second = std::max(it->second.second, n.load);
    }
    for (const auto& [dc, range] : min_max) worst = std::max(worst, range.second - range.first);
  }
  return worst;
}

// Tablet after tablet, every node stays within one replica of every other (of its datacenter),
// for 1 to 4 racks of 1 to 3 nodes each and every replication factor, whether endpoints sort
// rack by rack or across racks.
TEST(TabletsPlacementTest, BalancesAsLoadGrows) {
  for (int racks = 1; racks <= 4; ++racks) {
    for (int per_rack = 1; per_rack <= 3; ++per_rack) {
      for (bool rack_by_rack : {true, false}) {
        std::vector<PlacementNode> nodes;
        for (int r = 0; r < racks; ++r) {
          for (int j = 0; j < per_rack; ++j) {
            const int name = rack_by_rack ? r * per_rack + j : j * racks + r;
            nodes.push_back(Node(tessera::StrCat("n", name), "dc1", tessera::StrCat("r", r), ""));
          }
        }
        for (int rf = 1; rf <= racks * per_rack; ++rf) {
          EXPECT_LE(WorstSpread(tessera::StrCat("tablets:", rf), nodes, 100), 1u)
              << racks << " racks of " << per_rack << ", rf " << rf << ", endpoints "
              << (rack_by_rack ? "rack by rack" : "across racks");
        }
      }
    }
  }
  for (std::string_view policy :
       {"tablets:dc1=2,dc2=1", "tablets:dc1=3,dc2=3", "tablets:dc1=4,dc2=5", "tablets:dc2=2"}) {
    EXPECT_LE(WorstSpread(policy, TwoDcsThreeRacks(), 100), 1u) << policy;
  }
}

TEST(PlacementTest, InputOrderDoesNotMatter) {
  std::vector<PlacementNode> nodes = SixNodesThreeRacks();
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].load = i % 2;  // ties to break
  nodes[3].dc = "dc2";
  const std::vector<std::string> policies = {"ring:3", "ring:rack:3", "ring:dc1=2,dc2=1",
                                             "tablets:3", "tablets:dc1=1,dc2=1"};
  std::map<std::pair<std::string, std::string>, Endpoints> first;
  std::vector<size_t> permutation = {0, 1, 2, 3, 4, 5};
  do {
    std::vector<PlacementNode> shuffled;
    for (size_t i : permutation) shuffled.push_back(nodes[i]);
    for (const std::string& policy : policies) {
      for (std::string start : {"", "c", "l"}) {
        const Endpoints got = MustPlace(policy, shuffled, start);
        auto [it, fresh] = first.emplace(std::pair(policy, start), got);
        ASSERT_EQ(it->second, got) << policy << " from " << start;
      }
    }
    ASSERT_EQ(RingSplits(shuffled), RingSplits(nodes));
  } while (std::next_permutation(permutation.begin(), permutation.end()));
}

TEST(PlacementTest, TooFewNodesSaysHowManyAreNeeded) {
  auto expect = [](std::string_view policy, const std::vector<PlacementNode>& live,
                   std::string_view what) {
    StatusOr<Endpoints> got =
        Place(Policy(policy), live, TabletRange{.tablet_id = 12, .start_row = "", .end_row = ""});
    ASSERT_FALSE(got.ok()) << policy;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
    EXPECT_NE(std::string(got.status().message()).find(what), std::string::npos) << got.status();
  };
  expect("ring:3", {}, "placement ring:3 of tablet 12 needs 3 live nodes, there are 0");
  expect("ring:rack:3", {Node("n1", "dc1", "r1", "b")}, "needs 3 live nodes, there are 1");
  expect("tablets:4", ThreeNodes(), "needs 4 live nodes, there are 3");
  expect("ring:dc1=1,dc2=2", ThreeNodes(), "needs 2 live nodes in datacenter dc2, there are 0");
  std::vector<PlacementNode> nodes = ThreeNodes();
  nodes[0].dc = "dc2";
  expect("tablets:dc1=1,dc2=2", nodes, "needs 2 live nodes in datacenter dc2, there are 1");
  expect("ring:dc1=3", nodes, "needs 3 live nodes in datacenter dc1, there are 2");
}

TEST(PlacementTest, BadInputIsInvalidArgument) {
  auto expect = [](const PlacementPolicy& policy, const std::vector<PlacementNode>& live,
                   TabletRange range, std::string_view what) {
    StatusOr<Endpoints> got = Place(policy, live, range);
    ASSERT_FALSE(got.ok()) << what;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_NE(std::string(got.status().message()).find(what), std::string::npos) << got.status();
  };
  const TabletRange all{.tablet_id = 3, .start_row = "", .end_row = ""};
  expect(PlacementPolicy{}, ThreeNodes(), all, "replication factor must be in [1, 64], got 0");
  std::vector<PlacementNode> nodes = ThreeNodes();
  nodes.push_back(nodes[0]);
  expect(Policy("tablets:1"), nodes, all, "placing tablet 3: live node n1 is listed twice");
  nodes = ThreeNodes();
  nodes[1].endpoint.clear();
  expect(Policy("tablets:1"), nodes, all, "a live node has no endpoint");
  nodes = ThreeNodes();
  nodes[2].token.clear();
  expect(Policy("ring:1"), nodes, all, "live node n3 has no ring token");
  EXPECT_TRUE(Place(Policy("tablets:1"), nodes, all).ok());  // tablets needs no token
  expect(Policy("ring:1"), ThreeNodes(),
         TabletRange{.tablet_id = 3, .start_row = "d", .end_row = "d"},
         "its end row is not after its start row");
  expect(Policy("ring:1"), ThreeNodes(),
         TabletRange{.tablet_id = 3, .start_row = "d", .end_row = "c"},
         "its end row is not after its start row");
}

TEST(RingSplitsTest, SortedDistinctTokens) {
  EXPECT_TRUE(RingSplits({}).empty());
  const std::vector<PlacementNode> nodes = {
      Node("a", "dc1", "r1", "m"), Node("b", "dc1", "r1", "c"), Node("c", "dc1", "r1", "m"),
      Node("d", "dc1", "r1", ""), Node("e", "dc1", "r1", "x")};
  EXPECT_EQ(RingSplits(nodes), (Endpoints{"c", "m", "x"}));
}

uint64_t Position(const std::string& token) {
  EXPECT_EQ(token.size(), kTokenBytes);
  return DecodeBigEndian64(token.data());
}

std::string Token(uint64_t top_byte) { return BigEndian64String(top_byte << 56); }

TEST(ChooseTokenTest, HalvesTheWidestGap) {
  EXPECT_EQ(ChooseToken({}), Token(0x80));
  EXPECT_EQ(ChooseToken({"", ""}), Token(0x80));  // empty tokens are not on the ring
  // One token: the gap is the whole ring, from it round to itself.
  EXPECT_EQ(ChooseToken({Token(0x80)}), Token(0x00));
  EXPECT_EQ(ChooseToken({Token(0x30)}), Token(0xB0));
  EXPECT_EQ(ChooseToken({Token(0x30), Token(0x30)}), Token(0xB0));
  // Equal gaps: the one starting lowest.
  EXPECT_EQ(ChooseToken({Token(0x80), Token(0x00)}), Token(0x40));
  // An inner gap.
  EXPECT_EQ(ChooseToken({Token(0x20), Token(0xF0)}), Token(0x88));
  EXPECT_EQ(ChooseToken({Token(0x10), Token(0x20), Token(0xE0), Token(0xF0)}), Token(0x80));
  // The wrap-around gap, from the largest position through 2^64 to the smallest.
  EXPECT_EQ(ChooseToken({Token(0x40), Token(0x80)}), Token(0xE0));
  EXPECT_EQ(ChooseToken({Token(0x70), Token(0xB0)}), Token(0x10));  // crosses zero
  EXPECT_EQ(ChooseToken({Token(0x60), Token(0xA0)}), Token(0x00));  // lands on zero
  // Tokens of other lengths stand at the position of their first 8 bytes, zero-padded.
  EXPECT_EQ(ChooseToken({"b"}), Token(0x62 + 0x80));
  EXPECT_EQ(ChooseToken({std::string("\x10\0\0\0\0\0\0\0\x77", 9), Token(0x30)}), Token(0xA0));
}

// From an empty ring, 2^k joins leave 2^k evenly spaced tokens; every new one is distinct.
TEST(ChooseTokenTest, JoinsSpreadEvenly) {
  std::vector<std::string> tokens;
  for (int joins = 1; joins <= 16; ++joins) {
    const std::string token = ChooseToken(tokens);
    ASSERT_EQ(token.size(), kTokenBytes);
    ASSERT_EQ(std::find(tokens.begin(), tokens.end(), token), tokens.end());
    tokens.push_back(token);
    if ((joins & (joins - 1)) != 0) continue;
    std::vector<uint64_t> positions;
    for (const std::string& t : tokens) positions.push_back(Position(t));
    std::sort(positions.begin(), positions.end());
    const uint64_t step = joins == 1 ? 0 : (uint64_t{1} << 63) / (joins / 2);
    for (size_t i = 1; i < positions.size(); ++i) {
      EXPECT_EQ(positions[i] - positions[i - 1], step) << joins << " joins";
    }
  }
}

TEST(RingSharesTest, EachTokenOwnsTheArcEndingAtIt) {
  EXPECT_TRUE(RingShares({}).empty());
  EXPECT_EQ(RingShares({"", Token(0x80)}), (std::map<std::string, double>{{Token(0x80), 1.0}}));
  // 0x40 owns [0xC0, 0x40) through the wrap: half; 0x80 and 0xC0 a quarter each.
  const std::map<std::string, double> shares =
      RingShares({Token(0xC0), Token(0x40), Token(0x80), Token(0x40)});
  EXPECT_EQ(shares, (std::map<std::string, double>{
                        {Token(0x40), 0.5}, {Token(0x80), 0.25}, {Token(0xC0), 0.25}}));
  // A token at the position of a smaller one owns nothing measurable.
  const std::string longer = Token(0x80) + "x";
  EXPECT_EQ(RingShares({Token(0x00), Token(0x80), longer}).at(longer), 0.0);
  // Joined in turn, 4 nodes own a quarter each.
  std::vector<std::string> tokens;
  for (int i = 0; i < 4; ++i) tokens.push_back(ChooseToken(tokens));
  for (const auto& [token, share] : RingShares(tokens)) EXPECT_EQ(share, 0.25);
}

}  // namespace
}  // namespace tessera::catalog
