#include "tessera/testing/scenarios.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

namespace tessera::testing {

using cluster::kLoadKey;
using cluster::Liveness;
using cluster::NodeId;

const char* ScenarioName(Scenario scenario) {
  switch (scenario) {
    case Scenario::kCrash:
      return "crash";
    case Scenario::kLoss:
      return "loss";
    case Scenario::kPartition:
      return "partition";
    case Scenario::kJoin:
      return "join";
  }
  return "unknown";
}

StatusOr<Scenario> ParseScenario(std::string_view name) {
  for (Scenario s : {Scenario::kCrash, Scenario::kLoss, Scenario::kPartition, Scenario::kJoin}) {
    if (name == ScenarioName(s)) return s;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown scenario '", name, "' (crash, loss, partition or join)"));
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, double(values.size()))) - 1;
  return values[index];
}

namespace {

class Runner {
 public:
  explicit Runner(const ScenarioOptions& o) : o_(o), interval_us_(o.gossip.interval_ms * 1000) {}

  StatusOr<ScenarioResult> Run() {
    if (o_.nodes < 2) {
      return absl::InvalidArgumentError(StrCat("scenario: nodes must be >= 2, not ", o_.nodes));
    }
    if (o_.measure_rounds < 1 || o_.converge_limit_rounds < 1 || o_.trials < 1 ||
        o_.duration_s < 1 || o_.partition_s < 1) {
      return absl::InvalidArgumentError(
          "scenario: measure_rounds, converge_limit_rounds, trials, duration_s and partition_s "
          "must all be >= 1");
    }
    SimulatorOptions so;
    so.nodes = o_.nodes;
    so.seeds = std::min(3, o_.nodes);
    so.seed = o_.seed;
    so.gossip = o_.gossip;
    if (so.gossip.cluster_name.empty()) so.gossip.cluster_name = "sim";
    so.network = o_.network;
    so.tick_jitter = o_.tick_jitter;
    ASSIGN_OR_RETURN(sim_, Simulator::Create(std::move(so)));

    r_.scenario = o_.scenario;
    r_.nodes = o_.nodes;
    r_.seed = o_.seed;
    r_.model = PhiModelName(o_.gossip.detector.model);
    r_.phi = o_.gossip.convict_phi;
    r_.interval_ms = o_.gossip.interval_ms;
    r_.loss = o_.network.loss;

    ASSIGN_OR_RETURN(r_.bootstrap_rounds,
                     RoundsUntil([&] { return sim_->Converged(); }, "initial convergence"));
    // Steady state: detectors fill their windows; traffic is measured.
    const uint64_t bytes0 = sim_->bytes_sent();
    const int64_t t0 = sim_->now_us();
    sim_->RunFor(int64_t{o_.measure_rounds} * interval_us_);
    SetBytesRate(bytes0, t0);

    switch (o_.scenario) {
      case Scenario::kCrash:
        RETURN_IF_ERROR(Crash());
        break;
      case Scenario::kLoss:
        Loss();
        break;
      case Scenario::kPartition:
        RETURN_IF_ERROR(Partition());
        break;
      case Scenario::kJoin:
        RETURN_IF_ERROR(Join());
        break;
    }
    r_.simulated_s = static_cast<double>(sim_->now_us()) / 1e6;
    return r_;
  }

 private:
  void SetBytesRate(uint64_t bytes0, int64_t t0) {
    const double seconds = static_cast<double>(sim_->now_us() - t0) / 1e6;
    const double nodes = static_cast<double>(sim_->RunningNodes().size());
    r_.gossip_bytes_per_node_per_s =
        static_cast<double>(sim_->bytes_sent() - bytes0) / nodes / seconds;
  }

  // Runs whole rounds until `done` holds; returns how many it took.
  StatusOr<int> RoundsUntil(const std::function<bool()>& done, std::string_view what) {
    for (int k = 1; k <= o_.converge_limit_rounds; ++k) {
      sim_->RunFor(interval_us_);
      if (done()) return k;
    }
    return absl::DeadlineExceededError(StrCat(what, " did not happen within ",
                                              o_.converge_limit_rounds, " rounds (", o_.nodes,
                                              " nodes, seed ", o_.seed, ")"));
  }

  Status Crash() {
    Random pick(o_.seed ^ 0x5eedc7a5ull);
    std::vector<double> detect_s;
    int missed = 0;
    for (int trial = 0; trial < o_.trials; ++trial) {
      const std::vector<int> running = sim_->RunningNodes();
      const int target = running[pick.Uniform(running.size())];
      const NodeId& target_id = sim_->IdOf(target);
      sim_->ClearEvents();
      const int64_t crashed_at = sim_->now_us();
      sim_->Crash(target);
      std::map<int, int64_t> convicted_at;  // observer -> time
      size_t seen = 0;
      const size_t observers = sim_->RunningNodes().size();
      for (int k = 0; k < o_.converge_limit_rounds && convicted_at.size() < observers; ++k) {
        sim_->RunFor(interval_us_);
        const auto& events = sim_->events();
        for (; seen < events.size(); ++seen) {
          const auto& e = events[seen];
          if (e.endpoint == target_id && e.to == Liveness::kDown) {
            convicted_at.try_emplace(e.observer, e.at_us);
          }
        }
      }
      for (const auto& [observer, at] : convicted_at) {
        detect_s.push_back(static_cast<double>(at - crashed_at) / 1e6);
      }
      missed += static_cast<int>(observers - convicted_at.size());
      RETURN_IF_ERROR(sim_->Restart(target));
      ASSIGN_OR_RETURN(int rounds,
                       RoundsUntil([&] { return sim_->Converged(); }, "convergence after restart"));
      (void)rounds;
      sim_->RunFor(20 * interval_us_);  // settle before the next trial
    }
    if (!detect_s.empty()) {
      r_.detect_median_s = Percentile(detect_s, 50);
      r_.detect_p99_s = Percentile(detect_s, 99);
      r_.detect_max_s = Percentile(detect_s, 100);
    }
    r_.missed_detections = missed;
    return absl::OkStatus();
  }

  void Loss() {
    sim_->ClearEvents();
    for (int i : sim_->RunningNodes()) sim_->node(i)->ResetMaxPhi();
    const uint64_t bytes0 = sim_->bytes_sent();
    const int64_t t0 = sim_->now_us();
    int64_t convictions = 0;
    // In slices, so the event list stays small.
    for (int64_t s = 0; s < o_.duration_s; s += 60) {
      sim_->RunFor(std::min<int64_t>(60, o_.duration_s - s) * 1'000'000);
      for (const auto& e : sim_->events()) convictions += e.to == Liveness::kDown ? 1 : 0;
      sim_->ClearEvents();
    }
    SetBytesRate(bytes0, t0);
    r_.false_convictions_per_hour =
        static_cast<double>(convictions) * 3600.0 / static_cast<double>(o_.duration_s);
    double max_phi = 0;
    for (int i : sim_->RunningNodes()) {
      max_phi = std::max(max_phi, sim_->node(i)->stats().max_phi_not_down);
    }
    r_.max_phi_live = max_phi;
  }

  Status Partition() {
    Random pick(o_.seed ^ 0x9a27171eull);
    std::vector<int> nodes = sim_->RunningNodes();
    for (size_t i = nodes.size(); i > 1; --i) std::swap(nodes[i - 1], nodes[pick.Uniform(i)]);
    std::vector<int> group_of(sim_->size(), 0);
    for (size_t i = 0; i < nodes.size() / 2; ++i) group_of[nodes[i]] = 1;
    sim_->SetPartition(group_of);
    sim_->RunFor(interval_us_);
    // Something to reconcile besides liveness: every node's load changes while split.
    for (int i : sim_->RunningNodes()) sim_->node(i)->SetApplicationState(kLoadKey, "1000");
    sim_->RunUntil(sim_->now_us() + o_.partition_s * 1'000'000 - interval_us_);
    int64_t pairs = 0, convicted = 0;
    for (int a : sim_->RunningNodes()) {
      for (int b : sim_->RunningNodes()) {
        if (group_of[a] == group_of[b]) continue;
        pairs++;
        convicted += sim_->node(a)->LivenessOf(sim_->IdOf(b)) == Liveness::kDown ? 1 : 0;
      }
    }
    r_.partition_convicted_fraction =
        static_cast<double>(convicted) / static_cast<double>(std::max<int64_t>(pairs, 1));
    sim_->Heal();
    ASSIGN_OR_RETURN(r_.converge_rounds,
                     RoundsUntil([&] { return sim_->Converged(); }, "convergence after heal"));
    return absl::OkStatus();
  }

  Status Join() {
    ASSIGN_OR_RETURN(const int newcomer, sim_->AddNode());
    for (int k = 1; k <= o_.converge_limit_rounds; ++k) {
      sim_->RunFor(interval_us_);
      if (!r_.converge_rounds && sim_->AllKnow(newcomer, /*and_up=*/false)) {
        r_.converge_rounds = k;
      }
      if (sim_->AllKnow(newcomer, /*and_up=*/true)) {
        r_.converge_up_rounds = k;
        return absl::OkStatus();
      }
    }
    return absl::DeadlineExceededError(StrCat("the join did not converge within ",
                                              o_.converge_limit_rounds, " rounds (", o_.nodes,
                                              " nodes, seed ", o_.seed, ")"));
  }

  const ScenarioOptions& o_;
  const int64_t interval_us_;
  std::unique_ptr<Simulator> sim_;
  ScenarioResult r_;
};

}  // namespace

StatusOr<ScenarioResult> RunScenario(const ScenarioOptions& options) {
  return Runner(options).Run();
}

uint64_t EstimateScenarioBytes(const ScenarioOptions& o) {
  constexpr uint64_t kBaseBytes = 32ull << 20;  // the program, its libraries, the event queue
  const int64_t interval_ms = std::max<int64_t>(1, o.gossip.interval_ms);
  // Rounds the run lasts: convergence (a few rounds per doubling of the cluster), the steady
  // state, then the scenario's own.
  int64_t rounds = 2 * static_cast<int64_t>(std::log2(std::max(2, o.nodes))) + 10 +
                   o.measure_rounds;
  switch (o.scenario) {
    case Scenario::kCrash: rounds += int64_t{o.trials} * 60; break;
    case Scenario::kLoss: rounds += o.duration_s * 1000 / interval_ms; break;
    case Scenario::kPartition: rounds += o.partition_s * 1000 / interval_ms + 30; break;
    case Scenario::kJoin: rounds += 30; break;
  }
  const uint64_t samples =
      static_cast<uint64_t>(std::min<int64_t>(rounds, std::max(1, o.gossip.detector.window_size)));
  uint64_t capacity = 1;
  while (capacity < samples) capacity *= 2;
  const uint64_t nodes = static_cast<uint64_t>(std::max(0, o.nodes)) + 1;  // join adds one
  return kBaseBytes + nodes * nodes * (kScenarioBytesPerPair + 4 * capacity);
}

}  // namespace tessera::testing
