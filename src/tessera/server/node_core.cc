#include "tessera/server/node_core.h"

#include <utility>
#include <vector>

#include "absl/strings/str_join.h"

#include "tessera/catalog/tablet_id.h"
#include "tessera/coord/open_lock_service.h"
#include "tessera/replication/cluster_table_access.h"
#include "tessera/server/row_filter_proto.h"
#include "tessera/util/logging.h"

namespace tessera::server {

NodeCore::NodeCore(const NodeCoreOptions& options, const NodeCoreEnv& env)
    : options_(options),
      env_(env),
      stream_bytes_per_s_(static_cast<int64_t>(options.cluster.replica.stream_bytes_per_s)) {}

replication::StreamStats NodeCore::Streams() const {
  const replication::ReplicatedStore* store = replicated();
  return store != nullptr ? store->replicas()->Streams() : replication::StreamStats();
}

replication::RepairStats NodeCore::Repairs() const {
  const replication::ReplicatedStore* store = replicated();
  return store != nullptr ? store->replicas()->Repairs() : replication::RepairStats();
}

void NodeCore::SetStreamBytesPerSecond(int64_t bytes_per_second) {
  stream_bytes_per_s_.store(bytes_per_second);
  if (replication::ReplicatedStore* store = replicated()) {
    store->replicas()->SetStreamBytesPerSecond(bytes_per_second);
  }
}

NodeCore::~NodeCore() {
  Status s = Close();
  if (!s.ok()) TLOG_ERROR("node: closing: {}", s);
}

StatusOr<std::unique_ptr<NodeCore>> NodeCore::Open(const NodeCoreOptions& options,
                                                   const NodeCoreEnv& env) {
  if (env.env.fs == nullptr || env.env.clock == nullptr || env.env.executor == nullptr) {
    return absl::InvalidArgumentError("NodeCore needs a file system, a clock and an executor");
  }
  std::unique_ptr<NodeCore> core(new NodeCore(options, env));
  Status opened = core->OpenParts();
  if (!opened.ok()) {
    Status closed = core->Close();
    if (!closed.ok()) TLOG_ERROR("node: closing after a failed open: {}", closed);
    return opened;
  }
  return core;
}

Status NodeCore::OpenParts() {
  const Env& env = env_.env;
  tablet::EngineOptions engine_options = options_.engine;
  if (env_.replica_channel) {
    // The replayed log is what a restarted primary still has to pass on to its replicas.
    // Kept per tablet: as much as the ReplicaNode will retain of it, no more.
    const size_t max_bytes = options_.cluster.replica.retained_bytes_per_tablet;
    engine_options.on_replayed = [this, max_bytes](uint64_t tablet, uint64_t first,
                                                   std::string_view m) {      Replayed& r = replayed_[tablet];
      r.records.emplace_back(first, std::string(m));
      r.bytes += m.size();
      while (r.bytes > max_bytes && !r.records.empty()) {
        r.bytes -= r.records.front().second.size();
        r.records.pop_front();
      }
    };
  }
  ASSIGN_OR_RETURN(engine_,
                   tablet::Engine::Open(engine_options, Env{.fs = env.fs,
                                                             .clock = env.clock,
                                                             .executor = env_.engine_executor,
                                                             .seed = env.seed}));
  if (env_.replica_channel) {
    replication::HintLogOptions hint_options;
    hint_options.dir = JoinPath(options_.engine.dir, "hints");
    ASSIGN_OR_RETURN(hint_log_, replication::HintLog::Open(env.fs, hint_options));
  }
  ASSIGN_OR_RETURN(
      catalog_, catalog::TableCatalog::Open(engine_.get(), env_.env.NewRandom("catalog").Next64()));

  if (env_.shared_lock_service != nullptr) {
    lock_service_ = env_.shared_lock_service;
  } else {
    coord::LockServiceConfig lsc;
    lsc.address = options_.cluster.lock_service;
    lsc.data_dir = options_.engine.dir;
    // Clusters sharing one etcd stay apart.
    lsc.key_root = tessera::StrCat("/tessera/", options_.cluster.node.cluster_name, "/");
    lsc.loop = env_.rpc_loop;
    lsc.credentials = options_.cluster.lock_service_credentials;
    ASSIGN_OR_RETURN(own_lock_service_, coord::OpenLockService(lsc, env.fs, env.clock));
    lock_service_ = own_lock_service_.get();
  }

  // A cluster's schema lives in the lock service; a single node's in its catalog.
  if (env_.shared_lock_service != nullptr || lock_service_->backend_name() != "embedded") {
    catalog::SchemaStoreOptions schema_options;
    schema_options.fs = env.fs;
    schema_options.state_path = JoinPath(options_.engine.dir, "CLUSTER_SCHEMA");
    ASSIGN_OR_RETURN(schema_, ClusterDefinitions::Open(catalog_.get(), schema_options));
  }
  ASSIGN_OR_RETURN(profiles_, AppProfileStore::Open(AppProfileStoreOptions{}));
  if (options_.auth) {
    ASSIGN_OR_RETURN(
        access_control_,
        AccessControl::Open(AccessControlOptions{.tokens_file = options_.auth_tokens_file}));
  }
  local_access_ = std::make_unique<replication::LocalTableAccess>(engine_.get());
  if (env_.replica_channel && schema_ != nullptr) {
    access_ = std::make_unique<replication::ClusterTableAccess>(
        [this]() -> replication::Coordinator* {
          replication::ReplicatedStore* store = replicated();
          return store != nullptr ? store->coordinator() : nullptr;
        },
        local_access_.get());
  } else {
    access_ = std::make_unique<replication::LocalTableAccess>(engine_.get());
  }
  std::function<replication::ConsistencyTokens*()> tokens;
  if (env_.replica_channel && schema_ != nullptr) {
    tokens = [this]() -> replication::ConsistencyTokens* {
      replication::ReplicatedStore* store = replicated();
      return store != nullptr ? store->tokens() : nullptr;
    };
  }
  PlacementDefaults placement;
  placement.placement = options_.cluster.placement;
  placement.cluster = [this]() -> StatusOr<catalog::ClusterView> {
    catalog::RingStore* ring = this->ring();
    if (ring == nullptr) return absl::UnavailableError("this node is still joining its cluster");
    return ring->Read();
  };
  admin_ = std::make_unique<AdminService>(
      catalog_.get(), access_.get(), schema_.get(), [this] { return CheckServing(); },
      std::move(tokens), std::move(placement));
  admin_->set_access_control(access_control_.get());
  return Status();
}

catalog::TableDefinitions* NodeCore::definitions() const {
  if (schema_ != nullptr) return schema_.get();
  return catalog_.get();
}

cluster::NodeOptions NodeCore::NodeOptionsFor(const std::string& endpoint) const {
  cluster::NodeOptions node_options = options_.cluster.node;
  if (node_options.endpoint.empty()) node_options.endpoint = endpoint;
  node_options.lock_service_address = options_.cluster.lock_service;
  node_options.data_dir = options_.engine.dir;
  tablet::Engine* engine = engine_.get();
  node_options.load = [engine] {
    tablet::EngineStats stats = engine->GetStats();
    return static_cast<int64_t>(stats.memtable_bytes + stats.sstable_bytes);
  };
  return node_options;
}

cluster::NodeHooks NodeCore::Hooks() const {
  cluster::NodeHooks hooks;
  hooks.on_fatal = options_.cluster.on_fatal;
  catalog::SchemaStore* schema = schema_ != nullptr ? schema_->store() : nullptr;
  AppProfileStore* profiles = profiles_.get();
  replication::ReplicatedStore* store = store_.get();
  catalog::RingStore* ring = ring_.get();
  AccessControl* access = access_control_.get();
  hooks.on_registered = [schema, profiles, store, ring, access](coord::Session* session) {
    // The token first: the master places ring tables only on nodes that have one.
    if (ring != nullptr) RETURN_IF_ERROR(ring->Attach(session));
    if (schema != nullptr) RETURN_IF_ERROR(schema->Attach(session));
    if (access != nullptr) RETURN_IF_ERROR(access->Attach(session));
    profiles->Attach(session);
    if (store != nullptr) RETURN_IF_ERROR(store->Attach(session));
    return Status();
  };
  // A removed node's token goes, so that tables created from now on are not placed on it.
  hooks.on_removed = [](coord::Session* session, const std::string& endpoint) -> Status {
    Status s = session->Delete(catalog::TokenFileName(endpoint), std::nullopt);
    if (s.ok()) TLOG_INFO("ring: removed the token of {}", endpoint);
    return absl::IsNotFound(s) ? Status() : s;
  };
  hooks.on_session_lost = [schema, profiles, store, ring, access] {
    if (store != nullptr) store->Detach();
    if (access != nullptr) access->Detach();
    profiles->Detach();
    if (schema != nullptr) schema->Detach();
    if (ring != nullptr) ring->Detach();
  };
  return hooks;
}

Status NodeCore::StartReplication(const std::string& endpoint) {
  if (!env_.replica_channel || schema_ == nullptr || store_ != nullptr) return Status();
  ASSIGN_OR_RETURN(channel_, env_.replica_channel(endpoint));
  replication::ReplicatedStoreEnv re;
  re.engine = engine_.get();
  re.channel = channel_.get();
  re.executor = env_.replica_executor != nullptr ? env_.replica_executor : env_.env.executor;
  re.clock = env_.env.clock;
  re.hint_log = hint_log_.get();
  catalog::TableCatalog* catalog = catalog_.get();
  re.lookup = [catalog](const std::string& name) -> StatusOr<replication::TableSnapshot> {
    return catalog->GetTable(name);
  };
  auto seeds = std::make_shared<Random>(env_.env.NewRandom("filters"));
  auto seeds_mu = std::make_shared<absl::Mutex>();
  re.compile = [seeds, seeds_mu](const catalog::TableInfo& table,
                                 std::string_view encoded) -> StatusOr<model::RowFilter> {
    google::bigtable::v2::RowFilter proto;
    if (!proto.ParseFromString(std::string(encoded))) {
      return absl::InvalidArgumentError("a forwarded RowFilter does not parse");
    }
    uint64_t seed = 0;
    {
      absl::MutexLock l(seeds_mu.get());
      seed = seeds->Next64();
    }
    return CompileRowFilter(proto, FilterOptionsFor(table.schema, seed));
  };
  re.tables = [catalog] { return catalog->ListAllTables(); };
  ClusterDefinitions* definitions = schema_.get();
  re.create_metadata = [definitions] { return definitions->EnsureMetadataTable(); };
  re.is_master = [this] {
    cluster::ClusterNode* node = serving_node();
    return node != nullptr && node->is_master();
  };
  catalog::SchemaStore* schema = schema_->store();
  re.handle_other = [schema](const std::string& method, std::string& /*request*/,
                             replication::RpcChannel::Responder& respond) {
    return SchemaAgreement::Serve(*schema, method, respond);
  };
  // Where the nodes stand, from gossip: LOCAL_QUORUM counts the coordinator's DC, a read at
  // ONE goes to the nearest live replica.
  locations_ = std::make_unique<NodeLocations>(
      NodeOptionsFor(endpoint).endpoint, options_.cluster.node.dc, options_.cluster.node.rack,
      [this]() -> const cluster::Gossiper* {
        cluster::ClusterNode* node = serving_node();
        return node != nullptr ? node->gossiper() : nullptr;
      });
  NodeLocations* locations = locations_.get();
  replication::ReplicatedStoreOptions ro;
  ro.replica = options_.cluster.replica;
  ro.replica.dc_of = [locations](const std::string& e) { return locations->DcOf(e); };
  ro.coordinator.locate = [locations](const std::string& e) { return locations->Locate(e); };
  ro.coordinator.dc = options_.cluster.node.dc;
  ro.coordinator.write_level = options_.cluster.write_level;
  ro.coordinator.read_level = options_.cluster.read_level;
  store_ = std::make_unique<replication::ReplicatedStore>(std::move(re), ro);
  for (auto& [tablet, r] : replayed_) {
    for (auto& [first, mutation] : r.records) {
      RETURN_IF_ERROR(store_->replicas()->Restore(tablet, first, std::move(mutation)));
    }
  }
  replayed_.clear();
  store_->Start();
  replicated_.store(store_.get(), std::memory_order_release);
  // After publishing: a concurrent SetStreamBytesPerSecond either sees the store or its rate
  // is read here.
  store_->replicas()->SetStreamBytesPerSecond(stream_bytes_per_s_.load());
  if (options_.cluster.schema_agreement_timeout_us > 0) StartSchemaAgreement();
  return Status();
}

void NodeCore::StartSchemaAgreement() {
  SchemaAgreementOptions options;
  options.timeout_us = options_.cluster.schema_agreement_timeout_us;
  agreement_ = std::make_unique<SchemaAgreement>(
      channel_.get(), env_.env.clock, [this]() -> StatusOr<std::vector<std::string>> {
        catalog::RingStore* ring = this->ring();
        if (ring == nullptr) return std::vector<std::string>();
        ASSIGN_OR_RETURN(catalog::ClusterView view, ring->Read());
        std::vector<std::string> live;
        for (const catalog::PlacementNode& node : view.live) live.push_back(node.endpoint);
        return live;
      },
      options);
  SchemaAgreement* agreement = agreement_.get();
  schema_->SetAfterChange([agreement](int64_t revision) {
    StatusOr<std::vector<std::string>> missed = agreement->Await(revision);
    if (!missed.ok()) {
      TLOG_WARN("cluster schema: could not ask the nodes whether they hold revision {}: {}",
                revision, missed.status().ToString());
    } else if (!missed->empty()) {
      TLOG_WARN("cluster schema: revision {} not confirmed within the agreement wait by {}; "
                "they apply it when their watch catches up",
                revision, absl::StrJoin(*missed, ", "));
    }
  });
}

void NodeCore::MakeRing(const std::string& endpoint) {
  if (ring_ != nullptr) return;
  ring_ = std::make_unique<catalog::RingStore>(NodeOptionsFor(endpoint).endpoint);
  ring_ptr_.store(ring_.get(), std::memory_order_release);
}

Status NodeCore::StartNode(const std::string& endpoint, cluster::Transport* transport) {
  RETURN_IF_ERROR(StartReplication(endpoint));
  MakeRing(endpoint);
  ASSIGN_OR_RETURN(node_, cluster::ClusterNode::Start(NodeOptionsFor(endpoint), lock_service_,
                                                      transport, Hooks(), env_.env));
  serving_node_.store(node_.get(), std::memory_order_release);
  return Status();
}

Status NodeCore::BeginNode(const std::string& endpoint, cluster::Transport* transport,
                           std::function<void(Status)> on_started) {
  RETURN_IF_ERROR(StartReplication(endpoint));
  MakeRing(endpoint);
  ASSIGN_OR_RETURN(node_,
                   cluster::ClusterNode::Begin(NodeOptionsFor(endpoint), lock_service_, transport,
                                               Hooks(), env_.env, std::move(on_started)));
  // The node itself answers "not serving" until it has registered.
  serving_node_.store(node_.get(), std::memory_order_release);
  return Status();
}

void NodeCore::AnnounceShutdown() {
  if (node_ != nullptr) node_->AnnounceShutdown();
}

void NodeCore::StopNode() {
  // The session closes: the directory entry and the master lock go at once.
  serving_node_.store(nullptr);
  node_.reset();
}

void NodeCore::StopServing() {
  drained_.store(true, std::memory_order_release);
  if (cluster::ClusterNode* node = serving_node(); node != nullptr) node->Stop();
}

Status NodeCore::Drain() {
  StopServing();
  return engine_->Flush(std::nullopt);
}

std::vector<uint64_t> NodeCore::TabletsHeld() const {
  std::vector<uint64_t> held;
  const replication::ReplicatedStore* store = replicated();
  if (store == nullptr) return held;
  replication::ReplicaNode* replicas = store->replicas();
  for (const replication::TabletReplicaState& t : replicas->States()) {
    std::optional<catalog::TabletConfig> c = replicas->GetConfig(t.tablet_id);
    if (c.has_value() && c->state != catalog::TabletConfigState::kTombstoned &&
        c->IndexOf(replicas->self()) >= 0) {
      held.push_back(t.tablet_id);
    }
  }
  return held;
}

Status NodeCore::BeginDecommission() {
  const replication::ReplicatedStore* store = replicated();
  catalog::RingStore* ring = this->ring();
  if (store == nullptr || ring == nullptr) {
    return absl::FailedPreconditionError(
        "this node replicates nothing (a single node, or still joining): there is nowhere to "
        "move its data");
  }
  ASSIGN_OR_RETURN(catalog::ClusterView view, ring->Read());
  const std::string& self = store->replicas()->self();
  size_t others = 0;  // live nodes that may take a replica
  for (const catalog::PlacementNode& n : view.live) {
    others += n.endpoint != self && view.leaving.count(n.endpoint) == 0 ? 1 : 0;
  }
  const std::vector<uint64_t> held = TabletsHeld();
  std::vector<std::string> stuck;
  for (uint64_t id : held) {
    std::optional<catalog::TabletConfig> c = store->replicas()->GetConfig(id);
    if (c.has_value() && others < c->replicas.size()) stuck.push_back(catalog::TabletName(id));
  }
  if (!stuck.empty()) {
    return absl::FailedPreconditionError(
        StrCat("too few other live nodes (", others, ") to take the replicas of ", stuck.size(),
               " tablets held here (", absl::StrJoin(stuck, ", "), "); add a node first"));
  }
  RETURN_IF_ERROR(ring->MarkLeaving());
  TLOG_WARN("decommission: {} is leaving; the master moves its {} tablet replicas away", self,
            held.size());
  return Status();
}

Status NodeCore::FinishDecommission() {
  catalog::RingStore* ring = this->ring();
  if (ring == nullptr) return absl::FailedPreconditionError("this node is not in a cluster");
  if (std::vector<uint64_t> held = TabletsHeld(); !held.empty()) {
    return absl::FailedPreconditionError(
        StrCat(held.size(), " tablets still name this node; their replicas are moving"));
  }
  RETURN_IF_ERROR(ring->Leave());
  TLOG_WARN(
      "decommission: no tablet names this node any more; its token is gone; it stops "
      "serving");
  StopServing();  // nothing it holds is needed any more: no flush
  return Status();
}

Status NodeCore::CheckServing() const {
  if (drained()) {
    return absl::UnavailableError(
        "this node is drained (tessera admin drain): it serves again once restarted");
  }
  cluster::ClusterNode* node = serving_node();
  return node != nullptr ? node->CheckServing()
                         : absl::UnavailableError("this node is still joining its cluster");
}

Status NodeCore::Close() {
  if (closed_) return Status();
  closed_ = true;
  StopNode();
  replicated_.store(nullptr);
  if (schema_ != nullptr) schema_->SetAfterChange(nullptr);
  if (store_ != nullptr) store_->Stop();
  agreement_.reset();
  channel_.reset();  // its pending calls end into the stopped store
  store_.reset();
  hint_log_.reset();
  admin_.reset();
  access_.reset();
  local_access_.reset();
  schema_.reset();
  profiles_.reset();
  access_control_.reset();  // its mirror stops before the lock service closes
  own_lock_service_.reset();
  lock_service_ = nullptr;
  catalog_.reset();
  if (engine_ == nullptr) return Status();
  return engine_->Close();
}

}  // namespace tessera::server
