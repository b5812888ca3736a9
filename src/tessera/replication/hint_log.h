// HintLog: the mutations a tablet's primary keeps on disk for replicas that have not
// acknowledged them (docs/replication.md, "A replica that was away"): Cassandra's hinted
// handoff, keyed by the tablet's sequence numbers. One directory per node (<data>/hints); per
// tablet, a sequence of segment files of records (tablet id, first and last sequence, the wall
// time the record was written, the encoded RowMutation). The format is at the top of
// hint_log.cc.
//
// A tablet's hints are one contiguous run of sequences, [first, last]: Append refuses a record
// that does not start at last + 1, so a reader asking for sequence s either gets the records
// from the one holding s on, in order, or NotFound. Hints are dropped a whole segment at a
// time: below a sequence (every replica has them), by age (the window) and by total size
// (oldest first, across tablets). A dropped hint is never an error here; the caller, finding
// that a replica needs a sequence no longer held, marks the replica for a rebuild.
//
// Recovery (Open): every segment is read. A torn tail (a record cut short at the end of a
// file, or whose checksum fails and which ends the file) is cut off, and the tablet's hints
// end before it; a record whose checksum fails with more bytes after it is DataLoss naming the
// file and the offset. A gap between two segments of a tablet (a torn tail in a segment that
// is not its last) drops the segments before the gap. A file with a wrong magic or version is
// DataLoss naming it.
//
// Durability: Append syncs the segment before it returns (and the directory when it made a
// file); removals sync the directory. A crash loses at most the records of an Append that had
// not returned.
//
// Thread-safety: every method may be called from any thread. Calls are serialised by one
// mutex held across their file I/O: the hint log is meant to be called from one background
// task (ReplicaNode's tick), never under a lock that a request path takes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::replication {

struct HintRecord {
  uint64_t tablet_id = 0;
  uint64_t first = 0;  // the mutation's sequences, first..last
  uint64_t last = 0;
  int64_t appended_at_us = 0;  // wall time (Clock::NowMicros) the mutation was written
  std::string mutation;        // the encoded RowMutation, as in the commit log
};

struct HintLogOptions {
  // The hint log's own directory (created when missing), e.g. <data-dir>/hints.
  std::string dir;
  // --- performance ---
  // A segment is closed once it holds this many bytes; hints are dropped by whole segments.
  uint64_t segment_bytes = 4ull << 20;
};

// What the log holds for one tablet.
struct HintTabletStats {
  uint64_t first = 0;  // sequences first..last
  uint64_t last = 0;
  uint64_t bytes = 0;  // on disk, headers included
  uint64_t records = 0;
};

class HintLog {
 public:
  // Opens (or creates) the log in options.dir and recovers what it holds (see the top).
  // Errors: the file system's; DataLoss naming a corrupt file and offset; InvalidArgument for
  // an empty dir or a zero segment size.
  static StatusOr<std::unique_ptr<HintLog>> Open(FileSystem* fs, HintLogOptions options);
  ~HintLog();

  HintLog(const HintLog&) = delete;
  HintLog& operator=(const HintLog&) = delete;

  // Appends `records` of one tablet, in sequence order, and syncs them.
  // REQUIRES: every record names `tablet_id`, first <= last, and each starts right after the
  // one before it; the first at the tablet's last + 1 when the log holds hints of it
  // (InvalidArgument / FailedPrecondition naming the sequences otherwise, nothing appended).
  Status Append(uint64_t tablet_id, std::span<const HintRecord> records);

  // The tablet's records from the one holding `sequence` on, in order, until their mutations
  // pass `max_bytes` (at least one record). NotFound when `sequence` is not held (never was,
  // or dropped); DataLoss naming file and offset for a record that no longer reads back.
  StatusOr<std::vector<HintRecord>> Read(uint64_t tablet_id, uint64_t sequence,
                                         size_t max_bytes) const;

  // Removes the tablet's segments whose records all end at or below `sequence`.
  Status DropThrough(uint64_t tablet_id, uint64_t sequence);
  // Removes every hint of the tablet (its content was replaced: a rebuild).
  Status DropTablet(uint64_t tablet_id);
  // Removes the segments whose newest record was written before `cutoff_us` (wall time).
  Status DropWrittenBefore(int64_t cutoff_us);
  // Removes the oldest segments, across tablets, until the log holds at most `max_bytes`.
  Status DropToSize(uint64_t max_bytes);

  // Per tablet that has hints.
  std::map<uint64_t, HintTabletStats> Stats() const;
  uint64_t total_bytes() const;

 private:
  struct Segment;
  struct TabletHints;

  HintLog(FileSystem* fs, HintLogOptions options);
  Status Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads one file into `segment`'s index; cuts a torn tail.
  Status LoadSegment(const std::string& name, Segment* segment) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string PathOf(uint64_t tablet_id, uint64_t number) const;
  // Removes the tablet's oldest segment. REQUIRES: it has one.
  Status RemoveOldest(uint64_t tablet_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status SyncDirIf(bool removed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const fs_;
  const HintLogOptions options_;

  mutable absl::Mutex mu_;
  std::map<uint64_t, TabletHints> tablets_ ABSL_GUARDED_BY(mu_);
  uint64_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::replication
