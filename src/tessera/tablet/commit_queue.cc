// The group commit. See commit_queue.h and docs/storage_engine.md ("Write path").
#include "tessera/tablet/commit_queue.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "tessera/util/coding.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {
namespace {

using storage::SequenceNumber;

// A group commit takes at most this many bytes of records.
constexpr size_t kMaxGroupBytes = 4 << 20;

}  // namespace

void EncodeLogRecord(std::string* dst, TabletId id, SequenceNumber first,
                     std::string_view mutation) {
  PutVarint64(dst, id);
  PutFixed64(dst, first);
  dst->append(mutation.data(), mutation.size());
}

bool DecodeLogRecord(std::string_view record, TabletId* id, SequenceNumber* first,
                     std::string_view* mutation) {
  uint64_t seq;
  if (!GetVarint64(&record, id) || !GetFixed64(&record, &seq)) return false;
  *first = seq;
  *mutation = record;
  return true;
}

// A place in the queue: a caller of Write, or an op that runs alone (its writer leads a group
// of one).
struct CommitQueue::Writer {
  // A write: the tablet, the batch, the descriptor it was validated against and the primary's
  // numbers (nullopt: the tablet numbers it).
  std::shared_ptr<Tablet> tablet;
  std::span<const model::RowMutation> batch;
  const TabletDescriptor* validated_with = nullptr;
  std::optional<SequenceNumber> given_first;
  SequenceRange numbers;  // what the batch took, set by the leader
  // An op run alone; null for a write.
  const absl::FunctionRef<Status()>* op = nullptr;
  Status status;
  bool done = false;
  absl::CondVar cv;
};

CommitQueue::CommitQueue(SyncMode sync_mode, int64_t periodic_sync_interval_ms, Hooks hooks)
    : sync_mode_(sync_mode),
      periodic_sync_interval_ms_(periodic_sync_interval_ms),
      hooks_(std::move(hooks)) {}

CommitQueue::~CommitQueue() { Close(); }

void CommitQueue::Start(storage::CommitLog* log, Executor* sync_executor, const Clock* clock) {
  log_ = log;
  clock_ = clock;
  if (sync_mode_ != SyncMode::kPeriodic) return;
  sync_executor_ = sync_executor;
  absl::MutexLock l(&syncer_mu_);
  ScheduleSyncLocked();
}

StatusOr<SequenceRange> CommitQueue::Write(std::shared_ptr<Tablet> tablet,
                                           std::span<const model::RowMutation> batch,
                                           const TabletDescriptor* validated_with,
                                           std::optional<SequenceNumber> given_first) {
  Writer w;
  w.tablet = std::move(tablet);
  w.batch = batch;
  w.validated_with = validated_with;
  w.given_first = given_first;
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(JoinAndLead(&w));
  return w.numbers;
}

Status CommitQueue::RunAlone(absl::FunctionRef<Status()> op) {
  Writer w;
  w.op = &op;
  absl::MutexLock l(&mu_);
  return JoinAndLead(&w);
}

Status CommitQueue::JoinAndLead(Writer* w) {
  if (closed_) return absl::FailedPreconditionError("engine is closed");
  writers_.push_back(w);
  while (!w->done && w != writers_.front()) w->cv.Wait(&mu_);
  if (w->done) return w->status;

  // This writer leads: it writes the group that starts with it. Others may join the queue
  // while it works without the lock, but none leads until it is done.
  const bool write_group = w->op == nullptr;
  mu_.Unlock();
  Status s = hooks_.before_turn(write_group);
  mu_.Lock();
  std::vector<Writer*> group;
  std::vector<std::shared_ptr<Tablet>> sealed;
  if (!write_group) {
    group.push_back(w);
    if (s.ok()) {
      mu_.Unlock();
      s = (*w->op)();
      mu_.Lock();
    }
  } else if (s.ok()) {
    s = WriteGroup(&group, &sealed);
  }
  if (!sealed.empty()) {
    mu_.Unlock();
    for (const auto& t : sealed) hooks_.memtable_sealed(t.get());
    mu_.Lock();
  }
  if (group.empty()) group.push_back(w);  // s failed before gathering
  for (Writer* x : group) {
    if (x->status.ok()) x->status = s;
    x->done = true;
    if (x != w) x->cv.Signal();
  }
  while (!writers_.empty() && writers_.front()->done) writers_.pop_front();
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return w->status;
}

Status CommitQueue::WriteGroup(std::vector<Writer*>* group,
                               std::vector<std::shared_ptr<Tablet>>* sealed) {
  // Gather followers, stopping at an op that runs alone or a full group.
  size_t bytes = 0;
  struct Pending {
    Writer* writer;
    Tablet::PreparedWrite prepared;
    SequenceNumber some_versions_deleted = 0;
  };
  std::vector<Pending> pending;
  std::vector<std::string> records;
  const uint64_t segment = log_->current_segment();
  for (Writer* x : writers_) {
    if (x->op != nullptr) break;
    size_t batch_bytes = 0;
    for (const model::RowMutation& m : x->batch) batch_bytes += m.encoded().size();
    if (bytes > 0 && bytes + batch_bytes > kMaxGroupBytes) break;
    group->push_back(x);
    // The tablet numbers the batch (or checks the primary's numbers), after its earlier writers
    // in this group; published only once the group is in the log and the memtables.
    StatusOr<Tablet::PreparedWrite> prepared =
        x->tablet->PrepareWrite(x->batch, x->validated_with, segment, x->given_first);
    if (!prepared.ok()) {
      x->status = prepared.status();  // this writer fails alone, taking no numbers
      continue;
    }
    x->numbers = {prepared->first, prepared->last};
    if (prepared->mem == nullptr) continue;  // all duplicates: the group's outcome is theirs
    SequenceNumber first = prepared->first;
    for (size_t i = prepared->skipped; i < x->batch.size(); ++i) {
      records.emplace_back();
      EncodeLogRecord(&records.back(), x->tablet->id(), first, x->batch[i].encoded());
      first += x->batch[i].size();
    }
    pending.push_back({x, *std::move(prepared), 0});
    bytes += batch_bytes;
  }
  mu_.Unlock();
  // Only the leader runs here: log and memtables have one writer.
  Status s;
  std::vector<std::string_view> views(records.begin(), records.end());
  if (!views.empty()) s = log_->AddRecords(views).status();
  // Once appended whole the records stay in the log even if the sync below fails (the log's
  // repair keeps whole records), and recovery would replay them: their numbers are used, and
  // the memtables get them now, as the writers' outcome is unknown either way.
  const bool logged = s.ok();
  if (s.ok()) {
    if (sync_mode_ == SyncMode::kBatch) {
      const int64_t start = clock_->MonotonicMicros();
      s = log_->Sync();
      sync_latency_.Record(clock_->MonotonicMicros() - start);
    } else {
      // Acknowledged before fdatasync, but never before the bytes reach the kernel: a process
      // crash loses nothing, a machine crash at most one sync interval. The syncer thread makes
      // them durable without blocking this path.
      s = log_->Flush();
      log_dirty_.store(true, std::memory_order_release);
    }
  }
  if (logged) {
    for (Pending& p : pending) {
      const Writer& x = *p.writer;
      SequenceNumber first = p.prepared.first;
      for (size_t i = p.prepared.skipped; i < x.batch.size(); ++i) {
        Status is = InsertMutation(p.prepared.mem.get(), first, x.batch[i].encoded(),
                                   &p.some_versions_deleted);
        if (!is.ok() && p.writer->status.ok()) p.writer->status = is;
        first += x.batch[i].size();
      }
    }
  }
  mu_.Lock();
  if (!logged) {
    for (const Pending& p : pending) p.writer->tablet->AbandonNumbers();
    return s;
  }
  for (const Pending& p : pending) p.writer->tablet->RaiseLastSequence(p.prepared.last);
  for (const Pending& p : pending) {
    if (p.writer->tablet->FinishWrite(p.prepared.mem.get(), p.some_versions_deleted)) {
      sealed->push_back(p.writer->tablet);
    }
  }
  return s;
}

void CommitQueue::Close() {
  {
    absl::MutexLock l(&mu_);
    // Let queued writers finish first.
    mu_.Await(absl::Condition(
        +[](std::deque<Writer*>* w) { return w->empty(); }, &writers_));
    closed_ = true;
  }
  absl::MutexLock l(&syncer_mu_);
  stop_syncer_ = true;
  if (sync_timer_ != 0) sync_executor_->Cancel(sync_timer_);
  sync_timer_ = 0;
  syncer_mu_.Await(absl::Condition(
      +[](bool* running) { return !*running; }, &sync_running_));
}

void CommitQueue::ScheduleSyncLocked() {
  sync_timer_ = sync_executor_->ScheduleAfter(
      std::max<int64_t>(1, periodic_sync_interval_ms_) * 1000, [this] { PeriodicSync(); });
}

void CommitQueue::PeriodicSync() {
  {
    absl::MutexLock l(&syncer_mu_);
    if (stop_syncer_) return;
    sync_running_ = true;
    sync_timer_ = 0;
  }
  if (log_dirty_.exchange(false, std::memory_order_acq_rel)) {
    const int64_t start = clock_->MonotonicMicros();
    Status s = log_->SyncFlushedConcurrently();
    sync_latency_.Record(clock_->MonotonicMicros() - start);
    if (!s.ok()) {
      TLOG_WARN("periodic commit-log sync failed: {}", s);
      log_dirty_.store(true, std::memory_order_release);  // try again next interval
    }
  }
  absl::MutexLock l(&syncer_mu_);
  sync_running_ = false;
  if (!stop_syncer_) ScheduleSyncLocked();
}

}  // namespace tessera::tablet
