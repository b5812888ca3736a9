#include "tessera/server/node_core.h"

#include <utility>

#include "tessera/coord/open_lock_service.h"
#include "tessera/util/logging.h"

namespace tessera::server {

NodeCore::NodeCore(const NodeCoreOptions& options, const NodeCoreEnv& env)
    : options_(options), env_(env) {}

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
  ASSIGN_OR_RETURN(engine_,
                   tablet::Engine::Open(options_.engine, Env{.fs = env.fs,
                                                             .clock = env.clock,
                                                             .executor = env_.engine_executor,
                                                             .seed = env.seed}));
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
  access_ = std::make_unique<replication::LocalTableAccess>(engine_.get());
  admin_ = std::make_unique<AdminService>(catalog_.get(), access_.get(), schema_.get(),
                                          [this] { return CheckServing(); });
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
  hooks.on_registered = [schema, profiles](coord::Session* session) {
    if (schema != nullptr) RETURN_IF_ERROR(schema->Attach(session));
    profiles->Attach(session);
    return Status();
  };
  hooks.on_session_lost = [schema, profiles] {
    profiles->Detach();
    if (schema != nullptr) schema->Detach();
  };
  return hooks;
}

Status NodeCore::StartNode(const std::string& endpoint, cluster::Transport* transport) {
  ASSIGN_OR_RETURN(node_, cluster::ClusterNode::Start(NodeOptionsFor(endpoint), lock_service_,
                                                      transport, Hooks(), env_.env));
  serving_node_.store(node_.get(), std::memory_order_release);
  return Status();
}

Status NodeCore::BeginNode(const std::string& endpoint, cluster::Transport* transport,
                           std::function<void(Status)> on_started) {
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

Status NodeCore::CheckServing() const {
  cluster::ClusterNode* node = serving_node();
  return node != nullptr ? node->CheckServing()
                         : absl::UnavailableError("this node is still joining its cluster");
}

Status NodeCore::Close() {
  if (closed_) return Status();
  closed_ = true;
  StopNode();
  admin_.reset();
  access_.reset();
  schema_.reset();
  profiles_.reset();
  own_lock_service_.reset();
  lock_service_ = nullptr;
  catalog_.reset();
  if (engine_ == nullptr) return Status();
  return engine_->Close();
}

}  // namespace tessera::server
