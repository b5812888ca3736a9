// The read path over a TabletSnapshot: merge the memtables and the files that may hold the rows
// asked for (by key range, and for one row by bloom filter), keep what model::CellVisibility says
// is visible (tombstones and GC rules applied), then the ReadSpec's selection.
//
// A one-row read with chosen families or columns seeks straight to each chosen family or column
// instead of walking the whole row, so one column of a very wide row costs a block or two (the
// column index role of Cassandra §5.6 is played by the block index over full cell keys).
//
// A one-row read of at most N versions of chosen columns reads the newest sources first and
// stops once the files left can hold no version that would rank among the N and hide none read
// (docs/compaction.md, "Reads that stop early"): a get of a cell's newest value touches the
// newest file that holds it, not every file that holds the row.
//
// A reversed scan walks rows from the end of the range: from an entry of row R (found by
// stepping back from the previous row's start) it seeks to R's first entry, reads R forward
// through the same visibility and selection as a forward scan, then seeks back to R's start and
// steps back once to reach the row before. It holds one row at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "tessera/storage/block_cache.h"
#include "tessera/storage/table_options.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/snapshot.h"

namespace tessera::tablet {

// Compaction by reads (docs/compaction.md): where a scan reports the files it passed.
struct ReadCharge {
  std::function<void(const TableFile*)> charge;  // empty: the scan charges nothing
  uint64_t seed = 0;  // with the start key, where the first sample falls; vary it per scan
};

// Counters are added to `stats` when not null. When `charged` is not null, *charged is the file
// the read charges -- the first it consulted, when it consulted two or more -- or null.
StatusOr<std::optional<model::Row>> ReadRowFromSnapshot(const TabletSnapshot& snapshot,
                                                        std::string_view row,
                                                        const model::ReadSpec& spec,
                                                        storage::ReadStats* stats = nullptr,
                                                        const TableFile** charged = nullptr);

// Once per kReadSamplePeriod bytes of entries the scan passes, charge.charge (when set) is given
// the newest file holding the row there, when two or more files hold it.
inline constexpr uint64_t kReadSamplePeriod = 1 << 20;
std::unique_ptr<RowIterator> NewSnapshotScan(TabletSnapshot snapshot, const model::RowRange& range,
                                             const model::ReadSpec& spec,
                                             const ScanOptions& options, ReadCharge charge = {});

// Loads into the block cache every block of the snapshot's files that may hold `row`.
Status WarmRowInSnapshot(const TabletSnapshot& snapshot, std::string_view row);

}  // namespace tessera::tablet
