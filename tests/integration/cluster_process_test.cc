// A real cluster: etcd (one member, or three) and several `tessera serve` processes on
// 127.0.0.1 (issue 4's process tests, and issue 9's: a clean stop announced, removenode, a node
// of another lock service refused, every call refused while the session is lost, an etcd member
// killed under load). Nodes gossip every 100 ms with 2 s lock-service sessions, so every wait
// below is a few seconds; each is bounded.
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

#include "cluster_test_fixture.h"
#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"

namespace tessera::integration {

std::string g_tessera_binary;

namespace {

namespace admin = ::google::bigtable::admin::v2;
using namespace cluster_testing;  // NOLINT: the fixture and its helpers

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

  const std::string master = MasterAsSeenBy(*nodes_[0]);
  // Issue 9: a clean stop is announced through gossip, so peers mark the node down at once
  // (before, it showed "up normal" until phi convicted it, about 2 s at these settings).
  size_t stopped = 1;
  while (nodes_[stopped]->endpoint() == master) ++stopped;
  const std::string gone = nodes_[stopped]->endpoint();
  const auto stopped_at = Clock::now();
  ASSERT_TRUE(nodes_[stopped]->Stop().ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto status = GetStatus(*nodes_[0]);
        if (!status.ok()) return false;
        for (const auto& n : status->nodes()) {
          if (n.endpoint() == gone) return n.liveness() == "down" && n.status() == "shutdown";
        }
        return false;
      },
      milliseconds(5000)))
      << "the stopped node was not seen down/shutdown";
  const auto announce_ms =
      std::chrono::duration_cast<milliseconds>(Clock::now() - stopped_at).count();
  std::printf("clean stop: seen down/shutdown %lld ms after SIGTERM (incl. the process's exit)\n",
              static_cast<long long>(announce_ms));
  EXPECT_LT(announce_ms, 1500) << "phi alone takes about as long";
  out.clear();
  EXPECT_EQ(RunCommand(StrCat(g_tessera_binary, " admin status --addr ", nodes_[2]->endpoint()), &out),
            0);
  EXPECT_NE(out.find("shutdown"), std::string::npos) << out;
  nodes_[stopped].reset();

  // kill -9 a node that is not the master: the others mark it down, then the directory drops it.
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

  // Issue 9: dead endpoints stayed in `admin status` forever. removenode forgets them on every
  // node; it refuses a live one.
  std::vector<std::string> live;
  for (auto& node : nodes_) {
    if (node != nullptr) live.push_back(node->endpoint());
  }
  ASSERT_EQ(live.size(), 2u);
  const std::string admin = StrCat(g_tessera_binary, " admin removenode --addr ", live[0], " ");
  out.clear();
  EXPECT_EQ(RunCommand(admin + live[1], &out), 1) << out;
  EXPECT_NE(out.find("only a node that is down can be removed"), std::string::npos) << out;
  for (const std::string& endpoint : {dead, gone}) {
    out.clear();
    EXPECT_EQ(RunCommand(admin + endpoint, &out), 0) << out;
    EXPECT_NE(out.find("removed " + endpoint), std::string::npos) << out;
  }
  for (auto& node : nodes_) {
    if (node == nullptr) continue;
    EXPECT_TRUE(WaitFor(
        [&] {
          auto status = GetStatus(*node);
          if (!status.ok()) return false;
          for (const auto& n : status->nodes()) {
            if (n.endpoint() == dead || n.endpoint() == gone) return false;
          }
          return status->nodes_size() == 2;
        },
        milliseconds(5000)))
        << node->endpoint() << " still lists a removed node";
  }
  // Their ring tokens went too: tables created from now on are placed on the two live nodes.
  out.clear();
  ASSERT_EQ(RunCommand(StrCat(g_tessera_binary, " admin ring --json --addr ", live[0]), &out), 0)
      << out;
  EXPECT_EQ(out.find(dead), std::string::npos) << "the ring still has " << dead << ":\n" << out;
  EXPECT_EQ(out.find(gone), std::string::npos) << "the ring still has " << gone << ":\n" << out;
  EXPECT_NE(out.find(live[1]), std::string::npos) << out;
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
  // Issue 9: ListTables answered while reads were refused. Every Bigtable call, data and
  // admin, answers UNAVAILABLE saying why.
  for (auto& node : nodes_) {
    auto channel = node->NewChannel();
    auto admin_stub = admin::BigtableTableAdmin::NewStub(channel);
    auto data_stub = google::bigtable::v2::Bigtable::NewStub(channel);
    auto expect_refused = [&](const grpc::Status& s, const char* what) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << what << ": " << s.error_message();
      EXPECT_NE(s.error_message().find("no lock-service session"), std::string::npos)
          << what << ": " << s.error_message();
      EXPECT_NE(s.error_message().find("lost its session"), std::string::npos)
          << what << ": " << s.error_message();
    };
    {
      grpc::ClientContext ctx;
      admin::ListTablesRequest req;
      req.set_parent(kInstance);
      admin::ListTablesResponse resp;
      expect_refused(admin_stub->ListTables(&ctx, req, &resp), "ListTables");
    }
    {
      grpc::ClientContext ctx;
      admin::GetTableRequest req;
      req.set_name(StrCat(kInstance, "/tables/t"));
      admin::Table resp;
      expect_refused(admin_stub->GetTable(&ctx, req, &resp), "GetTable");
    }
    {
      grpc::ClientContext ctx;
      google::bigtable::v2::MutateRowRequest req;
      req.set_table_name(StrCat(kInstance, "/tables/t"));
      req.set_row_key("r");
      google::bigtable::v2::MutateRowResponse resp;
      expect_refused(data_stub->MutateRow(&ctx, req, &resp), "MutateRow");
    }
    {
      grpc::ClientContext ctx;
      google::bigtable::v2::PingAndWarmRequest req;
      req.set_name(kInstance);
      google::bigtable::v2::PingAndWarmResponse resp;
      expect_refused(data_stub->PingAndWarm(&ctx, req, &resp), "PingAndWarm");
    }
    {
      google::bigtable::v2::ReadRowsRequest req;
      req.set_table_name(StrCat(kInstance, "/tables/t"));
      std::vector<model::Row> rows;
      Status read = ReadAllRows(data_stub.get(), req, &rows, std::chrono::seconds(5));
      EXPECT_TRUE(absl::IsUnavailable(read)) << read;
      EXPECT_NE(read.message().find("no lock-service session"), std::string_view::npos) << read;
    }
  }
  etcd_->Resume();
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)))
      << "the nodes did not register again after etcd came back";
  // The outage is logged once when it starts and once when it ends, with its duration — not a
  // warning every 500 ms.
  for (auto& node : nodes_) {
    const std::string log = FullLog(*node);
    EXPECT_EQ(Count(log, "lost its lock-service session"), 1u) << log;
    EXPECT_LE(Count(log, "cannot register again:"), 1u) << log;
    EXPECT_EQ(Count(log, "the lock-service outage lasted"), 1u) << log;
    EXPECT_EQ(Count(log, "cannot re-register yet"), 0u) << log;
  }
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

  // Issue 9: a node of c1 started with --seeds but without --lock-service (so with its own
  // embedded one) joined as "unregistered" and stayed down forever. It is refused, and told
  // what to pass.
  std::vector<std::string> args = NodeArgs("c1", nodes_[0]->endpoint());
  args.erase(args.begin(), args.begin() + 2);  // --lock-service etcd://...
  const auto started = Clock::now();
  auto embedded = ServerProcess::StartTessera(g_tessera_binary, StrCat(dir_.path(), "/embedded"),
                                              args);
  ASSERT_FALSE(embedded.ok()) << "a node with its own lock service joined c1";
  const std::string refused(embedded.status().message());
  EXPECT_NE(refused.find("--lock-service"), std::string::npos) << refused;
  EXPECT_NE(refused.find(lock_service_), std::string::npos) << refused;
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(8)) << "refused at once, not by timeout";
  status = GetStatus(*nodes_[0]);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->nodes_size(), 2) << "the seed refused it too: " << status->DebugString();
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
