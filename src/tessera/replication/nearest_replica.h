// Where nodes stand (data centre, rack, liveness) and the replica a read at ONE goes to
// (docs/replication.md, "Reads"): the nearest live one. The coordinator asks a LocateNode,
// which the server builds from gossip (server/node_locations.h); a simulation or a test gives
// its own.
//
// Thread-safety: NearestReplica is a pure function of its arguments; a LocateNode must be
// callable from any thread, under the caller's locks (it takes none of theirs).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>

#include "tessera/catalog/tablet_config.h"

namespace tessera::replication {

// One node as this node knows it.
struct NodeLocation {
  std::string dc;
  std::string rack;  // named within its dc
  bool live = true;  // this node's failure detector sees it up
};

// The location of the node at `endpoint` (a replica endpoint, as in TabletConfig::replicas),
// this node's own included; nullopt when nothing is known of it yet.
using LocateNode = std::function<std::optional<NodeLocation>(const std::string& endpoint)>;

// The replica of `config` that a read at ONE coordinated by `self` goes to, nearest first:
//   1. `self`, when it is a replica;
//   2. a replica on self's rack (same dc and rack), then one in self's dc;
//   3. the primary;
//   4. any other replica (another dc, or of unknown location);
// passing over, at every step, a replica that needs a rebuild, one in `avoid` (it failed an
// earlier try of this read) and one the locator knows is not live (self is always live to
// itself). Ties within a step go to the primary, then to placement order. When every replica
// is passed over, the primary (the read then fails there, or finds it back). A null `locate`
// knows nothing: self, else the primary.
std::string NearestReplica(const catalog::TabletConfig& config, const std::string& self,
                           const LocateNode& locate, const std::set<std::string>& avoid);

}  // namespace tessera::replication
