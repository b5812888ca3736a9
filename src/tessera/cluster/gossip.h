// Gossip membership with integrated failure detection: one Gossiper per node (Cassandra §5.3).
//
// Each round (the owner calls Tick() every options.interval_ms) the node bumps its heartbeat,
// re-evaluates every peer's phi, and starts a SYN / ACK / ACK2 exchange (gossip_messages.h)
// with `fanout` random live peers, sometimes with an unreachable peer (so a healed partition or
// a restarted node is found again) and sometimes with a seed (so the cluster cannot split into
// islands that never talk); a node that knows no live peer gossips with a seed, which is how a
// new node joins. Anti-entropy is Scuttlebutt's: digests first, then only the missing deltas,
// in both directions, each message's deltas kept under `max_delta_bytes`.
//
// Failure detection: every node keeps a PhiAccrualDetector per peer, fed each time it learns
// that the peer's heartbeat advanced — directly from the peer or second-hand through any other
// node. Liveness as this node sees it:
//   kUp       phi < suspect_phi
//   kSuspect  suspect_phi <= phi < convict_phi
//   kDown     convicted (phi reached convict_phi), or learned second-hand and not yet seen to
//             advance its heartbeat. A down peer is marked up again the moment its heartbeat
//             advances (a new generation restarts its detector).
// Liveness changes are evaluated in Tick(), so conviction happens at round granularity, with two
// exceptions that take effect the moment the news arrives, first- or second-hand:
//   * a peer whose status is kStatusShutdown (it announced a clean stop: AnnounceShutdown) is
//     down at once and stays down, whatever its heartbeat does, until a new generation of it;
//   * a peer whose state is a kStatusRemoved tombstone (RemoveEndpoint, an operator's
//     `removenode`) is forgotten: absent from View(), Summaries() and KnownEndpoints(), never
//     gossiped to; the tombstone itself still travels in digests so every node learns it, and
//     a later generation of the endpoint (it was restarted) replaces it.
//
// Lock-service check: a node publishes kClusterIdKey (the id its lock service holds). A state
// whose kClusterIdKey differs from ours is refused (the endpoint is never added), logged once per
// endpoint and counted (stats().refused_cluster_id); ClusterIdRefusals() says who and why, so a
// joiner that named the wrong lock service can fail with a message saying what to pass.
//
// Every message carries the cluster name; one from another cluster is refused, logged once per
// sender and counted (stats().refused_cluster_name). Malformed bytes are counted and logged.
//
// Thread-safety: every method is safe to call from many threads (one mutex; it is never held
// while calling the transport or the liveness listener).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/synchronization/mutex.h"
#include "tessera/cluster/endpoint_state.h"
#include "tessera/cluster/gossip_messages.h"
#include "tessera/cluster/phi_accrual.h"
#include "tessera/cluster/transport.h"
#include "tessera/util/clock.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::cluster {

enum class Liveness { kUp, kSuspect, kDown };

const char* LivenessName(Liveness liveness);

struct GossipOptions {
  // --- behaviour ---
  std::string cluster_name;   // carried by every message; messages with another are refused
  NodeId self;                // this node's id (its gossip address); non-empty
  std::vector<NodeId> seeds;  // contact points for joining; may include self
  int64_t interval_ms = 200;  // the owner calls Tick() this often. > 0
  int fanout = 1;             // live peers per round. >= 1
  double convict_phi = 5;     // phi at which a peer is convicted (marked down). > 0
  double suspect_phi = 2.5;   // phi at which a peer is suspect. 0 < suspect <= convict
  PhiAccrualOptions detector;
  // Log each peer going down or coming back up (INFO). Simulations of many nodes turn it off.
  bool log_liveness_changes = true;

  // --- performance ---
  // Deltas in one ACK or ACK2 stop once they pass this many bytes (at least one always goes);
  // the rest follow in later rounds, most-behind endpoints first (Scuttlebutt's MTU).
  size_t max_delta_bytes = 64 * 1024;
};

// Tessera's defaults (see docs/cluster_membership.md for the measurements behind them), and
// the Cassandra paper's settings: exponential model, 1 s rounds, phi 5. The detector's
// time-based fields follow the interval.
GossipOptions DefaultGossipOptions();
GossipOptions PaperGossipOptions();
// Changes the round interval and rescales the detector fields that are tied to it.
void SetGossipInterval(GossipOptions* options, int64_t interval_ms);
Status ValidateGossipOptions(const GossipOptions& options);

// One endpoint as this node sees it.
struct PeerView {
  NodeId endpoint;
  bool is_self = false;
  Liveness liveness = Liveness::kUp;
  double phi = 0;
  EndpointState state;
};

// A light summary of one endpoint (no application-state copies), for harnesses and status pages.
struct PeerSummary {
  NodeId endpoint;
  int64_t generation = 0;
  int64_t max_app_version = 0;  // highest application-state version known
  Liveness liveness = Liveness::kUp;
};

struct GossipStats {
  uint64_t rounds = 0;
  uint64_t messages_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bytes_received = 0;
  uint64_t refused_cluster_name = 0;  // messages from another cluster
  uint64_t refused_cluster_id = 0;    // states of nodes that use another lock service
  uint64_t decode_errors = 0;         // malformed messages
  uint64_t ignored_deltas = 0;        // stale generation, or would break the prefix rule
  uint64_t convictions = 0;           // transitions to kDown by phi
  uint64_t recoveries = 0;            // convicted peers seen alive again
  // Highest phi computed in a round for a peer that was not already down: how close this node
  // came to convicting anyone (reset by ResetMaxPhi()).
  double max_phi_not_down = 0;
};

class Gossiper {
 public:
  // Called (without the gossiper's lock) on every liveness change this node's view makes.
  using LivenessListener =
      std::function<void(const NodeId& endpoint, Liveness from, Liveness to, double phi)>;

  // `generation` must grow across restarts of this node (its start time in seconds, kept on
  // disk in production). clock, random and transport must outlive the gossiper.
  static StatusOr<std::unique_ptr<Gossiper>> Create(GossipOptions options, int64_t generation,
                                                    Clock* clock, Random* random,
                                                    Transport* transport);
  ~Gossiper();  // detaches from the transport

  Gossiper(const Gossiper&) = delete;
  Gossiper& operator=(const Gossiper&) = delete;

  // REQUIRES: called before Start().
  void SetLivenessListener(LivenessListener listener);
  // Starts receiving messages. Rounds start with the owner's first Tick().
  void Start();
  // One gossip round (see the top of this file).
  void Tick();
  // Sets (or changes) one of this node's application states; it spreads with the next rounds.
  void SetApplicationState(std::string_view key, std::string_view value);

  // A clean stop: sets this node's status to kStatusShutdown and pushes its state (an ACK2) to
  // every live peer at once, so they mark it down without waiting for phi. Afterwards Tick() and
  // HandleMessage() do nothing: the node is silent. Idempotent.
  void AnnounceShutdown();
  bool shut_down() const;

  // Forgets a dead endpoint everywhere: replaces its state with a kStatusRemoved tombstone one
  // generation above the one known, which then spreads through gossip. NotFound if unknown (or
  // already removed), InvalidArgument for this node itself, FailedPrecondition unless this node
  // sees it down (a live node would only come back; a shut-down one is down).
  Status RemoveEndpoint(std::string_view endpoint);

  // Endpoints whose states were refused because they use another lock service.
  struct ClusterIdRefusal {
    std::string lock_service;  // the address the refused node was given ("?" if unknown)
    std::string why;           // a sentence naming both sides' lock services and cluster ids
  };
  std::map<NodeId, ClusterIdRefusal> ClusterIdRefusals() const;

  // This node's view of every endpoint it knows, itself included, sorted by endpoint.
  std::vector<PeerView> View() const;
  // One endpoint's view, or nullopt if unknown.
  std::optional<PeerView> ViewOf(std::string_view endpoint) const;
  // Cheaper probes for harnesses: the known generation of `endpoint` (nullopt if unknown), and
  // its liveness (nullopt if unknown).
  std::optional<int64_t> GenerationOf(std::string_view endpoint) const;
  std::optional<Liveness> LivenessOf(std::string_view endpoint) const;
  // The highest application-state version known for `endpoint` (0 if none or unknown).
  int64_t AppVersionOf(std::string_view endpoint) const;
  size_t KnownEndpoints() const;
  // Every endpoint known, self included, sorted by endpoint.
  std::vector<PeerSummary> Summaries() const;

  GossipStats stats() const;
  void ResetMaxPhi();
  const GossipOptions& options() const { return options_; }
  int64_t generation() const { return generation_; }

  // Entry point for the transport's receiver; public so tests can inject raw bytes.
  void HandleMessage(std::string_view bytes);

 private:
  struct Peer {
    explicit Peer(const PhiAccrualOptions& o) : detector(o) {}
    EndpointState state;
    // state.MaxVersion() and state.MaxAppVersion(), kept in step with every change of state
    // (they are read for every digest and delta).
    int64_t max_version = 0;
    int64_t max_app_version = 0;
    PhiAccrualDetector detector;
    Liveness liveness = Liveness::kDown;
    bool convicted = false;  // down because phi crossed convict_phi (not merely never seen up)
    bool shutdown = false;   // its status is kStatusShutdown: down until a new generation
    bool removed = false;    // a kStatusRemoved tombstone: hidden, never a gossip target
  };
  struct Outgoing {
    NodeId to;
    std::string bytes;
  };
  struct Transition {
    NodeId endpoint;
    Liveness from, to;
    double phi;
  };

  using EndpointMap = absl::btree_map<std::string, std::unique_ptr<Peer>, std::less<>>;

  Gossiper(GossipOptions options, int64_t generation, Clock* clock, Random* random,
           Transport* transport);
  // endpoints_.find(endpoint), faster when called with ascending endpoints and the same hint.
  EndpointMap::iterator FindFrom(EndpointMap::iterator* hint, std::string_view endpoint)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void HandleSyn(const GossipMessage& m, std::vector<Outgoing>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleAck(const GossipMessage& m, int64_t now, std::vector<Outgoing>* out,
                 std::vector<Transition>* transitions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyDeltas(const std::vector<EndpointDelta>& deltas, int64_t now,
                   std::vector<Transition>* transitions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends deltas (endpoint, from_version) to `out`, most-behind first, under the byte budget.
  struct DeltaCandidate {
    const std::string* endpoint;
    const Peer* peer;
    int64_t from_version;
  };
  void SelectDeltas(std::vector<DeltaCandidate>* candidates, std::vector<EndpointDelta>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckLiveness(int64_t now, std::vector<Transition>* transitions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a delta's kClusterIdKey (if it has one) differs from ours; records the refusal.
  bool RefuseClusterId(const EndpointDelta& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Re-reads peer's shutdown/removed flags from its status after a merge; marks it down if set.
  void UpdateStatusFlags(const std::string& endpoint, Peer* peer, int64_t now,
                         std::vector<Transition>* transitions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetLiveness(const std::string& endpoint, Peer* peer, Liveness to, double phi,
                   std::vector<Transition>* transitions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  GossipMessage NewMessage(GossipMessageType type) const;
  void Queue(const NodeId& to, const GossipMessage& m, std::vector<Outgoing>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Flush(std::vector<Outgoing>* out, std::vector<Transition>* transitions);
  PeerView MakeView(const std::string& endpoint, const Peer& peer, int64_t now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const GossipOptions options_;
  const int64_t generation_;
  Clock* const clock_;
  Transport* const transport_;
  std::vector<NodeId> seeds_;  // options_.seeds without self, deduplicated
  LivenessListener listener_;  // set before Start()

  mutable absl::Mutex mu_;
  Random* const random_ ABSL_PT_GUARDED_BY(mu_);
  int64_t version_counter_ ABSL_GUARDED_BY(mu_) = 0;
  // Every endpoint known, self included (self's detector is unused). A btree keeps the order
  // (digests and merge walks are sorted) and iterates fast; Peers are boxed so pointers to
  // them stay valid as the tree changes.
  EndpointMap endpoints_ ABSL_GUARDED_BY(mu_);
  Peer* self_ ABSL_GUARDED_BY(mu_) = nullptr;
  GossipStats stats_ ABSL_GUARDED_BY(mu_);
  std::set<std::string, std::less<>> refused_senders_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, ClusterIdRefusal> refused_cluster_ids_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;  // AnnounceShutdown() was called
};

}  // namespace tessera::cluster
