#include "tessera/server/node_locations.h"

#include <utility>

#include "tessera/cluster/endpoint_state.h"

namespace tessera::server {

NodeLocations::NodeLocations(std::string self, std::string dc, std::string rack,
                             std::function<const cluster::Gossiper*()> gossiper)
    : self_(std::move(self)),
      here_{std::move(dc), std::move(rack), true},
      gossiper_(std::move(gossiper)) {}

std::optional<replication::NodeLocation> NodeLocations::Locate(
    const std::string& endpoint) const {
  if (endpoint == self_) return here_;
  const cluster::Gossiper* g = gossiper_ ? gossiper_() : nullptr;
  if (g == nullptr) return std::nullopt;
  const std::optional<int64_t> generation = g->GenerationOf(endpoint);
  if (!generation.has_value()) return std::nullopt;
  replication::NodeLocation out;
  bool cached = false;
  {
    absl::MutexLock l(&mu_);
    auto it = known_.find(endpoint);
    if (it != known_.end() && it->second.generation == *generation) {
      out.dc = it->second.dc;
      out.rack = it->second.rack;
      cached = true;
    }
  }
  if (!cached) {
    std::optional<cluster::PeerView> view = g->ViewOf(endpoint);
    if (!view.has_value()) return std::nullopt;
    if (const std::string* dc = view->state.Find(cluster::kDcKey)) out.dc = *dc;
    if (const std::string* rack = view->state.Find(cluster::kRackKey)) out.rack = *rack;
    // A state may arrive before its dc and rack (deltas are bounded): keep only a whole one.
    if (!out.dc.empty() && !out.rack.empty()) {
      absl::MutexLock l(&mu_);
      known_.insert_or_assign(endpoint, Known{view->state.generation, out.dc, out.rack});
    }
  }
  out.live = g->LivenessOf(endpoint) == cluster::Liveness::kUp;
  return out;
}

std::string NodeLocations::DcOf(const std::string& endpoint) const {
  std::optional<replication::NodeLocation> where = Locate(endpoint);
  return where.has_value() && !where->dc.empty() ? where->dc : here_.dc;
}

}  // namespace tessera::server
