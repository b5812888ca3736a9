#include "tessera/cli/ycsb_workload.h"

#include <cctype>
#include <string>

namespace tessera::cli::ycsb {

std::string_view OpTypeName(OpType type) {
  switch (type) {
    case OpType::kRead:
      return "READ";
    case OpType::kUpdate:
      return "UPDATE";
    case OpType::kInsert:
      return "INSERT";
    case OpType::kScan:
      return "SCAN";
    case OpType::kReadModifyWrite:
      return "READ-MODIFY-WRITE";
    case OpType::kBatchInsert:
      return "BATCH-INSERT";
    case OpType::kPing:
      return "PING";
  }
  return "?";
}

std::string_view DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kZipfian:
      return "zipfian";
    case Distribution::kLatest:
      return "latest";
  }
  return "?";
}

StatusOr<Distribution> ParseDistribution(std::string_view name) {
  for (Distribution d : {Distribution::kUniform, Distribution::kZipfian, Distribution::kLatest}) {
    if (name == DistributionName(d)) return d;
  }
  return absl::InvalidArgumentError(
      StrCat("unknown request distribution \"", name, "\" (uniform, zipfian or latest)"));
}

const std::vector<WorkloadSpec>& AllWorkloads() {
  using D = Distribution;
  static const std::vector<WorkloadSpec> kWorkloads = {
      {.name = "load", .description = "bulk load through MutateRows", .load = true},
      {.name = "A", .description = "update heavy", .read = 0.5, .update = 0.5},
      {.name = "B", .description = "read mostly", .read = 0.95, .update = 0.05},
      {.name = "C", .description = "read only", .read = 1.0},
      {.name = "D",
       .description = "read latest",
       .read = 0.95,
       .insert = 0.05,
       .distribution = D::kLatest},
      {.name = "E", .description = "short ranges", .insert = 0.05, .scan = 0.95},
      {.name = "F", .description = "read-modify-write", .read = 0.5, .read_modify_write = 0.5},
      {.name = "ping", .description = "PingAndWarm only", .ping = 1.0},
  };
  return kWorkloads;
}

StatusOr<std::vector<WorkloadSpec>> ParseWorkloadList(std::string_view list) {
  std::vector<WorkloadSpec> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = list.find(',', pos);
    const std::string_view item =
        list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    std::string lower;
    for (char c : item)
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    const WorkloadSpec* found = nullptr;
    for (const WorkloadSpec& w : AllWorkloads()) {
      std::string name;
      for (char c : w.name)
        name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      if (name == lower) found = &w;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          item.empty()
              ? StrCat("empty workload name in \"", list, "\"")
              : StrCat("unknown workload \"", item, "\" (load, A, B, C, D, E, F or ping)"));
    }
    out.push_back(*found);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

OperationChooser::OperationChooser(const WorkloadSpec& spec) {
  const double parts[kParts] = {
      spec.read, spec.update, spec.insert, spec.scan, spec.read_modify_write, spec.ping};
  double total = 0;
  for (double p : parts) total += p;
  double sum = 0;
  for (int i = 0; i < kParts; i++) {
    sum += parts[i];
    cumulative_[i] = sum / total;
  }
}

OpType OperationChooser::Next(Random* rng) {
  static constexpr OpType kTypes[kParts] = {
      OpType::kRead, OpType::kUpdate,          OpType::kInsert,
      OpType::kScan, OpType::kReadModifyWrite, OpType::kPing};
  const double u = NextDouble(rng);
  for (int i = 0; i < kParts; i++) {
    if (u < cumulative_[i]) return kTypes[i];
  }
  // Rounding can leave the last cumulative a hair under 1: the last type with a share.
  for (int i = kParts - 1; i >= 0; i--) {
    if (i == 0 || cumulative_[i] > cumulative_[i - 1]) return kTypes[i];
  }
  return kTypes[0];
}

KeyChooser::KeyChooser(Distribution distribution, uint64_t records, uint64_t expected_new_records,
                       const AcknowledgedCounter* inserts, double latest_zetan)
    : distribution_(distribution),
      inserts_(inserts),
      uniform_(0, records + expected_new_records - 1) {
  if (distribution == Distribution::kZipfian) {
    zipfian_.emplace(0, records + expected_new_records - 1);
  } else if (distribution == Distribution::kLatest) {
    latest_.emplace(inserts, latest_zetan);
  }
}

uint64_t KeyChooser::Next(Random* rng) {
  if (distribution_ == Distribution::kLatest) return latest_->Next(rng);
  // Records above Last() may not exist yet. They make up at most expected/(records+expected)
  // of the draws, so a few tries almost always do; after many, any existing record will do.
  constexpr int kMaxTries = 64;
  const uint64_t last = inserts_->Last();
  for (int i = 0; i < kMaxTries; i++) {
    const uint64_t k =
        distribution_ == Distribution::kZipfian ? zipfian_->Next(rng) : uniform_.Next(rng);
    if (k <= last) return k;
  }
  return rng->Uniform(last + 1);
}

}  // namespace tessera::cli::ycsb
