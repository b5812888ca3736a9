// CommitQueue: the group commit shared by every tablet of one node (leveldb's writers_ queue).
//
// Each Write() joins a FIFO queue with a batch of mutations of one tablet. The writer at the head
// leads: it takes every queued batch (up to 4 MiB, of any tablets), numbers each mutation's
// entries from its own tablet's sequence (a mutation of k entries takes the tablet's last + 1 ..
// last + k; docs/sequence_numbers.md) or checks the numbers a primary gave it, appends all their
// commit-log records (one per mutation) with one write and, in kBatch mode, one fdatasync,
// inserts them into the tablets' memtables, publishes each tablet's new last sequence and wakes
// the followers. A group whose records fail to reach the log uses up no numbers; one whose
// records were appended whole but whose fdatasync (or flush) failed keeps them and is inserted
// (the log's repair keeps whole records, so recovery would replay them), while its writers get
// the error: their writes may have been applied. In kPeriodic mode the
// leader acknowledges once the bytes reach the OS and a timer task on the executor given to
// Start syncs every interval.
//
// RunAlone(op) takes a place in the same queue: when its turn comes no write group is in flight,
// so every tablet's writes so far have sequences <= its Tablet::last_sequence() and every later
// one gets a larger sequence. Schema changes, truncation, memtable switches and ingests run this
// way, reading the sequence of the tablet they change.
//
// Commit-log record, one per mutation (a batch is several records of one append):
// varint64(tablet id) fixed64(first sequence) row-mutation bytes; the mutation's i-th entry has
// the tablet's sequence first + i. Replay needs nothing else to give every entry its number.
//
// Thread-safety: every method is safe to call from many threads. Lock order (docs/tablet.md):
// CommitQueue::mu_ before TabletManager::mu_ before Tablet::mu_; the queue never holds mu_ while
// it calls a hook or an op, so those may take the manager's lock.
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

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "tessera/model/row_mutation.h"
#include "tessera/storage/commit_log.h"
#include "tessera/storage/dbformat.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/tablet.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/latency_histogram.h"

namespace tessera::tablet {

void EncodeLogRecord(std::string* dst, TabletId id, storage::SequenceNumber first,
                     std::string_view mutation);
// False when `record` is too short for its header.
bool DecodeLogRecord(std::string_view record, TabletId* id, storage::SequenceNumber* first,
                     std::string_view* mutation);

class CommitQueue {
 public:
  struct Hooks {
    // Called by a leader before its turn, without the queue's lock: for a write group, the
    // memory stall (it may wait); for an op run alone, the sticky background error. An error
    // fails the group or the op.
    std::function<Status(bool write_group)> before_turn;
    // Called without the queue's lock for each tablet whose memtable a write group sealed.
    std::function<void(Tablet*)> memtable_sealed;
  };

  CommitQueue(SyncMode sync_mode, int64_t periodic_sync_interval_ms, Hooks hooks);
  CommitQueue(const CommitQueue&) = delete;
  CommitQueue& operator=(const CommitQueue&) = delete;
  ~CommitQueue();

  // Starts accepting writes to `log` (which must outlive the queue), and in kPeriodic mode starts
  // the syncer: a timer on `sync_executor`, which must outlive the queue (or its Close).
  // `clock` (must outlive the queue) times the fdatasyncs for sync_latency().
  void Start(storage::CommitLog* log, Executor* sync_executor, const Clock* clock);

  // How long the commit log's fdatasyncs took: the write path's (kBatch) or the syncer's.
  LatencyHistogram::Snapshot sync_latency() const { return sync_latency_.Read(); }

  // Appends the non-empty `batch` for `tablet` and inserts it into the tablet's memtable, in
  // one group. `validated_with` is the descriptor the caller validated it against; the leader
  // validates again when the tablet's descriptor changed since. With `given_first` the numbers
  // are the primary's, checked as Tablet::PrepareWrite says (leading duplicates skipped).
  // Returns the numbers the written mutations took (first is 0 when all were skipped; last is
  // the tablet's number after the batch). Errors: NotFound (tablet removed), InvalidArgument,
  // a replication gap or straddle, the log's error, the hook's error, FailedPrecondition once
  // closed.
  StatusOr<SequenceRange> Write(std::shared_ptr<Tablet> tablet,
                                std::span<const model::RowMutation> batch,
                                const TabletDescriptor* validated_with,
                                std::optional<storage::SequenceNumber> given_first);

  // Runs `op()` at its turn, alone. Returns op's status (or the hook's error).
  Status RunAlone(absl::FunctionRef<Status()> op);

  // Lets every queued writer finish, then refuses new ones and stops the syncer.
  void Close();

 private:
  struct Writer;
  Status JoinAndLead(Writer* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gathers, logs and inserts the write group led by the queue's head.
  Status WriteGroup(std::vector<Writer*>* group, std::vector<std::shared_ptr<Tablet>>* sealed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleSyncLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(syncer_mu_);
  void PeriodicSync();

  const SyncMode sync_mode_;
  const int64_t periodic_sync_interval_ms_;
  const Hooks hooks_;
  // The log has one writer without a lock of its own: the leader (only one leads at a time),
  // then Close of the manager, once no writer is queued and none can join. The syncer needs no
  // lock (CommitLog::SyncFlushedConcurrently).
  storage::CommitLog* log_ = nullptr;
  // Records were handed to the OS since the syncer's last fdatasync (periodic mode).
  std::atomic<bool> log_dirty_{false};
  Executor* sync_executor_ = nullptr;
  const Clock* clock_ = nullptr;
  LatencyHistogram sync_latency_;

  absl::Mutex mu_;
  std::deque<Writer*> writers_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  // The syncer waits on a mutex of its own: a timed wait on mu_ would make every unlock of the
  // write path evaluate its condition.
  absl::Mutex syncer_mu_;
  bool stop_syncer_ ABSL_GUARDED_BY(syncer_mu_) = false;
  bool sync_running_ ABSL_GUARDED_BY(syncer_mu_) = false;
  TimerId sync_timer_ ABSL_GUARDED_BY(syncer_mu_) = 0;
};

}  // namespace tessera::tablet
