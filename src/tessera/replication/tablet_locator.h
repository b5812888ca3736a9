// TabletLocator: where a coordinator finds a table's tablets (docs/replication.md, "Where the
// tablet map lives"): Bigtable's three-level location, the lock service holding the root
// (METADATA's own configuration, which the ReplicaNode mirrors like every configuration), the
// METADATA table (catalog/metadata_table.h) holding one row per user tablet.
//
// Locate(table) answers a snapshot of `table` whose `tablets` are those METADATA names. The
// first lookup of a table reads its METADATA rows at ONE, from the nearest replica of
// METADATA (through the coordinator): a table's rows never change while it lives, so a replica
// that is behind can only lack some, which the tiling check below reads again. The answer is
// cached, and later lookups of the same table (same
// tablet prefix and schema version) answer at once, inline, with the same snapshot. Lookups of
// one table that arrive while its rows are being read wait for that read. Rows that are not
// (yet) a whole tiling of the table — the master writes them shortly after CreateTable, see
// metadata_sync.h — are read again, backing off, within the lookup's time.
//
// A table not located through METADATA (catalog::LocatedThroughMetadata false: METADATA itself,
// whose tablets the lock service's root names, and a node's own tables) is answered with a copy
// of the snapshot given.
//
// Forget(table) drops the cached entry: the coordinator calls it when a replica answered that a
// tablet is not its (the table was re-created, or — with splits, a later issue — the tablet
// moved), so that the next lookup reads METADATA again.
//
// Stop() answers the lookups waiting to read again with Unavailable "the node is stopping" and
// waits for a read again that is running; afterwards a lookup that fails is answered at once.
//
// Thread-safety: every method may be called from any thread; `done` runs inline (cache hit,
// or a table not located through METADATA) or on the coordinator's threads, without locks
// held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/replication/table_access.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/executor_scope.h"
#include "tessera/util/status.h"

namespace tessera::replication {

class Coordinator;

struct TabletLocatorStats {
  uint64_t hits = 0;        // answered from the cache
  uint64_t reads = 0;       // METADATA reads started (each covers every lookup waiting for it)
  uint64_t incomplete = 0;  // reads that found the rows not (yet) whole, and were tried again
};

class TabletLocator {
 public:
  // `coordinator` reads METADATA (its Read at ONE); `metadata()` is the node's
  // snapshot of the METADATA table, NotFound while it has none. Every pointer must outlive the
  // locator.
  TabletLocator(Coordinator* coordinator, Executor* executor, Clock* clock,
                std::function<StatusOr<TableSnapshot>()> metadata);

  TabletLocator(const TabletLocator&) = delete;
  TabletLocator& operator=(const TabletLocator&) = delete;

  // `timeout_us`: the time the lookup may take (0: the coordinator's default per operation).
  // Errors: Unavailable (METADATA not created yet, no replica of it reachable, the rows not
  // whole within the time), DeadlineExceeded when the caller's time ran out, DataLoss for a
  // METADATA row that does not parse.
  void Locate(const catalog::TableInfo& table, int64_t timeout_us,
              std::function<void(StatusOr<TableSnapshot>)> done);
  void Forget(std::string_view table);
  void Stop();

  TabletLocatorStats stats() const;

 private:
  struct Entry {
    uint64_t tablet_prefix = 0;
    std::vector<catalog::TabletRef> tablets;
    TableSnapshot routed;  // the last snapshot answered, for its schema version
  };
  struct Lookup;
  using Waiters = std::vector<std::pair<TableSnapshot, std::function<void(StatusOr<TableSnapshot>)>>>;

  // The snapshot of `table` with `entry`'s tablets, reusing entry->routed when it is of the
  // same schema version. REQUIRES: mu_ held.
  TableSnapshot Routed(const catalog::TableInfo& table, Entry* entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fetch(std::shared_ptr<Lookup> lookup);
  void ReadPages(std::shared_ptr<Lookup> lookup, TableSnapshot metadata,
                 std::vector<size_t> tablets, size_t next);
  void Complete(std::shared_ptr<Lookup> lookup);
  void RetryOrFail(std::shared_ptr<Lookup> lookup, Status status);
  void Answer(std::shared_ptr<Lookup> lookup, StatusOr<std::vector<catalog::TabletRef>> tablets);

  Coordinator* const coordinator_;
  ExecutorScope retries_;  // the lookups waiting to read METADATA again
  Clock* const clock_;
  const std::function<StatusOr<TableSnapshot>()> metadata_;

  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> cache_ ABSL_GUARDED_BY(mu_);
  // Lookups under way, by table full name and tablet prefix; their waiters.
  std::map<std::pair<std::string, uint64_t>, Waiters> pending_ ABSL_GUARDED_BY(mu_);
  TabletLocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::replication
