// TabletMaster: the master's part of the distributed store (docs/replication.md, "Who is
// primary, failover"). It runs on every node and acts only while the node holds the master
// lock; every change it makes to a configuration is a compare-and-set on the version it read,
// so a deposed master that still runs a step cannot overwrite its successor's decision.
//
// Each step (every step_us, on the executor):
//   1. Reads the directory of live nodes (`nodes/`, ephemeral files of their sessions) and the
//      configurations (`tablets/`).
//   2. Creates the configuration of every tablet of every table that has none: the replicas
//      placed on the live nodes (catalog/placement.h) with the table's placement, as
//      CreateTable resolved it (catalog/table_placement.h; a table made before placement
//      options: the tablets strategy, RF min(3, live nodes)), epoch 1, serving. A ring table's
//      primary is the first node clockwise from the tablet's start, among the live nodes
//      holding a token (`tokens/`, catalog/ring_store.h); a tablets table's the chosen replica
//      leading the fewest tablets.
//   3. For a serving configuration whose primary has no live session: seals epoch e + 1 on the
//      live replicas (Seal calls). Once a majority of the replica set has answered, writes
//      epoch e + 1 with the sealed replica of the highest sequence as primary and that sequence
//      as the epoch's start. Fewer than a majority alive: the tablet waits (writes to it fail
//      with Unavailable at the coordinators), and the step tries again. Before the first seal
//      the master records the intent (`sealing/<tablet id>` = e in the lock service): once
//      replicas promised e + 1 they refuse e's primary, so the promotion must be finished even
//      if that primary's session comes back or the master changes meanwhile. The record goes
//      once the configuration has moved past e.
//   4. Decommission (docs/repair.md): for a serving configuration naming a node marked leaving
//      (catalog/ring_store.h, kLeavingPrefix) and no replica awaiting a rebuild, the same seal,
//      then epoch e + 1 with the leaving replica replaced by the first node, not already a
//      replica, of the placement the table's policy makes over the nodes that are not leaving,
//      marked `needs rebuild` (its primary then streams it a copy). The new primary is chosen
//      among the replicas that stay, which must themselves be a majority of the sealing set, so
//      that one of them holds every acknowledged write. New tablets are never placed on a
//      leaving node.
//   5. A replica marked `needs rebuild` that has joined the configuration's epoch with at least
//      its start sequence (asked through Forward.Position) is a full member again: the same
//      configuration is written without the mark (same epoch, compare-and-set).
//
// Thread-safety: Attach, Detach, Start and Stop from the node's controlling code; steps run on
// the executor. Seal answers arrive on the channel's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/placement.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/coord/lock_service.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/status.h"

namespace tessera::replication {

struct TabletMasterOptions {
  // --- behaviour ---
  int64_t step_us = 500'000;
  // A Seal call not answered within this is lost (a replica waits out its leases first).
  int64_t seal_timeout_us = 5'000'000;
  // Replication factor of tables made before placement options existed (no stored
  // placement: the tablets strategy): min(max_replication_factor, live nodes).
  int max_replication_factor = 3;
};

// What a replica answered to the seal of a new epoch.
struct SealedReplica {
  uint64_t last_sequence = 0;
  uint64_t joined_epoch = 0;  // the last epoch it took mutations from
};

// The new primary among the replicas of `old` that sealed its next epoch (by replica index):
// the one of the highest sequence among those whose content is in the lineage of `old`
// (TabletConfig::LineageAllows: a replica that diverged may hold a higher sequence and still
// lack an acknowledged write). Ties go to the lower index. nullopt when no sealed replica
// qualifies, and when a diverged one holds more of the lineage (its prefix up to the epoch
// that left it, TabletConfig::LineagePrefix) than the best that qualifies: those mutations may
// have been acknowledged, and a primary that lacks them would lose them, so the promotion waits
// for another replica to seal. A write acknowledged in `old`'s epoch is on a majority that
// joined it, which meets every sealing majority; one acknowledged earlier is in the lineage's
// prefix, which the chosen one then holds whole: so it holds every acknowledged write.
std::optional<size_t> ChooseNewPrimary(const catalog::TabletConfig& old,
                                       const std::map<size_t, SealedReplica>& sealed);

class TabletMaster {
 public:
  // The tables whose tablets need configurations (the node's catalog).
  using TablesFn = std::function<std::vector<std::shared_ptr<const catalog::TableInfo>>()>;
  // Every pointer must outlive the master.
  TabletMaster(RpcChannel* channel, Executor* executor, Clock* clock, TablesFn tables,
               std::function<bool()> is_master, TabletMasterOptions options = {});
  ~TabletMaster();  // Stop()

  TabletMaster(const TabletMaster&) = delete;
  TabletMaster& operator=(const TabletMaster&) = delete;

  // The session the steps use, until Detach (which waits for a step using it).
  void Attach(coord::Session* session);
  void Detach();
  void Start();
  void Stop();  // idempotent; waits for a running step

  // One step now (tests and the loop). Returns what it did, for logs.
  std::string Step();

 private:
  struct Promotion;
  void ScheduleStep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `config` over `version` (0: create). False when another writer won.
  bool WriteConfig(coord::Session* session, const catalog::TabletConfig& config, int64_t version,
                   std::string* log);
  using Counts = std::map<std::string, size_t>;  // endpoint -> replicas (or primaries) held
  // Step 2: places and creates the configuration of every tablet that has none. `load` and
  // `leading` count what each node holds, updated for each placement made.
  void PlaceNewTablets(const std::vector<catalog::PlacementNode>& live,
                       const std::map<uint64_t, std::pair<catalog::TabletConfig, int64_t>>& known,
                       Counts* load, Counts* leading, std::string* log)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(step_mu_);
  void FinishPromotion(coord::Session* session, uint64_t tablet_id, std::string* log)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Step 5: writes each configuration whose marked replica caught up without its mark, and
  // asks the marked replicas of the others where they are.
  void ClearRebuildMarks(coord::Session* session,
                         const std::map<uint64_t, std::pair<catalog::TabletConfig, int64_t>>& known,
                         const std::set<std::string>& alive, std::string* log)
      ABSL_LOCKS_EXCLUDED(mu_);

  RpcChannel* const channel_;
  Executor* const executor_;
  Clock* const clock_;
  const TablesFn tables_;
  const std::function<bool()> is_master_;
  const TabletMasterOptions options_;

  absl::Mutex step_mu_;  // held by a step, and by Attach/Detach
  coord::Session* session_ ABSL_GUARDED_BY(step_mu_) = nullptr;

  absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stepping_ ABSL_GUARDED_BY(mu_) = false;
  TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::unique_ptr<Promotion>> promotions_ ABSL_GUARDED_BY(mu_);
  // Marked replicas found caught up: tablet -> (epoch, endpoint).
  std::map<uint64_t, std::pair<uint64_t, std::string>> caught_up_ ABSL_GUARDED_BY(mu_);

  // A decommission's move: the replica at `index` goes, `to` takes its place.
  struct Move {
    size_t index = 0;
    std::string to;
  };
  // Starts sealing epoch c.epoch + 1 of tablet `id` on the live replicas (to move a replica
  // off a leaving node, with `move`).
  void StartSealLocked(uint64_t id, const catalog::TabletConfig& c, int64_t version,
                       const std::set<std::string>& alive, std::optional<Move> move,
                       std::string* log) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace tessera::replication
