// A deterministic cluster simulator: N gossiping nodes in one process, on simulated time.
//
// Time moves only through a discrete-event queue (message deliveries and gossip rounds, ordered
// by time and then by the order they were scheduled): no threads, no sleeping. Every random
// choice (message loss, delay, jitter, each node's gossip partner) comes from generators seeded
// from SimulatorOptions::seed, so a run is replayed exactly by running it again with that seed.
//
// The simulated network delivers each message after latency + uniform jitter, loses it with
// probability `loss`, and drops it at delivery time if sender and receiver are in different
// partition groups or the receiver is not running. Nodes can crash (their process and all its
// state vanish), restart (a new process with a higher generation, knowing only the seeds) and
// join (a new node id). Each node's rounds are spaced interval * (1 ± tick_jitter), starting at
// a random phase.
//
// Thread-safety: none; one thread drives it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cluster/gossip.h"
#include "tessera/testing/sim_network.h"
#include "tessera/util/clock.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::testing {

// Node i's id: a realistic gossip address, "10.0.0.17:7000", so that byte counts are honest.
cluster::NodeId SimNodeId(int index);

struct SimulatorOptions {
  int nodes = 10;  // started at time 0, named SimNodeId(0), SimNodeId(1), ...
  int seeds = 3;   // nodes 0 .. seeds-1 are every node's seeds. >= 1
  uint64_t seed = 1;
  // Template for every node: self and seeds are filled in; cluster_name is used as is.
  cluster::GossipOptions gossip = cluster::DefaultGossipOptions();
  NetworkOptions network;
  double tick_jitter = 0.05;  // each round interval varies by up to this fraction, in [0, 1)
};

class Simulator {
 public:
  struct LivenessEvent {
    int64_t at_us;  // simulated time since the start
    int observer;
    cluster::NodeId endpoint;
    cluster::Liveness from, to;
    double phi;
  };

  static StatusOr<std::unique_ptr<Simulator>> Create(SimulatorOptions options);
  ~Simulator();

  // --- the cluster ---
  int size() const { return static_cast<int>(nodes_.size()); }  // nodes ever created
  const cluster::NodeId& IdOf(int node) const { return nodes_[node].id; }
  bool IsRunning(int node) const { return nodes_[node].gossiper != nullptr; }
  // The node's gossiper, or nullptr while it is crashed. Valid until Crash/Restart of the node.
  cluster::Gossiper* node(int node) { return nodes_[node].gossiper.get(); }
  const cluster::Gossiper* node(int node) const { return nodes_[node].gossiper.get(); }
  std::vector<int> RunningNodes() const;

  // A new node joins (through the seeds). `cluster_name` overrides the template's, for testing
  // refusal. Returns its index.
  StatusOr<int> AddNode(std::optional<std::string> cluster_name = std::nullopt);
  void Crash(int node);
  // REQUIRES: !IsRunning(node).
  Status Restart(int node);

  // --- the network ---
  // `group_of[i]` is node i's side; only nodes on the same side can talk. Nodes beyond the
  // vector's end are in group 0.
  void SetPartition(std::vector<int> group_of);
  void Heal() { group_of_.clear(); }
  void SetLoss(double loss) { options_.network.loss = loss; }

  // --- time ---
  int64_t now_us() const { return now_us_; }  // simulated time since the start
  // Runs every event due up to now + duration, then sets the time to that instant.
  void RunFor(int64_t duration_us);
  void RunUntil(int64_t t_us);

  // --- observation ---
  const std::vector<LivenessEvent>& events() const { return events_; }
  void ClearEvents() { events_.clear(); }
  uint64_t bytes_sent() const { return bytes_sent_; }  // by every node since the start
  uint64_t messages_sent() const { return messages_sent_; }
  uint64_t messages_lost() const { return messages_lost_; }

  // Every running node knows every running node at its current generation and application
  // state version, and sees none of them down.
  bool Converged() const;
  // Every running node other than `node` knows `node` at its current generation; with
  // `and_up`, also does not see it down.
  bool AllKnow(int node, bool and_up) const;

  const SimulatorOptions& options() const { return options_; }

 private:
  class SimTransport;
  struct SimNode {
    cluster::NodeId id;
    std::string cluster_name;
    uint64_t incarnation = 0;  // bumps on every start, so stale rounds are ignored
    int64_t last_generation = -1;
    std::unique_ptr<Random> random;
    std::unique_ptr<SimTransport> transport;
    std::unique_ptr<cluster::Gossiper> gossiper;
  };
  enum class EventKind { kTick, kDeliver };
  struct Event {
    int64_t at_us = 0;
    uint64_t seq = 0;
    EventKind kind = EventKind::kTick;
    int node = 0;
    uint64_t incarnation = 0;  // kTick: the incarnation that scheduled it
    int from = -1;             // kDeliver
    std::string bytes;         // kDeliver
  };

  explicit Simulator(SimulatorOptions options);
  Status StartNode(int node);
  void ScheduleTick(int node, int64_t delay_us);
  void Push(Event e);
  void Send(int from, const cluster::NodeId& to, std::string bytes);
  int GroupOf(int node) const;
  int64_t RoundJitteredUs();

  SimulatorOptions options_;
  ManualClock clock_;
  const int64_t start_us_;
  Random net_random_;
  int64_t now_us_ = 0;
  uint64_t next_seq_ = 0;
  std::vector<Event> queue_;  // a min-heap on (at_us, seq)
  std::vector<SimNode> nodes_;
  std::map<cluster::NodeId, int, std::less<>> index_of_;
  std::vector<int> group_of_;
  std::vector<LivenessEvent> events_;
  uint64_t bytes_sent_ = 0;
  uint64_t messages_sent_ = 0;
  uint64_t messages_lost_ = 0;
};

}  // namespace tessera::testing
