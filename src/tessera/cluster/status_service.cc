#include "tessera/cluster/status_service.h"

namespace tessera::cluster {

void ClusterAdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService = ::tessera::v1::ClusterAdmin::service_full_name();
  services->Add(kService, "GetClusterStatus", this, &ClusterAdminService::GetClusterStatus,
                executor);
  services->Add(kService, "RemoveNode", this, &ClusterAdminService::RemoveNode, executor);
}

rpc::UnaryReactor* ClusterAdminService::GetClusterStatus(
    rpc::ServerContext* context, const ::tessera::v1::GetClusterStatusRequest*,
    ::tessera::v1::ClusterStatus* response) {
  // The status reads the lock service (a network round trip with etcd), so it runs here, on a
  // callback thread; it is an operator's call, rare and small.
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  ClusterNode* node = node_.load();
  if (node == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "this node is still joining its cluster"));
    return reactor;
  }
  *response = node->GetStatus();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

rpc::UnaryReactor* ClusterAdminService::RemoveNode(
    rpc::ServerContext* context, const ::tessera::v1::RemoveNodeRequest* request,
    ::tessera::v1::RemoveNodeResponse* response) {
  // Reads and writes the lock service: a network round trip, rare (an operator's call).
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  ClusterNode* node = node_.load();
  if (node == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "this node is still joining its cluster"));
    return reactor;
  }
  StatusOr<std::string> done = node->RemoveNode(request->endpoint(), request->force());
  if (done.ok()) {
    response->set_message(*done);
    reactor->Finish(grpc::Status::OK);
  } else {
    reactor->Finish(grpc::Status(static_cast<grpc::StatusCode>(done.status().code()),
                                 std::string(done.status().message())));
  }
  return reactor;
}

}  // namespace tessera::cluster
