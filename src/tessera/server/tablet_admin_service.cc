#include "tessera/server/tablet_admin_service.h"

#include <string>

#include "tessera/catalog/table_definition.h"
#include "tessera/replication/node_tablets.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/replica_node.h"
#include "tessera/server/grpc_status.h"

namespace tessera::server {

void TabletAdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService = ::tessera::v1::TabletAdmin::service_full_name();
  services->Add(kService, "GetTablets", this, &TabletAdminService::GetTablets, executor);
  services->Add(kService, "GetRing", this, &TabletAdminService::GetRing, executor);
}

rpc::UnaryReactor* TabletAdminService::GetTablets(
    rpc::ServerContext* context, const ::tessera::v1::GetTabletsRequest* request,
    ::tessera::v1::NodeTablets* response) {
  // Reads in-memory state only (the replica states, the catalog, the engine's counters).
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  const std::string& only = request->table_name();
  if (!only.empty()) {
    if (StatusOr<catalog::TableName> name = catalog::TableName::Parse(only); !name.ok()) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(name.status().message())));
      return reactor;
    }
  }
  StatusOr<v1::NodeTablets> tablets = DescribeNodeTablets(*core_, only);
  if (!tablets.ok()) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(tablets.status().message())));
    return reactor;
  }
  *response = *std::move(tablets);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

StatusOr<v1::NodeTablets> DescribeNodeTablets(const NodeCore& core, const std::string& only) {
  cluster::ClusterNode* node = core.serving_node();
  replication::ReplicatedStore* store = core.replicated();
  if (node == nullptr || (store == nullptr && core.cluster_definitions() != nullptr)) {
    return absl::UnavailableError("this node is still joining its cluster");
  }
  const std::vector<replication::TableSnapshot> tables = core.catalog()->ListAllTables();
  if (store != nullptr) {
    return replication::DescribeReplicas(*store->replicas(), *core.engine(), tables, only);
  }
  return replication::DescribeLocalTablets(node->options().endpoint, *core.engine(), tables, only);
}

rpc::UnaryReactor* TabletAdminService::GetRing(rpc::ServerContext* context,
                                                      const v1::GetRingRequest* /*request*/,
                                                      v1::Ring* response) {
  // One listing of the lock service's `nodes/` and `tokens/`: a short blocking call.
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  catalog::RingStore* ring = core_->ring();
  if (ring == nullptr) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "this node is still joining its cluster"));
    return reactor;
  }
  StatusOr<catalog::ClusterView> view = ring->Read();
  if (!view.ok()) {
    reactor->Finish(ToGrpcStatus(view.status()));
    return reactor;
  }
  response->set_endpoint(ring->endpoint());
  for (const auto& [endpoint, token] : view->tokens) {
    v1::RingToken* t = response->add_tokens();
    t->set_endpoint(endpoint);
    t->set_token(token);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tessera::server
