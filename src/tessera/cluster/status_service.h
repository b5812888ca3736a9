// ClusterAdminService: tessera.v1.ClusterAdmin on a node's gRPC port — the cluster as this node
// sees it (ClusterNode::GetStatus), for `tessera admin status`.
//
// Thread-safety: gRPC calls it concurrently; ClusterNode is thread-safe.
#pragma once

#include "tessera/cluster/node.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::cluster {

class ClusterAdminService final : public ::tessera::v1::ClusterAdmin::CallbackService {
 public:
  // `node` must outlive the service.
  explicit ClusterAdminService(const ClusterNode* node) : node_(node) {}

  grpc::ServerUnaryReactor* GetClusterStatus(
      grpc::CallbackServerContext* context,
      const ::tessera::v1::GetClusterStatusRequest* request,
      ::tessera::v1::ClusterStatus* response) override;

 private:
  const ClusterNode* const node_;
};

}  // namespace tessera::cluster
