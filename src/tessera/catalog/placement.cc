#include "tessera/catalog/placement.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "tessera/util/coding.h"

namespace tessera::catalog {
namespace {

constexpr std::string_view kRingName = "ring";
constexpr std::string_view kTabletsName = "tablets";
constexpr std::string_view kRackPrefix = "rack:";

std::string_view StrategyName(PlacementPolicy::Strategy strategy) {
  return strategy == PlacementPolicy::Strategy::kRing ? kRingName : kTabletsName;
}

// The character that keeps `name` from being a datacenter name in the text form, or nullopt.
std::optional<char> ReservedCharacter(std::string_view name) {
  for (char c : name) {
    if (c == ':' || c == '=' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
        c == '\v' || c == '\f') {
      return c;
    }
  }
  return std::nullopt;
}

Status CheckReplicationFactor(int rf, std::string_view of_what) {
  if (rf >= 1 && rf <= PlacementPolicy::kMaxReplicationFactor) return Status();
  return absl::InvalidArgumentError(
      tessera::StrCat("replication factor", of_what, " must be in [1, ",
                      PlacementPolicy::kMaxReplicationFactor, "], got ", rf));
}

// Decimal digits only (no sign, no spaces); nullopt otherwise. Nine digits at most, so the
// value fits an int and the range check reports it.
std::optional<int> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// A node's rack, named within its datacenter.
using RackKey = std::pair<std::string_view, std::string_view>;

// The nodes one quota draws from: every live node, or those of one datacenter of per_dc_rf.
struct Group {
  std::string_view dc;  // "" when the policy is not datacenter-aware
  int quota = 0;
  int candidates = 0;
  int taken = 0;
  std::set<RackKey> racks;
  std::set<RackKey> used_racks;
};

// What each rack holds: the loads of its live nodes, plus this tablet's replicas chosen on it
// so far.
using RackLoads = std::map<RackKey, uint64_t>;

// Chooses policy.TotalReplicas() of the live nodes, one at a time: among the nodes of the groups
// still short of their quota (and, when spreading racks, on a rack their group has not used,
// while it has an unused one) the one `prefer(a, b, rack_loads)` puts first. Returns indexes
// into `live`, in the order chosen.
template <typename Prefer>
StatusOr<std::vector<size_t>> Choose(const PlacementPolicy& policy,
                                     const std::vector<PlacementNode>& live, bool spread_racks,
                                     Prefer prefer, const TabletRange& tablet) {
  std::vector<Group> groups(policy.per_dc_rf.empty() ? 1 : policy.per_dc_rf.size());
  if (policy.per_dc_rf.empty()) groups[0].quota = policy.replication_factor;
  size_t next = 0;
  for (const auto& [dc, rf] : policy.per_dc_rf) {
    groups[next].dc = dc;
    groups[next++].quota = rf;
  }
  auto rack_of = [&](size_t i) { return RackKey(live[i].dc, live[i].rack); };
  RackLoads rack_loads;
  // The group of each live node, or nullptr for a node of a datacenter the policy does not name.
  std::vector<Group*> group_of(live.size(), nullptr);
  for (size_t i = 0; i < live.size(); ++i) {
    rack_loads[rack_of(i)] += live[i].load;
    for (Group& g : groups) {
      if (policy.per_dc_rf.empty() || live[i].dc == g.dc) {
        group_of[i] = &g;
        ++g.candidates;
        g.racks.insert(rack_of(i));
        break;
      }
    }
  }
  for (const Group& g : groups) {
    if (g.candidates >= g.quota) continue;
    return absl::FailedPreconditionError(tessera::StrCat(
        "placement ", FormatPlacementPolicy(policy), " of tablet ", tablet.tablet_id, " needs ",
        g.quota, " live nodes", policy.per_dc_rf.empty() ? "" : " in datacenter ", g.dc,
        ", there are ", g.candidates));
  }

  // Every group has as many candidates as its quota, so while one is short there is a node to
  // take for it, and one on an unused rack while it has unused racks.
  std::vector<size_t> chosen;
  std::vector<bool> taken(live.size(), false);
  for (int n = 0; n < policy.TotalReplicas(); ++n) {
    std::optional<size_t> best;
    for (size_t i = 0; i < live.size(); ++i) {
      const Group* g = group_of[i];
      if (taken[i] || g == nullptr || g->taken == g->quota) continue;
      if (spread_racks && g->used_racks.size() < g->racks.size() &&
          g->used_racks.contains(rack_of(i))) {
        continue;
      }
      if (!best || prefer(i, *best, rack_loads)) best = i;
    }
    taken[*best] = true;
    ++group_of[*best]->taken;
    group_of[*best]->used_racks.insert(rack_of(*best));
    ++rack_loads[rack_of(*best)];
    chosen.push_back(*best);
  }
  return chosen;
}

Status CheckInput(const PlacementPolicy& policy, const std::vector<PlacementNode>& live,
                  const TabletRange& tablet) {
  RETURN_IF_ERROR(policy.Validate());
  auto bad = [&](auto&&... what) {
    return absl::InvalidArgumentError(
        tessera::StrCat("placing tablet ", tablet.tablet_id, ": ", what...));
  };
  if (!tablet.end_row.empty() && tablet.end_row <= tablet.start_row) {
    return bad("its end row is not after its start row");
  }
  std::set<std::string_view> endpoints;
  for (const PlacementNode& node : live) {
    if (node.endpoint.empty()) return bad("a live node has no endpoint");
    if (!endpoints.insert(node.endpoint).second) {
      return bad("live node ", node.endpoint, " is listed twice");
    }
    if (policy.strategy == PlacementPolicy::Strategy::kRing && node.token.empty()) {
      return bad("live node ", node.endpoint, " has no ring token");
    }
  }
  return Status();
}

// Indexes into `live`, clockwise from the owner of `start`: the first node in (token, endpoint)
// order whose token is above `start`, else the first node.
std::vector<size_t> RingOrder(const std::vector<PlacementNode>& live, std::string_view start) {
  std::vector<size_t> order(live.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(live[a].token, live[a].endpoint) < std::tie(live[b].token, live[b].endpoint);
  });
  auto owner =
      std::find_if(order.begin(), order.end(), [&](size_t i) { return live[i].token > start; });
  std::rotate(order.begin(), owner == order.end() ? order.begin() : owner, order.end());
  return order;
}

uint64_t TokenPosition(std::string_view token) {
  char bytes[kTokenBytes] = {};
  std::copy_n(token.begin(), std::min(token.size(), kTokenBytes), bytes);
  return DecodeBigEndian64(bytes);
}

}  // namespace

int PlacementPolicy::TotalReplicas() const {
  if (per_dc_rf.empty()) return replication_factor;
  int total = 0;
  for (const auto& [dc, rf] : per_dc_rf) total += rf;
  return total;
}

Status PlacementPolicy::Validate() const {
  if (strategy != Strategy::kRing && strategy != Strategy::kTablets) {
    return absl::InvalidArgumentError(
        tessera::StrCat("unknown placement strategy ", static_cast<int>(strategy)));
  }
  if (strategy == Strategy::kTablets && rack_aware) {
    return absl::InvalidArgumentError(
        "the tablets strategy always spreads replicas over racks; rack-aware is for ring only");
  }
  if (per_dc_rf.empty()) return CheckReplicationFactor(replication_factor, "");
  if (replication_factor != 0) {
    return absl::InvalidArgumentError(
        tessera::StrCat("a replication factor (", replication_factor,
                        ") beside per-datacenter ones: give one or the other"));
  }
  for (const auto& [dc, rf] : per_dc_rf) {
    if (dc.empty()) return absl::InvalidArgumentError("a datacenter name is empty");
    if (std::optional<char> c = ReservedCharacter(dc)) {
      return absl::InvalidArgumentError(
          tessera::StrCat("datacenter name \"", dc, "\" holds the reserved character '", *c, "'"));
    }
    RETURN_IF_ERROR(CheckReplicationFactor(rf, tessera::StrCat(" of datacenter ", dc)));
  }
  if (TotalReplicas() > kMaxReplicationFactor) {
    return absl::InvalidArgumentError(
        tessera::StrCat("the datacenters' replication factors add up to ", TotalReplicas(),
                        ", above ", kMaxReplicationFactor));
  }
  return Status();
}

StatusOr<PlacementPolicy> ParsePlacementPolicy(std::string_view text) {
  auto bad = [&](auto&&... what) {
    return absl::InvalidArgumentError(
        tessera::StrCat("invalid placement \"", text, "\": ", what...));
  };
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return bad("expected <strategy>:<replication>, e.g. ring:3 or tablets:dc1=2,dc2=1");
  }
  PlacementPolicy policy;
  const std::string_view strategy = text.substr(0, colon);
  if (strategy == kRingName) {
    policy.strategy = PlacementPolicy::Strategy::kRing;
  } else if (strategy == kTabletsName) {
    policy.strategy = PlacementPolicy::Strategy::kTablets;
  } else {
    return bad("unknown strategy \"", strategy, "\", expected ring or tablets");
  }
  std::string_view rest = text.substr(colon + 1);
  if (rest.starts_with(kRackPrefix)) {
    policy.rack_aware = true;
    rest.remove_prefix(kRackPrefix.size());
  }
  if (rest.empty()) return bad("no replication factor");
  if (rest.find('=') == std::string_view::npos) {
    std::optional<int> rf = ParseDecimal(rest);
    if (!rf) return bad("replication factor \"", rest, "\" is not a number");
    policy.replication_factor = *rf;
  } else {
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return bad("\"", item, "\" is not <datacenter>=<replication factor>");
      }
      const std::string_view dc = item.substr(0, eq);
      std::optional<int> rf = ParseDecimal(item.substr(eq + 1));
      if (!rf) {
        return bad("replication factor \"", item.substr(eq + 1), "\" of datacenter ", dc,
                   " is not a number");
      }
      if (!policy.per_dc_rf.emplace(std::string(dc), *rf).second) {
        return bad("datacenter ", dc, " is given twice");
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  if (Status s = policy.Validate(); !s.ok()) return bad(s.message());
  return policy;
}

std::string FormatPlacementPolicy(const PlacementPolicy& policy) {
  std::string out =
      tessera::StrCat(StrategyName(policy.strategy), ":", policy.rack_aware ? kRackPrefix : "");
  if (policy.per_dc_rf.empty()) return tessera::StrCat(out, policy.replication_factor);
  std::string_view separator;
  for (const auto& [dc, rf] : policy.per_dc_rf) {
    out += tessera::StrCat(separator, dc, "=", rf);
    separator = ",";
  }
  return out;
}

StatusOr<std::vector<std::string>> Place(const PlacementPolicy& policy,
                                         const std::vector<PlacementNode>& live,
                                         const TabletRange& tablet) {
  RETURN_IF_ERROR(CheckInput(policy, live, tablet));
  std::vector<size_t> chosen;
  if (policy.strategy == PlacementPolicy::Strategy::kRing) {
    // rank[i]: how far clockwise live[i] is from the owner of the start row.
    const std::vector<size_t> clockwise = RingOrder(live, tablet.start_row);
    std::vector<size_t> rank(live.size());
    for (size_t pos = 0; pos < clockwise.size(); ++pos) rank[clockwise[pos]] = pos;
    auto nearer = [&](size_t a, size_t b) { return rank[a] < rank[b]; };
    auto prefer = [&](size_t a, size_t b, const RackLoads&) { return nearer(a, b); };
    ASSIGN_OR_RETURN(chosen, Choose(policy, live, policy.rack_aware, prefer, tablet));
    std::sort(chosen.begin(), chosen.end(), nearer);
  } else {
    // Ties between equally loaded nodes go to the rack that holds less: without that, the
    // endpoint order can fill every node of some racks first and leave the last ones to share
    // a rack, which the spreading then refuses, so one node runs two replicas ahead.
    auto lighter = [&](size_t a, size_t b, const RackLoads& racks) {
      const uint64_t rack_a = racks.at(RackKey(live[a].dc, live[a].rack));
      const uint64_t rack_b = racks.at(RackKey(live[b].dc, live[b].rack));
      return std::tie(live[a].load, rack_a, live[a].endpoint) <
             std::tie(live[b].load, rack_b, live[b].endpoint);
    };
    ASSIGN_OR_RETURN(chosen, Choose(policy, live, /*spread_racks=*/true, lighter, tablet));
    std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
      return std::tie(live[a].load, live[a].endpoint) < std::tie(live[b].load, live[b].endpoint);
    });
  }
  std::vector<std::string> replicas;
  replicas.reserve(chosen.size());
  for (size_t i : chosen) replicas.push_back(live[i].endpoint);
  return replicas;
}

std::vector<std::string> RingSplits(const std::vector<PlacementNode>& nodes) {
  std::vector<std::string> tokens;
  for (const PlacementNode& node : nodes) {
    if (!node.token.empty()) tokens.push_back(node.token);
  }
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  return tokens;
}

std::string ChooseToken(const std::vector<std::string>& existing_tokens) {
  constexpr uint64_t kHalfRing = uint64_t{1} << 63;
  std::vector<uint64_t> positions;
  for (const std::string& token : existing_tokens) {
    if (!token.empty()) positions.push_back(TokenPosition(token));
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  if (positions.empty()) return BigEndian64String(kHalfRing);
  if (positions.size() == 1) return BigEndian64String(positions[0] + kHalfRing);
  // Gaps are taken modulo 2^64, so the last one, from the largest position round to the
  // smallest, wraps; none is 0, as the positions are distinct.
  size_t widest = 0;
  uint64_t widest_gap = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    const uint64_t gap = positions[(i + 1) % positions.size()] - positions[i];
    if (gap > widest_gap) {
      widest = i;
      widest_gap = gap;
    }
  }
  return BigEndian64String(positions[widest] + widest_gap / 2);
}

std::map<std::string, double> RingShares(const std::vector<std::string>& tokens) {
  std::vector<std::pair<uint64_t, std::string>> ring;
  for (const std::string& token : tokens) {
    if (!token.empty()) ring.emplace_back(TokenPosition(token), token);
  }
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  std::map<std::string, double> shares;
  if (ring.size() == 1) shares[ring[0].second] = 1.0;
  if (ring.size() <= 1) return shares;
  // The arc ending at each position, modulo 2^64: the first one wraps from the last position.
  // Two tokens at one position (different bytes past the 8th) share it: the first owns the arc.
  for (size_t i = 0; i < ring.size(); ++i) {
    const uint64_t arc = ring[i].first - ring[(i + ring.size() - 1) % ring.size()].first;
    shares[ring[i].second] = std::ldexp(static_cast<double>(arc), -64);
  }
  return shares;
}

int DefaultReplicationFactor(int live_nodes) { return std::clamp(live_nodes, 1, 3); }

}  // namespace tessera::catalog
