// Repair of a tablet's replicas (docs/repair.md): the digest of one copy of a tablet, and what
// comparing the replicas' digests with the primary's found. The protocol that takes the
// digests at one sequence is ReplicaNode's (replica_repair.cc).
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/tablet/engine.h"
#include "tessera/util/status.h"

namespace tessera::replication {

// What one copy of a tablet holds at a sequence: SHA-256 over every visible cell in order, and
// how much was hashed.
struct TabletDigest {
  std::string sha256;  // 32 bytes
  uint64_t rows = 0;
  uint64_t cells = 0;
  uint64_t bytes = 0;  // of keys, names and values hashed
};

// Hashes every cell `rows` yields, in order: each cell's row key, family, qualifier,
// timestamp and value, each field delimited so that no two different contents hash the same
// bytes (labels, which no stored cell has, are not hashed). `hashed` (may be null) is
// increased as the bytes go by. The iterator's error, if it ends with one.
StatusOr<TabletDigest> DigestRows(tablet::RowIterator& rows, std::atomic<uint64_t>* hashed);

// A replica's copy beside the primary's, as a repair found it.
enum class RepairOutcome {
  kConsistent,  // the same cells at the sequence
  kRebuilding,  // they differed (or a rebuild was already under way): a copy replaces them
  kBehind,      // it did not reach the sequence in time; hints or a rebuild bring it
  kBusy,        // writes moved it past every sequence tried
  kFailed,      // it could not be asked; the message says why
};
std::string_view RepairOutcomeName(RepairOutcome outcome);

struct ReplicaRepair {
  std::string endpoint;
  RepairOutcome outcome = RepairOutcome::kFailed;
  std::string message;
  uint64_t rows = 0;  // with kConsistent and kRebuilding (when it answered): its copy
  uint64_t cells = 0;
};

// One tablet's repair, as its primary ran it.
struct TabletRepairReport {
  uint64_t tablet_id = 0;
  uint64_t sequence = 0;  // the replicas were compared at it
  TabletDigest primary;   // the primary's copy there
  std::vector<ReplicaRepair> replicas;
};

// For operators: repairs this node ran as a primary, and the bytes it hashed for repairs (as
// primary and replica).
struct RepairStats {
  uint64_t in_progress = 0;
  uint64_t hashed_bytes_total = 0;
};

}  // namespace tessera::replication
