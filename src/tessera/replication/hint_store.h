// HintStore: a ReplicaNode's hints (docs/replication.md, "A replica that was away"): the
// mutations its tablets' primaries no longer keep in memory but that a member of the
// configuration has not acknowledged. A mutation leaves the in-memory retention through
// Spill (cheap, in memory: it is *pending*), and Flush writes what is pending to the HintLog
// on disk; until then Read serves it from memory. Both together are what Holds and Stats
// describe, so a peer stream can ask "is sequence s still held?" without waiting for a disk.
//
// Bounds (applied by Maintain): a hint written more than `window_us` ago (wall time of the
// mutation's write) is dropped, and so are the oldest segments once the log passes
// `max_bytes`. A write to the log that fails drops the tablet's pending hints (logged): a peer
// that needed them is rebuilt, so memory stays bounded when the disk is not writable.
//
// Delivery is throttled per node: TakeBudget hands out at most `delivery_bytes_per_s` a second
// (a token bucket holding at most `burst_bytes`), shared by every tablet's deliveries.
//
// Thread-safety: every method may be called from any thread. Spill, Holds, Stats and
// TakeBudget touch memory only, under the store's mutex, and may be called under the caller's
// locks (lock order: the caller's, then the store's). Flush, Read, the Drop methods and
// Maintain do file I/O and must not be called under a lock that a request path takes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/replication/hint_log.h"
#include "tessera/util/clock.h"
#include "tessera/util/status.h"

namespace tessera::replication {

struct HintStoreOptions {
  int64_t window_us = 3 * 3600 * int64_t{1'000'000};
  uint64_t max_bytes = 1ull << 30;
  // 0: unthrottled.
  uint64_t delivery_bytes_per_s = 1 << 20;
  uint64_t burst_bytes = 1 << 20;
};

class HintStore {
 public:
  // `log` and `clock` must outlive the store.
  HintStore(HintLog* log, Clock* clock, HintStoreOptions options);

  HintStore(const HintStore&) = delete;
  HintStore& operator=(const HintStore&) = delete;

  // --- memory only ---
  // Keeps one mutation of `tablet_id` for Flush. A mutation that does not follow the
  // tablet's last pending one restarts the pending run (the one before was not needed).
  void Spill(uint64_t tablet_id, uint64_t first, uint64_t last, int64_t written_at_us,
             std::string mutation);
  // True when the mutation holding `sequence` is pending or on disk.
  bool Holds(uint64_t tablet_id, uint64_t sequence) const;
  // Pending and on disk together (bytes: mutation bytes pending plus file bytes on disk).
  HintTabletStats Stats(uint64_t tablet_id) const;
  // Bytes a delivery may read now (at most `want`), or 0 when the budget is spent; the caller
  // then says what it read (more or less than it took) with Settle.
  uint64_t TakeBudget(uint64_t want);
  void Settle(uint64_t taken, uint64_t used);

  // --- file I/O ---
  // Writes what is pending to the log.
  void Flush();
  // The tablet's records from the one holding `sequence` on, up to `max_bytes` (at least
  // one); pending ones first. NotFound when `sequence` is no longer held.
  StatusOr<std::vector<HintRecord>> Read(uint64_t tablet_id, uint64_t sequence,
                                         size_t max_bytes) const;
  // Every peer has everything through `sequence`.
  void DropThrough(uint64_t tablet_id, uint64_t sequence);
  // The tablet's content was replaced (a rebuild): none of its hints is its lineage any more.
  void DropTablet(uint64_t tablet_id);
  // Applies the window and the size.
  void Maintain();

 private:
  struct Pending {
    std::map<uint64_t, HintRecord> records;  // by first sequence, contiguous
    uint64_t bytes = 0;
  };
  // Refreshes disk_ from the log. REQUIRES: mu_ not held.
  void Refresh();

  HintLog* const log_;
  Clock* const clock_;
  const HintStoreOptions options_;

  mutable absl::Mutex mu_;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, HintTabletStats> disk_ ABSL_GUARDED_BY(mu_);  // the log's, as last read
  double tokens_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refilled_at_us_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::replication
