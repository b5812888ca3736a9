// ClusterNode: one process's membership in a Tessera cluster — its lock-service session and
// entry in the server directory, the master election, and gossip with failure detection
// (docs/cluster_membership.md, "Nodes, the directory and the master").
//
// What a node does, after Bigtable's use of Chubby and Cassandra's gossip:
//   * Generation. Each start takes a generation (seconds since the epoch) greater than the last
//     one it used, kept in <data_dir>/gossip_generation, so peers see a restart as a new
//     incarnation even when the clock stepped back.
//   * Cluster id. Before gossiping, the node reads the file "cluster_id" from its lock service
//     (the first node of a cluster creates it, a random id) and publishes it in gossip with its
//     lock-service address. Peers whose cluster id differs use another lock service: their
//     states are refused on both sides (gossip.h).
//   * Join. With seeds other than itself, the node waits (up to join_timeout_ms) to hear from
//     the cluster through gossip. If the seeds that answered all refused it (another cluster
//     name), or none answered at all, Start fails with an error saying so — Cassandra's "unable
//     to gossip with any seeds". If a seed uses another lock service, Start fails at once with
//     FailedPrecondition naming the lock service to pass. A node listed among its own seeds may
//     start alone.
//   * Registration. The node opens a session with the lock service (TTL session_ttl_ms) and puts
//     an ephemeral file "nodes/<endpoint>" holding its address, data centre, rack, cluster name
//     and generation. hooks.on_registered(session) then runs (the schema mirror attaches) and the
//     node is serving (CheckServing() OK, gossip status "normal").
//   * Master election (election.h). Every registered node competes for the lock "master" (its
//     value is the node's endpoint); the holder is the master. The others step every
//     election_poll_ms and when the lock's watch fires, so a successor takes over as soon as the
//     lock service ends the dead master's session: within the lease TTL of its death plus the
//     lock service's expiry check. The master watches the directory and logs every join and
//     death; it publishes its term (the lock's revision) in gossip under "master".
//   * Session loss. When the session expires (the lock service did not hear from us within the
//     TTL: a pause, a partition, an overloaded etcd), the node stops serving at once —
//     CheckServing() returns Unavailable, as a Bigtable tablet server stops serving when it loses
//     its Chubby lock — calls hooks.on_session_lost(), and then either re-registers with a new
//     session (SessionLossAction::kReregister: the directory entry comes back, the node competes
//     for master again, and serves again) or calls hooks.on_fatal (kExit: the owner exits).
//     While the node cannot register again, the outage is logged once when it starts and once
//     when it ends (with its duration), and CheckServing() says why the node does not serve.
//   * Stop. The node first announces its shutdown through gossip (Gossiper::AnnounceShutdown)
//     and waits briefly for the pushes to leave, so peers mark it down at once; then it closes
//     its session (the directory entry and the master lock go at once).
//   * Gossip runs throughout (one round per gossip.interval_ms), with the node's dc, rack, load
//     (options.load, every load_interval_ms) and status as application states; gossip works
//     without the lock service, so liveness stays visible when it is down.
//
// Time and threads (docs/simulation.md): the node starts no thread and never sleeps. Its three
// loops — the join wait, gossip rounds, and the coordinator (election steps, re-registration)
// — are timer tasks on env.executor (gossip rounds: on NodeOptions::gossip_executor when set),
// each scheduling its next step when it finishes, so each loop runs one step at a time. With a
// thread pool that is the behaviour of a node with its own threads; with a SimExecutor the
// same code runs on simulated time. A lock-service call can block for its timeout, so in
// production give gossip rounds an executor of their own: they must not wait behind it (with
// two threads shared with everything else, a node's heartbeat stayed frozen for 20 s after a
// SIGCONT while it re-registered, and its peers kept it down). Randomness comes from
// env.NewRandom.
//
// Thread-safety: every public method may be called from any thread, but not from one of the
// node's own tasks. Hooks run on the node's coordinator steps (on_registered in the join step,
// too), never with the node's lock held; they must not call Stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "tessera/cluster/election.h"
#include "tessera/cluster/gossip.h"
#include "tessera/cluster/transport.h"
#include "tessera/coord/lock_service.h"
#include "tessera/util/clock.h"
#include "tessera/util/env.h"
#include "tessera/util/file_system.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"
#include "tessera/v1/cluster.pb.h"

namespace tessera::cluster {

enum class SessionLossAction { kReregister, kExit };

struct NodeOptions {
  std::string cluster_name = "tessera";
  NodeId endpoint;  // the address other nodes and clients reach this node at (HOST:PORT)
  std::string dc = "dc1";
  std::string rack = "rack1";
  std::vector<NodeId> seeds;  // may include endpoint
  // The lock service as the operator named it ("etcd://h1:p1,h2:p2", "embedded"): published in
  // gossip so that a node refused for naming another one is told what to pass. Empty: the
  // backend's name.
  std::string lock_service_address;
  // Interval, fanout and detector settings; cluster_name, self and seeds are filled in from the
  // fields above.
  GossipOptions gossip = DefaultGossipOptions();
  int64_t session_ttl_ms = 10'000;
  SessionLossAction on_session_loss = SessionLossAction::kReregister;
  // Folder for the generation file. Required.
  std::string data_dir;
  int64_t join_timeout_ms = 30'000;
  // Non-masters try the master lock this often (besides watching it).
  int64_t election_poll_ms = 500;
  // Delay between attempts to re-register after a session loss.
  int64_t reregister_backoff_ms = 500;
  // Bytes this node stores, published as its load every load_interval_ms. Optional.
  std::function<int64_t()> load;
  int64_t load_interval_ms = 5'000;
  // Where the gossip rounds run (null: env.executor, as in a simulation). In production a
  // thread of their own, as Cassandra's gossip tasks have: a heartbeat that waits behind
  // lock-service calls or other work on a busy executor makes peers convict a live node.
  // Must outlive the node.
  Executor* gossip_executor = nullptr;
};

struct NodeHooks {
  // After each registration, before the node serves. A non-OK status fails the registration
  // (Start fails; after a session loss the node retries).
  std::function<Status(coord::Session* session)> on_registered;
  // When the session is lost, before the old session is destroyed.
  std::function<void()> on_session_lost;
  // kExit only: the session was lost and the node will not serve again.
  std::function<void(const Status& why)> on_fatal;
  // RemoveNode removed `endpoint` from the cluster (on the calling thread, with this node's
  // session): what other layers keep of the node goes here (its ring token). A non-OK status
  // is RemoveNode's answer (the removal from gossip stands; asking again is harmless).
  std::function<Status(coord::Session* session, const std::string& endpoint)> on_removed;
};

// Reads and advances the generation kept in <data_dir>/gossip_generation: max(now in seconds,
// last + 1), written durably before it is returned.
StatusOr<int64_t> NextGeneration(FileSystem* fs, const std::string& data_dir, Clock* clock);

class ClusterNode {
 public:
  // Takes the generation, joins (see above), registers and starts the coordinator; returns
  // once the node serves or has failed to start. `lock_service`, `transport` and the Env's
  // objects must outlive the node; the transport must already deliver arriving messages (its
  // server is listening). Blocks, so never on a SimExecutor (use Begin).
  // Errors: InvalidArgument (options), Unavailable (lock service unreachable; no seed answered),
  // FailedPrecondition (the seeds belong to another cluster).
  static StatusOr<std::unique_ptr<ClusterNode>> Start(NodeOptions options,
                                                      coord::LockService* lock_service,
                                                      Transport* transport, NodeHooks hooks,
                                                      const Env& env);
  // The same without waiting: validates the options, takes the generation, reads the cluster
  // id and starts gossiping, then returns the node while it joins and registers in its tasks.
  // `on_started` runs once, on a node task, with what Start would have returned: OK when the
  // node serves, else the error (the owner then destroys the node). Errors of the first steps
  // are returned directly and `on_started` is not called; neither is it for a node stopped
  // before it has joined.
  static StatusOr<std::unique_ptr<ClusterNode>> Begin(NodeOptions options,
                                                      coord::LockService* lock_service,
                                                      Transport* transport, NodeHooks hooks,
                                                      const Env& env,
                                                      std::function<void(Status)> on_started);
  ~ClusterNode();  // Stop()

  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Announces the shutdown (see the top of this file), cancels the node's tasks (waiting for a
  // running one to finish) and closes the session (the directory entry and, if held, the
  // master lock go at once). Idempotent.
  void Stop();
  // Only the announcement: peers mark this node down; it stops gossiping. Called by the server
  // before it stops answering requests; Stop() calls it too. Waits at most ~1 s. Idempotent.
  void AnnounceShutdown();

  // `tessera admin removenode`: forgets the dead node `endpoint` on every node — a gossip
  // tombstone (Gossiper::RemoveEndpoint) and, if it still has one, its directory entry. Refused
  // (FailedPrecondition) while this node's gossip sees it up or suspect, and, without `force`,
  // while its directory entry is live (a paused or partitioned process keeps its session until
  // the TTL runs out); with `force` that session is revoked. InvalidArgument for this node
  // itself, NotFound for an endpoint nobody knows. Returns what was done, for the operator.
  StatusOr<std::string> RemoveNode(const std::string& endpoint, bool force);

  // OK while the node holds a live session; Unavailable (naming the node and why) otherwise.
  Status CheckServing() const;
  bool serving() const;
  bool is_master() const;
  int64_t generation() const { return generation_; }
  const NodeOptions& options() const { return options_; }
  Gossiper* gossiper() const { return gossiper_.get(); }
  // The current session's id (invalid while the node has none).
  coord::SessionId session_id() const;
  // How many times the node has registered (1 after Start; +1 per re-registration).
  int registrations() const;

  // The operator's view: every node from gossip and the directory, liveness and phi as this
  // node sees them, and the master (from the lock service; from gossip if it is unreachable).
  ::tessera::v1::ClusterStatus GetStatus() const;

 private:
  // The node's loops, each a chain of timer tasks (one step at a time per loop).
  enum class Loop { kJoin, kGossip, kCoordinator };
  struct LoopState {
    TimerId timer = 0;     // the next step's timer (0 = none scheduled)
    // Step tasks handed to the executor that have neither started RunStep's check nor been
    // cancelled: a task the executor has begun (Cancel fails) may not have reached RunStep yet,
    // and Stop must wait for it as for a running step.
    int scheduled = 0;
    bool running = false;  // a step is running now
    bool wake = false;     // run again as soon as the running step ends
  };

  ClusterNode(NodeOptions options, coord::LockService* lock_service, Transport* transport,
              NodeHooks hooks, const Env& env, int64_t generation);

  // The id kept in the lock service's file "cluster_id", created if absent (with a session of
  // its own, closed before returning).
  StatusOr<std::string> ReadClusterId();
  // One look at whether the node has joined: OK (joined), Unavailable with an empty message
  // (keep waiting) or the error that ends the join.
  Status JoinCheck();
  Status Register();   // creates the session and directory entry; runs the hook
  void DropSession();  // after a loss or at Stop

  // Each step returns the delay until its next step, or -1 to end its loop.
  int64_t JoinStep();
  int64_t GossipStep();
  int64_t CoordinatorStep();
  int64_t Step(Loop loop);
  // Schedules `loop`'s next step after `delay_us`. REQUIRES: mu_ held.
  void ScheduleLocked(Loop loop, int64_t delay_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LoopState& StateOf(Loop loop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The executor `loop` runs on.
  Executor* ExecutorOf(Loop loop) const;
  void RunStep(Loop loop);
  void Wake();  // the coordinator's next step now (a watch fired, the session was lost)

  const NodeOptions options_;
  coord::LockService* const lock_service_;
  Transport* const transport_;
  const NodeHooks hooks_;
  const Env env_;
  Clock* const clock_;
  const int64_t generation_;
  // Used by the gossiper (under its lock) and by ReadClusterId before gossip starts.
  Random random_;
  std::unique_ptr<Gossiper> gossiper_;

  mutable absl::Mutex mu_;
  LoopState join_ ABSL_GUARDED_BY(mu_);
  LoopState gossip_ ABSL_GUARDED_BY(mu_);
  LoopState coordinator_ ABSL_GUARDED_BY(mu_);
  std::function<void(Status)> on_started_ ABSL_GUARDED_BY(mu_);
  int64_t join_deadline_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_round_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_load_us_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // registered once; the coordinator runs
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool session_lost_ ABSL_GUARDED_BY(mu_) = false;  // set by the session's callback
  // Written under mu_; read without it by CheckServing(), which every data request calls.
  std::atomic<bool> serving_{false};
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  bool fatal_ ABSL_GUARDED_BY(mu_) = false;
  bool announced_ ABSL_GUARDED_BY(mu_) = false;  // AnnounceShutdown() ran
  // The outage after a session loss: when it began (MonotonicMicros; 0 = none), the failed
  // attempts to register again, and the last one's error (for CheckServing's message).
  int64_t outage_start_us_ ABSL_GUARDED_BY(mu_) = 0;
  int outage_failures_ ABSL_GUARDED_BY(mu_) = 0;
  Status outage_error_ ABSL_GUARDED_BY(mu_);
  // The session and what hangs on it; replaced only by coordinator and join steps (and Stop).
  std::shared_ptr<coord::Session> session_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<coord::Watch> master_watch_ ABSL_GUARDED_BY(mu_);
  // Has its own lock; never called with mu_ held.
  MasterElection election_;
};

}  // namespace tessera::cluster
