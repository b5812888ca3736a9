// NodeLocations: where each node of the cluster stands — its data centre and rack as it
// gossips them (`tessera serve --dc/--rack`, cluster/endpoint_state.h kDcKey, kRackKey) and
// whether this node's failure detector sees it up — for LOCAL_QUORUM
// (ReplicaNodeOptions::dc_of) and for reads at ONE (CoordinatorOptions::locate,
// replication/nearest_replica.h). Replica endpoints are the nodes' endpoints, which are also
// their names in gossip (cluster/node.h), so no translation is needed.
//
// A node's dc and rack are fixed for a generation, so they are read from gossip once per
// generation of the peer and kept: a lookup then costs two short reads under the gossiper's
// lock (the generation and the liveness), not a copy of the peer's state. This node's own
// location comes from its options, known before gossip starts.
//
// Thread-safety: Locate and DcOf may be called from any thread, with any lock of the caller
// held except the gossiper's (they take the gossiper's lock, then their own; neither calls
// out while holding it).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/cluster/gossip.h"
#include "tessera/replication/nearest_replica.h"

namespace tessera::server {

class NodeLocations {
 public:
  // `gossiper` returns the node's gossiper, or null while the node has none (before it
  // begins, after it stops); what it returns must stay valid while a lookup runs.
  NodeLocations(std::string self, std::string dc, std::string rack,
                std::function<const cluster::Gossiper*()> gossiper);

  NodeLocations(const NodeLocations&) = delete;
  NodeLocations& operator=(const NodeLocations&) = delete;

  // Where `endpoint` stands: this node from its options (always live); a peer from gossip,
  // live when gossip sees it up (not suspect, not down); nullopt when gossip does not know
  // it yet. A peer gossiping no dc or rack has "".
  std::optional<replication::NodeLocation> Locate(const std::string& endpoint) const;
  // Its dc; this node's own for a peer gossip does not know yet (as Cassandra's snitches
  // default an unknown endpoint): LOCAL_QUORUM then counts it among the local replicas and
  // waits for it, rather than acknowledging with fewer local copies than the level promises.
  std::string DcOf(const std::string& endpoint) const;

 private:
  struct Known {
    int64_t generation = 0;
    std::string dc, rack;
  };

  const std::string self_;
  const replication::NodeLocation here_;
  const std::function<const cluster::Gossiper*()> gossiper_;

  mutable absl::Mutex mu_;
  mutable std::map<std::string, Known, std::less<>> known_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::server
