// YCSB's core workloads (Cooper et al., SoCC 2010, and YCSB's workloads/workload[a-f]) and the
// choices a transaction makes from them: which operation, which record.
//
//   load  insert records [0, records) in batches (one MutateRows per batch), every field set
//   A     update heavy      50 % read, 50 % update                 zipfian
//   B     read mostly       95 % read,  5 % update                 zipfian
//   C     read only        100 % read                              zipfian
//   D     read latest       95 % read,  5 % insert                 latest
//   E     short ranges      95 % scan,  5 % insert                 zipfian (start key),
//                                                                  length uniform in [1, max]
//   F     read-modify-write 50 % read, 50 % read-modify-write      zipfian
//   ping  not YCSB's: 100 % PingAndWarm, a call that touches no row (the cost of a call
//         itself, to set the others against)
//
// A read returns every field of one row; an update writes one field chosen uniformly (YCSB's
// readallfields=true, writeallfields=false); an insert writes every field of a new record; a
// read-modify-write reads the row, then updates one field, as two calls.
//
// Thread-safety: WorkloadSpec and the lists are immutable; the choosers are per thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tessera/cli/ycsb_generators.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::cli::ycsb {

// What a timed call does. kReadModifyWrite is the whole transaction; its read and its update
// are also counted as kRead and kUpdate, as YCSB counts them.
enum class OpType { kRead, kUpdate, kInsert, kScan, kReadModifyWrite, kBatchInsert, kPing };
inline constexpr int kOpTypeCount = 7;
// YCSB's names: READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE; BATCH-INSERT for a load batch,
// PING for a PingAndWarm.
std::string_view OpTypeName(OpType type);

enum class Distribution { kUniform, kZipfian, kLatest };
std::string_view DistributionName(Distribution d);
// "uniform", "zipfian" or "latest"; InvalidArgument naming anything else.
StatusOr<Distribution> ParseDistribution(std::string_view name);

struct WorkloadSpec {
  std::string_view name;  // "load", "A" ... "F", "ping"
  std::string_view description;
  bool load = false;  // the bulk load; the proportions below are unused
  double read = 0;
  double update = 0;
  double insert = 0;
  double scan = 0;
  double read_modify_write = 0;
  double ping = 0;
  Distribution distribution = Distribution::kZipfian;
};

// load, A, B, C, D, E, F, ping.
const std::vector<WorkloadSpec>& AllWorkloads();
// A comma-separated list of workload names ("load,A,C"; case does not matter), in order.
// InvalidArgument naming the first unknown or empty name.
StatusOr<std::vector<WorkloadSpec>> ParseWorkloadList(std::string_view list);

// Picks each transaction's operation with the workload's proportions.
class OperationChooser {
 public:
  // REQUIRES: !spec.load and the proportions sum to more than 0.
  explicit OperationChooser(const WorkloadSpec& spec);
  OpType Next(Random* rng);

 private:
  static constexpr int kParts = 6;
  std::array<double, kParts> cumulative_;  // read, update, insert, scan, read-modify-write, ping
};

// Picks the record a read, update, scan or read-modify-write touches: YCSB's key chooser over
// [0, records + expected_new_records), drawn again while the record is above inserts->Last()
// (not inserted yet), so every chosen record exists.
class KeyChooser {
 public:
  // `inserts` must outlive the chooser. `latest_zetan` (used by kLatest only) is
  // ZipfianGenerator::Zeta(0, inserts->Last() + 1, kZipfianConstant).
  // REQUIRES: records >= 1 and inserts->Last() >= records - 1.
  KeyChooser(Distribution distribution, uint64_t records, uint64_t expected_new_records,
             const AcknowledgedCounter* inserts, double latest_zetan);
  uint64_t Next(Random* rng);

 private:
  Distribution distribution_;
  const AcknowledgedCounter* inserts_;
  UniformGenerator uniform_;
  std::optional<ScrambledZipfianGenerator> zipfian_;
  std::optional<SkewedLatestGenerator> latest_;
};

}  // namespace tessera::cli::ycsb
