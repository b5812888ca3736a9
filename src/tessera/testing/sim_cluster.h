// SimCluster: N complete Tessera nodes in one process on simulated time, from one seed
// (docs/simulation.md, "The harness: testing/sim_cluster"). Each node is a server::NodeCore —
// engine, table catalog, cluster schema mirror, app profiles, TableAccess, admin logic, gossip,
// registration and election — with its own MemFileSystem and clock; all of them run on one
// SimExecutor, talk over one SimNetwork, and share one embedded lock service (as a cluster
// shares its etcd), whose expiry checks and callbacks are a task of the simulation.
//
// Determinism: every random choice (network latency, jitter and loss; each node's gossip and
// election) comes from the seed, and the tasks of all nodes run one at a time in the
// SimExecutor's order, so the same seed and the same calls give the same run. A test prints
// the seed when it fails (TESSERA_SEED=<n> replays it, util/random.h TestSeed).
//
// Node i is reachable at endpoint(i) = "10.0.0.<i+1>:7000", keeps its data in /node<i> on its
// own file system, and names node 0 as its seed.
//
// Faults:
//   * Crash(i): the node's file system loses everything not synced, its tasks are dropped,
//     its messages lost, and its lock-service sessions are abandoned (node_lock_service.h):
//     they expire when their TTL runs out, and only then do its directory entry and, if it was
//     master, the master lock go. Restart(i) opens its data folder again (recovering the
//     commit log) and rejoins.
//   * Partition(groups) / Heal(), SetLoss(p): the network (testing/sim_network.h).
//   * Pause(i, d): the node's tasks are held for d of simulated time and it neither sends nor
//     receives meanwhile. A pause shorter than the session TTL keeps the session alive (the
//     shared embedded service renews every session that is not abandoned); a longer one lets
//     it expire, as etcd would, and the node finds it lost when it runs again.
//   * SetClockDrift(i, offset, rate): the node's clock runs at `rate` from now on and its wall
//     time is shifted by `offset`; its timers follow its clock.
//
// What the simulation must never do (a task blocking the only thread): the engine calls that
// wait for background work — Flush, CompactTablet, WaitForBackgroundWork, and DropTablet or
// TruncateTablet while a flush or compaction of that tablet is queued — and a write stalled by
// memory_hard_limit_bytes. DefaultSimEngineOptions() makes memtables large enough (1 GiB, hard
// limit 2 GiB) that no flush ever starts in a test's worth of data, so these never wait; a test
// must not call Flush or CompactTablet. Everything else the cores do (writes in kBatch mode,
// reads, schema changes, the mirror's deliveries) finishes within its task.
//
// Thread-safety: one thread drives the cluster (every method); never call it from a task.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cluster/node.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/server/node_core.h"
#include "tessera/tablet/engine.h"
#include "tessera/testing/node_lock_service.h"
#include "tessera/testing/sim_network.h"
#include "tessera/testing/sim_node_env.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/sim_executor.h"
#include "tessera/util/status.h"

namespace tessera::testing {

// 100 ms gossip rounds, 2 s sessions, 100 ms election polls and re-registration backoff, a
// 5 s join timeout: a cluster forms in well under a simulated second.
cluster::NodeOptions DefaultSimNodeOptions();
// Batch sync (every acknowledged write is durable), no flush in a test (see above), an 8 MiB
// block cache.
tablet::EngineOptions DefaultSimEngineOptions();

struct SimClusterOptions {
  uint64_t seed = 0;
  int nodes = 3;  // >= 1
  NetworkOptions network{.loss = 0, .latency_us = 500, .jitter_us = 5'000};
  // Every node's settings; endpoint, seeds and data_dir are set per node.
  cluster::NodeOptions node = DefaultSimNodeOptions();
  // Node i's data centre and rack, when i < places.size() (else node.dc and node.rack).
  std::vector<std::pair<std::string, std::string>> places;
  // Every node's engine; dir is set per node.
  tablet::EngineOptions engine = DefaultSimEngineOptions();
  // How long Start and Restart wait for nodes to serve, in simulated microseconds.
  int64_t start_limit_us = 10'000'000;
  // The nodes replicate their tables (replication/replicated_store.h): each talks the
  // replication protocol over a MessageRpcChannel on the same SimNetwork (under
  // ReplicaEndpoint(i), which partitions and pauses treat as the node's). Then core(i)->access()
  // must not be called from the driving thread (it waits for the simulation); use
  // core(i)->replicated()->coordinator() and RunUntil.
  bool replicated = false;
  // Every node's replicas (retention, hints, leases), when replicated.
  replication::ReplicaNodeOptions replica;
};

class SimCluster {
 public:
  // Builds the simulation; nothing runs until Start.
  explicit SimCluster(SimClusterOptions options);
  ~SimCluster();  // closes every node (their sessions), then the lock service

  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  // Opens every node's core and begins its node, then runs until every node serves.
  // Errors: a node's open or start error (prefixed "node <i>: "), DeadlineExceeded naming the
  // nodes that did not start within options.start_limit_us.
  Status Start();

  // Runs `task` after `delay_us` of simulated time on the simulation itself (no node's: crashes
  // and pauses do not touch it), e.g. a test's client.
  void Schedule(int64_t delay_us, std::function<void()> task);
  // Runs the simulation for `micros` of simulated time.
  void RunFor(int64_t micros);
  // Runs one task at a time until `done()` holds (checked first and after every task) or
  // `limit_us` of simulated time have passed; returns done().
  bool RunUntil(const std::function<bool()>& done, int64_t limit_us);

  // See "Faults" above. FailedPrecondition for a node that is crashed (Crash, Pause) or up
  // (Restart); OutOfRange for a node that does not exist. Restart returns once the node serves
  // again, or its start error.
  Status Crash(int node);
  Status Restart(int node);
  Status Pause(int node, int64_t micros);
  // Each group is one side; nodes in no group are on a side of their own together.
  void Partition(const std::vector<std::vector<int>>& groups);
  void Heal();
  void SetLoss(double loss);
  void SetClockDrift(int node, int64_t offset_us, double rate);

  int size() const { return static_cast<int>(nodes_.size()); }
  // The node's core; null while it is crashed (or before Start).
  server::NodeCore* core(int node) const;
  // True when the node is up and serves (CheckServing).
  bool serving(int node) const;
  static std::string Endpoint(int node);
  // Where node i's replication channel is attached on the network.
  static std::string ReplicaEndpoint(int node);
  MemFileSystem* fs(int node) const;
  int64_t now_us() const { return clock_.MonotonicMicros(); }
  uint64_t seed() const { return options_.seed; }
  uint64_t tasks_run() const { return sim_.tasks_run(); }
  SimNetwork& network() { return network_; }
  coord::EmbeddedLockService* lock_service() const { return lock_service_.get(); }

 private:
  struct Node {
    std::unique_ptr<MemFileSystem> fs;
    std::unique_ptr<DriftingClock> clock;
    std::unique_ptr<NodeExecutor> executor;
    std::unique_ptr<NodeLockService> lock_service;  // over the shared one; from Start
    std::unique_ptr<cluster::Transport> transport;
    std::unique_ptr<cluster::Transport> replica_transport;  // options.replicated only
    std::unique_ptr<server::NodeCore> core;
    std::optional<Status> started;  // set by the node when it has started (or failed to)
  };

  Status CheckIndex(int node) const;
  // Both of the node's endpoints up or down on the network.
  void SetDown(int node, bool down);
  // Opens node i's core on its file system and begins its node.
  Status Open(int node);
  // Runs until every node in `which` has started; its first error, or DeadlineExceeded.
  Status AwaitStarted(const std::vector<int>& which);
  void PollLockService();

  const SimClusterOptions options_;
  ManualClock clock_;
  SimExecutor sim_;
  SimNetwork network_;
  MemFileSystem lock_fs_;
  std::unique_ptr<coord::EmbeddedLockService> lock_service_;
  std::vector<Node> nodes_;
};

}  // namespace tessera::testing
