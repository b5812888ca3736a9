#include "tessera/server/tablet_admin_service.h"

#include <string>

#include "tessera/catalog/table_definition.h"
#include "tessera/replication/node_tablets.h"

namespace tessera::server {

grpc::ServerUnaryReactor* TabletAdminService::GetTablets(
    grpc::CallbackServerContext* context, const ::tessera::v1::GetTabletsRequest* request,
    ::tessera::v1::NodeTablets* response) {
  // Reads in-memory state only (the replica states, the catalog, the engine's counters).
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const std::string& only = request->table_name();
  if (!only.empty()) {
    if (StatusOr<catalog::TableName> name = catalog::TableName::Parse(only); !name.ok()) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(name.status().message())));
      return reactor;
    }
  }
  cluster::ClusterNode* node = core_->serving_node();
  replication::ReplicatedStore* store = core_->replicated();
  if (node == nullptr || (store == nullptr && core_->cluster_definitions() != nullptr)) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "this node is still joining its cluster"));
    return reactor;
  }
  const std::vector<replication::TableSnapshot> tables = core_->catalog()->ListAllTables();
  if (store != nullptr) {
    *response = replication::DescribeReplicas(*store->replicas(), *core_->engine(), tables, only);
  } else {
    *response =
        replication::DescribeLocalTablets(node->options().endpoint, *core_->engine(), tables, only);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tessera::server
