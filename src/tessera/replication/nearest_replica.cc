#include "tessera/replication/nearest_replica.h"

#include <limits>

namespace tessera::replication {

std::string NearestReplica(const catalog::TabletConfig& config, const std::string& self,
                           const LocateNode& locate, const std::set<std::string>& avoid) {
  std::optional<NodeLocation> here;
  if (locate) here = locate(self);
  // The step (above) of each replica; lower is nearer.
  constexpr int kSelf = 0, kRack = 1, kDc = 2, kPrimary = 3, kOther = 4;
  auto step_of = [&](size_t i) -> int {
    const std::string& endpoint = config.replicas[i];
    if (endpoint == self) return kSelf;
    if (here.has_value() && locate) {
      std::optional<NodeLocation> there = locate(endpoint);
      if (there.has_value() && there->dc == here->dc) {
        return there->rack == here->rack ? kRack : kDc;
      }
    }
    return i == config.primary ? kPrimary : kOther;
  };
  auto usable = [&](size_t i) {
    const std::string& endpoint = config.replicas[i];
    if (config.NeedsRebuild(i) || avoid.count(endpoint) > 0) return false;
    if (endpoint == self || !locate) return true;
    std::optional<NodeLocation> there = locate(endpoint);
    return !there.has_value() || there->live;  // unknown: not known to be down
  };
  int best_step = std::numeric_limits<int>::max();
  size_t best = config.primary;
  for (size_t i = 0; i < config.replicas.size(); ++i) {
    if (!usable(i)) continue;
    const int step = step_of(i);
    // A null locator knows only self and the primary.
    if (!locate && step == kOther) continue;
    if (step < best_step || (step == best_step && i == config.primary)) {
      best_step = step;
      best = i;
    }
  }
  return config.replicas[best];
}

}  // namespace tessera::replication
