#include "tessera/replication/node_tablets.h"

#include <algorithm>
#include <map>
#include <optional>

#include "tessera/catalog/tablet_config.h"

namespace tessera::replication {

namespace {

namespace v1 = ::tessera::v1;

// Where a tablet id lies in the catalog: its table and row range.
struct Placed {
  TableSnapshot table;
  const catalog::TabletRef* ref = nullptr;
};

std::map<uint64_t, Placed> IndexTables(const std::vector<TableSnapshot>& tables) {
  std::map<uint64_t, Placed> index;
  for (const TableSnapshot& table : tables) {
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

}  // namespace

v1::NodeTablets DescribeReplicas(const ReplicaNode& replicas, const tablet::Engine& engine,
                                 const std::vector<TableSnapshot>& tables,
                                 const std::string& only) {
  const std::map<uint64_t, Placed> index = IndexTables(tables);
  v1::NodeTablets out;
  out.set_endpoint(replicas.self());
  out.set_replicated(true);
  for (const TabletReplicaState& s : replicas.States()) {
    v1::TabletReplicaView view;
    view.set_tablet_id(s.tablet_id);
    if (!Locate(index, only, &view)) continue;
    if (std::optional<catalog::TabletConfig> config = replicas.GetConfig(s.tablet_id);
        config.has_value()) {
      // Every node mirrors every configuration; one that does not name this node is not a
      // replica here (with RF below the node count, most are not).
      if (config->IndexOf(replicas.self()) < 0) continue;
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
    for (const TabletReplicaState::Peer& p : s.peers) {
      v1::PeerProgress* peer = view.add_peers();
      peer->set_endpoint(p.endpoint);
      peer->set_acknowledged_sequence(p.acknowledged);
      peer->set_answering(p.answering);
      peer->set_leased(p.leased);
      peer->set_needs_rebuild(p.needs_rebuild);
      peer->set_copying(p.copying);
    }
    view.set_retained_bytes(s.retained_bytes);
    view.set_hint_bytes(s.hint_bytes);
    view.set_hint_records(s.hint_records);
    *out.add_tablets() = std::move(view);
  }
  return out;
}

v1::NodeTablets DescribeLocalTablets(const std::string& self, const tablet::Engine& engine,
                                     const std::vector<TableSnapshot>& tables,
                                     const std::string& only) {
  const std::map<uint64_t, Placed> index = IndexTables(tables);
  v1::NodeTablets out;
  out.set_endpoint(self);
  out.set_replicated(false);
  out.set_note("this node does not replicate its tables (single node)");
  for (const auto& [id, placed] : index) {
    v1::TabletReplicaView view;
    view.set_tablet_id(id);
    if (!Locate(index, only, &view)) continue;
    view.add_replicas(self);
    view.set_primary(self);
    view.set_is_primary(true);
    StatusOr<uint64_t> last = engine.LastSequence(id);
    if (last.ok()) view.set_last_sequence(*last);
    *out.add_tablets() = std::move(view);
  }
  return out;
}

}  // namespace tessera::replication
