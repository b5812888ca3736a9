// How endpoints leave a Gossiper's view (gossip.h): a clean stop announced by the node itself
// (Cassandra's shutdown state), an operator's removal (a tombstone one generation up), and the
// refusal of nodes that keep their state in another lock service (another cluster_id). Split
// from gossip.cc, which holds the rounds, the exchanges and the merge.
#include <utility>

#include "tessera/cluster/gossip.h"
#include "tessera/util/logging.h"

namespace tessera::cluster {

bool Gossiper::RefuseClusterId(const EndpointDelta& d) {
  auto theirs = d.app_states.find(kClusterIdKey);
  if (theirs == d.app_states.end()) return false;
  const std::string* ours = self_->state.Find(kClusterIdKey);
  if (ours == nullptr || *ours == theirs->second.value) return false;
  stats_.refused_cluster_id++;
  auto lock_service = d.app_states.find(kLockServiceKey);
  const std::string* our_lock_service = self_->state.Find(kLockServiceKey);
  ClusterIdRefusal refusal;
  refusal.lock_service =
      lock_service != d.app_states.end() ? lock_service->second.value : std::string("?");
  refusal.why = StrCat(d.endpoint, " uses the lock service ", refusal.lock_service,
                       " (cluster id ", theirs->second.value, "); this node uses ",
                       our_lock_service != nullptr ? *our_lock_service : "?", " (cluster id ",
                       *ours, ")");
  const std::string why = refusal.why;
  if (refused_cluster_ids_.insert_or_assign(d.endpoint, std::move(refusal)).second) {
    TLOG_WARN("gossip {}: refused a node's state: {}; every node of a cluster must name the "
              "same lock service: if {} belongs to this cluster, restart it with "
              "--lock-service {}",
              options_.self, why, d.endpoint,
              our_lock_service != nullptr ? *our_lock_service : "?");
  }
  return true;
}

void Gossiper::UpdateStatusFlags(const std::string& endpoint, Peer* peer, int64_t now,
                                 std::vector<Transition>* transitions) {
  const std::string* status = peer->state.Find(kStatusKey);
  const bool shutdown = status != nullptr && *status == kStatusShutdown;
  const bool removed = status != nullptr && *status == kStatusRemoved;
  if (options_.log_liveness_changes && shutdown && !peer->shutdown) {
    TLOG_INFO("gossip {}: {} announced its shutdown", options_.self, endpoint);
  }
  if (options_.log_liveness_changes && removed && !peer->removed) {
    TLOG_INFO("gossip {}: {} was removed from the cluster by an operator", options_.self,
              endpoint);
  }
  peer->shutdown = shutdown;
  peer->removed = removed;
  if (shutdown || removed) {
    peer->convicted = false;  // down by its own word, not by phi
    SetLiveness(endpoint, peer, Liveness::kDown, peer->detector.Phi(now), transitions);
  }
}

void Gossiper::AnnounceShutdown() {
  std::vector<Outgoing> out;
  std::vector<Transition> transitions;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    auto& v = self_->state.app_states[std::string(kStatusKey)];
    v.value = std::string(kStatusShutdown);
    v.version = ++version_counter_;
    self_->state.heartbeat_version = ++version_counter_;
    self_->max_version = self_->state.heartbeat_version;
    self_->max_app_version = v.version;
    // Our whole state, as an ACK2: every receiver merges it as it would any delta.
    GossipMessage ack2 = NewMessage(GossipMessageType::kAck2);
    ack2.deltas.push_back(MakeDelta(options_.self, self_->state, 0));
    for (const auto& [endpoint, peer] : endpoints_) {
      if (peer.get() == self_ || peer->removed || peer->liveness == Liveness::kDown) continue;
      Queue(endpoint, ack2, &out);
    }
    shut_down_ = true;
    TLOG_INFO("gossip {}: announced its shutdown to {} live peers", options_.self, out.size());
  }
  Flush(&out, &transitions);
}

bool Gossiper::shut_down() const {
  absl::MutexLock lock(&mu_);
  return shut_down_;
}

Status Gossiper::RemoveEndpoint(std::string_view endpoint) {
  absl::MutexLock lock(&mu_);
  if (endpoint == options_.self) {
    return absl::InvalidArgumentError(
        StrCat("node ", endpoint, " cannot remove itself; ask another node"));
  }
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end() || it->second->removed) {
    return absl::NotFoundError(StrCat("gossip knows no node ", endpoint));
  }
  Peer& peer = *it->second;
  if (peer.liveness != Liveness::kDown) {
    return absl::FailedPreconditionError(
        StrCat("node ", endpoint, " is ", LivenessName(peer.liveness), " (phi ",
               peer.detector.Phi(clock_->MonotonicMicros()),
               "); only a node that is down can be removed: stop it first"));
  }
  EndpointState tombstone;
  tombstone.generation = peer.state.generation + 1;
  tombstone.app_states[std::string(kStatusKey)] = VersionedValue{std::string(kStatusRemoved), 1};
  peer.state = std::move(tombstone);
  peer.max_version = 1;
  peer.max_app_version = 1;
  peer.detector.Reset();
  peer.removed = true;
  peer.shutdown = false;
  peer.convicted = false;
  TLOG_INFO("gossip {}: removed {} from the cluster (tombstone at generation {})", options_.self,
            endpoint, peer.state.generation);
  return absl::OkStatus();
}

std::map<NodeId, Gossiper::ClusterIdRefusal> Gossiper::ClusterIdRefusals() const {
  absl::MutexLock lock(&mu_);
  return refused_cluster_ids_;
}

}  // namespace tessera::cluster
