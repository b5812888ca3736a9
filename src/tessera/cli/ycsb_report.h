// How `tessera bench` prints a workload's result: a few readable lines, or one JSON object on
// one line (--json) with these fields:
//
//   workload, description, endpoint, distribution, records, threads, fields, value_size,
//   ops, seconds, throughput (ops/s), errors, stopped_early,
//   ops_by_type: {READ|UPDATE|INSERT|SCAN|READ-MODIFY-WRITE|BATCH-INSERT:
//                 {calls, errors, mean_us, p50_us, p99_us, p999_us, max_us}}   (types used only)
//   errors_by_kind: {status code or ROW_NOT_FOUND: count},
//   error_examples: {kind: one message}
//
// For the load, ops counts rows and BATCH-INSERT counts MutateRows calls. Latencies are of the
// calls that succeeded.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/cli/ycsb_driver.h"
#include "tessera/cli/ycsb_workload.h"

namespace tessera::cli::ycsb {

// What a report says about the run besides its result.
struct ReportContext {
  std::string endpoint;
  const WorkloadSpec* spec = nullptr;
  const RunOptions* options = nullptr;
};

// One line of JSON, without the newline.
std::string FormatJson(const WorkloadResult& result, const ReportContext& context);
// A few lines, each ending in a newline.
std::string FormatText(const WorkloadResult& result, const ReportContext& context);

}  // namespace tessera::cli::ycsb
