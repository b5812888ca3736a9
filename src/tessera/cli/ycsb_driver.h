// The load driver of `tessera bench`: runs one YCSB workload (ycsb_workload.h) with N threads
// against a YcsbDb and measures it.
//
// Transactions are claimed from a shared count, so a run does exactly `operations` of them
// however the threads fare; `duration_s` bounds a run in time as well (the first bound reached
// ends it). The load claims batches of records from a shared cursor and always loads all of
// [0, records). Latency is measured around each call, on the calling thread, with a steady
// clock; throughput is transactions (rows, for the load) over the wall time from the moment all
// threads start to the moment the last one ends.
//
// Errors are never hidden: every failed call is counted by operation type and by kind (its
// status code, or ROW_NOT_FOUND for a read or scan of a record that must exist), with one
// message of each kind kept as an example. A run stops early once `max_errors` calls have failed.
//
// Thread-safety: RunWorkload starts and joins its own threads; each thread gets its own YcsbDb
// from the factory. Concurrent RunWorkload calls may share an AcknowledgedCounter.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cli/ycsb_generators.h"
#include "tessera/cli/ycsb_histogram.h"
#include "tessera/cli/ycsb_workload.h"
#include "tessera/util/status.h"

namespace tessera::cli::ycsb {

// One field of a row to write: field `index` (0-based; the store names it) gets `value`.
struct FieldWrite {
  int index;
  std::string_view value;
};

struct RowWrite {
  std::string_view key;
  std::span<const FieldWrite> fields;
};

// The store under test, as YCSB's DB interface sees it: one per thread, so an implementation
// need not be thread-safe. Views passed in live for the duration of the call.
class YcsbDb {
 public:
  virtual ~YcsbDb() = default;
  // Reads the newest version of every field of row `key`; returns how many cells it found
  // (0: the row does not exist).
  virtual StatusOr<int> Read(std::string_view key) = 0;
  // Reads up to `max_rows` rows from `start_key` (inclusive) on; returns how many it read.
  virtual StatusOr<int> Scan(std::string_view start_key, int max_rows) = 0;
  // Writes the fields of one row, atomically.
  virtual Status Write(std::string_view key, std::span<const FieldWrite> fields) = 0;
  // Writes many rows in one call, each atomically; returns one status per row, in order.
  virtual std::vector<Status> WriteBatch(std::span<const RowWrite> rows) = 0;
  // A call that touches no row: what the store costs for a call alone.
  virtual Status Ping() = 0;
};

// Makes the YcsbDb of thread `thread` (0-based).
using YcsbDbFactory = std::function<StatusOr<std::unique_ptr<YcsbDb>>(int thread)>;

struct RunOptions {
  uint64_t records = 1000;     // the loaded records are [0, records)
  uint64_t operations = 1000;  // transactions per run; 0: no bound (duration_s must be set)
  double duration_s = 0;       // seconds per run; 0: no bound. Not applied to the load.
  int threads = 1;
  int fields = 10;                           // fields (cells) per record
  size_t value_size = 100;                   // bytes per field
  int max_scan_length = 100;                 // a scan reads a uniform [1, max_scan_length] rows
  int batch_size = 100;                      // records per WriteBatch call in the load
  uint64_t max_errors = 1000;                // a run stops after this many failed calls
  std::optional<Distribution> distribution;  // overrides the workload's request distribution
  uint64_t seed = 1;
};

// InvalidArgument naming the first option out of range.
Status ValidateRunOptions(const RunOptions& options);

struct OpStats {
  uint64_t calls = 0;
  uint64_t errors = 0;
  LatencyHistogram latency;  // of the calls that succeeded
};

struct WorkloadResult {
  std::string workload;
  uint64_t ops = 0;  // transactions done, failed ones included (rows, for the load)
  double seconds = 0;
  uint64_t errors = 0;                        // failed transactions (failed rows, for the load)
  bool stopped_early = false;                 // max_errors was reached
  std::array<OpStats, kOpTypeCount> by_type;  // indexed by OpType
  std::map<std::string, uint64_t> errors_by_kind;     // "UNAVAILABLE", "ROW_NOT_FOUND", ...
  std::map<std::string, std::string> error_examples;  // kind -> the message of one such error

  double throughput() const { return seconds > 0 ? ops / seconds : 0; }
  const OpStats& stats(OpType type) const { return by_type[static_cast<int>(type)]; }
};

// Runs `spec` once. `inserts` hands out the record numbers of inserts (D, E) and says which
// records exist; it starts at `options.records` and may be shared by successive runs so
// that their inserts do not collide. Fails only on bad options or when the factory fails;
// the store's errors are in the result.
// REQUIRES: inserts->Last() >= options.records - 1.
StatusOr<WorkloadResult> RunWorkload(const WorkloadSpec& spec, const RunOptions& options,
                                     const YcsbDbFactory& factory, AcknowledgedCounter* inserts);

}  // namespace tessera::cli::ycsb
