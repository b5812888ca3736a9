// TabletAdminService: tessera.v1.TabletAdmin on a node's gRPC port — the tablets this node holds
// a replica of, for `tessera admin tablets`, and the ring's tokens, for `tessera admin ring`
// (docs/replication.md, "Seeing it"). A cluster node
// answers from its ReplicaNode (States() and each tablet's configuration) and its catalog (the
// tablet's table and rows); a single node, whose tables are not replicated, answers its
// catalog's tablets as RF 1, itself the primary, with the engine's last sequences.
//
// Thread-safety: gRPC calls it concurrently; it reads only thread-safe parts of the core.
#pragma once

#include "tessera/server/node_core.h"
#include "tessera/v1/tablet_admin.grpc.pb.h"

namespace tessera::server {

class TabletAdminService final : public ::tessera::v1::TabletAdmin::CallbackService {
 public:
  // `core` must outlive the service.
  explicit TabletAdminService(NodeCore* core) : core_(core) {}

  // UNAVAILABLE "this node is still joining its cluster" before the node has started, and for
  // a cluster node whose replication has not begun; INVALID_ARGUMENT for a malformed table name.
  grpc::ServerUnaryReactor* GetTablets(grpc::CallbackServerContext* context,
                                       const ::tessera::v1::GetTabletsRequest* request,
                                       ::tessera::v1::NodeTablets* response) override;
  // The ring's tokens from the lock service (the node's catalog::RingStore). UNAVAILABLE
  // before the node has begun and while it has no session.
  grpc::ServerUnaryReactor* GetRing(grpc::CallbackServerContext* context,
                                    const ::tessera::v1::GetRingRequest* request,
                                    ::tessera::v1::Ring* response) override;

 private:
  NodeCore* const core_;
};

}  // namespace tessera::server
