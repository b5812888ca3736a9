// `tessera bench`: YCSB-style load against any Bigtable-API endpoint (docs/bench.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/ycsb_bigtable_db.h"
#include "tessera/cli/ycsb_driver.h"
#include "tessera/cli/ycsb_report.h"
#include "tessera/cli/ycsb_workload.h"

namespace tessera::cli {
namespace {

using namespace ycsb;  // NOLINT: this file is the front of the ycsb pieces

struct BenchFlags {
  std::vector<std::string> endpoints;  // the threads spread over them (ChannelPool)
  BigtableTarget target;
  std::vector<std::string> splits;
  std::string workloads = "load,A,B,C,D,E,F";
  std::string distribution;
  RunOptions run;
  int channels = 0;  // per endpoint; 0: min(ceil(threads / endpoints), 4)
  double rpc_timeout_s = 30;
  double connect_timeout_s = 10;
  bool json = false;
};

std::string DefaultEndpoint() {
  const char* env = std::getenv("BIGTABLE_EMULATOR_HOST");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:8086";
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

int RunBench(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  BenchFlags f;
  f.endpoints = {DefaultEndpoint()};
  f.target.project = "tessera-bench";
  f.target.instance = "bench";
  f.target.table = "usertable";
  f.target.family = "cf";
  f.run.records = 100000;
  f.run.operations = 100000;
  f.run.threads = 8;

  CLI::App app{
      "tessera bench: YCSB workloads against any Bigtable-API endpoint (tessera serve, the "
      "emulator).\nWorkloads: load (bulk MutateRows), A 50/50 read/update, B 95/5 read/update, "
      "C read only,\nD 95/5 read latest/insert, E 95/5 scan/insert, F 50/50 "
      "read/read-modify-write.\nExit status: 0 when every call succeeded, 1 on any error, 2 on "
      "bad flags.",
      "tessera bench"};
  SetUpCommandLine(&app);
  app.add_option("--endpoint", f.endpoints,
                 "HOST:PORT (default $BIGTABLE_EMULATOR_HOST, else 127.0.0.1:8086); a comma "
                 "list spreads the threads over the endpoints (the nodes of a cluster), thread "
                 "t on endpoint t mod N")
      ->delimiter(',')
      ->check(HostPortCheck());
  app.add_option("--project", f.target.project, "project id")->capture_default_str();
  app.add_option("--instance", f.target.instance, "instance id")->capture_default_str();
  app.add_option("--table", f.target.table, "table; created with --family if missing")
      ->capture_default_str();
  app.add_option("--family", f.target.family, "column family holding the fields")
      ->capture_default_str();
  app.add_option("--split", f.splits,
                 "initial split keys when the table is created (comma list, or repeat)")
      ->delimiter(',');
  app.add_option(
         "--workload", f.workloads,
         "comma list of load, A, B, C, D, E, F (YCSB's) and ping (PingAndWarm alone), run in order")
      ->capture_default_str();
  app.add_option("--records", f.run.records, "records loaded by `load` and chosen from after")
      ->capture_default_str();
  app.add_option("--operations", f.run.operations,
                 "transactions per workload (0: until --duration-s)")
      ->capture_default_str();
  app.add_option("--duration-s", f.run.duration_s,
                 "also stop a workload after this many seconds (0: no time bound; not the load)")
      ->capture_default_str();
  app.add_option("--threads", f.run.threads, "client threads")->capture_default_str();
  app.add_option("--channels", f.channels,
                 "gRPC channels (connections) per endpoint, shared by its threads (default "
                 "min(ceil(threads / endpoints), 4))");
  app.add_option("--fields", f.run.fields, "fields (cells) per record")->capture_default_str();
  app.add_option("--value-size", f.run.value_size, "bytes per field")->capture_default_str();
  app.add_option("--scan-length", f.run.max_scan_length,
                 "E: a scan reads a uniform [1, scan-length] rows")
      ->capture_default_str();
  app.add_option("--batch-size", f.run.batch_size, "load: rows per MutateRows")
      ->capture_default_str();
  app.add_option("--distribution", f.distribution,
                 "override the workloads' request distribution: uniform, zipfian, latest");
  app.add_option("--max-errors", f.run.max_errors, "stop a workload after this many errors")
      ->capture_default_str();
  app.add_option("--rpc-timeout-s", f.rpc_timeout_s, "deadline of each call")
      ->capture_default_str();
  app.add_option("--connect-timeout-s", f.connect_timeout_s, "time allowed to connect")
      ->capture_default_str();
  app.add_option("--seed", f.run.seed, "seed of keys and values")->capture_default_str();
  app.add_flag("--json", f.json, "one JSON object per workload per line on stdout");
  AddConnectionOptions(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }

  auto usage_error = [](const Status& s) {
    fmt::print(stderr, "tessera bench: {}\n", s.message());
    return 2;
  };
  if (Status s = LoadConnectionOptions(); !s.ok()) return usage_error(s);
  StatusOr<std::vector<WorkloadSpec>> workloads = ParseWorkloadList(f.workloads);
  if (!workloads.ok()) return usage_error(workloads.status());
  if (!f.distribution.empty()) {
    StatusOr<Distribution> d = ParseDistribution(f.distribution);
    if (!d.ok()) return usage_error(d.status());
    f.run.distribution = *d;
  }
  if (Status s = ValidateRunOptions(f.run); !s.ok()) return usage_error(s);
  if (f.channels < 0) return usage_error(absl::InvalidArgumentError("--channels must be >= 0"));
  if (f.rpc_timeout_s <= 0 || f.connect_timeout_s <= 0) {
    return usage_error(absl::InvalidArgumentError("timeouts must be positive"));
  }
  if (app.get_option("--endpoint")->count() == 0) {  // the default: from the environment
    if (Status s = CheckHostPort("$BIGTABLE_EMULATOR_HOST", f.endpoints.front()); !s.ok()) {
      return usage_error(s);
    }
  }
  f.target.endpoint = f.endpoints.front();  // where the table is made
  const std::string endpoint_list = absl::StrJoin(f.endpoints, ",");

  const int endpoints = static_cast<int>(f.endpoints.size());
  const int threads_per_endpoint = (f.run.threads + endpoints - 1) / endpoints;
  const int channels = f.channels > 0 ? f.channels : std::min(threads_per_endpoint, 4);
  ChannelPool pool(f.endpoints, channels);
  if (Status s = pool.WaitConnected(Millis(f.connect_timeout_s)); !s.ok()) {
    fmt::print(stderr, "tessera bench: {}\n", s.message());
    return 1;
  }
  if (Status s = EnsureTable(pool.Get(0), f.target, f.splits, Millis(f.rpc_timeout_s)); !s.ok()) {
    fmt::print(stderr, "tessera bench: {}\n", s);
    return 1;
  }
  fmt::print(stderr,
             "tessera bench: {} on {}, {} records of {} x {} B, {} threads over {} channels\n",
             f.target.TableName(), endpoint_list, f.run.records, f.run.fields, f.run.value_size,
             f.run.threads, pool.size());

  const std::chrono::milliseconds rpc_timeout = Millis(f.rpc_timeout_s);
  const YcsbDbFactory factory = [&](int thread) -> StatusOr<std::unique_ptr<YcsbDb>> {
    return NewBigtableDb(pool.Get(thread), f.target, f.run.fields, rpc_timeout);
  };
  // Shared by the workloads of this invocation, so D's and E's inserts are new records.
  AcknowledgedCounter inserts(f.run.records);
  uint64_t errors = 0;
  for (const WorkloadSpec& spec : *workloads) {
    StatusOr<WorkloadResult> result = RunWorkload(spec, f.run, factory, &inserts);
    if (!result.ok()) {
      fmt::print(stderr, "tessera bench: workload {}: {}\n", spec.name, result.status());
      return 1;
    }
    const ReportContext context{endpoint_list, &spec, &f.run};
    if (f.json) {
      fmt::print("{}\n", FormatJson(*result, context));
    } else {
      fmt::print("{}", FormatText(*result, context));
    }
    std::fflush(stdout);
    errors += result->errors;
  }
  if (errors > 0) {
    fmt::print(stderr, "tessera bench: {} operations failed\n", errors);
    return 1;
  }
  return 0;
}

}  // namespace tessera::cli
