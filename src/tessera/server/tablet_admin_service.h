// TabletAdminService: tessera.v1.TabletAdmin on a node's gRPC port — the tablets this node holds
// a replica of, for `tessera admin tablets`, and the ring's tokens, for `tessera admin ring`
// (docs/replication.md, "Seeing it"). A cluster node
// answers from its ReplicaNode (States() and each tablet's configuration) and its catalog (the
// tablet's table and rows); a single node, whose tables are not replicated, answers its
// catalog's tablets as RF 1, itself the primary, with the engine's last sequences.
//
// Thread-safety: its handlers run concurrently; it reads only thread-safe parts of the core.
#pragma once

#include "tessera/rpc/server.h"
#include "tessera/server/node_core.h"
#include "tessera/util/executor.h"
#include "tessera/v1/tablet_admin.grpc.pb.h"

namespace tessera::server {

// This node's tablets as `tessera admin tablets` shows them (of table `only`, "" = all): the
// replicas it holds with their configuration, sequences and hints. Unavailable while the node
// is still joining. REQUIRES: `only` is "" or a well-formed table name.
StatusOr<::tessera::v1::NodeTablets> DescribeNodeTablets(const NodeCore& core,
                                                         const std::string& only);

class TabletAdminService final {
 public:
  // `core` must outlive the service.
  explicit TabletAdminService(NodeCore* core) : core_(core) {}

  // Registers both methods; they run on `executor` (they ask other nodes and the lock service).
  void Register(rpc::Services* services, Executor* executor);

  // UNAVAILABLE "this node is still joining its cluster" before the node has started, and for
  // a cluster node whose replication has not begun; INVALID_ARGUMENT for a malformed table name.
  rpc::UnaryReactor* GetTablets(rpc::ServerContext* context,
                                       const ::tessera::v1::GetTabletsRequest* request,
                                       ::tessera::v1::NodeTablets* response);
  // The ring's tokens from the lock service (the node's catalog::RingStore). UNAVAILABLE
  // before the node has begun and while it has no session.
  rpc::UnaryReactor* GetRing(rpc::ServerContext* context,
                                    const ::tessera::v1::GetRingRequest* request,
                                    ::tessera::v1::Ring* response);

 private:
  NodeCore* const core_;
};

}  // namespace tessera::server
