// A simulated network for whole nodes in one process (docs/simulation.md): each node attaches a
// Transport under its endpoint, and a message sent to an endpoint is delivered as a task on the
// Executor (a SimExecutor in a simulation) after latency + uniform jitter, or lost with
// probability `loss`. At delivery time a message is dropped if its sender and receiver are on
// different sides of a partition or the receiver is down or detached. Every random choice comes
// from the Random given at construction, so a simulation replays from its seed.
//
// The gossip simulator (testing/simulator.h) has the same network model over its own event queue.
//
// Thread-safety: every method may be called from any thread; deliveries run on the executor.
// A transport must be destroyed before the network.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/cluster/transport.h"
#include "tessera/util/executor.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::testing {

using cluster::NodeId;
using cluster::Transport;

struct NetworkOptions {
  double loss = 0;             // probability that one message is lost, in [0, 1]
  int64_t latency_us = 1000;   // fixed part of the one-way delay. >= 0
  int64_t jitter_us = 20'000;  // plus a uniform random part in [0, jitter_us]. >= 0
};

// InvalidArgument saying what is wrong ("need loss in [0, 1] ...", for the caller to prefix).
Status ValidateNetworkOptions(const NetworkOptions& options);

class SimNetwork {
 public:
  // REQUIRES: ValidateNetworkOptions(options).ok(). `executor` must outlive the network.
  SimNetwork(Executor* executor, Random random, NetworkOptions options);
  ~SimNetwork();

  // The transport of the node at `endpoint`; messages to that endpoint reach its receiver until
  // the transport is destroyed. AlreadyExists if another transport has the endpoint.
  StatusOr<std::unique_ptr<Transport>> Attach(const NodeId& endpoint);

  void SetOptions(NetworkOptions options);
  // `side_of[endpoint]` is that node's side; only nodes on the same side can talk. Endpoints
  // not listed are on side 0.
  void SetPartition(std::map<NodeId, int> side_of);
  void Heal();
  // A down node neither sends nor receives (a paused or unplugged machine).
  void SetDown(const NodeId& endpoint, bool down);

  // Whether `from` would find nothing at `to`: the two can talk, but no transport is attached
  // there (a crashed node; its host answers, its port refuses).
  bool Refuses(const NodeId& from, const NodeId& to) const;

  uint64_t messages_sent() const;
  uint64_t messages_lost() const;  // by `loss`, a partition or a down node
  uint64_t messages_delivered() const;

 private:
  class SimTransport;
  void Send(const NodeId& from, const NodeId& to, std::string bytes);
  void Deliver(const NodeId& from, const NodeId& to, const std::string& bytes);
  bool CanTalkLocked(const NodeId& from, const NodeId& to) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Detach(const NodeId& endpoint, SimTransport* transport);

  Executor* const executor_;
  mutable absl::Mutex mu_;
  Random random_ ABSL_GUARDED_BY(mu_);
  NetworkOptions options_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, SimTransport*> attached_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, int> side_of_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, bool> down_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t lost_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t delivered_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::testing
