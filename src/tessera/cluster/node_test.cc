#include "tessera/cluster/node.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tessera/cluster/grpc_transport.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/testing/rpc_server.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/executor.h"

namespace tessera::cluster {
namespace {

using ::tessera::testing::TempDir;
using ::tessera::testing::WaitFor;

// One node in this process: its gRPC server (gossip only), transport and ClusterNode.
class TestNode {
 public:
  TestNode(std::string cluster, const std::string& dir)
      : dir_(dir),
        transport_(GrpcTransportOptions{cluster, 500, 4, server_.loop()}),
        service_(&transport_) {
    std::filesystem::create_directories(dir_);
    service_.Register(server_.services());
    EXPECT_TRUE(server_.Start().ok());
    port_ = server_.port();
    options_.cluster_name = std::move(cluster);
    options_.endpoint = "127.0.0.1:" + std::to_string(port_);
    options_.data_dir = dir_;
    SetGossipInterval(&options_.gossip, 50);
    options_.session_ttl_ms = 1000;
    options_.election_poll_ms = 50;
    options_.reregister_backoff_ms = 50;
    options_.join_timeout_ms = 5000;
    options_.load = [] { return int64_t{4096}; };
    options_.load_interval_ms = 100;
    options_.gossip_executor = gossip_executor_.get();  // as tessera serve runs them
  }
  ~TestNode() {
    node_.reset();
    server_.StopServing();
    transport_.Shutdown();
    server_.Shutdown();
  }

  Status Start(coord::LockService* ls, NodeHooks hooks = {}) {
    StatusOr<std::unique_ptr<ClusterNode>> node =
        ClusterNode::Start(options_, ls, &transport_, std::move(hooks), env_.env());
    if (!node.ok()) return node.status();
    node_ = std::move(*node);
    return Status();
  }

  NodeOptions& options() { return options_; }
  ClusterNode* node() { return node_.get(); }
  Executor* executor() { return env_.env().executor; }  // the node's other loops
  const std::string& endpoint() const { return options_.endpoint; }
  void StopNode() { node_.reset(); }

 private:
  std::string dir_;
  SystemEnv env_{2};
  std::unique_ptr<Executor> gossip_executor_ = NewThreadPoolExecutor(1);
  ::tessera::testing::RpcServer server_;  // before the transport, which runs on its loop
  GrpcTransport transport_;
  GossipService service_;
  int port_ = 0;
  NodeOptions options_;
  std::unique_ptr<ClusterNode> node_;
};

class ClusterNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord::EmbeddedLockServiceOptions o;
    o.fs = PosixFileSystem();
    o.clock = SystemClock();
    o.dir = dir_.path() + "/coord";
    o.poll_interval_ms = 20;
    auto ls = coord::EmbeddedLockService::Open(o);
    ASSERT_TRUE(ls.ok()) << ls.status();
    lock_service_ = std::move(*ls);
  }
  void TearDown() override {
    nodes_.clear();
    lock_service_.reset();
  }

  TestNode* AddNode(const std::string& cluster = "c1") {
    nodes_.push_back(std::make_unique<TestNode>(
        cluster, dir_.path() + "/n" + std::to_string(nodes_.size())));
    return nodes_.back().get();
  }

  // Starts n nodes, all seeded by the first.
  void StartNodes(int n) {
    for (int i = 0; i < n; ++i) {
      TestNode* t = AddNode();
      t->options().seeds = {nodes_[0]->endpoint()};
      ASSERT_TRUE(t->Start(lock_service_.get()).ok());
    }
  }

  static int CountUp(const v1::ClusterStatus& s) {
    int up = 0;
    for (const auto& n : s.nodes()) up += n.liveness() == "up" ? 1 : 0;
    return up;
  }

  int CountMasters() {
    int masters = 0;
    for (auto& t : nodes_) masters += t->node() != nullptr && t->node()->is_master() ? 1 : 0;
    return masters;
  }

  TempDir dir_;
  std::unique_ptr<coord::EmbeddedLockService> lock_service_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
};

TEST(NextGenerationTest, GrowsAcrossRestartsEvenWhenTheClockGoesBack) {
  TempDir dir;
  ManualClock clock(1'000'000'000'000'000);  // 1e9 s
  auto g1 = NextGeneration(PosixFileSystem(), dir.path(), &clock);
  ASSERT_TRUE(g1.ok()) << g1.status();
  EXPECT_EQ(*g1, 1'000'000'000);
  ManualClock earlier(999'000'000'000'000);
  auto g2 = NextGeneration(PosixFileSystem(), dir.path(), &earlier);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(*g2, *g1 + 1);
  ASSERT_TRUE(WriteStringToFile(PosixFileSystem(), dir.path() + "/gossip_generation", "junk",
                                false)
                  .ok());
  auto bad = NextGeneration(PosixFileSystem(), dir.path(), &clock);
  EXPECT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
}

TEST_F(ClusterNodeTest, NodesFormOneClusterWithOneMaster) {
  StartNodes(3);
  for (auto& t : nodes_) {
    ASSERT_TRUE(WaitFor([&] { return CountUp(t->node()->GetStatus()) == 3; }, 10'000))
        << t->node()->GetStatus().DebugString();
    EXPECT_TRUE(t->node()->serving());
  }
  ASSERT_TRUE(WaitFor([&] { return CountMasters() == 1; }, 5000));
  v1::ClusterStatus s = nodes_[2]->node()->GetStatus();
  EXPECT_EQ(s.cluster_name(), "c1");
  EXPECT_EQ(s.lock_service(), "embedded");
  EXPECT_TRUE(s.lock_service_error().empty()) << s.lock_service_error();
  int masters = 0;
  for (const auto& n : s.nodes()) {
    EXPECT_TRUE(n.registered()) << n.endpoint();
    EXPECT_EQ(n.dc(), "dc1");
    EXPECT_EQ(n.rack(), "rack1");
    EXPECT_EQ(n.status(), "normal");
    EXPECT_GT(n.generation(), 0);
    masters += n.is_master() ? 1 : 0;
  }
  EXPECT_EQ(masters, 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
        for (const auto& n : status.nodes()) {
          if (n.load_bytes() != 4096) return false;
        }
        return true;
      },
      5000));
}

TEST_F(ClusterNodeTest, AnotherNodeBecomesMasterWhenTheMasterGoes) {
  StartNodes(3);
  ASSERT_TRUE(WaitFor([&] { return CountMasters() == 1; }, 5000));
  size_t master = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->node()->is_master()) master = i;
  }
  const int64_t old_term = nodes_[master]->node()->GetStatus().master_term();
  nodes_[master]->StopNode();
  ASSERT_TRUE(WaitFor([&] { return CountMasters() == 1; }, 5000));
  for (auto& t : nodes_) {
    if (t->node() == nullptr) continue;
    v1::ClusterStatus s = t->node()->GetStatus();
    EXPECT_GT(s.master_term(), old_term);
    EXPECT_NE(s.master(), "");
  }
}

TEST_F(ClusterNodeTest, ALostSessionStopsServingThenReregisters) {
  StartNodes(2);
  ClusterNode* node = nodes_[1]->node();
  std::atomic<int> lost{0};
  ASSERT_TRUE(WaitFor([&] { return node->serving(); }, 1000));
  const coord::SessionId first = node->session_id();
  ASSERT_TRUE(lock_service_->RevokeSession(first).ok());
  // Serving stops as soon as the node learns of the loss (embedded: at once).
  ASSERT_TRUE(WaitFor([&] { return node->registrations() == 2; }, 5000));
  EXPECT_NE(node->session_id(), first);
  EXPECT_TRUE(node->serving());
  EXPECT_TRUE(node->CheckServing().ok());
  // The directory entry is back.
  ASSERT_TRUE(WaitFor(
      [&] {
        const v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
        for (const auto& n : status.nodes()) {
          if (n.endpoint() == nodes_[1]->endpoint()) return n.registered();
        }
        return false;
      },
      5000));
  (void)lost;
}

TEST_F(ClusterNodeTest, ServingStopsWhileTheSessionIsGone) {
  TestNode* t = AddNode();
  std::atomic<int> attached{0}, detached{0};
  std::atomic<bool> fail_hook{false};
  NodeHooks hooks;
  hooks.on_registered = [&](coord::Session*) -> Status {
    if (fail_hook) return absl::UnavailableError("schema mirror not ready");
    attached++;
    return Status();
  };
  hooks.on_session_lost = [&] { detached++; };
  ASSERT_TRUE(t->Start(lock_service_.get(), hooks).ok());
  EXPECT_EQ(attached, 1);
  // While re-registration keeps failing, the node must not serve.
  fail_hook = true;
  ASSERT_TRUE(lock_service_->RevokeSession(t->node()->session_id()).ok());
  ASSERT_TRUE(WaitFor([&] { return detached.load() == 1; }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Status s = t->node()->CheckServing();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("no lock-service session"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("it lost its session"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("schema mirror not ready"), std::string_view::npos) << s;
  fail_hook = false;
  ASSERT_TRUE(WaitFor([&] { return t->node()->serving(); }, 5000));
  EXPECT_EQ(attached, 2);
}

TEST_F(ClusterNodeTest, ExitModeReportsFatalOnSessionLoss) {
  TestNode* t = AddNode();
  t->options().on_session_loss = SessionLossAction::kExit;
  std::atomic<bool> fatal{false};
  NodeHooks hooks;
  hooks.on_fatal = [&](const Status& why) {
    EXPECT_NE(why.message().find("exit"), std::string_view::npos);
    fatal = true;
  };
  ASSERT_TRUE(t->Start(lock_service_.get(), hooks).ok());
  ASSERT_TRUE(lock_service_->RevokeSession(t->node()->session_id()).ok());
  ASSERT_TRUE(WaitFor([&] { return fatal.load(); }, 5000));
  EXPECT_FALSE(t->node()->serving());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(t->node()->registrations(), 1);
}

TEST_F(ClusterNodeTest, ANodeOfAnotherClusterIsRefused) {
  StartNodes(1);
  TestNode* stranger = AddNode("c2");
  stranger->options().seeds = {nodes_[0]->endpoint()};
  Status s = stranger->Start(lock_service_.get());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("cluster 'c1'"), std::string_view::npos) << s;
  v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
  EXPECT_GT(status.refused_messages(), 0u);
  EXPECT_EQ(status.nodes_size(), 1) << status.DebugString();
}

TEST_F(ClusterNodeTest, StartFailsWhenNoSeedAnswers) {
  TestNode* t = AddNode();
  t->options().seeds = {"127.0.0.1:1"};
  t->options().join_timeout_ms = 500;
  Status s = t->Start(lock_service_.get());
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("no seed"), std::string_view::npos) << s;
}

TEST_F(ClusterNodeTest, ASeedOfItselfStartsAlone) {
  TestNode* t = AddNode();
  t->options().seeds = {t->endpoint(), "127.0.0.1:1"};
  ASSERT_TRUE(t->Start(lock_service_.get()).ok());
  ASSERT_TRUE(WaitFor([&] { return t->node()->is_master(); }, 5000));
}

TEST_F(ClusterNodeTest, AStoppedPeerIsMarkedDownAndARestartComesBackUp) {
  StartNodes(3);
  ASSERT_TRUE(WaitFor([&] { return CountUp(nodes_[0]->node()->GetStatus()) == 3; }, 10'000));
  const std::string victim = nodes_[2]->endpoint();
  nodes_[2]->StopNode();
  auto liveness = [&](const std::string& endpoint) {
    const v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
    for (const auto& n : status.nodes()) {
      if (n.endpoint() == endpoint) return n.liveness();
    }
    return std::string("unknown");
  };
  ASSERT_TRUE(WaitFor([&] { return liveness(victim) == "down"; }, 10'000));
  // Issue 9: the stop was announced, so it is down by its own word, not convicted by phi.
  {
    const v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
    for (const auto& n : status.nodes()) {
      if (n.endpoint() == victim) {
        EXPECT_EQ(n.status(), "shutdown");
        EXPECT_LT(n.phi(), nodes_[0]->options().gossip.suspect_phi);
      }
    }
  }
  EXPECT_EQ(nodes_[0]->node()->gossiper()->stats().convictions, 0u);
  ASSERT_TRUE(nodes_[2]->Start(lock_service_.get()).ok());
  ASSERT_TRUE(WaitFor([&] { return liveness(victim) == "up"; }, 10'000));
}

TEST_F(ClusterNodeTest, HeartbeatsGoOnWhileEveryOtherThreadOfTheNodeIsBusy) {
  StartNodes(2);
  ASSERT_TRUE(WaitFor([&] { return CountUp(nodes_[0]->node()->GetStatus()) == 2; }, 10'000));
  const std::string busy = nodes_[1]->endpoint();
  auto liveness = [&] {
    const v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
    for (const auto& n : status.nodes()) {
      if (n.endpoint() == busy) return n.liveness();
    }
    return std::string("unknown");
  };
  // Both threads of node 1's executor block for 2 s (as lock-service calls that wait for their
  // timeout do after a SIGCONT): its gossip rounds, on their own thread, keep it up.
  absl::Notification release;
  std::atomic<int> blocked{0};
  for (int i = 0; i < 2; ++i) {
    nodes_[1]->executor()->Schedule([&] {
      ++blocked;
      release.WaitForNotificationWithTimeout(absl::Seconds(2));
      --blocked;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return blocked.load() == 2; }, 5'000));
  int not_up = 0;
  for (int i = 0; i < 30 && blocked.load() == 2; ++i) {
    not_up += liveness() != "up";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  release.Notify();
  EXPECT_EQ(not_up, 0) << "node 1 was not up in node 0's view while its executor was busy";
  ASSERT_TRUE(WaitFor([&] { return blocked.load() == 0; }, 5'000));
}

// Issue 9: a node started with --seeds but another lock service (its own embedded one) joined
// an etcd cluster's gossip as "unregistered". It is refused at once, told what to pass.
TEST_F(ClusterNodeTest, ANodeWithAnotherLockServiceIsRefusedAndToldWhatToPass) {
  StartNodes(1);
  coord::EmbeddedLockServiceOptions o;
  o.fs = PosixFileSystem();
  o.clock = SystemClock();
  o.dir = dir_.path() + "/other-coord";
  auto other = coord::EmbeddedLockService::Open(o);
  ASSERT_TRUE(other.ok()) << other.status();
  TestNode* stranger = AddNode();
  stranger->options().seeds = {nodes_[0]->endpoint()};
  stranger->options().join_timeout_ms = 10'000;
  const auto started = std::chrono::steady_clock::now();
  Status s = stranger->Start(other->get());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5))
      << "refused at once, not after the join timeout";
  EXPECT_NE(s.message().find("--lock-service"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("uses the lock service embedded"), std::string_view::npos) << s;
  // The seed refused it too: it is not in the seed's view.
  v1::ClusterStatus status = nodes_[0]->node()->GetStatus();
  EXPECT_EQ(status.nodes_size(), 1) << status.DebugString();
  EXPECT_GT(status.refused_messages(), 0u);
}

// Issue 9: dead endpoints were kept forever; RemoveNode forgets them on every node.
TEST_F(ClusterNodeTest, RemoveNodeForgetsADeadNodeEverywhereAndRefusesALiveOne) {
  StartNodes(3);
  ASSERT_TRUE(WaitFor([&] { return CountUp(nodes_[0]->node()->GetStatus()) == 3; }, 10'000));
  ClusterNode* n0 = nodes_[0]->node();
  const std::string victim = nodes_[2]->endpoint();
  EXPECT_TRUE(absl::IsFailedPrecondition(n0->RemoveNode(victim, false).status()));  // up
  EXPECT_TRUE(absl::IsFailedPrecondition(n0->RemoveNode(victim, true).status()));   // still up
  EXPECT_TRUE(absl::IsInvalidArgument(n0->RemoveNode(nodes_[0]->endpoint(), false).status()));
  EXPECT_TRUE(absl::IsNotFound(n0->RemoveNode("127.0.0.1:1", false).status()));

  // Down in gossip but its session lives on (a hung process): refused without --force.
  nodes_[2]->node()->gossiper()->AnnounceShutdown();
  ASSERT_TRUE(WaitFor([&] { return n0->gossiper()->LivenessOf(victim) == Liveness::kDown; },
                      5000));
  StatusOr<std::string> refused = n0->RemoveNode(victim, false);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("--force"), std::string_view::npos);
  StatusOr<std::string> forced = n0->RemoveNode(victim, true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_NE(forced->find("ended its lock-service session"), std::string::npos) << *forced;
  // Its session was revoked (it notices and registers again: a zombie, but not ours to kill).
  ASSERT_TRUE(WaitFor([&] { return nodes_[2]->node()->registrations() >= 2; }, 5000));
  nodes_[2]->StopNode();

  // Gone from every view, and it stays gone.
  auto listed = [&](size_t observer) {
    const v1::ClusterStatus status = nodes_[observer]->node()->GetStatus();
    for (const auto& n : status.nodes()) {
      if (n.endpoint() == victim) return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitFor([&] { return !listed(0) && !listed(1); }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(listed(0));
  EXPECT_FALSE(listed(1));
}

}  // namespace
}  // namespace tessera::cluster
