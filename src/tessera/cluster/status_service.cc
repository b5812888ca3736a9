#include "tessera/cluster/status_service.h"

namespace tessera::cluster {

grpc::ServerUnaryReactor* ClusterAdminService::GetClusterStatus(
    grpc::CallbackServerContext* context, const ::tessera::v1::GetClusterStatusRequest*,
    ::tessera::v1::ClusterStatus* response) {
  // The status reads the lock service (a network round trip with etcd), so it runs here, on a
  // callback thread; it is an operator's call, rare and small.
  *response = node_->GetStatus();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tessera::cluster
