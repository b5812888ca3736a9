#include "tessera/server/node_locations.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/cluster/endpoint_state.h"
#include "tessera/util/clock.h"
#include "tessera/util/random.h"

namespace tessera::server {
namespace {

constexpr int64_t kMs = 1000;

// A transport whose messages the test delivers.
class QueueTransport final : public cluster::Transport {
 public:
  void Send(const cluster::NodeId& to, std::string bytes) override {
    sent.emplace_back(to, std::move(bytes));
  }
  void SetReceiver(Receiver r) override { receiver = std::move(r); }
  std::vector<std::pair<cluster::NodeId, std::string>> sent;
  Receiver receiver;
};

// Gossipers "a" (the observer) and others on one manual clock.
class Gossip {
 public:
  cluster::Gossiper* Add(const std::string& id, const std::string& dc, const std::string& rack,
                         int64_t generation = 1) {
    auto n = std::make_unique<Node>();
    n->random = std::make_unique<Random>(nodes_.size() + 1);
    cluster::GossipOptions o = cluster::DefaultGossipOptions();
    o.self = id;
    o.seeds = id == "a" ? std::vector<std::string>{} : std::vector<std::string>{"a"};
    o.cluster_name = "c";
    o.log_liveness_changes = false;
    auto g = cluster::Gossiper::Create(o, generation, &clock, n->random.get(), &n->transport);
    EXPECT_TRUE(g.ok()) << g.status();
    n->gossiper = std::move(*g);
    n->gossiper->SetApplicationState(cluster::kDcKey, dc);
    n->gossiper->SetApplicationState(cluster::kRackKey, rack);
    n->gossiper->Start();
    cluster::Gossiper* raw = n->gossiper.get();
    nodes_[id] = std::move(n);
    return raw;
  }
  void Remove(const std::string& id) { nodes_.erase(id); }
  // One round of every node but those in `silent`, with every message delivered.
  void Round(const std::set<std::string>& silent = {}) {
    clock.Advance(100 * kMs);
    for (auto& [id, n] : nodes_) {
      if (silent.count(id) == 0) n->gossiper->Tick();
    }
    for (int pass = 0; pass < 20; ++pass) {
      std::vector<std::pair<cluster::NodeId, std::string>> batch;
      for (auto& [id, n] : nodes_) {
        for (auto& m : n->transport.sent) batch.push_back(std::move(m));
        n->transport.sent.clear();
      }
      if (batch.empty()) return;
      for (auto& [to, bytes] : batch) {
        auto it = nodes_.find(to);
        if (it != nodes_.end() && silent.count(to) == 0) it->second->transport.receiver(bytes);
      }
    }
  }
  cluster::Gossiper* Of(const std::string& id) { return nodes_.at(id)->gossiper.get(); }

  ManualClock clock;

 private:
  struct Node {
    QueueTransport transport;
    std::unique_ptr<Random> random;
    std::unique_ptr<cluster::Gossiper> gossiper;
  };
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

TEST(NodeLocationsTest, SelfFromOptionsPeersFromGossip) {
  Gossip gossip;
  cluster::Gossiper* a = gossip.Add("a", "dc1", "r1");
  gossip.Add("b", "dc2", "r3");
  NodeLocations where("a", "dc1", "r1", [a] { return a; });
  // Nothing heard yet: b is unknown, and counted in this node's dc.
  EXPECT_FALSE(where.Locate("b").has_value());
  EXPECT_EQ(where.DcOf("b"), "dc1");
  for (int i = 0; i < 5; ++i) gossip.Round();
  std::optional<replication::NodeLocation> b = where.Locate("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->dc, "dc2");
  EXPECT_EQ(b->rack, "r3");
  EXPECT_TRUE(b->live);
  EXPECT_EQ(where.DcOf("b"), "dc2");
  std::optional<replication::NodeLocation> self = where.Locate("a");
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->dc, "dc1");
  EXPECT_EQ(self->rack, "r1");
  EXPECT_TRUE(self->live);
  EXPECT_FALSE(where.Locate("nobody").has_value());
}

TEST(NodeLocationsTest, APeerGossipSeesDownIsNotLive) {
  Gossip gossip;
  cluster::Gossiper* a = gossip.Add("a", "dc1", "r1");
  gossip.Add("b", "dc1", "r2");
  NodeLocations where("a", "dc1", "r1", [a] { return a; });
  for (int i = 0; i < 20; ++i) gossip.Round();
  ASSERT_TRUE(where.Locate("b").has_value());
  EXPECT_TRUE(where.Locate("b")->live);
  // b goes silent (paused): a's detector convicts it within a bounded number of rounds.
  bool down = false;
  for (int i = 0; i < 200 && !down; ++i) {
    gossip.Round({"b"});
    down = !where.Locate("b")->live;
  }
  EXPECT_TRUE(down);
  EXPECT_EQ(where.Locate("b")->rack, "r2");  // still known where it stands
}

TEST(NodeLocationsTest, ARestartedPeerIsReadAgain) {
  Gossip gossip;
  cluster::Gossiper* a = gossip.Add("a", "dc1", "r1");
  gossip.Add("b", "dc1", "r2", /*generation=*/1);
  NodeLocations where("a", "dc1", "r1", [a] { return a; });
  for (int i = 0; i < 5; ++i) gossip.Round();
  ASSERT_EQ(where.Locate("b")->dc, "dc1");
  // b comes back as a new generation in another dc.
  gossip.Remove("b");
  gossip.Add("b", "dc2", "r1", /*generation=*/2);
  for (int i = 0; i < 5; ++i) gossip.Round();
  std::optional<replication::NodeLocation> b = where.Locate("b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->dc, "dc2");
  EXPECT_EQ(b->rack, "r1");
}

TEST(NodeLocationsTest, NoGossiperKnowsOnlyItself) {
  NodeLocations where("a", "dc1", "r1", [] { return nullptr; });
  EXPECT_FALSE(where.Locate("b").has_value());
  EXPECT_EQ(where.DcOf("b"), "dc1");
  ASSERT_TRUE(where.Locate("a").has_value());
  EXPECT_EQ(where.Locate("a")->rack, "r1");
}

}  // namespace
}  // namespace tessera::server
