// Writing cells to SSTables: the one path behind a flush (memtable -> files), a size-tiered
// compaction (a run of similar-sized files -> one file) and a major compaction (every file of a
// tablet -> one file). The inputs are merged newest-first, passed through model::CellVisibility
// (shadowed versions, deleted cells, entries of dropped families (the tablet's DropMarks) and
// GC-collected cells are dropped; tombstones are kept unless
// the inputs include the tablet's oldest file, when nothing older can be hidden by them), and
// written out, split by locality group when the inputs hold several. GC rules are applied only
// when tombstones may be purged (the inputs reach the oldest file): elsewhere, dropping a collected
// version could expose an older copy of the same cell in a file outside the inputs. Versions are
// counted only when no newer data outside the inputs may delete some versions of a column
// (gc_by_versions; model::DeletesSomeVersions): counting the inputs alone would then collect a
// version that such a delete made the newest.
//
// Thread-safety: a CompactionJob is used by one thread. Many jobs may run at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "tessera/model/cell_key.h"
#include "tessera/model/schema.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/iterator.h"
#include "tessera/storage/table_options.h"
#include "tessera/storage/version_edit.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/table_file.h"
#include "tessera/util/file_system.h"
#include "tessera/util/rate_limiter.h"

namespace tessera::tablet {

struct CompactionJobOptions {
  std::string dir;  // where the new SSTables go
  storage::TableOptions table_options;
  // Route each entry to its family's locality group (a flush). When set, every output goes to
  // this group (a compaction of one group's files).
  std::optional<LocalityGroup> fixed_group;
  bool can_purge_tombstones = false;
  // Whether GC may collect by version counts (see the top); max-age rules apply regardless.
  bool gc_by_versions = true;
  int64_t now_micros = 0;  // for max-age GC
  // GC rules and in-memory flags; must outlive the job.
  const model::TableSchema* schema = nullptr;
  // The tablet's dropped families; may be null (none). Must outlive the job.
  const DropMarks* drop_marks = nullptr;
  RateLimiter* rate_limiter = nullptr;  // may be null (no limit)
  // The level of every output (leveled compaction, docs/compaction.md).
  uint32_t output_level = 0;
  // When > 0, an output is finished at the first row boundary past this size and the next
  // entries go to a new file: each row stays whole in one file. 0: one file per group.
  uint64_t max_file_bytes = 0;
  // Gives a fresh file number for each output.
  std::function<uint64_t()> new_file_number;
};

struct CompactionResult {
  std::vector<storage::FileMeta> outputs;  // may be empty when everything was dropped
  uint64_t input_entries = 0;
  uint64_t output_entries = 0;
  uint64_t bytes_written = 0;
};

// The output side of RunCompaction, also used by a tablet rebuild (tablet_copy.cc) to write
// copied entries unchanged: entries added in internal-key order go to new SSTables, one per
// locality group. With options.fixed_group every entry goes to that group; otherwise, when the
// schema has an in-memory family, cells go to their family's group and tombstones to every
// group (so that each group's copy hides that group's data and a group can purge its copy
// alone, even for a family that changed groups and still has older cells in the other one).
// Only dir, table_options, fixed_group, schema, rate_limiter, output_level, max_file_bytes and
// new_file_number of `options` are read; `options` must outlive the writer. Unless Finish
// succeeded, every output is removed on destruction.
class TableWriter {
 public:
  TableWriter(const CompactionJobOptions& options, FileSystem* fs);
  ~TableWriter();
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  // Adds the entry `ikey` (parsed as `parsed`). REQUIRES: ikey sorts after every key added.
  // DataLoss for a malformed cell key; I/O errors of the output files.
  Status Add(const storage::ParsedInternalKey& parsed, std::string_view ikey,
             std::string_view value);
  // Finishes and syncs every output (the caller makes the directory entries durable) and adds
  // their metadata and sizes to result->outputs and result->bytes_written.
  Status Finish(CompactionResult* result);

 private:
  struct Output;
  Status AddTo(uint32_t group, std::string_view ikey, std::string_view value);
  // Raises the current output of `group`'s newest cell timestamp to the entry's, for a cell.
  void NoteTimestamp(uint32_t group, const model::CellKeyLayout& layout);
  StatusOr<Output*> OutputFor(uint32_t group);
  // Finishes and syncs outputs_[group] and moves it to finished_.
  Status FinishOutput(uint32_t group);

  const CompactionJobOptions& options_;
  FileSystem* const fs_;
  const bool route_;                              // by family, rather than all to one group
  std::vector<std::unique_ptr<Output>> outputs_;  // by group: the file being written
  std::vector<std::unique_ptr<Output>> finished_;  // cut at max_file_bytes, in order
  bool committed_ = false;                         // Finish succeeded: keep every file
};

// Merges `input` (an iterator over internal keys, e.g. a merging iterator) into new files.
// Each output file is synced before this returns; the caller makes the directory entry durable
// and records the files in the manifest. On error every partial output is removed.
StatusOr<CompactionResult> RunCompaction(const CompactionJobOptions& options, FileSystem* fs,
                                         storage::Iterator* input);

// Size-tiered choice among one locality group's files, given newest first: the longest run of
// adjacent files (adjacent in age, so that the output keeps the age order) of similar size, at
// least `min_files` long, at most `max_files`. Two sizes are similar when the larger is at most
// `ratio` times the smaller, so a huge file is never merged with a small one. Returns the chosen
// indexes into `sizes` (ascending), or empty.
std::vector<size_t> PickSizeTieredRun(const std::vector<uint64_t>& sizes, int min_files,
                                      int max_files, double ratio);

}  // namespace tessera::tablet
