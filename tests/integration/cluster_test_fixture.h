// Test-only: the fixture of the cluster process tests (cluster_process_test.cc,
// etcd_failover_process_test.cc, replication_process_test.cc, dc_process_test.cc): an etcd
// of one or three members and `tessera serve` processes on 127.0.0.1 (each may get flags of
// its own, e.g. --dc and --rack), with helpers to start nodes, read their status and wait for
// convergence. Nodes gossip every 100 ms with 2 s lock-service sessions, so every wait is a
// few seconds; each is bounded.
//
// Thread-safety: one test thread uses a fixture.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "process_cluster.h"
#include "server_process.h"
#include "tessera/testing/etcd_test_server.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::integration {

// The tessera binary under test (--tessera=...), set by main().
extern std::string g_tessera_binary;

namespace cluster_testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline constexpr int64_t kSessionTtlMs = 2000;
inline constexpr char kInstance[] = "projects/p/instances/i";

// Polls `done` every 50 ms (each poll is a status RPC per node) until true or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  return ::tessera::testing::WaitFor(done, timeout.count(), 50);
}

// Runs `command`, returns its exit status and (in *out) its stdout.
inline int RunCommand(const std::string& command, std::string* out) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::EtcdTestServerOptions etcd_options;
    etcd_options.members = etcd_members_;
    auto etcd = testing::EtcdTestServer::Start(etcd_options);
    if (absl::IsNotFound(etcd.status())) {
      GTEST_SKIP() << "no etcd binary (" << testing::EtcdTestServer::BinaryPath()
                   << "): install etcd-server to run the cluster process tests";
    }
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(*etcd);
    lock_service_ = "etcd://" + etcd_->endpoint();
  }

  void TearDown() override {
    for (auto& n : nodes_) {
      if (n != nullptr && HasFailure()) {
        std::fprintf(stderr, "--- log of %s ---\n%s\n", n->endpoint().c_str(),
                     n->LogTail(3000).c_str());
      }
    }
    nodes_.clear();
    etcd_.reset();
  }

  std::vector<std::string> NodeArgs(const std::string& cluster, const std::string& seeds) {
    std::vector<std::string> args = {"--lock-service", lock_service_,
                                     "--cluster-name", cluster,
                                     "--gossip-interval-ms", "100",
                                     "--session-ttl-ms", std::to_string(session_ttl_ms_),
                                     "--join-timeout-ms", "10000",
                                     "--sync", "periodic"};
    if (!seeds.empty()) {
      args.push_back("--seeds");
      args.push_back(seeds);
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    return args;
  }

  // `extra`: flags of this node alone (e.g. --dc, --rack), after the common ones.
  StatusOr<std::unique_ptr<ServerProcess>> Launch(const std::string& cluster,
                                                  const std::string& seeds,
                                                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = NodeArgs(cluster, seeds);
    args.insert(args.end(), extra.begin(), extra.end());
    return ServerProcess::StartTessera(g_tessera_binary,
                                       StrCat(dir_.path(), "/node", launches_++), args);
  }

  // Starts n nodes of cluster "c1": the first alone, the others seeded by it.
  void StartCluster(int n) {
    for (int i = 0; i < n; ++i) {
      auto node = Launch("c1", i == 0 ? "" : nodes_[0]->endpoint());
      ASSERT_TRUE(node.ok()) << node.status();
      nodes_.push_back(std::move(*node));
    }
  }

  static StatusOr<v1::ClusterStatus> GetStatus(const ServerProcess& node) {
    return GetClusterStatus(node);
  }

  // The liveness `observer` reports for `endpoint` ("" if unknown or unreachable).
  static std::string LivenessOf(const ServerProcess& observer, const std::string& endpoint) {
    auto status = GetStatus(observer);
    if (!status.ok()) return "";
    for (const auto& n : status->nodes()) {
      if (n.endpoint() == endpoint) return n.liveness();
    }
    return "";
  }

  // True when every running node sees exactly `endpoints` up and agrees on one master.
  bool Converged(const std::set<std::string>& endpoints) {
    std::vector<const ServerProcess*> running;
    for (auto& node : nodes_) running.push_back(node.get());
    return ClusterConverged(running, endpoints);
  }

  std::set<std::string> Endpoints() const {
    std::set<std::string> out;
    for (auto& n : nodes_) {
      if (n != nullptr) out.insert(n->endpoint());
    }
    return out;
  }

  std::string MasterAsSeenBy(const ServerProcess& node) {
    auto status = GetStatus(node);
    return status.ok() ? status->master() : "";
  }

  // Each node's log, whole.
  std::string FullLog(const ServerProcess& node) const { return node.LogTail(1 << 22); }

  int etcd_members_ = 1;
  int64_t session_ttl_ms_ = kSessionTtlMs;  // what --session-ttl-ms the nodes get
  std::vector<std::string> extra_args_;      // flags every node gets after the common ones
  std::unique_ptr<testing::EtcdTestServer> etcd_;
  std::string lock_service_;  // what --lock-service the nodes get
  TempDir dir_{"tessera-cluster-test"};
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
  int launches_ = 0;
};

}  // namespace cluster_testing
}  // namespace tessera::integration
