// `tessera sim`: runs the cluster simulator's scenarios (testing/scenarios.h) from the command
// line. RunSim (commands.h) is this on std::cout and std::cerr.
//
//   tessera sim --scenario crash|loss|partition|join|all[,...] --nodes N[,N...] --phi X
//               --interval-ms M --seed S [--json] [--paper] [more: see --help]
//
// Each (scenario, nodes) pair is one run. With --json each run prints one JSON object on its own
// line (scenario, nodes, detect_median_s, detect_p99_s, false_convictions_per_hour,
// converge_rounds, gossip_bytes_per_node_per_s, and more; null where a figure does not apply);
// without it, a table. --paper starts from the Cassandra paper's settings (exponential model,
// 1 s interval, phi 5) instead of Tessera's defaults; explicit flags override either.
//
// Thread-safety: runs on the calling thread; touches no global state besides the streams.
#pragma once

#include <ostream>

namespace tessera::cli {

// Before running anything, each run's memory is estimated (EstimateScenarioBytes) and a run
// that would not fit in what the process may allocate (ulimit -v, ulimit -d, the machine's
// memory) is refused with exit status 2, naming the estimate, the limit and the largest cluster
// that fits.
//
// `argv[0]` is the command's name and is skipped, as in main(). Returns the process exit code:
// 0 on success (and for --help, --version), 2 on bad flags, 1 on a failed run (the error goes
// to `err`).
int RunSimCommand(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli
