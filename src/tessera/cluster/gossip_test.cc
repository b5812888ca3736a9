#include "tessera/cluster/gossip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace tessera::cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1000;

// A transport that queues what is sent until the test delivers it.
class QueueTransport final : public Transport {
 public:
  void Send(const NodeId& to, std::string bytes) override {
    sent.emplace_back(to, std::move(bytes));
  }
  void SetReceiver(Receiver r) override { receiver = std::move(r); }

  std::vector<std::pair<NodeId, std::string>> sent;
  Receiver receiver;
};

struct Event {
  NodeId observer, endpoint;
  Liveness from, to;
};

// A few gossipers on one manual clock, with hand-delivered messages.
class GossipHarness {
 public:
  Gossiper* Add(const NodeId& id, std::vector<NodeId> seeds, int64_t generation = 1,
                std::string cluster = "prod", GossipOptions base = DefaultGossipOptions()) {
    auto n = std::make_unique<Node>();
    n->random = std::make_unique<Random>(nodes_.size() + 1);
    base.self = id;
    base.seeds = std::move(seeds);
    base.cluster_name = std::move(cluster);
    base.log_liveness_changes = false;
    auto g = Gossiper::Create(base, generation, &clock, n->random.get(), &n->transport);
    EXPECT_TRUE(g.ok()) << g.status();
    n->gossiper = std::move(*g);
    n->gossiper->SetLivenessListener(
        [this, id](const NodeId& e, Liveness from, Liveness to, double) {
          events.push_back({id, e, from, to});
        });
    n->gossiper->Start();
    Gossiper* raw = n->gossiper.get();
    nodes_[id] = std::move(n);
    return raw;
  }
  void Remove(const NodeId& id) { nodes_.erase(id); }
  // A paused node neither ticks nor receives (SIGSTOP); its state survives for Resume().
  void Pause(const NodeId& id) { paused_.insert(id); }
  void Resume(const NodeId& id) { paused_.erase(id); }

  // Messages queued by `id`, decoded, and cleared from its queue.
  std::vector<std::pair<NodeId, GossipMessage>> TakeSent(const NodeId& id) {
    std::vector<std::pair<NodeId, GossipMessage>> out;
    for (auto& [to, bytes] : nodes_.at(id)->transport.sent) {
      auto m = DecodeGossipMessage(bytes);
      EXPECT_TRUE(m.ok()) << m.status();
      out.emplace_back(to, *m);
    }
    nodes_.at(id)->transport.sent.clear();
    return out;
  }

  // Delivers every queued message (and the replies they cause) until none is left.
  // Messages to unknown nodes vanish. Returns how many were delivered.
  int Pump() {
    int delivered = 0;
    for (int pass = 0; pass < 100; ++pass) {
      std::vector<std::pair<NodeId, std::string>> batch;
      for (auto& [id, n] : nodes_) {
        for (auto& m : n->transport.sent) batch.push_back(std::move(m));
        n->transport.sent.clear();
      }
      if (batch.empty()) return delivered;
      for (auto& [to, bytes] : batch) {
        auto it = nodes_.find(to);
        if (it == nodes_.end() || !it->second->transport.receiver || paused_.count(to)) continue;
        it->second->transport.receiver(bytes);
        ++delivered;
      }
    }
    ADD_FAILURE() << "messages still flowing after 100 passes";
    return delivered;
  }

  // One round everywhere (in name order), then deliver everything.
  void Round(int64_t advance_us) {
    clock.Advance(advance_us);
    for (auto& [id, n] : nodes_) {
      if (!paused_.count(id)) n->gossiper->Tick();
    }
    Pump();
  }

  ManualClock clock;
  std::vector<Event> events;

 private:
  struct Node {
    QueueTransport transport;
    std::unique_ptr<Random> random;
    std::unique_ptr<Gossiper> gossiper;
  };
  std::map<NodeId, std::unique_ptr<Node>> nodes_;
  std::set<NodeId> paused_;
};

std::vector<NodeId> Known(const Gossiper* g) {
  std::vector<NodeId> ids;
  for (const auto& v : g->View()) ids.push_back(v.endpoint);
  return ids;
}

TEST(GossipTest, SynAckAck2ExchangeCarriesWhatEachSideMisses) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  Gossiper* b = h.Add("b", {});
  a->SetApplicationState(kDcKey, "dc1");
  b->SetApplicationState(kRackKey, "r2");

  a->Tick();
  auto sent = h.TakeSent("a");
  ASSERT_EQ(sent.size(), 1u);  // no live peer yet: the seed
  EXPECT_EQ(sent[0].first, "b");
  const GossipMessage syn = sent[0].second;
  EXPECT_EQ(syn.type, GossipMessageType::kSyn);
  EXPECT_EQ(syn.cluster_name, "prod");
  EXPECT_EQ(syn.sender, "a");
  // a's digest: itself, generation 1, max version 2 (dc = 1, heartbeat = 2).
  EXPECT_THAT(syn.digests, ElementsAre(GossipDigest{"a", 1, 2}));

  b->HandleMessage(EncodeGossipMessage(syn));
  sent = h.TakeSent("b");
  ASSERT_EQ(sent.size(), 1u);
  const GossipMessage ack = sent[0].second;
  EXPECT_EQ(ack.type, GossipMessageType::kAck);
  // b asks for all of a (unknown to it) and sends all of itself (a did not list it).
  EXPECT_THAT(ack.digests, ElementsAre(GossipDigest{"a", 1, 0}));
  ASSERT_EQ(ack.deltas.size(), 1u);
  EXPECT_EQ(ack.deltas[0].endpoint, "b");
  EXPECT_EQ(ack.deltas[0].from_version, 0);
  EXPECT_EQ(ack.deltas[0].app_states.at("rack").value, "r2");

  a->HandleMessage(EncodeGossipMessage(ack));
  sent = h.TakeSent("a");
  ASSERT_EQ(sent.size(), 1u);
  const GossipMessage ack2 = sent[0].second;
  EXPECT_EQ(ack2.type, GossipMessageType::kAck2);
  ASSERT_EQ(ack2.deltas.size(), 1u);
  EXPECT_EQ(ack2.deltas[0].endpoint, "a");
  EXPECT_EQ(ack2.deltas[0].heartbeat_version, 2);
  EXPECT_EQ(ack2.deltas[0].app_states.at("dc").value, "dc1");

  b->HandleMessage(EncodeGossipMessage(ack2));
  EXPECT_THAT(Known(a), ElementsAre("a", "b"));
  EXPECT_THAT(Known(b), ElementsAre("a", "b"));
  EXPECT_EQ(*b->ViewOf("a")->state.Find(kDcKey), "dc1");
  EXPECT_EQ(*a->ViewOf("b")->state.Find(kRackKey), "r2");
}

TEST(GossipTest, OnlyMissingDeltasTravelOnceInSync) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  Gossiper* b = h.Add("b", {"a"});
  for (int i = 0; i < 3; ++i) h.Round(200 * kMs);
  // Both in sync except for the heartbeats of this round: the ACK carries only heartbeat
  // deltas (no application states) and requests.
  b->SetApplicationState(kLoadKey, "42");
  a->Tick();
  auto syn = h.TakeSent("a");
  ASSERT_EQ(syn.size(), 1u);
  b->HandleMessage(EncodeGossipMessage(syn[0].second));
  auto ack = h.TakeSent("b");
  ASSERT_EQ(ack.size(), 1u);
  // b is behind on a (a ticked): one request; a is behind on b (the load): one delta with
  // just the load, starting at the version a holds.
  ASSERT_EQ(ack[0].second.digests.size(), 1u);
  EXPECT_EQ(ack[0].second.digests[0].endpoint, "a");
  ASSERT_EQ(ack[0].second.deltas.size(), 1u);
  const EndpointDelta& d = ack[0].second.deltas[0];
  EXPECT_EQ(d.endpoint, "b");
  EXPECT_GT(d.from_version, 0);
  EXPECT_EQ(d.app_states.size(), 1u);
  EXPECT_EQ(d.app_states.at("load").value, "42");
  a->HandleMessage(EncodeGossipMessage(ack[0].second));
  EXPECT_EQ(*a->ViewOf("b")->state.Find(kLoadKey), "42");
}

TEST(GossipTest, StatesSpreadThroughAThirdNode) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"hub"});
  h.Add("hub", {});
  Gossiper* c = h.Add("c", {"hub"});
  a->SetApplicationState(kMasterKey, "term-7");
  for (int i = 0; i < 6; ++i) h.Round(200 * kMs);
  EXPECT_THAT(Known(c), ElementsAre("a", "c", "hub"));
  EXPECT_EQ(*c->ViewOf("a")->state.Find(kMasterKey), "term-7");
  EXPECT_EQ(c->ViewOf("a")->liveness, Liveness::kUp);
}

TEST(GossipTest, MessagesFromAnotherClusterAreRefused) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"}, 1, "prod");
  Gossiper* b = h.Add("b", {}, 1, "staging");
  for (int i = 0; i < 3; ++i) h.Round(200 * kMs);
  EXPECT_THAT(Known(a), ElementsAre("a"));
  EXPECT_THAT(Known(b), ElementsAre("b"));
  EXPECT_EQ(b->stats().refused_cluster_name, 3u);  // one SYN per round, each refused
  EXPECT_EQ(a->stats().messages_received, 0u);     // no ACK ever came back
}

TEST(GossipTest, MalformedBytesAreCountedAndDropped) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {});
  a->HandleMessage("garbage");
  a->HandleMessage("");
  EXPECT_EQ(a->stats().decode_errors, 2u);
  EXPECT_THAT(Known(a), ElementsAre("a"));
}

TEST(GossipTest, SilentPeerGoesSuspectThenDownThenUpWhenItReturns) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  h.Add("b", {"a"});
  for (int i = 0; i < 30; ++i) h.Round(200 * kMs);
  EXPECT_EQ(a->LivenessOf("b"), Liveness::kUp);
  h.events.clear();

  // b stops (SIGSTOP): a keeps ticking, nothing answers.
  h.Pause("b");
  bool suspect_seen = false;
  int rounds = 0;
  for (; rounds < 200 && a->LivenessOf("b") != Liveness::kDown; ++rounds) {
    h.Round(200 * kMs);
    suspect_seen |= a->LivenessOf("b") == Liveness::kSuspect;
  }
  ASSERT_EQ(a->LivenessOf("b"), Liveness::kDown);
  EXPECT_TRUE(suspect_seen);
  EXPECT_GE(a->ViewOf("b")->phi, a->options().convict_phi);
  EXPECT_EQ(a->stats().convictions, 1u);
  // Exponential model at phi 5 waits about 11.5 mean gaps; the gaps here are one round.
  EXPECT_GE(rounds, 10);
  EXPECT_LE(rounds, 15);

  // The same process continues (SIGCONT): same generation, heartbeat moving again.
  h.Resume("b");
  for (int i = 0; i < 5 && a->LivenessOf("b") != Liveness::kUp; ++i) h.Round(200 * kMs);
  EXPECT_EQ(a->LivenessOf("b"), Liveness::kUp);
  EXPECT_EQ(a->stats().recoveries, 1u);
  std::vector<std::pair<Liveness, Liveness>> about_b;
  for (const auto& e : h.events) {
    if (e.observer == "a" && e.endpoint == "b") about_b.emplace_back(e.from, e.to);
  }
  EXPECT_THAT(about_b, ElementsAre(std::pair{Liveness::kUp, Liveness::kSuspect},
                                   std::pair{Liveness::kSuspect, Liveness::kDown},
                                   std::pair{Liveness::kDown, Liveness::kUp}));
}

TEST(GossipTest, RestartWithNewGenerationReplacesStateAndIsSeenUp) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  Gossiper* b = h.Add("b", {"a"}, /*generation=*/10);
  b->SetApplicationState(kLoadKey, "old");
  b->SetApplicationState("tablets", "t1,t2");
  for (int i = 0; i < 5; ++i) h.Round(200 * kMs);
  EXPECT_EQ(a->GenerationOf("b"), 10);

  h.Remove("b");
  b = h.Add("b", {"a"}, /*generation=*/11);
  b->SetApplicationState(kLoadKey, "new");
  for (int i = 0; i < 5; ++i) h.Round(200 * kMs);
  auto view = a->ViewOf("b");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->state.generation, 11);
  EXPECT_EQ(*view->state.Find(kLoadKey), "new");
  EXPECT_EQ(view->state.Find("tablets"), nullptr);  // the old process's state is gone
  EXPECT_EQ(view->liveness, Liveness::kUp);
}

TEST(GossipTest, EndpointLearnedSecondHandIsDownUntilItsHeartbeatAdvances) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"hub"});
  h.Add("hub", {});
  h.Add("dead", {"hub"});
  for (int i = 0; i < 3; ++i) h.Round(200 * kMs);
  h.Remove("dead");  // crashed; hub and a still hold its last state
  Gossiper* c = h.Add("c", {"hub"});
  c->Tick();
  h.Pump();  // c learns "dead" from hub, second-hand
  ASSERT_TRUE(c->LivenessOf("dead").has_value());
  EXPECT_EQ(c->LivenessOf("dead"), Liveness::kDown);
  for (int i = 0; i < 20; ++i) h.Round(200 * kMs);
  EXPECT_EQ(c->LivenessOf("dead"), Liveness::kDown);  // never shown up
  EXPECT_EQ(c->LivenessOf("a"), Liveness::kUp);
  EXPECT_EQ(c->stats().convictions, 0u);              // never up, so never convicted
  EXPECT_EQ(a->LivenessOf("dead"), Liveness::kDown);  // a saw it up, then convicted it
  EXPECT_EQ(a->stats().convictions, 1u);
}

TEST(GossipTest, DeltaBudgetSendsMostBehindFirstAndStillConverges) {
  GossipHarness h;
  GossipOptions small = DefaultGossipOptions();
  small.max_delta_bytes = 200;
  Gossiper* hub = h.Add("hub", {}, 1, "prod", small);
  for (int i = 0; i < 12; ++i) {
    Gossiper* g = h.Add("n" + std::to_string(i), {"hub"}, 1, "prod", small);
    g->SetApplicationState("tablets", std::string(40, 'x'));
  }
  for (int i = 0; i < 10; ++i) h.Round(200 * kMs);
  Gossiper* late = h.Add("late", {"hub"}, 1, "prod", small);
  late->Tick();
  auto syn = h.TakeSent("late");
  ASSERT_EQ(syn.size(), 1u);
  hub->HandleMessage(EncodeGossipMessage(syn[0].second));
  auto ack = h.TakeSent("hub");
  ASSERT_EQ(ack.size(), 1u);
  // 13 whole states do not fit in 200 bytes: only some travel now.
  EXPECT_GE(ack[0].second.deltas.size(), 1u);
  EXPECT_LT(ack[0].second.deltas.size(), 13u);
  size_t bytes = 0;
  for (const auto& d : ack[0].second.deltas) bytes += EncodedDeltaSize(d);
  EXPECT_LE(bytes, 200u);
  late->HandleMessage(EncodeGossipMessage(ack[0].second));
  h.Pump();
  for (int i = 0; i < 40 && late->KnownEndpoints() < 14; ++i) h.Round(200 * kMs);
  EXPECT_EQ(late->KnownEndpoints(), 14u);
}

TEST(GossipTest, OwnStateFromPeersIsIgnored) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {});
  GossipMessage m;
  m.type = GossipMessageType::kAck2;
  m.cluster_name = "prod";
  m.sender = "x";
  EndpointDelta d;
  d.endpoint = "a";
  d.generation = 99;  // newer than a's own: somebody else uses this id
  d.heartbeat_version = 5;
  m.deltas.push_back(d);
  a->HandleMessage(EncodeGossipMessage(m));
  EXPECT_EQ(a->ViewOf("a")->state.generation, 1);
}

// Issue 9: a stopped node showed "up normal" until phi convicted it (about 2 s) and never
// "leaving". An announced shutdown is down everywhere at once, first- or second-hand.
TEST(GossipTest, AnnouncedShutdownIsDownAtOnceWithoutWaitingForPhi) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  Gossiper* b = h.Add("b", {"a"});
  Gossiper* c = h.Add("c", {"a"});
  for (int i = 0; i < 30; ++i) h.Round(200 * kMs);
  ASSERT_EQ(a->LivenessOf("c"), Liveness::kUp);
  ASSERT_EQ(b->LivenessOf("c"), Liveness::kUp);

  h.Pause("b");  // b misses the announcement and must learn it second-hand
  c->AnnounceShutdown();
  EXPECT_TRUE(c->shut_down());
  h.Pump();  // no time passes: the push alone does it
  EXPECT_EQ(a->LivenessOf("c"), Liveness::kDown);
  EXPECT_EQ(*a->ViewOf("c")->state.Find(kStatusKey), kStatusShutdown);
  EXPECT_LT(a->ViewOf("c")->phi, a->options().suspect_phi);
  h.Resume("b");
  int rounds = 0;
  for (; rounds < 10 && b->LivenessOf("c") != Liveness::kDown; ++rounds) h.Round(200 * kMs);
  EXPECT_LE(rounds, 2) << "b learned of the shutdown through a within a round or two";

  // c is silent now (its Tick and receiver do nothing), and stays down with no conviction.
  const uint64_t sent = c->stats().messages_sent;
  for (int i = 0; i < 30; ++i) h.Round(200 * kMs);
  EXPECT_EQ(c->stats().messages_sent, sent);
  EXPECT_EQ(a->LivenessOf("c"), Liveness::kDown);
  EXPECT_EQ(a->stats().convictions, 0u);
  EXPECT_EQ(b->stats().convictions, 0u);

  // A restart (new generation) is up again.
  h.Remove("c");
  h.Add("c", {"a"}, /*generation=*/2);
  for (int i = 0; i < 5 && a->LivenessOf("c") != Liveness::kUp; ++i) h.Round(200 * kMs);
  EXPECT_EQ(a->LivenessOf("c"), Liveness::kUp);
  EXPECT_EQ(a->ViewOf("c")->state.Find(kStatusKey), nullptr);
}

// Issue 9: a dead endpoint stayed in every view forever. RemoveEndpoint forgets it everywhere.
TEST(GossipTest, ARemovedEndpointIsForgottenEverywhereUntilItRestarts) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {"b"});
  Gossiper* b = h.Add("b", {"a"});
  h.Add("c", {"a"}, /*generation=*/7);
  for (int i = 0; i < 20; ++i) h.Round(200 * kMs);
  EXPECT_EQ(a->RemoveEndpoint("c").code(), absl::StatusCode::kFailedPrecondition);  // up
  EXPECT_EQ(a->RemoveEndpoint("a").code(), absl::StatusCode::kInvalidArgument);     // itself
  EXPECT_EQ(a->RemoveEndpoint("zz").code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Known(b), ElementsAre("a", "b", "c"));

  h.Remove("c");  // crashed
  for (int i = 0; i < 40 && a->LivenessOf("c") != Liveness::kDown; ++i) h.Round(200 * kMs);
  ASSERT_EQ(a->LivenessOf("c"), Liveness::kDown);
  ASSERT_TRUE(a->RemoveEndpoint("c").ok());
  EXPECT_THAT(Known(a), ElementsAre("a", "b"));
  EXPECT_EQ(a->RemoveEndpoint("c").code(), absl::StatusCode::kNotFound);
  for (int i = 0; i < 3; ++i) h.Round(200 * kMs);
  EXPECT_THAT(Known(b), ElementsAre("a", "b"));
  EXPECT_EQ(b->KnownEndpoints(), 2u);
  EXPECT_FALSE(b->LivenessOf("c").has_value());

  // A node joining later does not learn it either, and nobody gossips to it.
  Gossiper* d = h.Add("d", {"b"});
  for (int i = 0; i < 5; ++i) h.Round(200 * kMs);
  EXPECT_THAT(Known(d), ElementsAre("a", "b", "d"));

  // c restarted (a new generation, above the tombstone's): known and up again.
  h.Add("c", {"a"}, /*generation=*/20);
  for (int i = 0; i < 10 && (b->LivenessOf("c") != Liveness::kUp || Known(d).size() < 4); ++i) {
    h.Round(200 * kMs);
  }
  EXPECT_EQ(b->LivenessOf("c"), Liveness::kUp);
  EXPECT_THAT(Known(d), ElementsAre("a", "b", "c", "d"));
}

// Issue 9: a node started without the cluster's lock service joined its gossip as
// "unregistered". States carrying another cluster_id are refused on both sides.
TEST(GossipTest, StatesOfNodesUsingAnotherLockServiceAreRefused) {
  GossipHarness h;
  Gossiper* a = h.Add("a", {});
  Gossiper* b = h.Add("b", {"a"});
  Gossiper* c = h.Add("c", {"a"});
  for (Gossiper* g : {a, b}) {
    g->SetApplicationState(kClusterIdKey, "id-etcd");
    g->SetApplicationState(kLockServiceKey, "etcd://127.0.0.1:2379");
  }
  c->SetApplicationState(kClusterIdKey, "id-embedded");
  c->SetApplicationState(kLockServiceKey, "embedded");
  for (int i = 0; i < 10; ++i) h.Round(200 * kMs);
  EXPECT_THAT(Known(a), ElementsAre("a", "b"));
  EXPECT_THAT(Known(b), ElementsAre("a", "b"));
  EXPECT_THAT(Known(c), ElementsAre("c"));
  EXPECT_GT(a->stats().refused_cluster_id, 0u);
  const auto refusals = c->ClusterIdRefusals();
  ASSERT_EQ(refusals.count("a"), 1u);
  EXPECT_EQ(refusals.at("a").lock_service, "etcd://127.0.0.1:2379");
  EXPECT_THAT(refusals.at("a").why, HasSubstr("this node uses embedded"));
}

TEST(GossipTest, ValidatesOptions) {
  GossipOptions o = DefaultGossipOptions();
  o.self = "";
  EXPECT_THAT(std::string(ValidateGossipOptions(o).message()), HasSubstr("self must not be empty"));
  o.self = "a";
  EXPECT_TRUE(ValidateGossipOptions(o).ok());
  o.interval_ms = 0;
  EXPECT_THAT(std::string(ValidateGossipOptions(o).message()),
              HasSubstr("interval_ms must be > 0"));
  o = DefaultGossipOptions();
  o.self = "a";
  o.suspect_phi = 9;
  EXPECT_THAT(std::string(ValidateGossipOptions(o).message()),
              HasSubstr("suspect_phi <= convict_phi"));
  o = DefaultGossipOptions();
  o.self = "a";
  o.detector.window_size = 0;
  EXPECT_THAT(std::string(ValidateGossipOptions(o).message()), HasSubstr("window_size"));
  ManualClock clock;
  Random r(1);
  QueueTransport t;
  EXPECT_FALSE(Gossiper::Create(o, 1, &clock, &r, &t).ok());
}

TEST(GossipTest, PaperAndDefaultSettingsDiffer) {
  GossipOptions paper = PaperGossipOptions();
  EXPECT_EQ(paper.interval_ms, 1000);
  EXPECT_EQ(paper.detector.model, PhiModel::kExponential);
  EXPECT_EQ(paper.convict_phi, 5);
  GossipOptions d = DefaultGossipOptions();
  EXPECT_LT(d.interval_ms, paper.interval_ms);
  d.self = paper.self = "a";
  EXPECT_TRUE(ValidateGossipOptions(d).ok());
  EXPECT_TRUE(ValidateGossipOptions(paper).ok());
}

}  // namespace
}  // namespace tessera::cluster
