// NodeCore: everything of one Tessera node except gRPC — the engine over the node's data
// folder, the table catalog, the lock service and what lives in it (the cluster schema's
// mirror, the app profiles), the TableAccess every data operation goes through, the
// table-admin logic (AdminService's Do* methods) and the node's cluster membership
// (ClusterNode). A server (server.h) is gRPC over one NodeCore on the real machine; a
// simulation (testing/sim_cluster.h) runs several cores in one process on simulated time
// (docs/simulation.md).
//
// Environment: the engine does its file I/O on env.fs and reads env.clock; its flushes,
// compactions and periodic sync run on `engine_executor` (null: the engine's own threads). The
// node's rounds (gossip, election, re-registration) run on env.executor and draw randomness
// from env.NewRandom. In a simulation all of these are the simulation's.
//
// The lock service and the schema (docs/server.md, "The schema in cluster mode"):
//   * Not shared (NodeCoreEnv::shared_lock_service null): the core opens the service that
//     options.cluster.lock_service names. Embedded (a single node; the service lives in
//     <data-dir>/coord on env.fs and runs a thread of its own): the node's catalog decides its
//     tables. etcd (a cluster): the schema is decided in the lock service and mirrored into
//     the catalog (ClusterDefinitions).
//   * Shared: the caller gives one lock service that every node of a cluster uses (a
//     simulation's single embedded service, driven by the simulation's tasks). The core does
//     not own it, and the schema is the cluster's, as with etcd.
//   The schema mirror and the app profiles attach to the node's session once it registers and
//   detach when the session is lost.
//
// Lifecycle: Open() opens the engine (recovering its commit log), the catalog and the lock
// service; StartNode() or BeginNode() joins the cluster once the transport delivers messages;
// Close() leaves the cluster (closing the session) and closes the engine. CheckServing() says
// whether the node serves: Unavailable until the node has started and while it has no
// lock-service session.
//
// Thread-safety: Open, StartNode, BeginNode, StopNode and Close from one controlling thread
// (in a simulation: the thread that drives it, never from one of its tasks); everything the
// accessors return is thread-safe (their own headers), and CheckServing may be called from any
// thread.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <string>

#include "grpcpp/security/credentials.h"
#include "tessera/catalog/ring_store.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/table_definitions.h"
#include "tessera/catalog/table_placement.h"
#include "tessera/cluster/node.h"
#include "tessera/cluster/transport.h"
#include "tessera/coord/lock_service.h"
#include "tessera/replication/consistency.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/replication/replicated_store.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/rpc/loop.h"
#include "tessera/server/access_control.h"
#include "tessera/server/admin_service.h"
#include "tessera/server/app_profile_store.h"
#include "tessera/server/cluster_definitions.h"
#include "tessera/server/node_locations.h"
#include "tessera/server/schema_agreement.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/env.h"
#include "tessera/util/status.h"

namespace tessera::server {

struct ClusterServeOptions {
  // "embedded" (one node; the lock service lives in <data-dir>/coord) or etcd's client address
  // ("etcd://HOST:PORT", or "etcd://H1:P1,H2:P2,H3:P3" for an etcd cluster). Every node of a
  // cluster names the same etcd (nodes naming another are refused: cluster/node.h). Ignored
  // when the lock service is shared (NodeCoreEnv::shared_lock_service), except as the address
  // the node publishes in gossip.
  std::string lock_service = "embedded";
  // etcd over TLS (rpc/tls.h): how the node reaches etcd's client port; null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> lock_service_credentials;
  // Cluster name, dc, rack, seeds, gossip and session settings. `endpoint` empty = the address
  // the node was started with; `data_dir` is set to the engine's folder.
  cluster::NodeOptions node;
  // The placement of tables that name none (tessera_options.placement): "tablets", "ring" or a
  // whole policy (catalog/table_placement.h). The replication factor of a strategy alone is
  // min(3, live nodes) when the table is created.
  std::string placement = std::string(catalog::kDefaultPlacement);
  // Called (on a node task) when the node will never serve again: it lost its session and
  // node.on_session_loss is kExit. The owner should shut the node down and exit non-zero.
  std::function<void(const Status&)> on_fatal;
  // The levels of requests whose app profile sets none (replication/consistency.h).
  replication::WriteLevel write_level = replication::WriteLevel::kQuorum;
  replication::ReadLevel read_level = replication::ReadLevel::kPrimary;
  // After a schema change made on this node, wait up to this long for every live node to have
  // applied it (schema_agreement.h); 0: do not wait. A simulation sets 0: the wait blocks its
  // thread.
  int64_t schema_agreement_timeout_us = 10'000'000;
  // The replicas' protocol settings: leases, retention, hints (replication/replica_node.h).
  replication::ReplicaNodeOptions replica;
};

struct NodeCoreOptions {
  tablet::EngineOptions engine;  // engine.dir is the data folder
  ClusterServeOptions cluster;
  // `tessera serve --auth` (docs/auth.md): every call needs a bearer token, and grants in the
  // lock service decide what its principal may do. `auth_tokens_file`: --auth-tokens.
  bool auth = false;
  std::string auth_tokens_file;
};

// What the core runs on. Every pointer must outlive the core.
struct NodeCoreEnv {
  // The data folder's file system, the clock, the executor of the node's rounds, the seed.
  Env env;
  // Runs the engine's flushes, compactions and periodic sync. Null: the engine's own threads.
  // With a SimExecutor, see Engine::Open for the engine calls that must then not run on
  // the simulation's thread.
  Executor* engine_executor = nullptr;
  // The lock service shared by every node of the cluster (see the top of this file), or null.
  coord::LockService* shared_lock_service = nullptr;
  // Makes the channel of the replication protocol for the node at `endpoint`
  // (replication/rpc_channel.h). Set, and with the cluster's schema: the node's tables are the
  // cluster's, replicated (replication/replicated_store.h), and access() coordinates every
  // operation. Null: the node serves its own copy of every table (LocalTableAccess).
  std::function<StatusOr<std::unique_ptr<replication::RpcChannel>>(const std::string& endpoint)>
      replica_channel;
  // Runs the replicated store's ticks, the master's steps and the coordinator's retries. Null:
  // env.executor. A server gives it threads of its own, so that a slow lock-service call of
  // the master's step never holds up the node's rounds (its session's renewal among them).
  Executor* replica_executor = nullptr;
  // The process's gRPC loop (rpc/loop.h), where an etcd lock service runs its watches. Null:
  // the lock service runs its own (a simulation uses none).
  rpc::Loop* rpc_loop = nullptr;
};

class NodeCore {
 public:
  // Opens the engine in options.engine.dir, the catalog, the lock service (unless shared),
  // the schema mirror (cluster schema only), the app profile store and, with auth, the access
  // control (its tokens file). Errors: the engine's,
  // the catalog's, the lock service's and the schema store's.
  static StatusOr<std::unique_ptr<NodeCore>> Open(const NodeCoreOptions& options,
                                                  const NodeCoreEnv& env);
  ~NodeCore();  // Close() if still open; logs its error

  NodeCore(const NodeCore&) = delete;
  NodeCore& operator=(const NodeCore&) = delete;

  // Joins the cluster as `endpoint` (unless options.cluster.node.endpoint is set) over
  // `transport`, which must already deliver arriving messages and outlive the node; returns
  // once the node serves (ClusterNode::Start, which blocks: never on a SimExecutor).
  // REQUIRES: no node started yet, or StopNode() since.
  Status StartNode(const std::string& endpoint, cluster::Transport* transport);
  // The same without waiting (ClusterNode::Begin): `on_started` runs once, on a node task,
  // with what StartNode would have returned. Errors of the first steps are returned directly.
  Status BeginNode(const std::string& endpoint, cluster::Transport* transport,
                   std::function<void(Status)> on_started);
  // Peers learn of a clean stop and mark this node down at once (ClusterNode::AnnounceShutdown).
  void AnnounceShutdown();
  // Leaves the cluster: the node stops serving and its session closes. Idempotent.
  void StopNode();
  // `tessera admin drain` (Cassandra's nodetool drain): the node stops serving for good — it
  // announces its shutdown, so peers mark it down, and closes its session (ClusterNode::Stop;
  // the master gives its tablets other primaries) — then flushes every memtable, so that a
  // restart replays no commit log. The ClusterNode stays (handlers may hold it), refusing every
  // data and schema request with Unavailable; the process keeps answering admin and status
  // calls until it is stopped. Idempotent (a second call flushes again). Errors: the flush's.
  Status Drain();
  bool drained() const { return drained_.load(std::memory_order_acquire); }
  // Drain() without the flush.
  void StopServing();

  // `tessera admin decommission` (docs/repair.md, "Decommission"). BeginDecommission marks
  // this node leaving in the lock service (catalog::RingStore::MarkLeaving): the master moves
  // each of its replicas to another node, which a copy rebuilds, while this one stays a full
  // replica. FailedPrecondition on a node that replicates nothing, or when the other live nodes
  // that are not leaving are too few to take a tablet's replica (naming it); Unavailable
  // without a session. Idempotent.
  Status BeginDecommission();
  // The tablets whose configuration still names this node.
  std::vector<uint64_t> TabletsHeld() const;
  // Once TabletsHeld() is empty: deletes this node's token and leaving mark, then stops serving
  // as Drain() does (without the flush: nothing it holds is needed any more).
  // FailedPrecondition while a tablet still names it.
  Status FinishDecommission();
  // StopNode(), then closes the lock service's users, the lock service (unless shared) and the
  // engine, which syncs the commit log; returns the engine's Close() status. Idempotent.
  Status Close();

  // OK while the node serves; Unavailable naming why not (still joining, no session).
  Status CheckServing() const;

  tablet::Engine* engine() const { return engine_.get(); }
  catalog::TableCatalog* catalog() const { return catalog_.get(); }
  // Who decides table changes: the cluster schema when there is one, else the catalog.
  catalog::TableDefinitions* definitions() const;
  // Null unless the schema is the cluster's.
  ClusterDefinitions* cluster_definitions() const { return schema_.get(); }
  replication::TableAccess* access() const { return access_.get(); }
  // Null unless the tables are replicated (NodeCoreEnv::replica_channel), and before the node
  // has begun.
  replication::ReplicatedStore* replicated() const {
    return replicated_.load(std::memory_order_acquire);
  }
  // The rebuild stream rate (ReplicaNodeOptions::stream_bytes_per_s, at first from
  // options.cluster.replica), changed at run time: kept here and given to the replicas now or
  // when they start, so a node that replicates nothing yet takes the setting too. Any thread.
  // <= 0: unlimited.
  void SetStreamBytesPerSecond(int64_t bytes_per_second);
  int64_t stream_bytes_per_second() const { return stream_bytes_per_s_.load(); }
  // The replicas' streams (ReplicaNode::Streams); all zero while nothing is replicated.
  replication::StreamStats Streams() const;
  // The replicas' repairs (ReplicaNode::Repairs); all zero while nothing is replicated.
  replication::RepairStats Repairs() const;
  AdminService* admin() const { return admin_.get(); }
  AppProfileStore* profiles() const { return profiles_.get(); }
  // Null unless options.auth.
  AccessControl* access_control() const { return access_control_.get(); }
  coord::LockService* lock_service() const { return lock_service_; }
  // The ring's tokens and the live nodes (catalog/ring_store.h): null before the node first
  // begins; this node's token is chosen or read back at each registration.
  catalog::RingStore* ring() const { return ring_ptr_.load(std::memory_order_acquire); }
  // Null before StartNode/BeginNode and after StopNode. For the controlling thread.
  cluster::ClusterNode* node() const { return node_.get(); }
  // The same for request threads (any thread): set once StartNode has started the node (at
  // once by BeginNode), null again from StopNode.
  cluster::ClusterNode* serving_node() const {
    return serving_node_.load(std::memory_order_acquire);
  }
  const NodeCoreOptions& options() const { return options_; }
  const Env& env() const { return env_.env; }

 private:
  NodeCore(const NodeCoreOptions& options, const NodeCoreEnv& env);
  Status OpenParts();
  // The node's options and hooks for `endpoint`.
  cluster::NodeOptions NodeOptionsFor(const std::string& endpoint) const;
  cluster::NodeHooks Hooks() const;
  // Makes the channel and the replicated store for `endpoint` and starts them (once).
  Status StartReplication(const std::string& endpoint);
  // Makes the ring store for the node's endpoint (once).
  void MakeRing(const std::string& endpoint);
  // Makes agreement_ and hooks it after every schema change made here. REQUIRES: channel_.
  void StartSchemaAgreement();

  const NodeCoreOptions options_;
  const NodeCoreEnv env_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<coord::LockService> own_lock_service_;  // null when shared
  coord::LockService* lock_service_ = nullptr;            // own or shared
  // Cluster schema only: the schema decided in the lock service.
  std::unique_ptr<ClusterDefinitions> schema_;
  std::unique_ptr<AppProfileStore> profiles_;
  std::unique_ptr<AccessControl> access_control_;  // with --auth
  // This node's engine behind the seam; every data operation goes through access_
  // (docs/replication.md): local_access_ itself, or the coordinator of the replicated store.
  std::unique_ptr<replication::LocalTableAccess> local_access_;
  std::unique_ptr<replication::TableAccess> access_;
  // The node's hints (<data-dir>/hints), opened with the engine when the node replicates; it
  // outlives the store.
  std::unique_ptr<replication::HintLog> hint_log_;
  // Peers' dc, rack and liveness for the store (made with it, kept until the core goes).
  std::unique_ptr<NodeLocations> locations_;
  // The replicated store and its channel, from BeginNode/StartNode to Close; the channel goes
  // first (its pending calls end into a store still alive).
  std::unique_ptr<replication::ReplicatedStore> store_;
  std::unique_ptr<replication::RpcChannel> channel_;
  std::atomic<replication::ReplicatedStore*> replicated_{nullptr};
  // What the engine replayed at open, per tablet (a bounded tail), for the store's retention.
  struct Replayed {
    std::deque<std::pair<uint64_t, std::string>> records;  // (first sequence, mutation)
    size_t bytes = 0;
  };
  std::map<uint64_t, Replayed> replayed_;
  // Waits for the other nodes after a schema change (cluster schema, replicated, timeout > 0).
  std::unique_ptr<SchemaAgreement> agreement_;
  std::unique_ptr<AdminService> admin_;
  // Made before the node first begins; never replaced, so request threads may read it.
  std::unique_ptr<catalog::RingStore> ring_;
  std::atomic<catalog::RingStore*> ring_ptr_{nullptr};
  std::unique_ptr<cluster::ClusterNode> node_;
  // `node_` for request threads: requests may arrive before the node exists (a server joins
  // once its port is open), so they read this, set when the node has started.
  std::atomic<cluster::ClusterNode*> serving_node_{nullptr};
  bool closed_ = false;
  std::atomic<bool> drained_{false};
  std::atomic<int64_t> stream_bytes_per_s_;
};

}  // namespace tessera::server
