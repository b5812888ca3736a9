// ClusterAdminService: tessera.v1.ClusterAdmin on a node's gRPC port — the cluster as this node
// sees it (ClusterNode::GetStatus), for `tessera admin status`, and the removal of a dead node
// (ClusterNode::RemoveNode), for `tessera admin removenode`.
//
// Thread-safety: its handlers run concurrently; ClusterNode is thread-safe.
#pragma once

#include <atomic>

#include "tessera/cluster/node.h"
#include "tessera/rpc/server.h"
#include "tessera/util/executor.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::cluster {

class ClusterAdminService final {
 public:
  // The service is registered before the node exists (the node needs the server listening to
  // join); until SetNode() it answers UNAVAILABLE. `node` must outlive the service, or be
  // replaced with nullptr first.
  ClusterAdminService() = default;
  void SetNode(ClusterNode* node) { node_.store(node); }

  // Registers both methods; they run on `executor` (RemoveNode writes the lock service).
  void Register(rpc::Services* services, Executor* executor);

  rpc::UnaryReactor* GetClusterStatus(
      rpc::ServerContext* context,
      const ::tessera::v1::GetClusterStatusRequest* request,
      ::tessera::v1::ClusterStatus* response);
  rpc::UnaryReactor* RemoveNode(rpc::ServerContext* context,
                                       const ::tessera::v1::RemoveNodeRequest* request,
                                       ::tessera::v1::RemoveNodeResponse* response);

 private:
  std::atomic<ClusterNode*> node_{nullptr};
};

}  // namespace tessera::cluster
