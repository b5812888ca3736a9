#include "tessera/server/tablet_admin_service.h"

#include <map>
#include <memory>
#include <string>

#include "tessera/catalog/table_definition.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/replica_node.h"
#include "tessera/server/grpc_status.h"

namespace tessera::server {

namespace {

namespace v1 = ::tessera::v1;

// Where a tablet id lies in the catalog: its table and row range.
struct Placed {
  std::shared_ptr<const catalog::TableInfo> table;
  const catalog::TabletRef* ref = nullptr;
};

std::map<uint64_t, Placed> IndexCatalog(const catalog::TableCatalog& catalog) {
  std::map<uint64_t, Placed> index;
  for (const std::shared_ptr<const catalog::TableInfo>& table : catalog.ListAllTables()) {
    for (const catalog::TabletRef& ref : table->tablets) index[ref.id] = Placed{table, &ref};
  }
  return index;
}

// Fills the catalog's part of `view`; false when `only` is set and the tablet is not its.
bool Locate(const std::map<uint64_t, Placed>& index, const std::string& only,
            v1::TabletReplicaView* view) {
  auto it = index.find(view->tablet_id());
  if (it == index.end()) return only.empty();
  if (!only.empty() && it->second.table->full_name != only) return false;
  view->set_table_name(it->second.table->full_name);
  view->set_start_row(it->second.ref->start_row);
  view->set_end_row(it->second.ref->end_row);
  return true;
}

void FillReplicated(const replication::ReplicaNode& replicas, const tablet::Engine& engine,
                    const std::map<uint64_t, Placed>& index, const std::string& only,
                    v1::NodeTablets* out) {
  out->set_endpoint(replicas.self());
  out->set_replicated(true);
  for (const replication::TabletReplicaState& s : replicas.States()) {
    v1::TabletReplicaView view;
    view.set_tablet_id(s.tablet_id);
    if (!Locate(index, only, &view)) continue;
    if (std::optional<catalog::TabletConfig> config = replicas.GetConfig(s.tablet_id);
        config.has_value()) {
      view.set_config_epoch(config->epoch);
      view.set_config_state(std::string(catalog::TabletConfigStateName(config->state)));
      for (const std::string& r : config->replicas) view.add_replicas(r);
      view.set_primary(config->primary_endpoint());
      for (size_t i : config->needs_rebuild) view.add_needs_rebuild(config->replicas[i]);
    }
    view.set_promised_epoch(s.promised_epoch);
    view.set_joined_epoch(s.joined_epoch);
    view.set_is_primary(s.primary);
    // The node's own number is only refreshed by its protocol's steps; the engine's is now.
    StatusOr<uint64_t> last = engine.LastSequence(s.tablet_id);
    view.set_last_sequence(std::max(s.last_sequence, last.ok() ? *last : 0));
    for (const replication::TabletReplicaState::Peer& p : s.peers) {
      v1::PeerProgress* peer = view.add_peers();
      peer->set_endpoint(p.endpoint);
      peer->set_acknowledged_sequence(p.acknowledged);
      peer->set_answering(p.answering);
      peer->set_leased(p.leased);
      peer->set_needs_rebuild(p.needs_rebuild);
      peer->set_copying(p.copying);
    }
    view.set_retained_bytes(s.retained_bytes);
    *out->add_tablets() = std::move(view);
  }
}

// A single node: every tablet of its catalog, RF 1, itself the primary.
void FillLocal(const std::string& self, const tablet::Engine& engine,
               const std::map<uint64_t, Placed>& index, const std::string& only,
               v1::NodeTablets* out) {
  out->set_endpoint(self);
  out->set_replicated(false);
  out->set_note("this node does not replicate its tables (single node)");
  for (const auto& [id, placed] : index) {
    v1::TabletReplicaView view;
    view.set_tablet_id(id);
    if (!Locate(index, only, &view)) continue;
    view.add_replicas(self);
    view.set_primary(self);
    view.set_is_primary(true);
    StatusOr<uint64_t> last = engine.LastSequence(id);
    if (last.ok()) view.set_last_sequence(*last);
    *out->add_tablets() = std::move(view);
  }
}

}  // namespace

grpc::ServerUnaryReactor* TabletAdminService::GetTablets(grpc::CallbackServerContext* context,
                                                         const v1::GetTabletsRequest* request,
                                                         v1::NodeTablets* response) {
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
  const std::map<uint64_t, Placed> index = IndexCatalog(*core_->catalog());
  if (store != nullptr) {
    FillReplicated(*store->replicas(), *core_->engine(), index, only, response);
  } else {
    FillLocal(node->options().endpoint, *core_->engine(), index, only, response);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TabletAdminService::GetRing(grpc::CallbackServerContext* context,
                                                      const v1::GetRingRequest* /*request*/,
                                                      v1::Ring* response) {
  // One listing of the lock service's `nodes/` and `tokens/`: a short blocking call.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
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
