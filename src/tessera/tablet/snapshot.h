// A consistent view of one tablet, taken under the tablet's lock and then read without it:
// the memtables and files it names stay alive while the snapshot does, and entries newer than
// `sequence` (the tablet's published sequence when the snapshot was taken) are ignored.
#pragma once

#include <memory>
#include <vector>

#include "tessera/storage/dbformat.h"
#include "tessera/storage/memtable.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/table_file.h"

namespace tessera::tablet {

struct TabletSnapshot {
  std::shared_ptr<const TabletDescriptor> descriptor;
  std::shared_ptr<const DropMarks> drop_marks;                // null: no family was dropped
  std::vector<std::shared_ptr<storage::MemTable>> memtables;  // newest first
  std::shared_ptr<const FileSet> files;                       // newest first
  storage::SequenceNumber sequence = 0;
  int64_t now_micros = 0;  // for max-age GC
};

}  // namespace tessera::tablet
