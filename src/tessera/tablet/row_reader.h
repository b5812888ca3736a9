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

#include <memory>
#include <optional>
#include <string_view>

#include "tessera/storage/block_cache.h"
#include "tessera/storage/table_options.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/snapshot.h"

namespace tessera::tablet {

// Counters are added to `stats` when not null.
StatusOr<std::optional<model::Row>> ReadRowFromSnapshot(const TabletSnapshot& snapshot,
                                                        std::string_view row,
                                                        const model::ReadSpec& spec,
                                                        storage::ReadStats* stats = nullptr);

std::unique_ptr<RowIterator> NewSnapshotScan(TabletSnapshot snapshot, const model::RowRange& range,
                                             const model::ReadSpec& spec,
                                             const ScanOptions& options);

// Loads into the block cache every block of the snapshot's files that may hold `row`.
Status WarmRowInSnapshot(const TabletSnapshot& snapshot, std::string_view row);

}  // namespace tessera::tablet
