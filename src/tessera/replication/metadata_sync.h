// MetadataSync: the master's upkeep of the METADATA table (catalog/metadata_table.h;
// docs/replication.md, "Where the tablet map lives"). It runs on every node and acts only while
// the node is the master, as the TabletMaster does.
//
// Each step (every step_us, on the executor), when no pass is under way:
//   1. No METADATA table but a table the cluster made: creates METADATA (`create_metadata`,
//      which is the schema store's; a cluster whose tables predate METADATA gets it here).
//   2. When the cluster's tables changed since the last pass that succeeded (which tables, their
//      tablet prefixes and boundaries), or check_us has passed since it: reads every METADATA
//      row at the primary, and writes, in one batch per METADATA tablet at QUORUM, the rows that
//      are missing or differ from what the node's catalog says, and deletes the rows of tablets
//      that are no longer the table's (a table re-created under a new prefix). Rows of a table
//      the catalog does not know go only once it has not known it for forget_after_us (a
//      master whose catalog lags must not delete a table created a moment ago).
// A pass that fails (METADATA's primary unreachable) is logged and tried again at the next
// step. Every row a pass writes says what the schema store decided, so two masters (a deposed
// one still running a pass) write the same rows.
//
// Thread-safety: Start and Stop from the node's controlling code; steps run on the executor,
// and a pass continues on the coordinator's callbacks. As with the coordinator, the executor
// and the channel must stop calling back before the object is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/replication/coordinator.h"
#include "tessera/replication/tablet_master.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/status.h"

namespace tessera::replication {

struct MetadataSyncOptions {
  // --- behaviour ---
  int64_t step_us = 500'000;
  int64_t check_us = 5'000'000;
  int64_t forget_after_us = 30'000'000;
  // Each read or write of a pass.
  int64_t timeout_us = 2'000'000;
};

class MetadataSync {
 public:
  // Every pointer must outlive the object. `create_metadata` creates the METADATA table in the
  // schema store (AlreadyExists counts as done).
  MetadataSync(Coordinator* coordinator, Executor* executor, Clock* clock,
               TabletMaster::TablesFn tables, std::function<bool()> is_master,
               std::function<Status()> create_metadata, MetadataSyncOptions options = {});
  ~MetadataSync();  // Stop()

  MetadataSync(const MetadataSync&) = delete;
  MetadataSync& operator=(const MetadataSync&) = delete;

  void Start();
  // Idempotent. Waits for a step that is running; a pass under way stops at its next callback.
  void Stop();

  // Passes that wrote every row they had to, and rows written and deleted in all (tests, logs).
  struct Stats {
    uint64_t passes = 0;
    uint64_t rows_written = 0;
    uint64_t rows_deleted = 0;
  };
  Stats stats() const;

 private:
  struct Pass;
  void ScheduleStep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Step();
  void ReadRows(std::shared_ptr<Pass> pass, size_t tablet);
  void Write(std::shared_ptr<Pass> pass);
  void EndPass(std::shared_ptr<Pass> pass, Status status);
  bool running() const;

  Coordinator* const coordinator_;
  Executor* const executor_;
  Clock* const clock_;
  const TabletMaster::TablesFn tables_;
  const std::function<bool()> is_master_;
  const std::function<Status()> create_metadata_;
  const MetadataSyncOptions options_;

  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  bool stepping_ ABSL_GUARDED_BY(mu_) = false;  // a step is running (Stop waits for it)
  bool pass_under_way_ ABSL_GUARDED_BY(mu_) = false;
  // What the last pass that succeeded saw of the tables, and when it ran.
  std::string synced_fingerprint_ ABSL_GUARDED_BY(mu_);
  int64_t synced_at_us_ ABSL_GUARDED_BY(mu_) = 0;
  // Tables METADATA names that the catalog does not know, since when.
  std::map<std::string, int64_t> unknown_since_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::replication
