#include "tessera/cli/sim_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/commands.h"
#include "tessera/testing/scenarios.h"
#include "tessera/util/version.h"

namespace tessera::cli {
namespace {

using cluster::DefaultGossipOptions;
using cluster::GossipOptions;
using cluster::PaperGossipOptions;
using cluster::PhiModel;
using cluster::SetGossipInterval;
using testing::EstimateScenarioBytes;
using testing::ParseScenario;
using testing::RunScenario;
using testing::Scenario;
using testing::ScenarioName;
using testing::ScenarioOptions;
using testing::ScenarioResult;

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json ToJson(const ScenarioResult& r) {
  nlohmann::json j;
  j["scenario"] = ScenarioName(r.scenario);
  j["nodes"] = r.nodes;
  j["seed"] = r.seed;
  j["model"] = r.model;
  j["phi"] = r.phi;
  j["interval_ms"] = r.interval_ms;
  j["loss"] = r.loss;
  j["detect_median_s"] = OrNull(r.detect_median_s);
  j["detect_p99_s"] = OrNull(r.detect_p99_s);
  j["detect_max_s"] = OrNull(r.detect_max_s);
  j["missed_detections"] = OrNull(r.missed_detections);
  j["false_convictions_per_hour"] = OrNull(r.false_convictions_per_hour);
  j["max_phi_live"] = OrNull(r.max_phi_live);
  j["partition_convicted_fraction"] = OrNull(r.partition_convicted_fraction);
  j["converge_rounds"] = OrNull(r.converge_rounds);
  j["converge_up_rounds"] = OrNull(r.converge_up_rounds);
  j["bootstrap_rounds"] = r.bootstrap_rounds;
  j["gossip_bytes_per_node_per_s"] = r.gossip_bytes_per_node_per_s;
  j["simulated_s"] = r.simulated_s;
  return j;
}

template <typename T>
std::string Cell(const std::optional<T>& v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

void PrintHeader(std::ostream& out) {
  out << fmt::format("{:<10} {:>5} {:<12} {:>4} {:>6} {:>5} {:>8} {:>8} {:>9} {:>8} {:>9} {:>10}\n",
                     "scenario", "nodes", "model", "phi", "int_ms", "loss", "det_med", "det_p99",
                     "false/h", "max_phi", "converge", "bytes/n/s");
}

void PrintRow(std::ostream& out, const ScenarioResult& r) {
  std::string converge = Cell(r.converge_rounds, "{}");
  if (r.converge_up_rounds) converge += fmt::format("/{}", *r.converge_up_rounds);
  out << fmt::format(
      "{:<10} {:>5} {:<12} {:>4} {:>6} {:>5} {:>8} {:>8} {:>9} {:>8} {:>9} {:>10.0f}\n",
      ScenarioName(r.scenario), r.nodes, r.model, r.phi, r.interval_ms,
      fmt::format("{:.1f}%", r.loss * 100), Cell(r.detect_median_s, "{:.2f}s"),
      Cell(r.detect_p99_s, "{:.2f}s"), Cell(r.false_convictions_per_hour, "{:.2f}"),
      Cell(r.max_phi_live, "{:.2f}"), converge, r.gossip_bytes_per_node_per_s);
}

// What this process may allocate: the smallest of `ulimit -v` (RLIMIT_AS), `ulimit -d`
// (RLIMIT_DATA) and the machine's memory, with the name of the one that binds.
struct MemoryLimit {
  uint64_t bytes = UINT64_MAX;
  std::string what;
};

MemoryLimit ProcessMemoryLimit() {
  MemoryLimit limit;
  auto consider = [&](uint64_t bytes, const char* what) {
    if (bytes < limit.bytes) limit = {bytes, what};
  };
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    consider(rl.rlim_cur, "the address-space limit (ulimit -v)");
  }
  if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    consider(rl.rlim_cur, "the data-size limit (ulimit -d)");
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    consider(static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size),
             "this machine's memory");
  }
  return limit;
}

std::string Bytes(uint64_t b) {
  const double gib = static_cast<double>(b) / (1ull << 30);
  return gib >= 1 ? fmt::format("{:.1f} GiB", gib)
                  : fmt::format("{:.0f} MiB", static_cast<double>(b) / (1ull << 20));
}

// Refuses, before anything runs, a run whose estimated memory (EstimateScenarioBytes) is above
// what the process may allocate, saying both and the largest cluster that fits.
Status CheckMemory(ScenarioOptions o, const MemoryLimit& limit) {
  const uint64_t need = EstimateScenarioBytes(o);
  if (need <= limit.bytes) return Status();
  const int asked = o.nodes;
  int lo = 1, hi = asked;  // the largest n with an estimate that fits is in [lo, hi)
  while (hi - lo > 1) {
    o.nodes = lo + (hi - lo) / 2;
    (EstimateScenarioBytes(o) <= limit.bytes ? lo : hi) = o.nodes;
  }
  o.nodes = lo;
  const bool any = lo >= 2 && EstimateScenarioBytes(o) <= limit.bytes;
  return absl::ResourceExhaustedError(fmt::format(
      "{} with {} nodes needs about {} of memory (estimated: every node keeps state for every "
      "other), more than {} allows ({}); {}",
      ScenarioName(o.scenario), asked, Bytes(need), limit.what, Bytes(limit.bytes),
      any ? fmt::format("at most {} nodes fit", lo) : std::string("not even 2 nodes fit")));
}

}  // namespace

int RunSimCommand(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app("Runs gossip / failure-detection scenarios on the deterministic cluster simulator",
               "tessera sim");
  app.set_version_flag("--version", VersionLine("tessera sim"),
                       "print the version and the commit it was built from, then exit");
  std::vector<std::string> scenarios;
  std::vector<int> nodes = {100};
  double phi = 0;
  int64_t interval_ms = 0;
  uint64_t seed = 1;
  bool json = false, paper = false;
  std::string model;
  double loss = -1;
  double latency_ms = 1, jitter_ms = 20;
  int trials = 5, measure_rounds = 100, fanout = 0, window = 0;
  int64_t duration_s = 3600, partition_s = 60;

  app.add_option("--scenario", scenarios, "crash, loss, partition, join or all (comma-separated)")
      ->required()
      ->delimiter(',')
      ->check(CLI::IsMember({"crash", "loss", "partition", "join", "all"}));
  app.add_option("--nodes", nodes, "cluster sizes, comma-separated (default 100)")
      ->delimiter(',')
      ->check(CLI::Range(2, 100000));
  auto* phi_opt =
      app.add_option("--phi", phi, "conviction threshold (default 5)")->check(CLI::PositiveNumber);
  auto* interval_opt = app.add_option("--interval-ms", interval_ms, "gossip round interval")
                           ->check(CLI::Range(1, 60000));
  app.add_option("--seed", seed, "random seed; a run is replayed exactly by its seed (default 1)");
  app.add_flag("--json", json, "one JSON object per run instead of a table");
  app.add_flag("--paper", paper,
               "the Cassandra paper's settings (exponential model, 1 s, phi 5) as the base");
  app.add_option("--model", model, "failure detector model")
      ->check(CLI::IsMember({"exponential", "normal"}));
  app.add_option("--loss", loss,
                 "message loss probability, 0..1 (default 0.01 for loss, 0 otherwise)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--latency-ms", latency_ms, "fixed one-way delay (default 1)")
      ->check(CLI::Range(0.0, 60000.0));
  app.add_option("--jitter-ms", jitter_ms, "uniform extra delay, up to (default 20)")
      ->check(CLI::Range(0.0, 60000.0));
  app.add_option("--trials", trials, "crash: nodes crashed one after another (default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--duration-s", duration_s, "loss: simulated seconds (default 3600)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  app.add_option("--partition-s", partition_s, "partition: seconds split (default 60)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}));
  app.add_option("--measure-rounds", measure_rounds,
                 "steady-state rounds before the event (default 100)")
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--fanout", fanout, "live peers per round")->check(CLI::Range(1, 100));
  app.add_option("--window", window, "detector window size")->check(CLI::Range(1, 100000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // 0 for --help and --version; every usage error is 2, as for the other commands.
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }

  std::vector<Scenario> runs;
  for (const auto& name : scenarios) {
    if (name == "all") {
      runs.insert(runs.end(),
                  {Scenario::kCrash, Scenario::kLoss, Scenario::kPartition, Scenario::kJoin});
      continue;
    }
    StatusOr<Scenario> s = ParseScenario(name);
    if (!s.ok()) {
      err << "tessera sim: " << s.status().message() << "\n";
      return 2;
    }
    runs.push_back(*s);
  }

  GossipOptions gossip = paper ? PaperGossipOptions() : DefaultGossipOptions();
  if (interval_opt->count()) SetGossipInterval(&gossip, interval_ms);
  if (phi_opt->count()) {
    gossip.convict_phi = phi;
    gossip.suspect_phi = phi / 2;
  }
  if (!model.empty()) {
    gossip.detector.model = model == "normal" ? PhiModel::kNormal : PhiModel::kExponential;
  }
  if (fanout > 0) gossip.fanout = fanout;
  if (window > 0) gossip.detector.window_size = window;
  gossip.cluster_name = "sim";

  // Every run is built first and checked against the memory limit, so that a run that cannot
  // fit is refused at once instead of failing with std::bad_alloc (perhaps after others ran).
  std::vector<ScenarioOptions> planned;
  for (Scenario scenario : runs) {
    for (int n : nodes) {
      ScenarioOptions o;
      o.scenario = scenario;
      o.nodes = n;
      o.seed = seed;
      o.gossip = gossip;
      o.network.loss = loss >= 0 ? loss : (scenario == Scenario::kLoss ? 0.01 : 0.0);
      o.network.latency_us = static_cast<int64_t>(latency_ms * 1000);
      o.network.jitter_us = static_cast<int64_t>(jitter_ms * 1000);
      o.trials = trials;
      o.duration_s = duration_s;
      o.partition_s = partition_s;
      o.measure_rounds = measure_rounds;
      planned.push_back(o);
    }
  }
  const MemoryLimit limit = ProcessMemoryLimit();
  for (const ScenarioOptions& o : planned) {
    if (Status s = CheckMemory(o, limit); !s.ok()) {
      err << "tessera sim: " << s.message() << "\n";
      return 2;
    }
  }

  if (!json) PrintHeader(out);
  for (const ScenarioOptions& o : planned) {
    StatusOr<ScenarioResult> r = RunScenario(o);
    if (!r.ok()) {
      err << "tessera sim: " << ScenarioName(o.scenario) << " with " << o.nodes
          << " nodes failed (replay with --seed " << seed << "): " << r.status().message()
          << "\n";
      return 1;
    }
    if (json) {
      out << ToJson(*r).dump() << "\n";
    } else {
      PrintRow(out, *r);
    }
    out.flush();
  }
  return 0;
}

int RunSim(int argc, char** argv) { return RunSimCommand(argc, argv, std::cout, std::cerr); }

}  // namespace tessera::cli
