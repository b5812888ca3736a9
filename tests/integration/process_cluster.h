// Test-only: the distributed store as child processes (issue 11) — an etcd of one member and
// `tessera serve` nodes on 127.0.0.1 naming it, nodes after the first seeded by it — for suites
// that run against one node and against a cluster alike (differential_test --cluster=1), and
// the convergence check the cluster fixture (cluster_test_fixture.h) shares.
//
// Thread-safety: one thread uses a ProcessCluster; the free functions are thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server_process.h"
#include "tessera/testing/etcd_test_server.h"
#include "tessera/util/status.h"
#include "tessera/v1/cluster.pb.h"

namespace tessera::integration {

// The node's own view of the cluster (ClusterAdmin.GetClusterStatus, 5 s deadline).
// Unavailable with the RPC's message when the node does not answer.
StatusOr<v1::ClusterStatus> GetClusterStatus(const ServerProcess& node);

// True when every node in `nodes` (nullptr entries are skipped) serves, sees exactly
// `endpoints` registered and up, and names the same master, one of `endpoints`.
bool ClusterConverged(const std::vector<const ServerProcess*>& nodes,
                      const std::set<std::string>& endpoints);

struct ProcessClusterOptions {
  int nodes = 3;  // >= 1
  // Added to every node's `tessera serve` flags (after the cluster's own).
  std::vector<std::string> extra_args;
  // How long Start waits for the nodes to converge.
  std::chrono::milliseconds converge_timeout = std::chrono::seconds(60);
};

class ProcessCluster {
 public:
  // Starts etcd and the nodes (data folders <dir>/node<i>) and waits until they converge
  // (ClusterConverged over all of them), so that a table created afterwards has
  // RF min(3, nodes). NotFound when etcd is not installed (callers skip); Unavailable when
  // something did not come up, with the logs' tails.
  static StatusOr<std::unique_ptr<ProcessCluster>> Start(const std::string& tessera_binary,
                                                         const std::string& dir,
                                                         const ProcessClusterOptions& options);

  // Kills (SIGKILL) whatever still runs: the nodes, then etcd.
  ~ProcessCluster() = default;
  ProcessCluster(const ProcessCluster&) = delete;
  ProcessCluster& operator=(const ProcessCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  // Node i, 0-based. REQUIRES: 0 <= i < size() and Stop() not called.
  const ServerProcess& node(int i) const { return *nodes_[i]; }

  // SIGTERM to every node, the last first; OK when each exited 0 within `timeout`, else
  // Internal naming the nodes that did not, with their logs' tails. Then stops etcd.
  Status Stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // The last `max_bytes` of every node's log, headed by its endpoint.
  std::string LogTails(size_t max_bytes = 3000) const;

 private:
  ProcessCluster() = default;

  std::unique_ptr<testing::EtcdTestServer> etcd_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;  // destroyed (killed) before etcd_
};

}  // namespace tessera::integration
