// Tablet: one row range of one table on this node — its memtables (one active, a queue of
// immutable ones), its SSTables (a FileSet), its descriptor, drop marks, flushed mark and its
// own sequence numbers — and everything that needs only that: reads from a consistent snapshot,
// row samples, warm-up, size, and the picking of flushes and compactions. See docs/tablet.md.
//
// Sequences (docs/sequence_numbers.md): the tablet numbers its own entries, densely from 1.
// last_sequence() is the newest sequence whose writes are all in the memtables; reads take their
// snapshot at it. Invariant: it is at least every sequence the tablet's memtables, files, flushed
// mark and drop marks hold.
//
// The TabletManager creates tablets and hands them out as std::shared_ptr<Tablet>. It runs the
// background jobs and writes the manifest; the Tablet records what they changed. The
// CommitQueue's leader is the only thread that inserts into a tablet's active memtable and that
// advances its sequence (or an operation running alone in the queue, or recovery before the
// queue starts).
//
// Thread-safety: every method is safe to call from many threads; each takes the tablet's own
// mutex for a moment and never calls out while holding it. Lock order (docs/tablet.md):
// TabletManager::mu_ before Tablet::mu_. A Tablet must not outlive its TabletManager.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/model/row_mutation.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/memtable.h"
#include "tessera/storage/table_options.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/entry_iterator.h"
#include "tessera/tablet/snapshot.h"
#include "tessera/tablet/table_file.h"

namespace tessera::tablet {

// What a tablet's data is (persisted in the manifest; docs/tablet.md). The values are stored.
enum class TabletDataState : uint32_t {
  kServing = 0,     // reads and writes served
  kCopying = 1,     // its files are being brought in: reads and writes refused (Unavailable)
  kTombstoned = 2,  // its data was deleted, its descriptor kept: reads and writes refused
};
inline constexpr uint32_t kMaxTabletDataState = 2;
std::string_view TabletDataStateName(TabletDataState state);

// A tablet's SSTables at a flush point, pinned: the files stay on disk while this lives, even if
// a compaction replaces them or the tablet is dropped, so they can be copied. The files hold
// every entry of the tablet with a sequence <= flushed_sequence.
struct TabletCheckpoint {
  struct File {
    storage::FileMeta meta;
    std::string path;
  };
  TabletId id = 0;
  TabletDescriptor descriptor;
  DropMarks drop_marks;  // numbered like the files' entries
  storage::SequenceNumber flushed_sequence = 0;
  std::vector<File> files;
  std::shared_ptr<const FileSet> pinned;  // keeps the files alive
};

// What every tablet of one manager shares. All pointers outlive the tablets.
struct TabletContext {
  const EngineOptions* options = nullptr;
  Clock* clock = nullptr;
  // The memory of every live memtable of the engine's tablets, active, immutable or still held
  // by a reader after its flush: their arenas count into it (arena.h). Never null.
  std::shared_ptr<std::atomic<size_t>> memtable_usage;
  // Called (with no lock held) when a read exhausted a file's read budget and marked it for
  // compaction (Tablet::ChargeRead): the manager schedules the compaction. May be empty.
  std::function<void(TabletId)> read_compaction_due;
};

// The filter key of every table and memtable entry: its row (model::RowPrefix), so that "may
// this file or memtable hold row R?" is one probe of EncodeRowPrefix(R).
const storage::FilterKeyExtractor* RowFilterKey();

// Inserts the entries of the encoded row mutation `encoded` into `mem`, numbering them from
// `first` on. Raises *some_versions_deleted to the sequence of each entry that deletes some
// versions of a column only (model::DeletesSomeVersions).
Status InsertMutation(storage::MemTable* mem, storage::SequenceNumber first,
                      std::string_view encoded, storage::SequenceNumber* some_versions_deleted);

// The FailedPrecondition of a replicated batch that does not follow on the tablet's numbers:
// the message says "gap", and ReplicationGapExpected() (engine.h) reads `expected` back.
Status ReplicationGapError(TabletId id, storage::SequenceNumber expected,
                           storage::SequenceNumber got);

// The input of a flush of a tablet's oldest immutable memtable.
struct FlushInput {
  uint64_t generation = 0;  // of the tablet's content (Tablet::generation)
  std::shared_ptr<storage::MemTable> mem;
  // The schema and the time are read together: GC applies the rules in force at that instant.
  std::shared_ptr<const TabletDescriptor> descriptor;
  std::shared_ptr<const DropMarks> drop_marks;
  int64_t now_micros = 0;
  bool can_purge_tombstones = false;  // the tablet has no files: nothing older exists
  bool gc_by_versions = false;
};

// The input of a compaction of some files of one locality group.
struct CompactionInput {
  uint64_t generation = 0;  // of the tablet's content (Tablet::generation)
  std::vector<std::shared_ptr<TableFile>> files;
  // Where the outputs go (docs/compaction.md): their level, and the size at which they are cut
  // between rows (0: one file). With trivial_move the files move to output_level unchanged.
  uint32_t output_level = 0;
  uint64_t max_file_bytes = 0;
  bool trivial_move = false;
  std::shared_ptr<const TabletDescriptor> descriptor;
  std::shared_ptr<const DropMarks> drop_marks;
  int64_t now_micros = 0;
  bool can_purge_tombstones = false;
  bool gc_by_versions = false;
};

class Tablet : public std::enable_shared_from_this<Tablet> {
 public:
  // A tablet with an empty active memtable and `files`. Its last sequence starts at the largest
  // of `flushed_sequence`, the files' sequences and the drop marks.
  Tablet(TabletId id, TabletDescriptor descriptor, DropMarks drop_marks,
         storage::SequenceNumber flushed_sequence, std::shared_ptr<const FileSet> files,
         TabletDataState state, const TabletContext& context);
  Tablet(const Tablet&) = delete;
  Tablet& operator=(const Tablet&) = delete;

  TabletId id() const { return id_; }
  std::shared_ptr<const TabletDescriptor> descriptor() const;
  std::shared_ptr<const DropMarks> drop_marks() const;

  // The newest sequence of this tablet whose writes are all in its memtables (or files): what
  // reads see. Lock-free.
  storage::SequenceNumber last_sequence() const {
    return last_sequence_.load(std::memory_order_acquire);
  }
  // Publishes `sequence` as the last sequence (never lowering it). REQUIRES: the caller is the
  // CommitQueue's leader after inserting every entry up to `sequence`, an operation running
  // alone in the queue, or recovery before the queue starts.
  void RaiseLastSequence(storage::SequenceNumber sequence);

  TabletDataState state() const;
  void SetState(TabletDataState state);
  // The replica epoch the tablet promised (Engine::RaiseReplicaEpoch). The manager sets it
  // once the manifest holds it. Lock-free.
  uint64_t replica_epoch() const { return replica_epoch_.load(std::memory_order_acquire); }
  void SetReplicaEpoch(uint64_t epoch) { replica_epoch_.store(epoch, std::memory_order_release); }
  // OK when serving; Unavailable naming the tablet and its state otherwise.
  Status CheckServing() const;

  // --- reads (engine.h documents each); Unavailable unless serving ---
  // The memtables, files and descriptor now, at the published sequence.
  StatusOr<TabletSnapshot> Snapshot() const;
  StatusOr<std::optional<model::Row>> ReadRow(std::string_view row,
                                              const model::ReadSpec& spec) const;
  StatusOr<std::unique_ptr<RowIterator>> Scan(const model::RowRange& range,
                                              const model::ReadSpec& spec,
                                              const ScanOptions& options) const;
  // Raw entries from one snapshot (entry_iterator.h).
  StatusOr<std::unique_ptr<EntryIterator>> NewEntryIterator() const;
  // The files and descriptor now (TabletManager::Checkpoint flushes first).
  StatusOr<TabletCheckpoint> Checkpoint() const;
  // Served in every state.
  uint64_t ApproximateBytes() const;
  StatusOr<std::vector<std::string>> SampleRowKeys(uint64_t every_bytes) const;
  Status WarmRow(std::string_view row) const;
  // A read passed `file` (docs/compaction.md, "Compaction by reads"). The charge that exhausts
  // the file's budget (EngineOptions::read_budget_bytes) marks it for the next compaction of its
  // group, when the tablet is leveled and still holds it, and calls context.read_compaction_due.
  // Lock-free until then.
  void ChargeRead(const TableFile* file) const;

  // --- write path (the CommitQueue's leader) ---
  // OK when `m` may be written to this tablet with descriptor `d`.
  static Status ValidateMutation(const TabletDescriptor& d, const model::RowMutation& m);
  // OK when every mutation of the non-empty `batch` validates; otherwise the first error, naming
  // the mutation's index when the batch has more than one.
  static Status ValidateBatch(const TabletDescriptor& d, std::span<const model::RowMutation> batch);

  // What PrepareWrite gave a batch: mutations [skipped, size) take first .. last.
  struct PreparedWrite {
    std::shared_ptr<storage::MemTable> mem;  // null when every mutation was skipped
    size_t skipped = 0;                      // leading mutations already applied (replicated)
    storage::SequenceNumber first = 0;       // of mutations[skipped]; 0 when all were skipped
    storage::SequenceNumber last = 0;        // the tablet's running number after the batch
  };
  // Before a group's records are appended: NotFound when the tablet was removed, Unavailable
  // unless it is serving; validates `batch` again when the descriptor changed since
  // `validated_with`. Gives the batch its numbers, running on from those given to the group's
  // earlier writers of this tablet (or from last_sequence()): the next ones when `given_first`
  // is nullopt; otherwise the primary's, mutation 0 from *given_first on, skipping the leading
  // mutations whose numbers are all taken already, and refusing a gap (ReplicationGapError) or
  // a mutation that straddles the running number (Internal). An error takes no number. Returns
  // the memtable to insert into and notes `segment` as its first when it has none. The leader
  // publishes the numbers with RaiseLastSequence once the group is in the log and the
  // memtables, or takes them back with AbandonNumbers.
  StatusOr<PreparedWrite> PrepareWrite(std::span<const model::RowMutation> batch,
                                       const TabletDescriptor* validated_with, uint64_t segment,
                                       std::optional<storage::SequenceNumber> given_first);
  // The group that PrepareWrite numbered did not reach the log: its numbers are given again to
  // the next group, so the tablet's numbers stay dense.
  void AbandonNumbers();
  // After the leader inserted into `mem`: records `some_versions_deleted` and seals the active
  // memtable when it is still `mem` and full. True when it sealed one (a flush is due).
  bool FinishWrite(const storage::MemTable* mem, storage::SequenceNumber some_versions_deleted);
  // Recovery: inserts one log record's mutation (sequences from `first`), raises the last
  // sequence to its last entry and seals the memtable when full.
  // REQUIRES: first > flushed_sequence().
  Status Replay(uint64_t segment, storage::SequenceNumber first, std::string_view mutation);
  // Seals the active memtable unless it is empty. True when it sealed one.
  bool SwitchMemtable();
  // Removes the tablet: later PrepareWrite calls fail with NotFound. Returns the largest sequence
  // any of its log records may hold (given out by PrepareWrite, even to a group still in flight).
  storage::SequenceNumber MarkRemoved();

  // --- background work (the TabletManager, holding its own mutex) ---
  bool TryStartFlush();  // false when there is nothing to flush or it may not start
  void FinishFlush();
  // True when a flush of the immutable memtables is running or may be scheduled.
  bool FlushMayRun() const;
  // No immutable memtable left and no flush running.
  bool FlushDone() const;
  // Starts a background compaction when some group has one to do (leveled: a level's score
  // reached 1; size-tiered: a run exists).
  bool TryStartCompaction();
  // A manual (major) compaction may start: no compaction runs and the tablet is not paused.
  bool CanStartManualCompaction() const;
  // Starts a manual compaction when CanStartManualCompaction().
  bool TryStartManualCompaction();
  void FinishCompaction();
  // No flush or compaction running.
  bool Idle() const;
  // Dropping: no job may start or install files.
  void SetDropping();
  bool dropping() const;
  // Paused (TruncateTablet): no job may start.
  void SetPaused(bool paused);

  std::optional<FlushInput> PickFlush() const;
  // With `files` empty, picks what the tablet's compaction style does next in `group`; nullopt
  // when there is nothing. Otherwise compacts the given files (purging tombstones as `purge`
  // says) into one sorted run: leveled, in the deepest level present (at least 1).
  std::optional<CompactionInput> PickCompaction(LocalityGroup group,
                                                std::vector<std::shared_ptr<TableFile>> files,
                                                bool purge);
  std::vector<std::shared_ptr<TableFile>> GroupFiles(LocalityGroup group) const;
  std::shared_ptr<const FileSet> files() const;
  storage::SequenceNumber flushed_sequence() const;
  // Replaces `removed` by `added` in the file set and raises the flushed mark to `flushed`.
  // The removed files are marked obsolete, except those an added file moved (TableFile).
  void InstallFiles(std::vector<std::shared_ptr<TableFile>> added,
                    const std::vector<std::shared_ptr<TableFile>>& removed,
                    std::optional<storage::SequenceNumber> flushed);
  // Drops the oldest immutable memtable when it is `mem` (it was flushed).
  void PopFlushed(const storage::MemTable* mem);
  // Deletes every memtable and file (after the manifest recorded it) and raises the flushed mark.
  void Truncate(storage::SequenceNumber truncated_at);
  // A rebuild (after the manifest recorded it): replaces every memtable and file by `files`,
  // the drop marks by `drop_marks`, and sets the flushed mark and the last sequence to exactly
  // `sequence` (possibly lower). Starts a new generation. REQUIRES: an operation running alone
  // in the queue; every entry and mark of `files` and `drop_marks` is <= sequence.
  void ReplaceContent(std::vector<std::shared_ptr<TableFile>> files, DropMarks drop_marks,
                      storage::SequenceNumber sequence);
  // The generation of the tablet's content: 0 at creation, one more at each ReplaceContent. A
  // flush or compaction picked in an older generation must not install its files.
  uint64_t generation() const;
  void SetDescriptor(TabletDescriptor descriptor, DropMarks drop_marks);
  // Marks every file obsolete (the tablet was dropped).
  void MarkFilesObsolete();

  // Memory of every memtable, and of the active one.
  size_t MemtableBytes() const;
  // What the manager counts of the tablet's reads and writes (Engine::GetTabletStats).
  // Lock-free.
  struct Traffic {
    // Every successful ReadRow is counted; one in kReadSampling of each thread's is timed (two
    // clock reads are a few percent of a memtable read).
    static constexpr uint32_t kReadSampling = 16;
    std::atomic<uint64_t> row_reads{0};
    LatencyHistogram row_read_samples;
    std::atomic<uint64_t> scans{0};
    LatencyHistogram writes;
    std::atomic<uint64_t> rows_written{0};
  };
  Traffic& traffic() const { return traffic_; }
  size_t ActiveMemtableBytes() const;
  // The oldest commit-log segment the memtables still need; 0 = none.
  uint64_t OldestSegment() const;

 private:
  std::shared_ptr<storage::MemTable> NewMemTable() const;
  bool SwitchMemtableLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status CheckServingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::shared_ptr<TableFile>> GroupFilesLocked(LocalityGroup group) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What to compact next in `group`; nullopt when nothing. Does not move the level cursors.
  std::optional<CompactionInput> PickLocked(LocalityGroup group, std::string* cursor,
                                            uint32_t* cursor_level) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The index in `group_files` of the file marked by ChargeRead in `group`, if it is there.
  std::optional<size_t> ReadExhaustedLocked(
      LocalityGroup group, const std::vector<std::shared_ptr<TableFile>>& group_files) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The table's compaction choice (TableOptions::compaction), else the engine's.
  CompactionStyle StyleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leveled only: a group's level 0 is full (level0_stop_files), so no flush may start.
  bool Level0FullLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TabletId id_;
  const TabletContext context_;
  // Written by the CommitQueue's leader (or an op running alone, or recovery); read by anyone.
  std::atomic<storage::SequenceNumber> last_sequence_{0};
  // Written by the manager under its admin lock, after the manifest edit; read by anyone.
  std::atomic<uint64_t> replica_epoch_{0};
  // Scans started, the seed of each one's read sampling (row_reader.h).
  mutable std::atomic<uint64_t> scans_{0};
  mutable Traffic traffic_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const TabletDescriptor> descriptor_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const DropMarks> drop_marks_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<storage::MemTable> mem_ ABSL_GUARDED_BY(mu_);
  uint64_t mem_first_segment_ ABSL_GUARDED_BY(mu_) = 0;  // segment of mem_'s oldest record
  struct Immutable {
    std::shared_ptr<storage::MemTable> mem;
    uint64_t first_segment = 0;
  };
  std::deque<Immutable> imm_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::shared_ptr<const FileSet> files_ ABSL_GUARDED_BY(mu_);
  storage::SequenceNumber flushed_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The newest sequence of an entry that deletes some versions of a column only (a column
  // tombstone with a time range), or after Open of any entry in the files (they are not read
  // to find out). A flush or compaction counts versions for GC only when its inputs reach this
  // sequence: such a delete outside them can make an older version the newest (issue 9).
  storage::SequenceNumber some_versions_deleted_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_running_ ABSL_GUARDED_BY(mu_) = false;
  bool compaction_running_ ABSL_GUARDED_BY(mu_) = false;
  bool dropping_ ABSL_GUARDED_BY(mu_) = false;
  // TruncateTablet is replacing the files: no flush or compaction may start (CompactTablet
  // waits), so none installs files from before the truncation afterwards.
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool removed_ ABSL_GUARDED_BY(mu_) = false;
  // Leveled compaction: per group and level, the last row compacted out of it (leveled.h).
  std::vector<std::string> level_cursors_[2] ABSL_GUARDED_BY(mu_);
  // Per group, the number of the file whose read budget ran out (ChargeRead); 0 = none. Reads
  // set it, so it is mutable: what reads cost is not part of the tablet's content.
  mutable uint64_t read_exhausted_[2] ABSL_GUARDED_BY(mu_) = {0, 0};
  // The last number PrepareWrite gave to the group being written; at most last_sequence() once
  // the group is published or abandoned.
  storage::SequenceNumber assigned_ ABSL_GUARDED_BY(mu_) = 0;
  // The largest sequence PrepareWrite gave out (its record may be in the log, or in flight).
  storage::SequenceNumber given_out_ ABSL_GUARDED_BY(mu_) = 0;
  TabletDataState state_ ABSL_GUARDED_BY(mu_) = TabletDataState::kServing;
};

}  // namespace tessera::tablet
