#include "process_cluster.h"

#include "tessera/testing/test_support.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::integration {

StatusOr<v1::ClusterStatus> GetClusterStatus(const ServerProcess& node) {
  auto stub = v1::ClusterAdmin::NewStub(node.NewChannel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ClusterStatus status;
  grpc::Status s = stub->GetClusterStatus(&ctx, v1::GetClusterStatusRequest(), &status);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return status;
}

bool ClusterConverged(const std::vector<const ServerProcess*>& nodes,
                      const std::set<std::string>& endpoints) {
  std::string master;
  for (const ServerProcess* node : nodes) {
    if (node == nullptr) continue;
    auto status = GetClusterStatus(*node);
    if (!status.ok() || status->master().empty() || !status->serving()) return false;
    if (!master.empty() && status->master() != master) return false;
    master = status->master();
    std::set<std::string> up;
    for (const auto& n : status->nodes()) {
      if (n.liveness() == "up" && n.registered()) up.insert(n.endpoint());
    }
    if (up != endpoints) return false;
  }
  return endpoints.count(master) > 0;
}

StatusOr<std::unique_ptr<ProcessCluster>> ProcessCluster::Start(
    const std::string& tessera_binary, const std::string& dir,
    const ProcessClusterOptions& options) {
  if (options.nodes < 1) {
    return absl::InvalidArgumentError(StrCat("a cluster needs nodes >= 1, not ", options.nodes));
  }
  std::unique_ptr<ProcessCluster> cluster(new ProcessCluster());
  ASSIGN_OR_RETURN(cluster->etcd_, testing::EtcdTestServer::Start());
  std::set<std::string> endpoints;
  std::vector<const ServerProcess*> nodes;
  for (int i = 0; i < options.nodes; ++i) {
    // Gossip every 100 ms: the nodes see each other within a second.
    std::vector<std::string> args = {"--lock-service", "etcd://" + cluster->etcd_->endpoint(),
                                     "--gossip-interval-ms", "100"};
    if (i > 0) {
      args.push_back("--seeds");
      args.push_back(cluster->nodes_[0]->endpoint());
    }
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    ASSIGN_OR_RETURN(std::unique_ptr<ServerProcess> node,
                     ServerProcess::StartTessera(tessera_binary, StrCat(dir, "/node", i), args));
    endpoints.insert(node->endpoint());
    nodes.push_back(node.get());
    cluster->nodes_.push_back(std::move(node));
  }
  if (!::tessera::testing::WaitFor([&] { return ClusterConverged(nodes, endpoints); },
                                   options.converge_timeout.count(), 100)) {
    return absl::UnavailableError(StrCat("the ", options.nodes, " nodes did not converge within ",
                                         options.converge_timeout.count(), " ms\n",
                                         cluster->LogTails()));
  }
  return cluster;
}

Status ProcessCluster::Stop(std::chrono::milliseconds timeout) {
  std::string failed;
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    StatusOr<int> exit = (*it)->Stop(timeout);
    if (!exit.ok() || *exit != 0) {
      failed += StrCat("node ", (*it)->endpoint(), ": ",
                       exit.ok() ? StrCat("exit status ", *exit) : exit.status().ToString(), "\n",
                       (*it)->LogTail(), "\n");
    }
  }
  nodes_.clear();
  etcd_.reset();
  if (!failed.empty()) {
    return absl::InternalError(StrCat("not every node exited 0 on SIGTERM:\n", failed));
  }
  return Status();
}

std::string ProcessCluster::LogTails(size_t max_bytes) const {
  std::string out;
  for (const auto& node : nodes_) {
    out += StrCat("--- log of ", node->endpoint(), " ---\n", node->LogTail(max_bytes), "\n");
  }
  return out;
}

}  // namespace tessera::integration
