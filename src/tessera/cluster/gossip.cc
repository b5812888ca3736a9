#include "tessera/cluster/gossip.h"

#include <algorithm>
#include <utility>

#include "tessera/util/logging.h"

namespace tessera::cluster {

StatusOr<std::unique_ptr<Gossiper>> Gossiper::Create(GossipOptions options, int64_t generation,
                                                     Clock* clock, Random* random,
                                                     Transport* transport) {
  RETURN_IF_ERROR(ValidateGossipOptions(options));
  if (generation < 0) {
    return absl::InvalidArgumentError(StrCat("gossip: generation must be >= 0, not ", generation));
  }
  return std::unique_ptr<Gossiper>(
      new Gossiper(std::move(options), generation, clock, random, transport));
}

Gossiper::Gossiper(GossipOptions options, int64_t generation, Clock* clock, Random* random,
                   Transport* transport)
    : options_(std::move(options)),
      generation_(generation),
      clock_(clock),
      transport_(transport),
      random_(random) {
  for (const auto& s : options_.seeds) {
    if (s != options_.self && std::find(seeds_.begin(), seeds_.end(), s) == seeds_.end()) {
      seeds_.push_back(s);
    }
  }
  absl::MutexLock lock(&mu_);
  auto peer = std::make_unique<Peer>(options_.detector);
  self_ = peer.get();
  endpoints_.emplace(options_.self, std::move(peer));
  self_->state.generation = generation_;
  self_->liveness = Liveness::kUp;
}

Gossiper::~Gossiper() { transport_->SetReceiver(nullptr); }

void Gossiper::SetLivenessListener(LivenessListener listener) { listener_ = std::move(listener); }

void Gossiper::Start() {
  transport_->SetReceiver([this](std::string_view bytes) { HandleMessage(bytes); });
}

void Gossiper::SetApplicationState(std::string_view key, std::string_view value) {
  absl::MutexLock lock(&mu_);
  auto& v = self_->state.app_states[std::string(key)];
  v.value = std::string(value);
  v.version = ++version_counter_;
  self_->max_version = v.version;
  self_->max_app_version = v.version;
}

GossipMessage Gossiper::NewMessage(GossipMessageType type) const {
  GossipMessage m;
  m.type = type;
  m.cluster_name = options_.cluster_name;
  m.sender = options_.self;
  return m;
}

void Gossiper::Queue(const NodeId& to, const GossipMessage& m, std::vector<Outgoing>* out) {
  std::string bytes = EncodeGossipMessage(m);
  stats_.messages_sent++;
  stats_.bytes_sent += bytes.size();
  out->push_back(Outgoing{to, std::move(bytes)});
}

void Gossiper::Flush(std::vector<Outgoing>* out, std::vector<Transition>* transitions) {
  for (auto& o : *out) transport_->Send(o.to, std::move(o.bytes));
  if (listener_) {
    for (const auto& t : *transitions) listener_(t.endpoint, t.from, t.to, t.phi);
  }
}

void Gossiper::Tick() {
  std::vector<Outgoing> out;
  std::vector<Transition> transitions;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    const int64_t now = clock_->MonotonicMicros();
    stats_.rounds++;
    self_->state.heartbeat_version = ++version_counter_;
    self_->max_version = self_->state.heartbeat_version;
    CheckLiveness(now, &transitions);

    std::vector<const std::string*> live, unreachable;
    GossipMessage syn = NewMessage(GossipMessageType::kSyn);
    syn.digests.reserve(endpoints_.size());
    for (const auto& [endpoint, peer] : endpoints_) {
      syn.digests.push_back(GossipDigest{endpoint, peer->state.generation, peer->max_version});
      if (peer.get() == self_ || peer->removed) continue;
      (peer->liveness == Liveness::kDown ? unreachable : live).push_back(&endpoint);
    }
    const std::string bytes = EncodeGossipMessage(syn);
    std::vector<std::string> targets;
    auto send = [&](const std::string& to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (std::find(targets.begin(), targets.end(), to) != targets.end()) return;
      targets.push_back(to);
      stats_.messages_sent++;
      stats_.bytes_sent += bytes.size();
      out.push_back(Outgoing{to, bytes});
    };
    auto is_seed = [&](const std::string& n) {
      return std::find(seeds_.begin(), seeds_.end(), n) != seeds_.end();
    };
    // 1. `fanout` distinct random live peers.
    bool gossiped_to_seed = false;
    for (int i = 0; i < options_.fanout && !live.empty(); ++i) {
      const size_t k = random_->Uniform(live.size());
      send(*live[k]);
      gossiped_to_seed |= is_seed(*live[k]);
      live[k] = live.back();
      live.pop_back();
    }
    const size_t live_count = live.size() + targets.size();
    // 2. Now and then an unreachable peer, so a healed partition or a returning node is found:
    //    with probability unreachable / (live + 1), as Cassandra does.
    if (!unreachable.empty() && random_->Uniform(live_count + 1) < unreachable.size()) {
      send(*unreachable[random_->Uniform(unreachable.size())]);
    }
    // 3. A seed: always when no peer is live (joining, or cut off), otherwise now and then so
    //    that the cluster cannot stay split in islands (probability seeds / known peers). A
    //    seed we know nothing about yet is addressed by name.
    if (!seeds_.empty() && !gossiped_to_seed) {
      const size_t known = live_count + unreachable.size();
      if (live_count == 0 || random_->Uniform(known) < seeds_.size()) {
        send(seeds_[random_->Uniform(seeds_.size())]);
      }
    }
  }
  Flush(&out, &transitions);
}

void Gossiper::CheckLiveness(int64_t now, std::vector<Transition>* transitions) {
  for (auto& [endpoint, box] : endpoints_) {
    Peer& peer = *box;
    if (&peer == self_ || peer.liveness == Liveness::kDown) continue;
    const double phi = peer.detector.Phi(now);
    stats_.max_phi_not_down = std::max(stats_.max_phi_not_down, phi);
    Liveness to = phi >= options_.convict_phi   ? Liveness::kDown
                  : phi >= options_.suspect_phi ? Liveness::kSuspect
                                                : Liveness::kUp;
    if (to == Liveness::kDown) {
      stats_.convictions++;
      peer.convicted = true;
    }
    SetLiveness(endpoint, &peer, to, phi, transitions);
  }
}

void Gossiper::SetLiveness(const std::string& endpoint, Peer* peer, Liveness to, double phi,
                           std::vector<Transition>* transitions) {
  if (peer->liveness == to) return;
  transitions->push_back(Transition{endpoint, peer->liveness, to, phi});
  if (!options_.log_liveness_changes) {
    // Silent: the listener still sees every change.
  } else if (to == Liveness::kDown) {
    TLOG_INFO("gossip {}: {} is down (phi {:.2f})", options_.self, endpoint, phi);
  } else if (peer->liveness == Liveness::kDown) {
    TLOG_INFO("gossip {}: {} is up", options_.self, endpoint);
  }
  peer->liveness = to;
}

void Gossiper::HandleMessage(std::string_view bytes) {
  std::vector<Outgoing> out;
  std::vector<Transition> transitions;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    stats_.messages_received++;
    stats_.bytes_received += bytes.size();
    StatusOr<GossipMessage> m = DecodeGossipMessage(bytes);
    if (!m.ok()) {
      stats_.decode_errors++;
      TLOG_WARN("gossip {}: dropped a message: {}", options_.self, m.status());
      return;
    }
    if (m->cluster_name != options_.cluster_name) {
      stats_.refused_cluster_name++;
      if (refused_senders_.insert(m->sender).second) {
        TLOG_WARN("gossip {}: refused {} from {}: it belongs to cluster '{}', not '{}'",
                  options_.self, GossipMessageTypeName(m->type), m->sender, m->cluster_name,
                  options_.cluster_name);
      }
      return;
    }
    if (m->sender == options_.self) return;
    const int64_t now = clock_->MonotonicMicros();
    switch (m->type) {
      case GossipMessageType::kSyn:
        HandleSyn(*m, &out);
        break;
      case GossipMessageType::kAck:
        HandleAck(*m, now, &out, &transitions);
        break;
      case GossipMessageType::kAck2:
        ApplyDeltas(m->deltas, now, &transitions);
        break;
    }
  }
  Flush(&out, &transitions);
}

void Gossiper::HandleSyn(const GossipMessage& syn, std::vector<Outgoing>* out) {
  GossipMessage ack = NewMessage(GossipMessageType::kAck);
  std::vector<DeltaCandidate> candidates;
  // Walk the sender's digests and our endpoints together, both sorted by endpoint.
  std::vector<const GossipDigest*> digests;
  digests.reserve(syn.digests.size());
  for (const auto& d : syn.digests) digests.push_back(&d);
  auto by_endpoint = [](const GossipDigest* a, const GossipDigest* b) {
    return a->endpoint < b->endpoint;
  };
  // Senders list digests in order; sort only when one did not.
  if (!std::is_sorted(digests.begin(), digests.end(), by_endpoint)) {
    std::sort(digests.begin(), digests.end(), by_endpoint);
  }
  auto local = endpoints_.begin();
  for (size_t i = 0; i < digests.size(); ++i) {
    const GossipDigest& d = *digests[i];
    if (i > 0 && digests[i - 1]->endpoint == d.endpoint) continue;  // a repeated digest
    // Endpoints we know and the sender did not list: it is missing them whole.
    for (; local != endpoints_.end() && local->first < d.endpoint; ++local) {
      candidates.push_back(DeltaCandidate{&local->first, local->second.get(), 0});
    }
    if (local == endpoints_.end() || local->first != d.endpoint) {
      ack.digests.push_back(GossipDigest{d.endpoint, d.generation, 0});
      continue;
    }
    const Peer* mine = local->second.get();
    const int64_t my_max = mine->max_version;
    if (d.generation > mine->state.generation) {
      ack.digests.push_back(GossipDigest{d.endpoint, d.generation, 0});
    } else if (d.generation < mine->state.generation) {
      candidates.push_back(DeltaCandidate{&local->first, mine, 0});
    } else if (d.version > my_max) {
      ack.digests.push_back(GossipDigest{d.endpoint, d.generation, my_max});
    } else if (d.version < my_max) {
      candidates.push_back(DeltaCandidate{&local->first, mine, d.version});
    }
    ++local;
  }
  for (; local != endpoints_.end(); ++local) {
    candidates.push_back(DeltaCandidate{&local->first, local->second.get(), 0});
  }
  SelectDeltas(&candidates, &ack.deltas);
  if (!ack.digests.empty() || !ack.deltas.empty()) Queue(syn.sender, ack, out);
}

void Gossiper::HandleAck(const GossipMessage& ack, int64_t now, std::vector<Outgoing>* out,
                         std::vector<Transition>* transitions) {
  ApplyDeltas(ack.deltas, now, transitions);
  std::vector<DeltaCandidate> candidates;
  auto hint = endpoints_.begin();
  for (const auto& d : ack.digests) {
    auto it = FindFrom(&hint, d.endpoint);
    if (it == endpoints_.end()) continue;
    const Peer* mine = it->second.get();
    if (mine->state.generation > d.generation) {
      candidates.push_back(DeltaCandidate{&it->first, mine, 0});
    } else if (mine->state.generation == d.generation && mine->max_version > d.version) {
      candidates.push_back(DeltaCandidate{&it->first, mine, d.version});
    }
  }
  if (candidates.empty()) return;
  GossipMessage ack2 = NewMessage(GossipMessageType::kAck2);
  SelectDeltas(&candidates, &ack2.deltas);
  Queue(ack.sender, ack2, out);
}

void Gossiper::SelectDeltas(std::vector<DeltaCandidate>* candidates,
                            std::vector<EndpointDelta>* out) {
  std::vector<EndpointDelta> deltas;
  std::vector<size_t> sizes;
  deltas.reserve(candidates->size());
  sizes.reserve(candidates->size());
  size_t total = 0;
  for (const auto& c : *candidates) {
    EndpointDelta delta;
    if (c.peer->max_app_version > c.from_version) {
      delta = MakeDelta(*c.endpoint, c.peer->state, c.from_version);
    } else {  // only the heartbeat moved (the common case): skip the scan of app states
      delta.endpoint = *c.endpoint;
      delta.generation = c.peer->state.generation;
      delta.from_version = c.from_version;
      delta.heartbeat_version = c.peer->state.heartbeat_version;
    }
    sizes.push_back(EncodedDeltaSize(delta));
    total += sizes.back();
    deltas.push_back(std::move(delta));
  }
  if (total <= options_.max_delta_bytes) {
    // Everything fits: keep the candidates' (endpoint) order, which the receiver walks fast.
    for (auto& d : deltas) out->push_back(std::move(d));
    return;
  }
  // Over budget: most-behind first (Scuttlebutt's "scuttle-depth"), so a peer missing a whole
  // state gets it before heartbeat-only updates. Ties keep endpoint order (deterministic).
  std::vector<size_t> order(deltas.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& c = *candidates;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return c[a].peer->max_version - c[a].from_version > c[b].peer->max_version - c[b].from_version;
  });
  std::vector<bool> chosen(deltas.size(), false);
  size_t bytes = 0;
  for (size_t i : order) {
    if (bytes > 0 && bytes + sizes[i] > options_.max_delta_bytes) break;
    bytes += sizes[i];
    chosen[i] = true;
  }
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (chosen[i]) out->push_back(std::move(deltas[i]));
  }
}

Gossiper::EndpointMap::iterator Gossiper::FindFrom(EndpointMap::iterator* hint,
                                                   std::string_view endpoint) {
  // Lookups mostly come in ascending order (digests and deltas are sent sorted): try a few
  // steps forward from the last hit before descending the tree.
  auto it = *hint;
  for (int steps = 0; steps < 4 && it != endpoints_.end() && it->first < endpoint; ++steps) ++it;
  if (it == endpoints_.end() || it->first != endpoint) it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) *hint = it;
  return it;
}

void Gossiper::ApplyDeltas(const std::vector<EndpointDelta>& deltas, int64_t now,
                           std::vector<Transition>* transitions) {
  auto hint = endpoints_.begin();
  for (const auto& d : deltas) {
    if (d.endpoint == options_.self) {
      auto st = d.app_states.find(kStatusKey);
      if (d.generation > generation_ && st != d.app_states.end() &&
          st->second.value == kStatusRemoved) {
        TLOG_ERROR(
            "gossip {}: an operator removed this node from the cluster (tessera admin "
            "removenode); restart it to join again",
            options_.self);
      } else if (d.generation > generation_) {
        TLOG_WARN(
            "gossip {}: peers hold generation {} of this node, newer than ours ({}): "
            "is another process using this node id?",
            options_.self, d.generation, generation_);
      }
      continue;
    }
    if (RefuseClusterId(d)) continue;
    auto it = FindFrom(&hint, d.endpoint);
    if (it == endpoints_.end()) {
      std::optional<EndpointState> state = StateFromDelta(d);
      if (!state) {
        stats_.ignored_deltas++;
        continue;
      }
      auto box = std::make_unique<Peer>(options_.detector);
      Peer& peer = *box;
      peer.state = std::move(*state);
      peer.max_version = peer.state.MaxVersion();
      peer.max_app_version = peer.state.MaxAppVersion();
      hint = endpoints_.emplace(d.endpoint, std::move(box)).first;  // insertion moved iterators
      // Learned, perhaps second-hand: down until its heartbeat is seen to advance, so a node
      // that died long ago is never shown as up.
      peer.liveness = Liveness::kDown;
      peer.detector.Report(now);
      UpdateStatusFlags(d.endpoint, &peer, now, transitions);
      continue;
    }
    Peer& peer = *it->second;
    const MergeResult r = MergeDelta(d, &peer.state);
    if (r.outcome == MergeOutcome::kNewGeneration) {
      peer.max_version = peer.state.MaxVersion();
      peer.max_app_version = peer.state.MaxAppVersion();
    } else if (r.outcome == MergeOutcome::kUpdated) {
      // Versions only grow within a generation: the delta's maxima are enough.
      for (const auto& [key, v] : d.app_states) {
        peer.max_app_version = std::max(peer.max_app_version, v.version);
      }
      peer.max_version = std::max({peer.max_version, peer.max_app_version, d.heartbeat_version});
    }
    switch (r.outcome) {
      case MergeOutcome::kNewGeneration:
        // Restarted: its old arrival history says nothing about the new process.
        peer.detector.Reset();
        peer.detector.Report(now);
        break;
      case MergeOutcome::kUpdated:
        if (r.heartbeat_advanced) {
          peer.detector.Report(now);
          if (peer.liveness != Liveness::kUp && !peer.shutdown && !peer.removed) {
            if (peer.convicted) stats_.recoveries++;
            peer.convicted = false;
            SetLiveness(it->first, &peer, Liveness::kUp, peer.detector.Phi(now), transitions);
          }
        }
        break;
      case MergeOutcome::kUnchanged:
        break;
      case MergeOutcome::kStaleGeneration:
      case MergeOutcome::kRejectedHole:
        stats_.ignored_deltas++;
        break;
    }
    if (r.outcome == MergeOutcome::kNewGeneration || r.outcome == MergeOutcome::kUpdated) {
      UpdateStatusFlags(it->first, &peer, now, transitions);
    }
  }
}

PeerView Gossiper::MakeView(const std::string& endpoint, const Peer& peer, int64_t now) const {
  PeerView v;
  v.endpoint = endpoint;
  v.is_self = &peer == self_;
  v.liveness = v.is_self ? Liveness::kUp : peer.liveness;
  v.phi = v.is_self ? 0 : peer.detector.Phi(now);
  v.state = peer.state;
  return v;
}

std::vector<PeerView> Gossiper::View() const {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->MonotonicMicros();
  std::vector<PeerView> views;
  views.reserve(endpoints_.size());
  for (const auto& [endpoint, peer] : endpoints_) {
    if (!peer->removed) views.push_back(MakeView(endpoint, *peer, now));
  }
  return views;
}

std::optional<PeerView> Gossiper::ViewOf(std::string_view endpoint) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end() || it->second->removed) return std::nullopt;
  return MakeView(it->first, *it->second, clock_->MonotonicMicros());
}

std::optional<int64_t> Gossiper::GenerationOf(std::string_view endpoint) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end() || it->second->removed) return std::nullopt;
  return it->second->state.generation;
}

std::optional<Liveness> Gossiper::LivenessOf(std::string_view endpoint) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end() || it->second->removed) return std::nullopt;
  return it->second->liveness;
}

int64_t Gossiper::AppVersionOf(std::string_view endpoint) const {
  absl::MutexLock lock(&mu_);
  auto it = endpoints_.find(endpoint);
  return it == endpoints_.end() ? 0 : it->second->state.MaxAppVersion();
}

size_t Gossiper::KnownEndpoints() const {
  absl::MutexLock lock(&mu_);
  size_t known = 0;
  for (const auto& [endpoint, peer] : endpoints_) known += peer->removed ? 0 : 1;
  return known;
}

std::vector<PeerSummary> Gossiper::Summaries() const {
  absl::MutexLock lock(&mu_);
  std::vector<PeerSummary> out;
  out.reserve(endpoints_.size());
  for (const auto& [endpoint, peer] : endpoints_) {
    if (peer->removed) continue;
    out.push_back(PeerSummary{endpoint, peer->state.generation, peer->state.MaxAppVersion(),
                              peer.get() == self_ ? Liveness::kUp : peer->liveness});
  }
  return out;
}

GossipStats Gossiper::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void Gossiper::ResetMaxPhi() {
  absl::MutexLock lock(&mu_);
  stats_.max_phi_not_down = 0;
}

}  // namespace tessera::cluster
