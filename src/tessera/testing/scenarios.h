// The simulator's measured scenarios, shared by `tessera sim`, the tests and the docs.
//
// Every scenario boots `nodes` nodes through 3 seeds, runs until the views converge, then runs
// `measure_rounds` more rounds (the detectors fill their windows and the steady-state gossip
// traffic is measured), and then:
//   crash      `trials` times: crash a random node, time until each running node convicts it
//              (median and p99 over all observers of all trials), restart it, settle.
//   loss       run `duration_s` of simulated time (default an hour) and count every conviction:
//              nobody crashes, so each one is false.
//   partition  split the nodes in two random halves for `partition_s`, change every node's load
//              meanwhile, heal, and count rounds until the views converge again.
//   join       a new node joins; rounds until every node knows it (and, separately, sees it up).
// Rounds are counted at whole multiples of the gossip interval after the event.
//
// Thread-safety: pure functions of their options; runs share nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/testing/simulator.h"
#include "tessera/util/status.h"

namespace tessera::testing {

enum class Scenario { kCrash, kLoss, kPartition, kJoin };

const char* ScenarioName(Scenario scenario);
StatusOr<Scenario> ParseScenario(std::string_view name);

struct ScenarioOptions {
  Scenario scenario = Scenario::kCrash;
  int nodes = 100;
  uint64_t seed = 1;
  cluster::GossipOptions gossip =
      cluster::DefaultGossipOptions();  // cluster_name, self and seeds are filled in
  NetworkOptions network;
  double tick_jitter = 0.05;
  int measure_rounds = 100;         // steady-state rounds after convergence, before the event
  int converge_limit_rounds = 500;  // a run that does not converge by then is an error
  int trials = 5;                   // crash
  int64_t duration_s = 3600;        // loss
  int64_t partition_s = 60;         // partition
};

struct ScenarioResult {
  Scenario scenario = Scenario::kCrash;
  int nodes = 0;
  uint64_t seed = 0;
  std::string model;  // detector model name
  double phi = 0;
  int64_t interval_ms = 0;
  double loss = 0;

  // crash
  std::optional<double> detect_median_s, detect_p99_s, detect_max_s;
  std::optional<int> missed_detections;  // observers that never convicted (within the limit)
  // loss
  std::optional<double> false_convictions_per_hour;
  std::optional<double> max_phi_live;  // highest phi any node computed for a live peer
  // partition: the share of cross-partition (observer, peer) pairs convicted before the heal
  std::optional<double> partition_convicted_fraction;
  // partition and join
  std::optional<int> converge_rounds;
  std::optional<int> converge_up_rounds;  // join: until every node also sees the newcomer up
  // all
  int bootstrap_rounds = 0;                // rounds until the initial views converged
  double gossip_bytes_per_node_per_s = 0;  // steady state, transport payload bytes sent
  double simulated_s = 0;
};

// Runs one scenario. Errors: invalid options, or a cluster that does not converge.
StatusOr<ScenarioResult> RunScenario(const ScenarioOptions& options);

// Roughly the most memory RunScenario(options) will hold, in bytes, from its options alone, so
// that a command can refuse a run that cannot fit instead of dying of std::bad_alloc. Every
// node keeps a gossip state and a failure detector for every other node, so memory grows with
// nodes^2: per (observer, peer) pair about kScenarioBytesPerPair for the state, plus 4 bytes
// per detector sample held (vector capacity: the next power of two above the samples, which
// are one per round of the run, up to the detector's window). Calibrated against peak RSS
// (join, 400 nodes: 155 MB; crash, 400 nodes: 331 MB); errs high rather than low.
inline constexpr uint64_t kScenarioBytesPerPair = 768;
uint64_t EstimateScenarioBytes(const ScenarioOptions& options);

// Nearest-rank percentile (p in (0, 100]) of `values`. REQUIRES: !values.empty().
double Percentile(std::vector<double> values, double p);

}  // namespace tessera::testing
