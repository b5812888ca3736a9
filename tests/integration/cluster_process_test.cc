// A real cluster: etcd and several `tessera serve` processes on 127.0.0.1 (issue 4's process
// tests). Nodes gossip every 100 ms with 2 s lock-service sessions, so every wait below is a
// few seconds; each is bounded.
//
//   cluster_process_test --tessera=<tessera binary> [gtest flags]
//
// Without /usr/bin/etcd (or $TESSERA_ETCD) every test is skipped, loudly.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "gtest/gtest.h"
#include "server_process.h"
#include "tessera/coord/etcd_test_server.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::integration {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string g_tessera_binary;

constexpr int64_t kSessionTtlMs = 2000;
constexpr char kInstance[] = "projects/p/instances/i";

// Polls `done` every 50 ms (each poll is a status RPC per node) until true or `timeout` passes.
bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  return ::tessera::testing::WaitFor(done, timeout.count(), 50);
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto etcd = coord::testing::EtcdTestServer::Start();
    if (absl::IsNotFound(etcd.status())) {
      GTEST_SKIP() << "no etcd binary (" << coord::testing::EtcdTestServer::BinaryPath()
                   << "): install etcd-server to run the cluster process tests";
    }
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(*etcd);
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
    std::vector<std::string> args = {"--lock-service", "etcd://" + etcd_->endpoint(),
                                     "--cluster-name", cluster,
                                     "--gossip-interval-ms", "100",
                                     "--session-ttl-ms", std::to_string(kSessionTtlMs),
                                     "--join-timeout-ms", "10000",
                                     "--sync", "periodic"};
    if (!seeds.empty()) {
      args.push_back("--seeds");
      args.push_back(seeds);
    }
    return args;
  }

  StatusOr<std::unique_ptr<ServerProcess>> Launch(const std::string& cluster,
                                                  const std::string& seeds) {
    return ServerProcess::StartTessera(
        g_tessera_binary, StrCat(dir_.path(), "/node", launches_++), NodeArgs(cluster, seeds));
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
    auto stub = v1::ClusterAdmin::NewStub(node.NewChannel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ClusterStatus status;
    grpc::Status s = stub->GetClusterStatus(&ctx, v1::GetClusterStatusRequest(), &status);
    if (!s.ok()) return absl::UnavailableError(s.error_message());
    return status;
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
    std::string master;
    for (auto& node : nodes_) {
      if (node == nullptr) continue;
      auto status = GetStatus(*node);
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

  std::unique_ptr<coord::testing::EtcdTestServer> etcd_;
  TempDir dir_{"tessera-cluster-test"};
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
  int launches_ = 0;
};

TEST_F(ClusterTest, NodesFormAClusterAndAKilledNodeIsMarkedDown) {
  StartCluster(4);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));

  // The operator's view, through the CLI.
  std::string cmd = StrCat(g_tessera_binary, " admin status --addr ", nodes_[1]->endpoint());
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << out;
  EXPECT_NE(out.find("cluster 'c1': 4 nodes"), std::string::npos) << out;
  EXPECT_NE(out.find("etcd lock service"), std::string::npos) << out;
  for (auto& node : nodes_) EXPECT_NE(out.find(node->endpoint()), std::string::npos) << out;
  EXPECT_NE(out.find("master"), std::string::npos) << out;

  // kill -9 a node that is not the master: the others mark it down, then the directory drops it.
  const std::string master = MasterAsSeenBy(*nodes_[0]);
  size_t victim = nodes_[3]->endpoint() == master ? 2 : 3;
  const std::string dead = nodes_[victim]->endpoint();
  const auto killed_at = Clock::now();
  nodes_[victim]->Kill();
  nodes_[victim].reset();
  for (auto& node : nodes_) {
    if (node == nullptr) continue;
    ASSERT_TRUE(WaitFor([&] { return LivenessOf(*node, dead) == "down"; }, milliseconds(15'000)))
        << node->endpoint() << " never marked " << dead << " down";
  }
  const double detect_s =
      std::chrono::duration<double>(Clock::now() - killed_at).count();
  std::printf("kill -9: every live node marked it down within %.1f s\n", detect_s);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto status = GetStatus(*nodes_[0]);
        if (!status.ok()) return false;
        for (const auto& n : status->nodes()) {
          if (n.endpoint() == dead) return !n.registered();
        }
        return false;
      },
      milliseconds(kSessionTtlMs + 5000)));
}

TEST_F(ClusterTest, APausedNodeIsMarkedDownThenUpAgain) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  ServerProcess& paused = *nodes_[2];
  ASSERT_EQ(kill(paused.pid(), SIGSTOP), 0);
  const bool marked_down =
      WaitFor([&] { return LivenessOf(*nodes_[0], paused.endpoint()) == "down"; },
              milliseconds(15'000));
  // Longer than the session TTL: the paused node also loses its session, and must re-register.
  std::this_thread::sleep_for(milliseconds(kSessionTtlMs + 1000));
  ASSERT_EQ(kill(paused.pid(), SIGCONT), 0);
  ASSERT_TRUE(marked_down) << "the paused node was never marked down";
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(15'000)))
      << "the node did not come back up and registered";
  EXPECT_NE(paused.LogTail(20'000).find("lost its lock-service session"), std::string::npos);
}

TEST_F(ClusterTest, ANodeToldToExitOnSessionLossExits) {
  StartCluster(1);
  std::vector<std::string> args = NodeArgs("c1", nodes_[0]->endpoint());
  args.push_back("--on-session-loss");
  args.push_back("exit");
  auto node = ServerProcess::StartTessera(g_tessera_binary, StrCat(dir_.path(), "/exiting"), args);
  ASSERT_TRUE(node.ok()) << node.status();
  ServerProcess& n = **node;
  ASSERT_TRUE(WaitFor([&] { return LivenessOf(*nodes_[0], n.endpoint()) == "up"; },
                      milliseconds(10'000)));
  // Paused past its session's TTL: when it runs again it learns the session is gone, and exits.
  ASSERT_EQ(kill(n.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(milliseconds(kSessionTtlMs + 1500));
  ASSERT_EQ(kill(n.pid(), SIGCONT), 0);
  StatusOr<int> status = n.WaitExit(milliseconds(15'000));
  ASSERT_TRUE(status.ok()) << status.status() << "\n" << n.LogTail();
  EXPECT_EQ(*status, 1);
  EXPECT_NE(n.LogTail().find("--on-session-loss=exit"), std::string::npos) << n.LogTail();
}

TEST_F(ClusterTest, KillingTheMasterElectsAnotherWithinTheLease) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  const std::string master = MasterAsSeenBy(*nodes_[0]);
  size_t m = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->endpoint() == master) m = i;
  }
  const auto killed_at = Clock::now();
  nodes_[m]->Kill();
  nodes_[m].reset();
  ServerProcess& observer = *nodes_[m == 0 ? 1 : 0];
  std::string successor;
  ASSERT_TRUE(WaitFor(
      [&] {
        successor = MasterAsSeenBy(observer);
        return !successor.empty() && successor != master;
      },
      milliseconds(kSessionTtlMs + 10'000)));
  const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - killed_at);
  std::printf("master killed: %s took over after %lld ms (session TTL %lld ms)\n",
              successor.c_str(), static_cast<long long>(took.count()),
              static_cast<long long>(kSessionTtlMs));
  // The old master's lease runs out at most one TTL after its last keepalive; etcd checks
  // expiry every 500 ms and the successor reacts to the lock's release through a watch.
  EXPECT_LE(took.count(), kSessionTtlMs + 1500);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(15'000)));
}

TEST_F(ClusterTest, WhenEtcdHangsNodesStopServingAndComeBackAfterIt) {
  StartCluster(2);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  const std::string master = MasterAsSeenBy(*nodes_[0]);
  etcd_->Pause();
  // The status still answers (etcd's calls time out), with the master from gossip.
  auto status = GetStatus(*nodes_[1]);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->lock_service_error().empty()) << status->DebugString();
  EXPECT_EQ(status->master(), master);
  // Past the session TTL, no node may serve: it cannot know it still holds its session.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (auto& node : nodes_) {
          auto s = GetStatus(*node);
          if (!s.ok() || s->serving()) return false;
        }
        return true;
      },
      milliseconds(kSessionTtlMs + 10'000)));
  etcd_->Resume();
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)))
      << "the nodes did not register again after etcd came back";
}

TEST_F(ClusterTest, ANodeOfAnotherClusterIsRefused) {
  StartCluster(2);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  auto stranger = Launch("c2", nodes_[0]->endpoint());
  ASSERT_FALSE(stranger.ok()) << "a node of cluster c2 joined c1";
  const std::string why(stranger.status().message());
  EXPECT_NE(why.find("refused"), std::string::npos) << why;
  EXPECT_NE(why.find("cluster 'c1'"), std::string::npos) << why;
  auto status = GetStatus(*nodes_[0]);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_GT(status->refused_messages(), 0u);
  EXPECT_EQ(status->nodes_size(), 2) << status->DebugString();
}

TEST_F(ClusterTest, SchemaCreatedOnOneNodeIsSeenOnAll) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  auto admin_of = [&](size_t i) { return admin::BigtableTableAdmin::NewStub(nodes_[i]->NewChannel()); };
  const std::string table = StrCat(kInstance, "/tables/t1");
  auto get = [&](size_t i) -> StatusOr<admin::Table> {
    grpc::ClientContext ctx;
    admin::GetTableRequest req;
    req.set_name(table);
    admin::Table t;
    grpc::Status s = admin_of(i)->GetTable(&ctx, req, &t);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return t;
  };

  {  // Create on node 0, with a family and a GC rule.
    grpc::ClientContext ctx;
    admin::CreateTableRequest req;
    req.set_parent(kInstance);
    req.set_table_id("t1");
    (*req.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(2);
    admin::Table created;
    grpc::Status s = admin_of(0)->CreateTable(&ctx, req, &created);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    ASSERT_TRUE(WaitFor([&] { return get(i).ok(); }, milliseconds(10'000)))
        << nodes_[i]->endpoint() << " never saw the table";
    auto t = get(i);
    ASSERT_EQ(t->column_families().count("cf"), 1u);
    EXPECT_EQ(t->column_families().at("cf").gc_rule().max_num_versions(), 2);
  }
  {  // Creating it again anywhere: ALREADY_EXISTS.
    grpc::ClientContext ctx;
    admin::CreateTableRequest req;
    req.set_parent(kInstance);
    req.set_table_id("t1");
    admin::Table created;
    EXPECT_EQ(admin_of(2)->CreateTable(&ctx, req, &created).error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  {  // A family added on node 1 reaches node 2.
    grpc::ClientContext ctx;
    admin::ModifyColumnFamiliesRequest req;
    req.set_name(table);
    auto* mod = req.add_modifications();
    mod->set_id("cf2");
    mod->mutable_create()->mutable_gc_rule()->set_max_num_versions(1);
    admin::Table t;
    grpc::Status s = admin_of(1)->ModifyColumnFamilies(&ctx, req, &t);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        auto t = get(2);
        return t.ok() && t->column_families().count("cf2") == 1;
      },
      milliseconds(10'000)));
  // A node that joins later learns the whole schema.
  auto late = Launch("c1", nodes_[0]->endpoint());
  ASSERT_TRUE(late.ok()) << late.status();
  nodes_.push_back(std::move(*late));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto t = get(3);
        return t.ok() && t->column_families().count("cf2") == 1;
      },
      milliseconds(10'000)));
  {  // Deleted on node 2: gone everywhere.
    grpc::ClientContext ctx;
    admin::DeleteTableRequest req;
    req.set_name(table);
    google::protobuf::Empty empty;
    grpc::Status s = admin_of(2)->DeleteTable(&ctx, req, &empty);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    ASSERT_TRUE(WaitFor([&] { return absl::IsNotFound(get(i).status()); }, milliseconds(10'000)))
        << nodes_[i]->endpoint() << " still has the table";
  }
}

TEST_F(ClusterTest, AppProfilesAndTheClusterAreTheSameOnEveryNode) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  auto stub_of = [&](size_t i) {
    return admin::BigtableInstanceAdmin::NewStub(nodes_[i]->NewChannel());
  };
  const std::string profile = StrCat(kInstance, "/appProfiles/web");
  {  // Created on node 0, in an instance that holds no table.
    grpc::ClientContext ctx;
    admin::CreateAppProfileRequest req;
    req.set_parent(kInstance);
    req.set_app_profile_id("web");
    req.mutable_app_profile()->set_description("the web tier");
    req.mutable_app_profile()->mutable_multi_cluster_routing_use_any();
    admin::AppProfile created;
    grpc::Status s = stub_of(0)->CreateAppProfile(&ctx, req, &created);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {  // read through etcd: no waiting
    SCOPED_TRACE(nodes_[i]->endpoint());
    grpc::ClientContext ctx;
    admin::GetAppProfileRequest req;
    req.set_name(profile);
    admin::AppProfile got;
    grpc::Status s = stub_of(i)->GetAppProfile(&ctx, req, &got);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(got.description(), "the web tier");

    grpc::ClientContext list_ctx;
    admin::ListInstancesRequest list;
    list.set_parent("projects/p");
    admin::ListInstancesResponse instances;
    s = stub_of(i)->ListInstances(&list_ctx, list, &instances);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(instances.instances_size(), 1);
    EXPECT_EQ(instances.instances(0).name(), kInstance);

    // The one cluster, with every node of it.
    grpc::ClientContext cluster_ctx;
    admin::ListClustersRequest clusters_req;
    clusters_req.set_parent(kInstance);
    admin::ListClustersResponse clusters;
    s = stub_of(i)->ListClusters(&cluster_ctx, clusters_req, &clusters);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(clusters.clusters_size(), 1);
    EXPECT_EQ(clusters.clusters(0).name(), StrCat(kInstance, "/clusters/c1"));
    EXPECT_EQ(clusters.clusters(0).serve_nodes(), 3);
    EXPECT_EQ(clusters.clusters(0).state(), admin::Cluster::READY);
  }
  {  // Deleted on node 2: gone on node 1.
    grpc::ClientContext ctx;
    admin::DeleteAppProfileRequest req;
    req.set_name(profile);
    req.set_ignore_warnings(true);
    google::protobuf::Empty empty;
    grpc::Status s = stub_of(2)->DeleteAppProfile(&ctx, req, &empty);
    ASSERT_TRUE(s.ok()) << s.error_message();
    grpc::ClientContext get_ctx;
    admin::GetAppProfileRequest get;
    get.set_name(profile);
    admin::AppProfile got;
    EXPECT_EQ(stub_of(1)->GetAppProfile(&get_ctx, get, &got).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
}

}  // namespace
}  // namespace tessera::integration

int main(int argc, char** argv) {
  return tessera::integration::RunTestsWithTesseraBinary(argc, argv,
                                                         &tessera::integration::g_tessera_binary);
}
