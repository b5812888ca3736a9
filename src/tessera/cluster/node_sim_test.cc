// ClusterNode on simulated time: three whole nodes (gossip, registration, election) in one
// process on a SimExecutor, a ManualClock, the in-memory file system, the embedded lock service
// (no background thread: polled by a task) and the simulated network — deterministic per seed.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/cluster/node.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/testing/sim_network.h"
#include "tessera/util/env.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"
#include "tessera/util/sim_executor.h"

namespace tessera::cluster {
namespace {

using testing::NetworkOptions;
using testing::SimNetwork;

constexpr int64_t kMs = 1000;
constexpr int64_t kSecond = 1000 * kMs;

std::string Endpoint(int i) { return StrCat("10.0.0.", i + 1, ":7000"); }

class SimNodes {
 public:
  explicit SimNodes(uint64_t seed, int nodes = 3)
      : sim_(&clock_),
        env_{.fs = &fs_, .clock = &clock_, .executor = &sim_, .seed = seed},
        network_(&sim_, env_.NewRandom("network"),
                 NetworkOptions{.loss = 0, .latency_us = 500, .jitter_us = 5 * kMs}),
        nodes_(nodes),
        started_(nodes) {
    coord::EmbeddedLockServiceOptions o;
    o.fs = &fs_;
    o.clock = &clock_;
    o.dir = "/coord";
    o.background_thread = false;
    auto ls = coord::EmbeddedLockService::Open(o);
    EXPECT_TRUE(ls.ok()) << ls.status();
    lock_service_ = std::move(*ls);
    poll_ = [this] {
      lock_service_->Poll();
      sim_.ScheduleAfter(10 * kMs, poll_);
    };
    sim_.Schedule(poll_);
  }

  ~SimNodes() {
    for (auto& n : nodes_) n.node.reset();  // sessions close before the service goes
    for (auto& n : nodes_) n.transport.reset();
  }

  Status Begin(int i) {
    Node& n = nodes_[i];
    NodeOptions o;
    o.cluster_name = "sim";
    o.endpoint = Endpoint(i);
    o.seeds = {Endpoint(0)};
    o.data_dir = StrCat("/node", i);
    SetGossipInterval(&o.gossip, 100);
    o.session_ttl_ms = 2000;
    o.election_poll_ms = 100;
    o.reregister_backoff_ms = 100;
    o.join_timeout_ms = 5000;
    RETURN_IF_ERROR(fs_.CreateDirs(o.data_dir));
    if (n.transport == nullptr) {
      ASSIGN_OR_RETURN(n.transport, network_.Attach(o.endpoint));
    }
    started_[i].reset();
    ASSIGN_OR_RETURN(n.node, ClusterNode::Begin(o, lock_service_.get(), n.transport.get(), {}, env_,
                                                [this, i](Status s) { started_[i] = s; }));
    return Status();
  }

  // Runs until every node has finished starting, at most `limit_us` of simulated time.
  void RunUntilStarted(int64_t limit_us) {
    const int64_t deadline = clock_.MonotonicMicros() + limit_us;
    while (clock_.MonotonicMicros() < deadline) {
      bool all = true;
      for (const auto& s : started_) all = all && s.has_value();
      if (all) return;
      sim_.RunFor(10 * kMs);
    }
  }

  void RunFor(int64_t us) { sim_.RunFor(us); }

  // Begins every node and runs until all serve (at most 10 simulated seconds), then `settle_us`.
  ::testing::AssertionResult StartAll(int64_t settle_us) {
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      if (Status s = Begin(i); !s.ok())
        return ::testing::AssertionFailure() << "node " << i << ": " << s;
    }
    RunUntilStarted(10 * kSecond);
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      if (!started_[i].has_value())
        return ::testing::AssertionFailure() << "node " << i << " did not start";
      if (!started_[i]->ok())
        return ::testing::AssertionFailure() << "node " << i << ": " << *started_[i];
    }
    RunFor(settle_us);
    return ::testing::AssertionSuccess();
  }

  int Master() const {
    int master = -1;
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      if (nodes_[i].node != nullptr && nodes_[i].node->is_master()) {
        if (master != -1) return -2;  // two masters
        master = i;
      }
    }
    return master;
  }

  // Node i sees every other node as `liveness`.
  bool SeesAll(int i, Liveness liveness) const {
    for (int j = 0; j < static_cast<int>(nodes_.size()); ++j) {
      if (j == i) continue;
      std::optional<PeerView> v = nodes_[i].node->gossiper()->ViewOf(Endpoint(j));
      if (!v.has_value() || v->liveness != liveness) return false;
    }
    return true;
  }

  ClusterNode* node(int i) { return nodes_[i].node.get(); }
  const std::optional<Status>& started(int i) const { return started_[i]; }
  SimExecutor& sim() { return sim_; }
  SimNetwork& network() { return network_; }
  coord::EmbeddedLockService* lock_service() { return lock_service_.get(); }
  int64_t now_us() const { return clock_.MonotonicMicros(); }

 private:
  struct Node {
    std::unique_ptr<Transport> transport;
    std::unique_ptr<ClusterNode> node;
  };

  ManualClock clock_{1'700'000'000 * kSecond};
  MemFileSystem fs_;
  SimExecutor sim_;
  Env env_;
  SimNetwork network_;
  std::unique_ptr<coord::EmbeddedLockService> lock_service_;
  std::function<void()> poll_;
  std::vector<Node> nodes_;
  std::vector<std::optional<Status>> started_;
};

TEST(ClusterNodeSimTest, ThreeNodesFormOneClusterWithOneMaster) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimNodes c(seed);
  ASSERT_TRUE(c.StartAll(3 * kSecond));
  EXPECT_GE(c.Master(), 0);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(c.node(i)->serving()) << i;
    EXPECT_TRUE(c.SeesAll(i, Liveness::kUp)) << i;
    EXPECT_EQ(c.node(i)->registrations(), 1);
  }
}

// What a run did, as far as this test can see: who is master, how many tasks ran and messages
// moved, and each node's view of the others.
std::string Trace(uint64_t seed) {
  SimNodes c(seed);
  EXPECT_TRUE(c.StartAll(5 * kSecond));
  std::string trace = StrCat("master ", c.Master(), " tasks ", c.sim().tasks_run(), " sent ",
                             c.network().messages_sent(), " at ", c.now_us());
  for (int i = 0; i < 3; ++i) {
    for (const PeerSummary& p : c.node(i)->gossiper()->Summaries()) {
      trace += StrCat(" | ", i, ":", p.endpoint, " g", p.generation, " v", p.max_app_version);
    }
  }
  return trace;
}

TEST(ClusterNodeSimTest, TheSameSeedReplaysTheSameRun) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  const std::string first = Trace(seed);
  EXPECT_EQ(first, Trace(seed));
}

TEST(ClusterNodeSimTest, AnotherNodeBecomesMasterWhenTheMasterStops) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimNodes c(seed);
  ASSERT_TRUE(c.StartAll(1 * kSecond));
  const int old_master = c.Master();
  ASSERT_GE(old_master, 0);
  c.node(old_master)->Stop();  // its session closes: the master lock goes at once
  // The watch on the master lock wakes the others at once (well within one election poll).
  c.RunFor(100 * kMs);
  const int new_master = c.Master();
  EXPECT_GE(new_master, 0);
  EXPECT_NE(new_master, old_master);
}

TEST(ClusterNodeSimTest, ANodeWhoseSessionIsRevokedRegistersAgain) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimNodes c(seed);
  ASSERT_TRUE(c.StartAll(1 * kSecond));
  const int master = c.Master();
  ASSERT_GE(master, 0);
  ASSERT_TRUE(c.lock_service()->RevokeSession(c.node(master)->session_id()).ok());
  c.RunFor(2 * kSecond);
  EXPECT_GE(c.Master(), 0);  // exactly one master again (it may be the same node)
  EXPECT_TRUE(c.node(master)->serving());
  EXPECT_EQ(c.node(master)->registrations(), 2);
}

TEST(ClusterNodeSimTest, APartitionedNodeIsSeenDownThenUpAgainAfterTheHeal) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimNodes c(seed);
  ASSERT_TRUE(c.StartAll(2 * kSecond));
  c.network().SetPartition({{Endpoint(2), 1}});
  c.RunFor(30 * kSecond);
  for (int i : {0, 1}) {
    std::optional<PeerView> v = c.node(i)->gossiper()->ViewOf(Endpoint(2));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->liveness, Liveness::kDown) << "node " << i << " phi " << v->phi;
  }
  EXPECT_TRUE(c.SeesAll(2, Liveness::kDown));
  c.network().Heal();
  c.RunFor(10 * kSecond);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.SeesAll(i, Liveness::kUp)) << i;
}

TEST(ClusterNodeSimTest, StartFailsWhenNoSeedAnswersInTime) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimNodes c(seed, /*nodes=*/2);
  c.network().SetDown(Endpoint(0), true);  // node 0 is never started; its address is dead
  ASSERT_TRUE(c.Begin(1).ok());
  c.RunFor(6 * kSecond);
  ASSERT_TRUE(c.started(1).has_value());
  EXPECT_TRUE(absl::IsUnavailable(*c.started(1))) << *c.started(1);
  EXPECT_NE(c.started(1)->message().find("no seed of [10.0.0.1:7000] answered within 5000 ms"),
            std::string::npos)
      << *c.started(1);
}

}  // namespace
}  // namespace tessera::cluster
