#include "tessera/testing/simulator.h"

#include <algorithm>
#include <utility>

namespace tessera::testing {

using cluster::Gossiper;
using cluster::GossipOptions;
using cluster::kDcKey;
using cluster::kLoadKey;
using cluster::kRackKey;
using cluster::kStatusKey;
using cluster::kStatusNormal;
using cluster::Liveness;
using cluster::NodeId;
using cluster::PeerSummary;
using cluster::Transport;
using cluster::ValidateGossipOptions;

namespace {

// Mixes the run's seed with a node's index and incarnation into that process's own seed.
uint64_t MixSeed(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool Later(const auto& a, const auto& b) {
  return a.at_us != b.at_us ? a.at_us > b.at_us : a.seq > b.seq;
}

}  // namespace

NodeId SimNodeId(int index) {
  return StrCat("10.", (index >> 16) & 255, ".", (index >> 8) & 255, ".", index & 255, ":7000");
}

class Simulator::SimTransport final : public Transport {
 public:
  SimTransport(Simulator* sim, int node) : sim_(sim), node_(node) {}
  void Send(const NodeId& to, std::string bytes) override {
    sim_->Send(node_, to, std::move(bytes));
  }
  void SetReceiver(Receiver receiver) override { receiver_ = std::move(receiver); }
  void Deliver(std::string_view bytes) {
    if (receiver_) receiver_(bytes);
  }

 private:
  Simulator* const sim_;
  const int node_;
  Receiver receiver_;
};

StatusOr<std::unique_ptr<Simulator>> Simulator::Create(SimulatorOptions options) {
  if (options.nodes < 1) {
    return absl::InvalidArgumentError(StrCat("simulator: nodes must be >= 1, not ", options.nodes));
  }
  if (options.seeds < 1) {
    return absl::InvalidArgumentError(StrCat("simulator: seeds must be >= 1, not ", options.seeds));
  }
  if (Status s = ValidateNetworkOptions(options.network); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("simulator: ", s.message()));
  }
  if (!(options.tick_jitter >= 0 && options.tick_jitter < 1)) {
    return absl::InvalidArgumentError(
        StrCat("simulator: tick_jitter must be in [0, 1), not ", options.tick_jitter));
  }
  GossipOptions probe = options.gossip;
  probe.self = SimNodeId(0);
  RETURN_IF_ERROR(ValidateGossipOptions(probe));
  std::unique_ptr<Simulator> sim(new Simulator(std::move(options)));
  for (int i = 0; i < sim->options_.nodes; ++i) {
    ASSIGN_OR_RETURN(int index, sim->AddNode());
    (void)index;
  }
  return sim;
}

Simulator::Simulator(SimulatorOptions options)
    : options_(std::move(options)),
      start_us_(clock_.MonotonicMicros()),
      net_random_(MixSeed(options_.seed, 0, 0)) {}

Simulator::~Simulator() {
  // Gossipers detach from their transports in their destructors: destroy them first.
  for (auto& n : nodes_) n.gossiper.reset();
}

std::vector<int> Simulator::RunningNodes() const {
  std::vector<int> out;
  for (int i = 0; i < size(); ++i) {
    if (IsRunning(i)) out.push_back(i);
  }
  return out;
}

StatusOr<int> Simulator::AddNode(std::optional<std::string> cluster_name) {
  const int index = size();
  SimNode n;
  n.id = SimNodeId(index);
  n.cluster_name = cluster_name ? *cluster_name : options_.gossip.cluster_name;
  nodes_.push_back(std::move(n));
  nodes_.back().transport = std::make_unique<SimTransport>(this, index);
  index_of_[nodes_.back().id] = index;
  RETURN_IF_ERROR(StartNode(index));
  return index;
}

Status Simulator::StartNode(int index) {
  SimNode& n = nodes_[index];
  n.incarnation++;
  // A restarted process takes a generation above its last one, as a node that keeps its start
  // time on disk does.
  const int64_t generation = std::max(clock_.NowMicros() / 1'000'000, n.last_generation + 1);
  n.last_generation = generation;
  n.random = std::make_unique<Random>(MixSeed(options_.seed, index + 1, n.incarnation));
  GossipOptions o = options_.gossip;
  o.self = n.id;
  o.cluster_name = n.cluster_name;
  o.log_liveness_changes = false;  // thousands of nodes' views: the events_ list records them
  o.seeds.clear();
  for (int s = 0; s < options_.seeds; ++s) o.seeds.push_back(SimNodeId(s));
  ASSIGN_OR_RETURN(n.gossiper, Gossiper::Create(std::move(o), generation, &clock_, n.random.get(),
                                                n.transport.get()));
  n.gossiper->SetLivenessListener(
      [this, index](const NodeId& endpoint, Liveness from, Liveness to, double phi) {
        events_.push_back(LivenessEvent{now_us_, index, endpoint, from, to, phi});
      });
  n.gossiper->SetApplicationState(kStatusKey, kStatusNormal);
  n.gossiper->SetApplicationState(kDcKey, "dc1");
  n.gossiper->SetApplicationState(kRackKey, StrCat("rack", index % 4));
  n.gossiper->SetApplicationState(kLoadKey, "0");
  n.gossiper->Start();
  // The first round at a random phase within one interval.
  const int64_t interval_us = options_.gossip.interval_ms * 1000;
  ScheduleTick(index, static_cast<int64_t>(n.random->Uniform(interval_us)) + 1);
  return absl::OkStatus();
}

void Simulator::Crash(int index) {
  SimNode& n = nodes_[index];
  n.gossiper.reset();
  n.transport->SetReceiver(nullptr);
  n.incarnation++;  // its scheduled rounds die with it
}

Status Simulator::Restart(int index) {
  if (IsRunning(index)) {
    return absl::FailedPreconditionError(StrCat("simulator: ", IdOf(index), " is running"));
  }
  return StartNode(index);
}

void Simulator::SetPartition(std::vector<int> group_of) { group_of_ = std::move(group_of); }

int Simulator::GroupOf(int index) const {
  return index < static_cast<int>(group_of_.size()) ? group_of_[index] : 0;
}

int64_t Simulator::RoundJitteredUs() {
  const int64_t interval_us = options_.gossip.interval_ms * 1000;
  const int64_t spread = static_cast<int64_t>(interval_us * options_.tick_jitter);
  if (spread <= 0) return interval_us;
  return interval_us - spread + static_cast<int64_t>(net_random_.Uniform(2 * spread + 1));
}

void Simulator::ScheduleTick(int index, int64_t delay_us) {
  Event e;
  e.at_us = now_us_ + delay_us;
  e.kind = EventKind::kTick;
  e.node = index;
  e.incarnation = nodes_[index].incarnation;
  e.from = -1;
  Push(std::move(e));
}

void Simulator::Push(Event e) {
  e.seq = next_seq_++;
  queue_.push_back(std::move(e));
  std::push_heap(queue_.begin(), queue_.end(),
                 [](const Event& a, const Event& b) { return Later(a, b); });
}

void Simulator::Send(int from, const NodeId& to, std::string bytes) {
  bytes_sent_ += bytes.size();
  messages_sent_++;
  auto it = index_of_.find(to);
  if (it == index_of_.end()) return;  // nobody has that address
  if (options_.network.loss > 0 &&
      static_cast<double>(net_random_.Next64() >> 11) * 0x1.0p-53 < options_.network.loss) {
    messages_lost_++;
    return;
  }
  Event e;
  e.at_us = now_us_ + options_.network.latency_us +
            static_cast<int64_t>(net_random_.Uniform(options_.network.jitter_us + 1));
  e.kind = EventKind::kDeliver;
  e.node = it->second;
  e.incarnation = 0;
  e.from = from;
  e.bytes = std::move(bytes);
  Push(std::move(e));
}

void Simulator::RunFor(int64_t duration_us) { RunUntil(now_us_ + duration_us); }

void Simulator::RunUntil(int64_t t_us) {
  auto later = [](const Event& a, const Event& b) { return Later(a, b); };
  while (!queue_.empty() && queue_.front().at_us <= t_us) {
    std::pop_heap(queue_.begin(), queue_.end(), later);
    Event e = std::move(queue_.back());
    queue_.pop_back();
    now_us_ = e.at_us;
    clock_.Set(start_us_ + now_us_);
    SimNode& n = nodes_[e.node];
    if (e.kind == EventKind::kTick) {
      if (e.incarnation != n.incarnation || !n.gossiper) continue;
      n.gossiper->Tick();
      ScheduleTick(e.node, RoundJitteredUs());
    } else {
      if (!n.gossiper || GroupOf(e.from) != GroupOf(e.node)) continue;
      n.transport->Deliver(e.bytes);
    }
  }
  if (t_us > now_us_) {
    now_us_ = t_us;
    clock_.Set(start_us_ + now_us_);
  }
}

bool Simulator::Converged() const {
  // The truth: each running node's own generation and application-state version.
  std::vector<PeerSummary> truth;
  for (int i : RunningNodes()) {
    truth.push_back(PeerSummary{IdOf(i), nodes_[i].gossiper->generation(),
                                nodes_[i].gossiper->AppVersionOf(IdOf(i)), Liveness::kUp});
  }
  std::sort(truth.begin(), truth.end(),
            [](const PeerSummary& a, const PeerSummary& b) { return a.endpoint < b.endpoint; });
  for (int i : RunningNodes()) {
    const std::vector<PeerSummary> view = nodes_[i].gossiper->Summaries();  // sorted
    size_t v = 0;
    for (const auto& t : truth) {
      while (v < view.size() && view[v].endpoint < t.endpoint) ++v;
      if (v == view.size() || view[v].endpoint != t.endpoint) return false;
      const PeerSummary& s = view[v];
      if (s.generation != t.generation || s.max_app_version < t.max_app_version ||
          s.liveness == Liveness::kDown) {
        return false;
      }
    }
  }
  return true;
}

bool Simulator::AllKnow(int target, bool and_up) const {
  if (!IsRunning(target)) return false;
  const int64_t generation = nodes_[target].gossiper->generation();
  for (int i : RunningNodes()) {
    if (i == target) continue;
    const Gossiper* g = nodes_[i].gossiper.get();
    if (g->GenerationOf(IdOf(target)) != generation) return false;
    if (and_up && g->LivenessOf(IdOf(target)) == Liveness::kDown) return false;
  }
  return true;
}

}  // namespace tessera::testing
