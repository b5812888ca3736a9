// CommitLog: the engine's write-ahead log, one per engine and shared by every tablet. Each
// record is whatever the engine logs (an encoded write batch); the log gives records no meaning.
//
// Files: <dir>/commitlog-<number>.log, the number zero-padded to at least 6 digits, starting at
// 1 and increasing by one per segment. Records use the framing of log_format.h. The log rolls to
// a new segment before a write once the current segment has reached segment_bytes, so a
// segment exceeds segment_bytes by at most one batch; all records of one batch land in one
// segment.
//
// Lifecycle: Open() lists the existing segments and writes nothing. Replay() reads them all.
// The first write creates a new segment, numbered after every existing one: a replayed file is
// never appended to.
//
// Space: the current segment's space is reserved 1 MiB ahead of its records (Reserve), so
// that Sync() writes data only; closing a segment trims the reserve, and rolling makes the
// trim durable before the next segment exists. A crash may leave the last segment with a
// tail of zeros, which Replay cuts as a torn tail.
//
// Durability: a record is durable once Sync() returned OK after it was added. Rolling syncs the
// previous segment and makes the new file durable (SyncDir) before writing to it, so Sync() only
// ever has the current segment to sync, and only the last segment can have a torn tail after a
// crash.
//
// Failures: when an append or a sync fails (out of space: ResourceExhausted; other I/O:
// Unavailable) the error is returned and nothing in the failed call is acknowledged. The next
// AddRecord(s)/Sync first repairs the segment: it cuts the file back to the records that were
// appended whole, syncs it and continues. Until a repair succeeds every write returns an error;
// nothing acknowledged is lost and the directory stays replayable at any point.
//
// Thread-safety: the log is NOT internally synchronized for writing. Replay, AddRecord,
// AddRecords, StartNewSegment, Sync and Close REQUIRE external serialization (the engine's
// group-commit leader is the single writer; a periodic syncer must take the same role).
// current_segment(), LiveSegments() and DeleteSegmentsBefore() may be called from any thread at any
// time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/storage/log_writer.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage {

enum class CommitLogSyncMode {
  // Group commit: the engine calls Sync() before acknowledging a batch.
  kBatch,
  // The engine acknowledges buffered writes and calls Sync() every few milliseconds; a crash
  // may lose the writes of that interval.
  kPeriodic,
};

struct CommitLogOptions {
  // Directory of the segment files; created by Open() when missing. Required.
  std::string dir;
  // Roll to a new segment before a write once the current one holds at least this many bytes.
  // Default 128 MiB. Performance only.
  uint64_t segment_bytes = 128u << 20;
  // How the engine uses Sync(); the log itself only records it. Default kBatch.
  CommitLogSyncMode sync_mode = CommitLogSyncMode::kBatch;
};

class CommitLog {
 public:
  // How far ahead of its records a segment's space is reserved.
  static constexpr uint64_t kReserveBytes = 1u << 20;

  // Lists the segments in options.dir (creating the directory when missing). Writes no file.
  // `fs` must outlive the log.
  static StatusOr<std::unique_ptr<CommitLog>> Open(const CommitLogOptions& options, FileSystem* fs);

  CommitLog(const CommitLog&) = delete;
  CommitLog& operator=(const CommitLog&) = delete;
  // Closes the current segment without syncing it (call Close() for a clean shutdown).
  ~CommitLog();

  // Calls `fn` for every record of every segment that existed at Open, in order (segment number,
  // then position). `record` is valid only during the call. A torn tail of the last segment is
  // cut off (the file truncated and synced, a warning logged) and replay succeeds; a torn tail
  // of any other segment or corruption anywhere is DataLoss naming the file and offset, and `fn`
  // sees no record past it. An error from `fn` stops the replay and is returned.
  // REQUIRES: no record was added yet.
  Status Replay(const std::function<Status(uint64_t segment, std::string_view record)>& fn);

  // Appends one record; returns the number of the segment that holds it.
  StatusOr<uint64_t> AddRecord(std::string_view record);
  // Appends every record of a batch (a group commit) with a single Append of one buffer, all in
  // the same segment, whose number is returned. InvalidArgument when a record is larger than
  // log::kMaxRecordSize (nothing written).
  StatusOr<uint64_t> AddRecords(std::span<const std::string_view> records);

  // Rolls now: makes the current segment durable, closes it and creates the next one, whose
  // number is returned. Every record added before the call is in a lower segment, every later
  // one in this segment or a higher one: a barrier in the log (a rebuilt tablet replays only
  // what follows it). Errors as for AddRecords.
  StatusOr<uint64_t> StartNewSegment();

  // Makes every record added so far durable (fdatasync of the current segment; earlier segments
  // were synced when the log rolled). OK when there is nothing to sync.
  Status Sync();
  // Hands every added record to the operating system without making it durable: after this, a
  // crash of the process (not of the machine) loses nothing. For the periodic sync mode.
  Status Flush();
  // Makes durable every record handed to the OS by Flush() before this call. Unlike the other
  // writing calls it is thread-safe against the writer: a periodic syncer calls it while the
  // group-commit leader keeps appending, so a slow fdatasync never blocks writes.
  Status SyncFlushedConcurrently();

  // Number of the segment that holds the most recent records, or, before the first write, the
  // number the first write will use. Thread-safe.
  uint64_t current_segment() const;
  // Numbers of the segment files that exist, ascending, including the current one. Thread-safe.
  std::vector<uint64_t> LiveSegments() const;
  // Removes the segment files numbered below `segment`, never the current one. Thread-safe;
  // call it once every tablet with data in those segments has flushed past them.
  Status DeleteSegmentsBefore(uint64_t segment);

  // Syncs and closes the current segment. Every later write fails.
  Status Close();

  const CommitLogOptions& options() const { return options_; }
  std::string SegmentPath(uint64_t segment) const;
  // "commitlog-000042.log" for 42.
  static std::string SegmentFileName(uint64_t segment);
  // Parses a segment file name; nullopt for any other name.
  static std::optional<uint64_t> ParseSegmentFileName(std::string_view name);

 private:
  CommitLog(const CommitLogOptions& options, FileSystem* fs, std::set<uint64_t> segments);

  // Writer-side helpers (externally serialized).
  Status PrepareForWrite();
  // Keeps space reserved past the end of the current segment for the next `bytes` and
  // kReserveBytes more (WritableFile::Preallocate), so that the group commit's fdatasync writes
  // the records alone, not the file's growing size too.
  void Reserve(size_t bytes);
  Status Roll();
  Status Repair();
  void CloseCurrentFile();
  void SetSyncableFile() ABSL_LOCKS_EXCLUDED(mu_);

  const CommitLogOptions options_;
  FileSystem* const fs_;

  // Writer state, touched only by the (externally serialized) writer.
  // Shared with SyncFlushedConcurrently, which may still hold the file of a segment the writer
  // has rolled past; the last owner closes it.
  std::shared_ptr<WritableFile> file_;
  std::unique_ptr<log::LogWriter> writer_;
  uint64_t file_number_ = 0;   // segment number of file_ (0: no file open)
  uint64_t synced_size_ = 0;   // file_ bytes known durable
  uint64_t reserved_ = 0;      // file_ bytes reserved by Preallocate (max: the file cannot)
  bool needs_repair_ = false;  // an append or sync of file_ failed
  uint64_t repair_size_ = 0;   // whole records of the segment to repair
  bool wrote_ = false;         // a record was added (Replay is no longer allowed)
  bool closed_ = false;

  mutable absl::Mutex mu_;
  // Segment files that exist (as far as the log knows).
  std::set<uint64_t> segments_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<WritableFile> syncable_file_ ABSL_GUARDED_BY(mu_);  // == file_
  // See current_segment(); the next segment created gets current_ when no file is open yet,
  // current_ + 1 afterwards.
  uint64_t current_ ABSL_GUARDED_BY(mu_);
  bool current_created_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera::storage
