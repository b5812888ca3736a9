// The tablets one node holds, as tessera.v1.TabletAdmin/GetTablets answers them
// (proto/tessera/v1/tablet_admin.proto; docs/replication.md, "Seeing it"). One description,
// two ways to ask for it: the node's gRPC port (server/tablet_admin_service.h, for `tessera
// admin tablets`) and the replication RpcChannel (kGetTabletsMethod, served by
// ConsistencyTokens, whose CheckConsistency reads each replica's applied sequence from it).
//
// Thread-safety: pure functions over thread-safe parts (ReplicaNode, Engine, immutable table
// snapshots).
#pragma once

#include <string>
#include <vector>

#include "tessera/replication/replica_node.h"
#include "tessera/replication/table_access.h"
#include "tessera/tablet/engine.h"
#include "tessera/v1/tablet_admin.pb.h"

namespace tessera::replication {

// On the RpcChannel: a tessera.v1.GetTabletsRequest answered by a tessera.v1.NodeTablets.
inline constexpr std::string_view kGetTabletsMethod = "TabletAdmin.GetTablets";

// The tablets `replicas` holds (a cluster node; a tablet whose configuration does not name
// the node is not one of them, though the node mirrors it): each one's configuration as known here, the
// node's durable promise and role, its applied sequence (the engine's, which is current, or
// the node's own number if higher) and, at a primary, its peers' progress. `tables` is the
// node's catalog, which gives each tablet its table and rows; a tablet it does not hold is
// listed without them. Only the tablets of table `only` (a full name) unless it is empty.
::tessera::v1::NodeTablets DescribeReplicas(const ReplicaNode& replicas,
                                            const tablet::Engine& engine,
                                            const std::vector<TableSnapshot>& tables,
                                            const std::string& only);

// A single node, whose tables are not replicated: every tablet of `tables` as RF 1, `self`
// its primary, with the engine's last sequence.
::tessera::v1::NodeTablets DescribeLocalTablets(const std::string& self,
                                                const tablet::Engine& engine,
                                                const std::vector<TableSnapshot>& tables,
                                                const std::string& only);

}  // namespace tessera::replication
