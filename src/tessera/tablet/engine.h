// The storage engine of one node: many tablets (a tablet = one row range of one table) sharing
// one commit log, one block cache and one pool of background threads — the tablet server of the
// Bigtable paper with the local persistence of the Cassandra paper (§5.6).
//
// Write path: Apply() encodes nothing new: a model::RowMutation is already the commit-log record.
// Concurrent Apply() calls are group-committed: one leader appends every waiting record with one
// write and, in kBatch mode, one fdatasync, then inserts them into the tablets' memtables. A
// mutation of one row is atomic: readers see all of it or none of it. ApplyBatch() puts several
// mutations of one tablet into one place of that queue; ApplyReplicated() does the same with the
// numbers a primary gave them (docs/sequence_numbers.md, "Numbers given by a primary").
//
// Sequence numbers belong to the tablet (docs/sequence_numbers.md): each tablet numbers its own
// entries densely from 1 — a mutation of k entries takes last + 1 .. last + k of its tablet —
// and every mark (flushed, truncated, dropped family) and read snapshot is in that numbering.
// The commit log, shared by the tablets, is ordered by its records, not by a sequence.
//
// Read path: memtables and SSTables merged newest-first, files skipped by row range and bloom
// filter, tombstones, dropped families (the tablet's DropMarks) and the families' GC rules applied
// (model::CellVisibility), then the ReadSpec's selection. Every read sees a consistent snapshot.
// Scans run forward or in reverse (decreasing row order), never buffering more than one row.
//
// Admin operations that must be ordered exactly against writes (UpdateSchema, TruncateTablet)
// take their turn in the group-commit queue: while one runs no write group is in flight, so the
// sequence number it records splits the writes cleanly into before and after.
//
// Background: a memtable that passes memtable_bytes becomes immutable and is flushed to an
// SSTable; compaction, leveled or size-tiered (docs/compaction.md), merges files; CompactTablet()
// merges all of a tablet's files. Writers stall only when all memtables together pass
// memory_hard_limit_bytes (which a leveled tablet's flushes, held back by a full level 0, fill).
// A background I/O error is sticky: every later write fails with it.
//
// Replication (docs/replication.md) needs four more things of a tablet, and the engine gives
// them without interpreting them: the numbers its writes took (ApplyBatch's SequenceRange), its
// last sequence (LastSequence), a durable replica epoch it promised (RaiseReplicaEpoch), and a
// copy of its whole state that rebuilds a replica (BeginTabletCopy, BeginTabletRebuild).
//
// Recovery: Open() reads the manifest (tablets and their files), then replays the commit log into
// memtables, skipping what each tablet had already flushed. Every log record carries its
// tablet's first sequence, so replay gives each entry the number it had (a primary's or a
// replica's alike). Each tablet's new writes are numbered
// above every sequence its log records and its marks (flushed, dropped family, file) name, so
// replay never skips one — except after a rebuild, which may lower the tablet's sequence: its
// records from before the rebuild lie in earlier log segments, which replay skips for it. A data
// folder written with one node-wide counter is upgraded on open: every tablet starts at least at
// that counter, and the drop marks its schemas held become the tablets' marks. A torn log tail is
// cut off; corruption in the middle of the log, a manifest or an SSTable is a DataLoss error naming
// file and offset.
//
// Thread-safety: every method is safe to call from many threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/row.h"
#include "tessera/model/row_mutation.h"
#include "tessera/model/schema.h"
#include "tessera/util/env.h"
#include "tessera/util/latency_histogram.h"
#include "tessera/util/status.h"

namespace tessera::tablet {

using TabletId = uint64_t;

// A tablet's dropped families: family -> the tablet sequence at the drop. The family's stored
// entries with a sequence <= that number are dead, even once a family of that name is created
// again. Kept by the engine per tablet (in the manifest), never part of the schema.
using DropMarks = std::map<std::string, uint64_t, std::less<>>;
// The sequence at or below which `family`'s entries are dead; 0 if it was never dropped.
inline uint64_t DroppedBefore(const DropMarks& marks, std::string_view family) {
  auto it = marks.find(family);
  return it == marks.end() ? 0 : it->second;
}

// The sequences a batch of mutations took in its tablet: the first entry of the first mutation
// has `first`, the last entry of the last mutation `last`, and every number between belongs to
// the batch (each mutation of k entries takes k consecutive numbers, in the batch's order).
struct SequenceRange {
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const SequenceRange&) const = default;
};

// For a FailedPrecondition that ApplyReplicated returned because of a gap: the sequence the
// tablet expected the batch's first new mutation to start at (its last sequence + 1 at the
// moment of the check). nullopt for any other status.
std::optional<uint64_t> ReplicationGapExpected(const Status& status);

enum class SyncMode {
  kBatch,     // acknowledge a write only after fdatasync (group commit)
  kPeriodic,  // acknowledge once buffered; fdatasync every periodic_sync_interval_ms
};

enum class Compression { kNone, kLz4, kZstd };
enum class CompactionStyle { kLeveled, kSizeTiered };
// "leveled" and "size_tiered" (a table's tessera_options.compaction, `serve --compaction`).
std::optional<CompactionStyle> ParseCompactionStyle(std::string_view name);
std::string_view CompactionStyleName(CompactionStyle style);

struct EngineOptions {
  // --- behaviour ---
  std::string dir;                        // data folder; created when missing
  SyncMode sync_mode = SyncMode::kBatch;  // may not change at runtime
  int64_t periodic_sync_interval_ms = 10;
  uint64_t commit_log_segment_bytes = 128ull << 20;

  // --- performance ---
  size_t memtable_bytes = 64ull << 20;            // per tablet, before it is flushed
  size_t memory_hard_limit_bytes = 512ull << 20;  // all memtables; writers stall above it
  size_t block_cache_bytes = 256ull << 20;
  size_t block_size = 64 * 1024;
  Compression compression = Compression::kLz4;
  int bloom_bits_per_key = 10;
  int background_threads = 2;
  int64_t compaction_bytes_per_second = 64ll << 20;  // <= 0: unlimited
  // How the files of a tablet whose table chooses nothing (TableOptions::compaction) are
  // compacted (docs/compaction.md): leveled bounds the files a read touches; size-tiered writes
  // less and suits write-heavy tables read rarely.
  CompactionStyle compaction_style = CompactionStyle::kLeveled;
  // Size-tiered compaction: merge a run of at least this many files whose sizes are within
  // `size_tier_ratio` of each other (never a huge file with a small one).
  int size_tier_min_files = 4;
  int size_tier_max_files = 32;
  double size_tier_ratio = 2.0;
  // Leveled compaction (tablet/leveled.h). level1_bytes 0: level0_compaction_files times
  // memtable_bytes; level_file_bytes 0: memtable_bytes / 2 (at least 2 MiB).
  int level0_compaction_files = 4;
  int level0_stop_files = 12;
  uint64_t level1_bytes = 0;
  int level_size_multiplier = 10;
  uint64_t level_file_bytes = 0;
  // Compaction by reads (leveled only; docs/compaction.md): a file is compacted once
  // max(read_budget_min_reads, its size / read_budget_bytes) reads passed it. 0 turns it off.
  uint64_t read_budget_bytes = 16 << 10;
  uint64_t read_budget_min_reads = 100;

  // --- observers ---
  // Called by Open() with each commit-log record it replays into a tablet (not with those
  // already flushed or of dropped tablets), in log order: the tablet, the record's first
  // sequence and the encoded mutation (valid during the call). A primary rebuilds from these
  // the mutations its lagging replicas still need (docs/replication.md, "A replica that was
  // away"). Null: none.
  std::function<void(uint64_t tablet, uint64_t first_sequence, std::string_view mutation)>
      on_replayed;
};

struct TabletDescriptor {
  std::string table;
  std::string start_row;  // inclusive; "" = from the first row
  std::string end_row;    // exclusive; "" = to the last row
  model::TableSchema schema;

  bool ContainsRow(std::string_view row) const {
    return row >= start_row && (end_row.empty() || row < end_row);
  }
  std::string Encode() const;
  // A descriptor written when the schema held the tablet's drop marks returns them in
  // *legacy_drop_marks (when given; cleared first).
  static StatusOr<TabletDescriptor> Decode(std::string_view encoded,
                                           DropMarks* legacy_drop_marks = nullptr);
};

struct ScanOptions {
  // At most this many rows (0 = no limit).
  uint64_t limit = 0;
  // Rows in decreasing row order (Bigtable's ReadRows with reversed = true), starting from the
  // last row of the range. Cells inside each row keep their usual order. A reversed scan costs
  // a few seeks per row more than a forward one (it finds each row's start, then reads the row
  // forward), and its work is proportional to the rows it visits, never to the whole range.
  bool reversed = false;
  // Max-age GC rules hide what is older than this time allows (wall micros); 0: the engine's
  // clock now. A repair reads two replicas at one time (docs/repair.md).
  int64_t gc_as_of_micros = 0;
};

// Rows of a scan, in row order (decreasing for a reversed scan), from one consistent snapshot
// taken when the scan started. Not thread-safe; keeps the files and memtables it reads alive
// until destroyed.
class RowIterator {
 public:
  virtual ~RowIterator() = default;
  virtual bool Valid() const = 0;
  // REQUIRES: Valid(). Valid until Next().
  virtual const model::Row& row() const = 0;
  virtual void Next() = 0;
  // When !Valid(): OK at the end, the error otherwise.
  virtual Status status() const = 0;
};

// The primary side of a tablet copy (Engine::BeginTabletCopy): every raw entry of the tablet at
// one snapshot — memtables and SSTables, tombstones, shadowed versions and entries of dropped
// families included, each once — in internal-key order, in chunks (tablet/copy_chunk.h: a
// self-contained, checksummed byte string). With sequence() and drop_marks() the chunks are
// everything a replica needs to become this tablet at that sequence.
// Keeps the snapshot's memtables and files alive (and on disk) until destroyed; must not
// outlive its engine. Not thread-safe.
class TabletCopySource {
 public:
  virtual ~TabletCopySource() = default;
  // The tablet's last sequence at the snapshot: every entry numbered up to it is in the copy,
  // none above it.
  virtual uint64_t sequence() const = 0;
  // The tablet's drop marks at the snapshot (each at most sequence()).
  virtual const DropMarks& drop_marks() const = 0;
  // The next chunk: the following entries, at most `max_bytes` bytes (at least one entry, even
  // when that entry alone is larger). An empty string once every entry was returned.
  // Errors: DataLoss (a damaged SSTable block), I/O errors; after one, every call returns it.
  virtual StatusOr<std::string> NextChunk(size_t max_bytes) = 0;
};

// The replica side of a tablet copy (Engine::BeginTabletRebuild): takes the source's chunks in
// order, writing their entries to new SSTables as they come (on the calling thread), then
// replaces the tablet's whole content with them at Finish. Destroyed before Finish succeeded
// (abandoned, or after an error), it removes its files and the tablet is unchanged. Must not
// outlive its engine. Not thread-safe.
class TabletCopySink {
 public:
  virtual ~TabletCopySink() = default;
  // Adds the next chunk (a string NextChunk returned, in the order returned). A refused chunk
  // writes nothing and the sink stays usable: DataLoss when its checksum or encoding is bad,
  // InvalidArgument when its entries do not follow the entries added before in internal-key
  // order, or hold a malformed key or a row outside the tablet. FailedPrecondition after
  // Finish or after an I/O error (Unavailable, ResourceExhausted), which spoils the sink.
  virtual Status Add(std::string_view chunk) = 0;
  // Atomically and durably replaces the tablet's memtables and files with the added entries,
  // its drop marks with `marks` and its last sequence with exactly `sequence` (the source's
  // sequence() and drop_marks(); it may be below the tablet's last sequence). Keeps the
  // tablet's descriptor, data state and replica epoch. No commit-log record of the tablet
  // written before the call is ever replayed into it again (its records above `sequence`
  // included); writes after it are numbered from sequence + 1, as ApplyReplicated expects. Runs
  // in the group-commit queue and never waits for background work: a flush or compaction of
  // the old content that is running or queued discards its output. Writes to the tablet that
  // the queue ordered before Finish are replaced with the rest of the old content; those after
  // it apply on top. After a crash either the old content or the new one is there, whole.
  // Errors: InvalidArgument (an added entry or a mark above `sequence`, `sequence` above
  // 2^56 - 1), NotFound (the tablet was dropped since BeginTabletRebuild), FailedPrecondition
  // (called twice, the sink spoilt, the engine closed), Unavailable / ResourceExhausted (I/O),
  // a sticky background error. On error the tablet is unchanged and the sink is spent.
  virtual Status Finish(uint64_t sequence, const DropMarks& marks) = 0;
};

// One SSTable of a tablet (Engine::ListSstables).
struct SstableInfo {
  uint64_t number = 0;
  uint32_t group = 0;  // locality group: 0 default, 1 in-memory families
  uint32_t level = 0;  // docs/compaction.md; 0 for size-tiered files
  uint64_t bytes = 0;
  uint64_t entries = 0;
  // The rows it holds entries of: every row in [first_row, last_row] may be in it.
  std::string first_row;
  std::string last_row;
};

struct EngineStats {
  uint64_t memtable_bytes = 0;  // all tablets, active and immutable
  uint64_t sstable_files = 0;
  uint64_t sstable_bytes = 0;
  // The same per level of leveled compaction (size-tiered files are all level 0).
  struct Level {
    uint64_t files = 0;
    uint64_t bytes = 0;
  };
  std::map<uint32_t, Level> levels;
  // Flushes and compactions scheduled or running, and those queued but not started.
  uint64_t background_jobs = 0;
  uint64_t queued_jobs = 0;
  uint64_t running_jobs() const { return background_jobs - std::min(background_jobs, queued_jobs); }
  uint64_t flushes = 0;
  uint64_t compactions = 0;
  uint64_t flush_bytes_written = 0;  // SSTable bytes written by flushes
  uint64_t compaction_bytes_written = 0;
  uint64_t write_stalls = 0;
  uint64_t block_cache_hits = 0;
  uint64_t block_cache_misses = 0;
  uint64_t block_cache_usage = 0;
  uint64_t commit_log_segments = 0;
  // How long the commit log's fdatasyncs took (empty before the engine opened its log).
  LatencyHistogram::Snapshot commit_log_sync;
  // The largest of the tablets' last sequences: a figure for operators, not an order.
  uint64_t last_sequence = 0;
};

// One tablet's share (Engine::GetTabletStats), for `tessera admin tablestats`: what it holds and
// the reads and writes it has served since the engine opened (Cassandra's local read and write
// counts and latencies).
struct TabletStats {
  uint64_t memtable_bytes = 0;  // active and immutable
  uint64_t sstable_files = 0;
  uint64_t sstable_bytes = 0;
  uint64_t last_sequence = 0;
  uint64_t row_reads = 0;                       // ReadRow calls
  LatencyHistogram::Snapshot row_read_samples;  // the time of one in 16 of them (per thread)
  uint64_t scans = 0;                    // Scan calls
  LatencyHistogram::Snapshot writes;     // ApplyBatch / ApplyReplicated calls, until durable
  uint64_t rows_written = 0;             // the mutations of those calls
};

class Engine {
 public:
  // Opens (or creates) the engine in options.dir on `env` (util/env.h), whose pointers must
  // outlive the engine:
  //   * env.fs (null: PosixFileSystem()) holds the data folder; env.clock (null: SystemClock())
  //     paces compaction I/O and stamps the stats;
  //   * env.executor runs flushes, compactions and the periodic-sync timer. Null: the engine
  //     runs its own pool of options.background_threads threads and one more thread for the
  //     periodic sync. Work the engine queued and that has not started when it closes is
  //     cancelled. With a SimExecutor (docs/simulation.md) the calls that wait for background
  //     work — Flush, CompactTablet, WaitForBackgroundWork, DropTablet and TruncateTablet while
  //     a job on the tablet runs, and a write stalled by memory_hard_limit_bytes — block until
  //     the executor runs it, so they must not be made by the thread that drives it.
  //   * env.seed is unused: the engine draws no random numbers that change what it stores.
  static StatusOr<std::unique_ptr<Engine>> Open(const EngineOptions& options,
                                                const Env& env = Env());
  virtual ~Engine() = default;

  // Tablets. CreateTablet fails with AlreadyExists for a known id; the others with NotFound
  // for an unknown one. DropTablet deletes the tablet's data. A new tablet has no drop marks,
  // replica epoch 0, and numbers its first write 1 (above the records of an earlier tablet of
  // the same id that the commit log may still hold: then LastSequence() is above 0 from the
  // start, which a replica must not be created with, since ApplyReplicated would take the
  // primary's first numbers for duplicates).
  virtual Status CreateTablet(TabletId id, const TabletDescriptor& descriptor) = 0;
  virtual Status DropTablet(TabletId id) = 0;
  // Replaces the tablet's schema. Each family of the old schema missing from `schema` gets a
  // drop mark in the tablet's DropMarks: the tablet's last sequence at the change. Entries of a
  // dropped family up to that sequence are never visible again (and are removed by flushes and
  // compactions), even once a family of that name is created again: the new family starts
  // empty. Marks are kept across later changes. Writes queued behind the change are validated
  // against the new schema.
  virtual Status UpdateSchema(TabletId id, const model::TableSchema& schema) = 0;
  // The tablet's drop marks (see UpdateSchema). Errors: NotFound.
  virtual StatusOr<DropMarks> GetDropMarks(TabletId id) const = 0;
  // Deletes all of the tablet's data (memtables and files), keeping the tablet and its
  // descriptor. Atomic and durable: after a crash either all the data from before the call is
  // gone or the call did not happen. Writes acknowledged before the call are deleted, writes
  // that start after it returns are kept; writes that overlap it go either way, each whole.
  // Errors: NotFound, Unavailable (I/O), a sticky background error.
  virtual Status TruncateTablet(TabletId id) = 0;
  virtual StatusOr<TabletDescriptor> GetTablet(TabletId id) const = 0;
  virtual std::vector<TabletId> ListTablets() const = 0;

  // Applies one row's mutations atomically: ApplyBatch of one mutation. Returns once durable as
  // the sync mode says.
  // Errors: NotFound (tablet), InvalidArgument (row outside the tablet, unknown family),
  // ResourceExhausted (disk full), Unavailable (I/O), or a sticky background error.
  Status Apply(TabletId id, const model::RowMutation& mutation) {
    return ApplyBatch(id, std::span<const model::RowMutation>(&mutation, 1)).status();
  }
  // Applies `mutations` (of one tablet; rows may repeat) as one place in the group commit: their
  // records go to the log in one append, with one fdatasync in kBatch mode, and the tablet
  // numbers them consecutively in the given order. Each mutation is atomic for readers and after
  // a crash; the batch as a whole is not: a crash before the call returns may keep a prefix of
  // it (never a later mutation without an earlier one). Returns the numbers the batch took, once
  // durable as the sync mode says. The span need live only during the call.
  // Errors that apply nothing and take no number: InvalidArgument for an empty batch or a
  // mutation that does not validate (the message names its index when the batch has more than
  // one), NotFound (tablet), Unavailable (not serving), FailedPrecondition (closed), a sticky
  // background error. I/O errors (Unavailable, ResourceExhausted for a full disk) mean the batch
  // was not acknowledged, as for Apply.
  virtual StatusOr<SequenceRange> ApplyBatch(TabletId id,
                                             std::span<const model::RowMutation> mutations) = 0;
  // A replica applies mutations its primary already numbered: mutation 0 takes the sequences
  // from `first_sequence` on, mutation i those after mutation i - 1's (k entries, k numbers).
  // Mutations whose numbers are all <= the tablet's sequence are skipped (a retransmit): a batch
  // made only of those returns OK at once and changes nothing. The first mutation not skipped
  // must start at exactly the tablet's sequence + 1. The check, the skip and the numbering are
  // made by the group-commit leader against the tablet's running numbering (counting the numbers
  // given to earlier writers of the same group), so concurrent calls on one tablet are exact: of
  // two racing calls with the same numbers one applies them and the other skips them as
  // duplicates; both return OK once the numbers are durable. Same group commit, validation and
  // durability as ApplyBatch. Returns the tablet's last sequence after the batch (at least the
  // batch's last number). The engine does not check epochs: the caller compares the batch's
  // epoch with GetReplicaEpoch() before calling, under its own ordering.
  // Errors that apply nothing: FailedPrecondition for a gap, with a message that says "gap" and
  // the expected sequence, which ReplicationGapExpected() also reads (LastSequence() may have
  // moved on since); Internal when a mutation's numbers straddle the tablet's sequence (a part of
  // one mutation cannot have been applied: the caller's numbering is wrong), naming the
  // mutation; InvalidArgument (an empty batch, numbers outside 1 .. 2^56 - 1, or as ApplyBatch).
  // Otherwise the errors of ApplyBatch; after an I/O error a retransmit skips what did arrive.
  virtual StatusOr<uint64_t> ApplyReplicated(TabletId id, uint64_t first_sequence,
                                             std::span<const model::RowMutation> mutations) = 0;
  // The tablet's last published sequence: every write numbered up to it is in its memtables or
  // files, readable, and durable as the sync mode says (a write whose fdatasync failed after its
  // record reached the log is published too, though its caller got the error; the next write
  // or retransmit makes it durable before it returns). Errors: NotFound.
  virtual StatusOr<uint64_t> LastSequence(TabletId id) const = 0;

  // The replica epoch the tablet promised (docs/replication.md, "seal"): the engine keeps it
  // durably per tablet and does not interpret it. RaiseReplicaEpoch records `epoch` in the
  // manifest and returns once it is durable; only then does GetReplicaEpoch() return it, and it
  // survives restarts. Equal to the current epoch: OK, nothing written. Calls are serialized with
  // each other and with tablet creation, removal, schema changes and truncation (it may wait
  // behind one of those). A new tablet (CreateTablet, Ingest) has epoch 0.
  // Errors: FailedPrecondition naming both epochs when `epoch` is below the current one,
  // NotFound, Unavailable (I/O), FailedPrecondition (closed).
  virtual Status RaiseReplicaEpoch(TabletId id, uint64_t epoch) = 0;
  // Errors: NotFound.
  virtual StatusOr<uint64_t> GetReplicaEpoch(TabletId id) const = 0;

  // Copying a tablet to a replica that lags too far or diverged (docs/tablet.md, "Copying a
  // tablet"). BeginTabletCopy takes a snapshot of the tablet at its turn in the group-commit
  // queue (so its sequence and drop marks agree) and streams its raw entries
  // (TabletCopySource). Errors: NotFound, Unavailable (not serving), FailedPrecondition
  // (closed), a sticky background error.
  virtual StatusOr<std::unique_ptr<TabletCopySource>> BeginTabletCopy(TabletId id) = 0;
  // Starts rebuilding tablet `id` (already created, any data state) from a copy
  // (TabletCopySink); the tablet keeps serving its old content until Finish. Safe to drive from
  // a simulation task: neither this nor the sink waits for background work. Writes during a
  // rebuild are accepted and ordered before or after Finish (see there); the replication layer
  // does not write to a tablet it rebuilds. Errors: NotFound, FailedPrecondition (closed).
  virtual StatusOr<std::unique_ptr<TabletCopySink>> BeginTabletRebuild(TabletId id) = 0;

  // One row; nullopt when the row has no visible cell matching `spec`.
  virtual StatusOr<std::optional<model::Row>> ReadRow(TabletId id, std::string_view row,
                                                      const model::ReadSpec& spec) const = 0;
  // Rows of `range` (clipped to the tablet) in order, or in reverse order when
  // options.reversed; at most options.limit rows. Rows with no cell matching `spec` are skipped.
  virtual StatusOr<std::unique_ptr<RowIterator>> Scan(TabletId id, const model::RowRange& range,
                                                      const model::ReadSpec& spec,
                                                      const ScanOptions& options) const = 0;
  // A forward scan of at most `limit` rows (0 = no limit).
  StatusOr<std::unique_ptr<RowIterator>> Scan(TabletId id, const model::RowRange& range,
                                              const model::ReadSpec& spec, uint64_t limit) const {
    return Scan(id, range, spec, ScanOptions{.limit = limit, .reversed = false});
  }
  // Approximate bytes of the tablet's data: its SSTables' sizes plus its memtables' memory.
  virtual StatusOr<uint64_t> ApproximateTabletBytes(TabletId id) const = 0;
  // Row keys inside the tablet, strictly increasing, about `every_bytes` of data apart (the
  // data up to and including each returned row, since the previous one, is about every_bytes):
  // split points for Bigtable's SampleRowKeys. Cheap: SSTables are sampled at block granularity
  // from their index blocks (read once per file, then cached), memtables by walking their keys.
  // Never includes the tablet's start row. Empty when the tablet holds less than every_bytes.
  // Errors: NotFound, InvalidArgument (every_bytes == 0), DataLoss (a damaged index block).
  virtual StatusOr<std::vector<std::string>> SampleRowKeys(TabletId id,
                                                           uint64_t every_bytes) const = 0;

  // Loads the blocks that hold `row` into the block cache (Bigtable's PingAndWarm, the inbox
  // search "warm-up" of the Cassandra paper).
  virtual Status WarmRow(TabletId id, std::string_view row) = 0;

  // Flushes the tablet's memtable (every tablet's when id is nullopt) and waits for it.
  virtual Status Flush(std::optional<TabletId> id) = 0;
  // Major compaction: merges every file of each locality group of the tablet into one sorted run
  // (one file, or with leveled compaction files cut at level_file_bytes in the deepest level),
  // applying GC rules and purging tombstones; waits for it.
  virtual Status CompactTablet(TabletId id) = 0;
  // The tablet's SSTables now, newest first. NotFound for an unknown tablet.
  virtual StatusOr<std::vector<SstableInfo>> ListSstables(TabletId id) const = 0;
  // Waits until no flush or compaction is queued or running. For tests and benchmarks.
  virtual Status WaitForBackgroundWork() = 0;

  // The compaction write rate (EngineOptions::compaction_bytes_per_second), changed at run time
  // (`tessera admin setcompactionthroughput`): a compaction under way paces its next writes by
  // it. <= 0: unlimited.
  virtual void SetCompactionBytesPerSecond(int64_t bytes_per_second) = 0;
  virtual int64_t compaction_bytes_per_second() const = 0;

  virtual EngineStats GetStats() const = 0;
  // NotFound for an unknown tablet.
  virtual StatusOr<TabletStats> GetTabletStats(TabletId id) const = 0;
  // Syncs the commit log and stops background work. Later calls fail with FailedPrecondition.
  virtual Status Close() = 0;
};

}  // namespace tessera::tablet
