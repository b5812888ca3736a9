// Background work of the TabletManager: flushes and compactions, scheduled on the executor, and
// the manifest edits that install their files. See docs/storage_engine.md ("Memtables and
// flush", "Compaction").
#include "tessera/storage/merger.h"
#include "tessera/tablet/compaction.h"
#include "tessera/tablet/tablet_manager.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {

using storage::SequenceNumber;

// ------------------------------------------------------------------------------------------
// Flush

void TabletManager::MaybeScheduleFlush(Tablet* t) {
  if (executor_ == nullptr || closed_ || !bg_error_.ok() || !t->TryStartFlush()) return;
  ScheduleJobLocked([this, t = t->shared_from_this()] { BackgroundFlush(t); });
}

void TabletManager::ScheduleJobLocked(std::function<void()> job) {
  ++background_jobs_;
  const uint64_t n = next_job_++;
  // The job starts only once it is in queued_jobs_: it needs mu_, held here.
  queued_jobs_[n] = executor_->ScheduleAfter(0, [this, n, job = std::move(job)] {
    {
      absl::MutexLock l(&mu_);
      queued_jobs_.erase(n);  // started: Close waits for it instead of cancelling it
    }
    job();
  });
}

void TabletManager::BackgroundFlush(std::shared_ptr<Tablet> t) {
  Status s = FlushOldestImmutable(t.get());
  absl::MutexLock l(&mu_);
  t->FinishFlush();
  if (s.ok()) {
    MaybeScheduleFlush(t.get());
    MaybeScheduleCompaction(t.get());
  } else {
    RecordBackgroundError(s);
  }
  --background_jobs_;
  bg_cv_.SignalAll();
}

Status TabletManager::FlushOldestImmutable(Tablet* t) {
  std::optional<FlushInput> in = t->PickFlush();
  if (!in.has_value()) return Status();
  CompactionJobOptions job;
  job.dir = options_.dir;
  job.table_options = table_options_;
  job.can_purge_tombstones = in->can_purge_tombstones;
  job.gc_by_versions = in->gc_by_versions;
  job.now_micros = in->now_micros;
  job.schema = &in->descriptor->schema;
  job.drop_marks = in->drop_marks.get();
  job.new_file_number = [this] { return NewFileNumber(); };
  std::unique_ptr<storage::Iterator> input = in->mem->NewIterator();
  ASSIGN_OR_RETURN(CompactionResult result, RunCompaction(job, env_.fs, input.get()));
  RETURN_IF_ERROR(env_.fs->SyncDir(options_.dir));
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<TableFile>> opened, OpenTableFiles(result.outputs));
  RETURN_IF_ERROR(
      InstallFiles(t, in->generation, std::move(opened), {}, in->mem->LargestSequence()));
  absl::MutexLock l(&mu_);
  t->PopFlushed(in->mem.get());
  ++stats_.flushes;
  stats_.flush_bytes_written += result.bytes_written;
  DeleteObsoleteLogSegments();
  return Status();
}

StatusOr<std::vector<std::shared_ptr<TableFile>>> TabletManager::OpenTableFiles(
    const std::vector<storage::FileMeta>& metas) {
  std::vector<std::shared_ptr<TableFile>> opened;
  for (const auto& meta : metas) {
    StatusOr<std::shared_ptr<TableFile>> f = OpenTableFile(meta);
    if (!f.ok()) {
      for (auto& o : opened) o->MarkObsolete();
      for (size_t i = opened.size(); i < metas.size(); ++i) {
        (void)env_.fs->RemoveFile(TableFileName(options_.dir, metas[i].number));
      }
      return f.status();
    }
    opened.push_back(*std::move(f));
  }
  return opened;
}

Status TabletManager::InstallFiles(Tablet* t, uint64_t generation,
                                   std::vector<std::shared_ptr<TableFile>> opened,
                                   const std::vector<std::shared_ptr<TableFile>>& removed,
                                   std::optional<SequenceNumber> flushed) {
  // On failure the new files go, but not a file that a move would have given a new level.
  auto abandon = [&opened] {
    for (auto& f : opened) {
      if (f->moved_from() == nullptr) f->MarkObsolete();
    }
  };
  storage::VersionEdit edit;
  for (const auto& f : opened) edit.AddFile(t->id(), f->meta());
  for (const auto& f : removed) edit.DeleteFile(t->id(), f->meta().number);
  if (flushed.has_value()) edit.SetFlushed(t->id(), *flushed);
  edit.next_file_number = next_file_number_.load();
  // Held until the files are installed: a rebuild replaces the content between this check and
  // the edit otherwise, and the edit would add files of the old content to the new one.
  absl::MutexLock install(&install_mu_);
  {
    absl::MutexLock l(&mu_);
    if (FindLocked(t->id()).get() != t || t->dropping() || t->generation() != generation) {
      // Being dropped (DropTablet waits for this job, then logs the removal), or rebuilt since
      // the job picked its inputs: the output is of content the tablet no longer has.
      abandon();
      return Status();
    }
  }
  Status s = manifest_->LogAndApply(edit);
  if (!s.ok()) {
    abandon();  // never recorded: remove the new files
    return s;
  }
  absl::MutexLock l(&mu_);
  if (FindLocked(t->id()).get() != t) return Status();
  t->InstallFiles(std::move(opened), removed, flushed);
  return Status();
}

void TabletManager::DeleteObsoleteLogSegments() {
  if (log_ == nullptr) return;
  uint64_t keep_from = log_->current_segment();
  for (const auto& [id, t] : tablets_) {
    const uint64_t oldest = t->OldestSegment();
    if (oldest != 0) keep_from = std::min(keep_from, oldest);
  }
  Status s = log_->DeleteSegmentsBefore(keep_from);
  if (!s.ok()) TLOG_WARN("could not delete old commit-log segments: {}", s);
}

void TabletManager::RecordBackgroundError(const Status& s) {
  if (bg_error_.ok() && !closed_) {
    TLOG_ERROR("background work failed; writes are refused until restart: {}", s);
    bg_error_ = s;
  }
}

// ------------------------------------------------------------------------------------------
// Compaction

void TabletManager::MaybeScheduleCompaction(Tablet* t) {
  if (executor_ == nullptr || closed_ || !bg_error_.ok() || !t->TryStartCompaction()) return;
  ScheduleJobLocked([this, t = t->shared_from_this()] { BackgroundCompaction(t); });
}

void TabletManager::BackgroundCompaction(std::shared_ptr<Tablet> t) {
  Status s;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    s = CompactFiles(t.get(), g, {}, false);
    if (!s.ok()) break;
  }
  absl::MutexLock l(&mu_);
  t->FinishCompaction();
  if (s.ok()) {
    MaybeScheduleFlush(t.get());  // one may have waited for level 0 to empty
    MaybeScheduleCompaction(t.get());
  } else {
    RecordBackgroundError(s);
  }
  --background_jobs_;
  bg_cv_.SignalAll();
}

Status TabletManager::CompactFiles(Tablet* t, LocalityGroup group,
                                   std::vector<std::shared_ptr<TableFile>> inputs, bool purge) {
  std::optional<CompactionInput> in = t->PickCompaction(group, std::move(inputs), purge);
  if (!in.has_value()) return Status();
  if (in->trivial_move) {
    std::vector<std::shared_ptr<TableFile>> moved;
    for (const auto& f : in->files)
      moved.push_back(std::make_shared<TableFile>(f, in->output_level));
    RETURN_IF_ERROR(InstallFiles(t, in->generation, std::move(moved), in->files, std::nullopt));
    absl::MutexLock l(&mu_);
    ++stats_.compactions;
    return Status();
  }
  std::vector<std::unique_ptr<storage::Iterator>> children;
  storage::TableReadOptions ro;
  ro.fill_cache = false;
  for (const auto& f : in->files) children.push_back(f->table()->NewIterator(ro));
  auto input = storage::NewMergingIterator(storage::InternalKeyComparator(), std::move(children));
  CompactionJobOptions job;
  job.dir = options_.dir;
  job.table_options = table_options_;
  job.fixed_group = group;
  job.can_purge_tombstones = in->can_purge_tombstones;
  job.gc_by_versions = in->gc_by_versions;
  job.now_micros = in->now_micros;
  job.schema = &in->descriptor->schema;
  job.drop_marks = in->drop_marks.get();
  job.rate_limiter = &rate_limiter_;
  job.output_level = in->output_level;
  job.max_file_bytes = in->max_file_bytes;
  job.new_file_number = [this] { return NewFileNumber(); };
  ASSIGN_OR_RETURN(CompactionResult result, RunCompaction(job, env_.fs, input.get()));
  input.reset();
  RETURN_IF_ERROR(env_.fs->SyncDir(options_.dir));
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<TableFile>> opened, OpenTableFiles(result.outputs));
  RETURN_IF_ERROR(InstallFiles(t, in->generation, std::move(opened), in->files, std::nullopt));
  absl::MutexLock l(&mu_);
  ++stats_.compactions;
  stats_.compaction_bytes_written += result.bytes_written;
  return Status();
}

Status TabletManager::CompactTablet(TabletId id) {
  RETURN_IF_ERROR(Flush(id));
  std::shared_ptr<Tablet> t;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    t = FindLocked(id);
    if (t == nullptr) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    // Looked up each time: the tablet may be dropped meanwhile.
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return FindLocked(id) != t || t->CanStartManualCompaction();
    };
    mu_.Await(absl::Condition(&ready));
    if (FindLocked(id) != t) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    t->TryStartManualCompaction();  // every change of its flags is made under mu_
  }
  Status s;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    std::vector<std::shared_ptr<TableFile>> inputs;
    {
      absl::MutexLock l(&mu_);
      if (FindLocked(id) != t) break;
      inputs = t->GroupFiles(g);
    }
    if (inputs.empty()) continue;
    // Every file of the group takes part: tombstones have nothing older left to hide.
    s = CompactFiles(t.get(), g, std::move(inputs), /*purge=*/true);
    if (!s.ok()) break;
  }
  absl::MutexLock l(&mu_);
  t->FinishCompaction();
  if (FindLocked(id) == t) {
    MaybeScheduleFlush(t.get());
    MaybeScheduleCompaction(t.get());
  }
  bg_cv_.SignalAll();
  return s;
}

}  // namespace tessera::tablet
