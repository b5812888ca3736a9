#include "tessera/catalog/table_placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace tessera::catalog {
namespace {

std::optional<PlacementPolicy::Strategy> StrategyAlone(std::string_view text) {
  if (text == "ring") return PlacementPolicy::Strategy::kRing;
  if (text == "tablets") return PlacementPolicy::Strategy::kTablets;
  return std::nullopt;
}

// Whether `live` can hold every replica `policy` asks for.
Status CheckPlaceable(const PlacementPolicy& policy, const std::vector<PlacementNode>& live) {
  const std::string text = FormatPlacementPolicy(policy);
  if (policy.per_dc_rf.empty()) {
    if (policy.replication_factor <= static_cast<int>(live.size())) return Status();
    return absl::InvalidArgumentError(
        tessera::StrCat("placement \"", text, "\" needs ", policy.replication_factor,
                        " nodes, the cluster has ", live.size(), " live"));
  }
  std::map<std::string_view, int> per_dc;
  for (const PlacementNode& node : live) ++per_dc[node.dc];
  for (const auto& [dc, rf] : policy.per_dc_rf) {
    const int have = per_dc.contains(dc) ? per_dc.at(dc) : 0;
    if (have == 0) {
      return absl::InvalidArgumentError(
          tessera::StrCat("placement \"", text, "\": datacenter ", dc, " has no live nodes"));
    }
    if (rf > have) {
      return absl::InvalidArgumentError(tessera::StrCat("placement \"", text, "\" needs ", rf,
                                                        " nodes in datacenter ", dc, ", it has ",
                                                        have, " live"));
    }
  }
  return Status();
}

}  // namespace

Status ValidatePlacementText(std::string_view text) {
  if (StrategyAlone(text)) return Status();
  return ParsePlacementPolicy(text).status();
}

StatusOr<PlacementPolicy> ResolveTablePlacement(std::string_view option,
                                                std::string_view node_default,
                                                const std::vector<PlacementNode>& live) {
  std::string_view text = !option.empty() ? option : node_default;
  if (text.empty()) text = kDefaultPlacement;
  PlacementPolicy policy;
  if (std::optional<PlacementPolicy::Strategy> strategy = StrategyAlone(text)) {
    policy.strategy = *strategy;
    policy.replication_factor = DefaultReplicationFactor(static_cast<int>(live.size()));
  } else {
    ASSIGN_OR_RETURN(policy, ParsePlacementPolicy(text));
  }
  RETURN_IF_ERROR(CheckPlaceable(policy, live));
  return policy;
}

StatusOr<PlacementPolicy> StoredTablePlacement(std::string_view stored, int live_nodes,
                                               int max_replication_factor) {
  if (!stored.empty()) return ParsePlacementPolicy(stored);
  PlacementPolicy policy;
  policy.strategy = PlacementPolicy::Strategy::kTablets;
  policy.replication_factor =
      std::min(max_replication_factor, DefaultReplicationFactor(live_nodes));
  return policy;
}

PlacementPolicy MetadataPlacement(const std::vector<PlacementNode>& live,
                                  int max_replication_factor) {
  std::map<std::string, int> per_dc;
  for (const PlacementNode& node : live) ++per_dc[node.dc];
  PlacementPolicy policy;
  policy.strategy = PlacementPolicy::Strategy::kTablets;
  if (per_dc.size() <= 1) {
    policy.replication_factor =
        std::min(max_replication_factor, DefaultReplicationFactor(static_cast<int>(live.size())));
    return policy;
  }
  for (const auto& [dc, nodes] : per_dc) {
    policy.per_dc_rf[dc] = std::min(max_replication_factor, DefaultReplicationFactor(nodes));
  }
  return policy;
}

std::vector<std::string> TableSplitKeys(const PlacementPolicy& policy,
                                        const std::vector<PlacementNode>& ring,
                                        std::vector<std::string> initial_splits) {
  if (policy.strategy == PlacementPolicy::Strategy::kRing) {
    for (std::string& token : RingSplits(ring)) initial_splits.push_back(std::move(token));
  }
  return initial_splits;
}

}  // namespace tessera::catalog
