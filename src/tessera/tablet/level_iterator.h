// One iterator over the files of one level >= 1 of one locality group of a tablet, which hold
// disjoint, sorted row ranges (docs/compaction.md): it opens only the file that holds its
// position and moves to the neighbouring file at either end, as LevelDB's concatenating
// iterator does. A scan then seeks one file per level instead of every file right of its start,
// each of which would read (and decompress) a block.
//
// The contract is iterator.h's. Errors: the first non-OK status of a file's iterator stops the
// level iterator (!Valid()) and stays its status, so a damaged file is never silently skipped.
//
// Thread-safety: one thread at a time, as any Iterator. The files must outlive the iterator
// (the snapshot that holds them does).
#pragma once

#include <memory>
#include <vector>

#include "tessera/storage/iterator.h"
#include "tessera/storage/table_options.h"
#include "tessera/tablet/table_file.h"

namespace tessera::tablet {

// REQUIRES: `files` all of one level >= 1 and one locality group, in any order; not empty.
std::unique_ptr<storage::Iterator> NewLevelIterator(std::vector<const TableFile*> files,
                                                    const storage::TableReadOptions& options);

}  // namespace tessera::tablet
