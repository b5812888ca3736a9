// The tablets of one node: lifecycle, the write path's hooks, reads by id, flush, stats, close.
// Recovery is in tablet_recovery.cc, background jobs in background.cc. See tablet_manager.h.
#include "tessera/tablet/tablet_manager.h"

#include <algorithm>

#include "tessera/model/cell_key.h"
#include "tessera/storage/filter_key.h"
#include "tessera/tablet/leveled.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {
namespace {

using storage::SequenceNumber;

// Bloom filters are built over rows: "may this file hold row R?" is one probe.
class RowFilterKeyExtractor final : public storage::FilterKeyExtractor {
 public:
  std::string_view FilterKey(std::string_view table_key) const override {
    if (table_key.size() < storage::kTrailerSize) return table_key;
    return model::RowPrefix(storage::ExtractUserKey(table_key));
  }
  const char* Name() const override { return "tessera.CellRowPrefix.v1"; }
};

storage::CompressionType ToStorage(Compression c) {
  switch (c) {
    case Compression::kNone:
      return storage::CompressionType::kNone;
    case Compression::kLz4:
      return storage::CompressionType::kLz4;
    case Compression::kZstd:
      return storage::CompressionType::kZstd;
  }
  return storage::CompressionType::kNone;
}

Status TabletNotFound(TabletId id) {
  return absl::NotFoundError(StrCat("tablet ", id, " not found"));
}

// The engine's defaults for what `env` leaves null: the machine's file system and clock.
Env WithDefaults(Env env) {
  if (env.fs == nullptr) env.fs = PosixFileSystem();
  if (env.clock == nullptr) env.clock = SystemClock();
  return env;
}

}  // namespace

const storage::FilterKeyExtractor* RowFilterKey() {
  static const RowFilterKeyExtractor instance;
  return &instance;
}

StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options, const Env& env) {
  ASSIGN_OR_RETURN(std::unique_ptr<TabletManager> manager, TabletManager::Open(options, env));
  return std::unique_ptr<Engine>(std::move(manager));
}

StatusOr<std::unique_ptr<TabletManager>> TabletManager::Open(const EngineOptions& options,
                                                             const Env& env) {
  if (options.dir.empty()) return absl::InvalidArgumentError("engine needs a data folder (dir)");
  std::unique_ptr<TabletManager> manager(new TabletManager(options, env));
  RETURN_IF_ERROR(manager->Recover());
  return manager;
}

TabletManager::TabletManager(const EngineOptions& options, const Env& env)
    : options_(options),
      env_(WithDefaults(env)),
      block_cache_(options.block_cache_bytes),
      rate_limiter_(options.compaction_bytes_per_second, env_.clock),
      queue_(options.sync_mode, options.periodic_sync_interval_ms,
             CommitQueue::Hooks{
                 .before_turn = [this](bool write_group) { return BeforeTurn(write_group); },
                 .memtable_sealed =
                     [this](Tablet* t) {
                       absl::MutexLock l(&mu_);
                       MaybeScheduleFlush(t);
                     },
             }),
      tablet_context_{&options_, env_.clock, std::make_shared<std::atomic<size_t>>(0),
                      [this](TabletId id) {
                        absl::MutexLock l(&mu_);
                        if (std::shared_ptr<Tablet> t = FindLocked(id)) {
                          MaybeScheduleCompaction(t.get());
                        }
                      }} {
  table_options_.comparator = storage::InternalKeyComparator();
  table_options_.filter_key_extractor = RowFilterKey();
  table_options_.block_size = options.block_size;
  table_options_.compression = ToStorage(options.compression);
  table_options_.bloom_bits_per_key = options.bloom_bits_per_key;
}

TabletManager::~TabletManager() { (void)Close(); }

// ------------------------------------------------------------------------------------------
// Tablets

std::shared_ptr<Tablet> TabletManager::FindLocked(TabletId id) const {
  auto it = tablets_.find(id);
  return it == tablets_.end() ? nullptr : it->second;
}

StatusOr<std::shared_ptr<Tablet>> TabletManager::tablet(TabletId id) const {
  absl::MutexLock l(&mu_);
  std::shared_ptr<Tablet> t = FindLocked(id);
  if (t == nullptr) return TabletNotFound(id);
  return t;
}

StatusOr<std::shared_ptr<Tablet>> TabletManager::OpenTablet(TabletId id) const {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckOpen());
  std::shared_ptr<Tablet> t = FindLocked(id);
  if (t == nullptr) return TabletNotFound(id);
  return t;
}

std::shared_ptr<Tablet> TabletManager::NewTablet(TabletId id, TabletDescriptor descriptor,
                                                 DropMarks drop_marks,
                                                 SequenceNumber flushed_sequence,
                                                 std::shared_ptr<const FileSet> files,
                                                 TabletDataState state) const {
  return std::make_shared<Tablet>(id, std::move(descriptor), std::move(drop_marks),
                                  flushed_sequence, std::move(files), state, tablet_context_);
}

SequenceNumber TabletManager::RetiredSequence(TabletId id) const {
  auto it = retired_sequences_.find(id);
  return it == retired_sequences_.end() ? 0 : it->second;
}

Status TabletManager::CreateTablet(TabletId id, const TabletDescriptor& descriptor) {
  RETURN_IF_ERROR(descriptor.schema.Validate());
  if (!descriptor.end_row.empty() && descriptor.end_row <= descriptor.start_row) {
    return absl::InvalidArgumentError("tablet end row must sort after its start row");
  }
  absl::MutexLock admin(&admin_mu_);
  SequenceNumber created_at;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (tablets_.contains(id)) {
      return absl::AlreadyExistsError(StrCat("tablet ", id, " already exists"));
    }
    created_at = RetiredSequence(id);
  }
  storage::VersionEdit edit;
  edit.AddTablet(id, descriptor.Encode());
  // Log records of an earlier tablet with this id must not replay into this one: they are at
  // or below the flushed mark. The mark also keeps the tablet's numbers above them after a
  // restart, should those records be gone by then.
  edit.SetFlushed(id, created_at);
  edit.comparator = table_options_.comparator->Name();
  edit.next_file_number = next_file_number_.load();
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  absl::MutexLock l(&mu_);
  retired_sequences_.erase(id);  // the flushed mark holds it now
  tablets_[id] = NewTablet(id, descriptor, {}, created_at, std::make_shared<FileSet>(),
                           TabletDataState::kServing);
  return Status();
}

Status TabletManager::DropTablet(TabletId id) {
  absl::MutexLock admin(&admin_mu_);
  std::shared_ptr<Tablet> t;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    t = FindLocked(id);
    if (t == nullptr) return TabletNotFound(id);
    // Wait for background work on it, so no job installs files into a removed tablet.
    t->SetDropping();
    mu_.Await(absl::Condition(t.get(), &Tablet::Idle));
  }
  storage::VersionEdit edit;
  edit.RemoveTablet(id);
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  absl::MutexLock l(&mu_);
  SequenceNumber& retired = retired_sequences_[id];
  retired = std::max(retired, t->MarkRemoved());
  t->MarkFilesObsolete();
  tablets_.erase(id);
  DeleteObsoleteLogSegments();
  return Status();
}

Status TabletManager::UpdateSchema(TabletId id, const model::TableSchema& schema) {
  RETURN_IF_ERROR(schema.Validate());
  absl::MutexLock admin(&admin_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  return queue_.RunAlone([&] { return ChangeSchemaAlone(t.get(), schema); });
}

Status TabletManager::ChangeSchemaAlone(Tablet* t, const model::TableSchema& schema) {
  // No write group is in flight: every write of the tablet so far has a sequence <= now, and
  // every later one gets a larger sequence and is validated against the new schema. So a
  // family dropped now is dead up to exactly this sequence.
  const SequenceNumber now = t->last_sequence();
  TabletDescriptor d = *t->descriptor();
  DropMarks marks = *t->drop_marks();
  const bool marks_were_empty = marks.empty();
  for (const auto& [name, family] : d.schema.families) {
    if (schema.families.contains(name)) continue;
    uint64_t& dropped = marks[name];
    dropped = std::max<uint64_t>(dropped, now);
  }
  d.schema = schema;
  storage::VersionEdit edit;
  edit.AddTablet(t->id(), d.Encode());
  // The marks are in the tablet's numbering; recovery numbers the tablet's writes above them.
  if (!marks_were_empty || !marks.empty()) edit.SetDropMarks(t->id(), marks);
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  // Still there: admin_mu_ keeps DropTablet out.
  t->SetDescriptor(std::move(d), std::move(marks));
  return Status();
}

StatusOr<DropMarks> TabletManager::GetDropMarks(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  return *t->drop_marks();
}

Status TabletManager::TruncateTablet(TabletId id) { return DeleteTabletData(id, std::nullopt); }

Status TabletManager::DeleteTabletData(TabletId id, std::optional<TabletDataState> state) {
  absl::MutexLock admin(&admin_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  {
    // Stop background work on the tablet, so that nothing installs files made of old data
    // after the truncation. admin_mu_ keeps the tablet in the map.
    absl::MutexLock l(&mu_);
    t->SetPaused(true);
    mu_.Await(absl::Condition(t.get(), &Tablet::Idle));
  }
  Status s = queue_.RunAlone([&] { return TruncateAlone(t.get(), state); });
  absl::MutexLock l(&mu_);
  t->SetPaused(false);
  MaybeScheduleFlush(t.get());
  MaybeScheduleCompaction(t.get());
  bg_cv_.SignalAll();  // Flush and CompactTablet calls waiting on the tablet
  return s;
}

Status TabletManager::TruncateAlone(Tablet* t, std::optional<TabletDataState> state) {
  // As for a schema change, the tablet's sequence splits its writes exactly. The tablet is
  // paused, so its files do not change while the edit is written.
  const SequenceNumber truncated_at = t->last_sequence();
  const std::shared_ptr<const FileSet> old_files = t->files();
  storage::VersionEdit edit;
  for (const auto& f : old_files->files) edit.DeleteFile(t->id(), f->meta().number);
  // Replay skips the tablet's records up to here: they are deleted, as if flushed. One edit:
  // after a crash either the files and the records are all gone or nothing happened.
  edit.SetFlushed(t->id(), truncated_at);
  edit.next_file_number = next_file_number_.load();
  if (state.has_value()) edit.SetDataState(t->id(), static_cast<uint32_t>(*state));
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  absl::MutexLock l(&mu_);
  t->Truncate(truncated_at);
  if (state.has_value()) t->SetState(*state);
  DeleteObsoleteLogSegments();
  return Status();
}

StatusOr<TabletDescriptor> TabletManager::GetTablet(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  return *t->descriptor();
}

std::vector<TabletId> TabletManager::ListTablets() const {
  absl::MutexLock l(&mu_);
  std::vector<TabletId> ids;
  for (const auto& [id, t] : tablets_) ids.push_back(id);
  return ids;
}

// ------------------------------------------------------------------------------------------
// Write path

StatusOr<SequenceRange> TabletManager::ApplyBatch(TabletId id,
                                                  std::span<const model::RowMutation> mutations) {
  return WriteBatch(id, mutations, std::nullopt);
}

StatusOr<uint64_t> TabletManager::ApplyReplicated(TabletId id, uint64_t first_sequence,
                                                  std::span<const model::RowMutation> mutations) {
  uint64_t entries = 0;
  for (const model::RowMutation& m : mutations) entries += m.size();
  // Internal keys hold 56 bits of sequence.
  if (first_sequence == 0 || entries > storage::kMaxSequenceNumber ||
      first_sequence > storage::kMaxSequenceNumber - entries + 1) {
    return absl::InvalidArgumentError(
        StrCat("tablet ", id, ": replicated sequences ", first_sequence, " + ", entries,
               " entries are outside 1..", storage::kMaxSequenceNumber));
  }
  ASSIGN_OR_RETURN(SequenceRange numbers, WriteBatch(id, mutations, first_sequence));
  return numbers.last;
}

StatusOr<SequenceRange> TabletManager::WriteBatch(TabletId id,
                                                  std::span<const model::RowMutation> mutations,
                                                  std::optional<SequenceNumber> given_first) {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  // Held until the write is done, so the leader's "descriptor changed?" check compares live
  // objects.
  std::shared_ptr<const TabletDescriptor> d = t->descriptor();
  RETURN_IF_ERROR(Tablet::ValidateBatch(*d, mutations));
  Tablet::Traffic& traffic = t->traffic();
  const int64_t start = env_.clock->MonotonicMicros();
  StatusOr<SequenceRange> written = queue_.Write(std::move(t), mutations, d.get(), given_first);
  if (written.ok()) {
    traffic.writes.Record(env_.clock->MonotonicMicros() - start);
    traffic.rows_written.fetch_add(mutations.size(), std::memory_order_relaxed);
  }
  return written;
}

StatusOr<uint64_t> TabletManager::LastSequence(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  return t->last_sequence();
}

Status TabletManager::RaiseReplicaEpoch(TabletId id, uint64_t epoch) {
  // admin_mu_ keeps the tablet in the map (and its id from being reused) while the edit is
  // written, and orders the calls: the check and the edit are one step.
  absl::MutexLock admin(&admin_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  const uint64_t current = t->replica_epoch();
  if (epoch < current) {
    return absl::FailedPreconditionError(StrCat("tablet ", id, " promised replica epoch ", current,
                                                "; it cannot go back to ", epoch));
  }
  if (epoch == current) return Status();
  storage::VersionEdit edit;
  edit.SetReplicaEpoch(id, epoch);
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  t->SetReplicaEpoch(epoch);  // readers see it only once it is durable
  return Status();
}

StatusOr<uint64_t> TabletManager::GetReplicaEpoch(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  return t->replica_epoch();
}

Status TabletManager::BeforeTurn(bool write_group) {
  absl::MutexLock l(&mu_);
  if (!write_group) return bg_error_;
  return MakeRoomForWrite();
}

size_t TabletManager::MemtableBytes() const {
  size_t total = 0;
  for (const auto& [id, t] : tablets_) total += t->MemtableBytes();
  return total;
}

bool TabletManager::OverMemoryLimit() const {
  const size_t limit = options_.memory_hard_limit_bytes;
  // The shared counter is one load, whatever the number of tablets; it also counts memtables
  // that readers still hold after their flush, which no flush can free, so the exact sum over
  // the tablets decides once the counter is over.
  return tablet_context_.memtable_usage->load(std::memory_order_relaxed) > limit &&
         MemtableBytes() > limit;
}

Status TabletManager::MakeRoomForWrite() {
  bool stalled = false;
  while (bg_error_.ok() && !closed_ && OverMemoryLimit()) {
    // Over the bound: make sure the biggest active memtable is on its way to disk, then wait.
    // Only the leader calls this, and it inserts nothing meanwhile: sealing races no insert.
    Tablet* biggest = nullptr;
    size_t biggest_bytes = 0;
    for (auto& [id, t] : tablets_) {
      const size_t bytes = t->ActiveMemtableBytes();
      if (bytes > 0 && (biggest == nullptr || bytes > biggest_bytes)) {
        biggest = t.get();
        biggest_bytes = bytes;
      }
    }
    if (biggest != nullptr && biggest->SwitchMemtable()) MaybeScheduleFlush(biggest);
    bool flushing = false;
    for (auto& [id, t] : tablets_) flushing |= t->FlushMayRun();
    if (!flushing) break;  // nothing to wait for (a paused tablet waits for this queue)
    if (!stalled) {
      ++stats_.write_stalls;
      stalled = true;
    }
    bg_cv_.Wait(&mu_);
  }
  if (closed_) return absl::FailedPreconditionError("engine is closed");
  return bg_error_;
}

// ------------------------------------------------------------------------------------------
// Reads

StatusOr<std::optional<model::Row>> TabletManager::ReadRow(TabletId id, std::string_view row,
                                                           const model::ReadSpec& spec) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  // Each thread times its first read and one in kReadSampling after it.
  thread_local uint32_t reads_on_thread = 0;
  const bool timed = reads_on_thread++ % Tablet::Traffic::kReadSampling == 0;
  const int64_t start = timed ? env_.clock->MonotonicMicros() : 0;
  StatusOr<std::optional<model::Row>> read = t->ReadRow(row, spec);
  if (read.ok()) {
    Tablet::Traffic& traffic = t->traffic();
    traffic.row_reads.fetch_add(1, std::memory_order_relaxed);
    if (timed) traffic.row_read_samples.Record(env_.clock->MonotonicMicros() - start);
  }
  return read;
}

StatusOr<std::unique_ptr<RowIterator>> TabletManager::Scan(TabletId id,
                                                           const model::RowRange& range,
                                                           const model::ReadSpec& spec,
                                                           const ScanOptions& options) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  t->traffic().scans.fetch_add(1, std::memory_order_relaxed);
  return t->Scan(range, spec, options);
}

StatusOr<uint64_t> TabletManager::ApproximateTabletBytes(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  return t->ApproximateBytes();
}

StatusOr<std::vector<SstableInfo>> TabletManager::ListSstables(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  std::vector<SstableInfo> out;
  const std::shared_ptr<const FileSet> files = t->files();  // held: the loop reads it
  for (const auto& f : files->files) {
    const storage::FileMeta& m = f->meta();
    SstableInfo info;
    info.number = m.number;
    info.group = m.group;
    info.level = m.level;
    info.bytes = m.size;
    info.entries = m.num_entries;
    const FileRows rows = RowsOf(m);
    std::string_view row;
    std::string scratch;
    if (model::Unescape(rows.first, &row, &scratch)) info.first_row = row;
    if (model::Unescape(rows.last, &row, &scratch)) info.last_row = row;
    out.push_back(std::move(info));
  }
  return out;
}

StatusOr<std::vector<std::string>> TabletManager::SampleRowKeys(TabletId id,
                                                                uint64_t every_bytes) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  return t->SampleRowKeys(every_bytes);
}

Status TabletManager::WarmRow(TabletId id, std::string_view row) {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  return t->WarmRow(row);
}

// ------------------------------------------------------------------------------------------
// Flush, waiting, stats, close

Status TabletManager::Flush(std::optional<TabletId> id) {
  std::vector<std::shared_ptr<Tablet>> tablets;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (id.has_value()) {
      std::shared_ptr<Tablet> t = FindLocked(*id);
      if (t == nullptr) return TabletNotFound(*id);
      tablets.push_back(std::move(t));
    } else {
      for (const auto& [tid, t] : tablets_) tablets.push_back(t);
    }
  }
  for (const std::shared_ptr<Tablet>& t : tablets) {
    // Sealed at its turn in the queue, while nobody inserts.
    Status s = queue_.RunAlone([&]() -> Status {
      absl::MutexLock l(&mu_);
      if (FindLocked(t->id()) != t) return TabletNotFound(t->id());
      if (t->SwitchMemtable()) MaybeScheduleFlush(t.get());
      return Status();
    });
    if (absl::IsNotFound(s)) continue;  // dropped meanwhile
    RETURN_IF_ERROR(s);
    absl::MutexLock l(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return FindLocked(t->id()) != t || !bg_error_.ok() || t->FlushDone();
    };
    while (!done()) bg_cv_.Wait(&mu_);
    RETURN_IF_ERROR(bg_error_);
  }
  return Status();
}

Status TabletManager::WaitForBackgroundWork() {
  absl::MutexLock l(&mu_);
  while (background_jobs_ > 0) bg_cv_.Wait(&mu_);
  return bg_error_;
}

EngineStats TabletManager::GetStats() const {
  absl::MutexLock l(&mu_);
  EngineStats s = stats_;
  s.memtable_bytes = MemtableBytes();
  for (const auto& [id, t] : tablets_) {
    s.last_sequence = std::max<uint64_t>(s.last_sequence, t->last_sequence());
    const std::shared_ptr<const FileSet> files = t->files();  // held: the loop reads it
    for (const auto& f : files->files) {
      ++s.sstable_files;
      s.sstable_bytes += f->meta().size;
      EngineStats::Level& level = s.levels[f->meta().level];
      ++level.files;
      level.bytes += f->meta().size;
    }
  }
  s.background_jobs = static_cast<uint64_t>(background_jobs_);
  s.queued_jobs = queued_jobs_.size();
  auto cache = block_cache_.GetStats();
  s.block_cache_hits = cache.hits;
  s.block_cache_misses = cache.misses;
  s.block_cache_usage = cache.usage;
  s.commit_log_segments = log_ ? log_->LiveSegments().size() : 0;
  s.commit_log_sync = queue_.sync_latency();
  return s;
}

StatusOr<TabletStats> TabletManager::GetTabletStats(TabletId id) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, tablet(id));
  TabletStats s;
  s.memtable_bytes = t->MemtableBytes();
  s.last_sequence = t->last_sequence();
  const std::shared_ptr<const FileSet> files = t->files();  // held: the loop reads it
  for (const auto& f : files->files) {
    ++s.sstable_files;
    s.sstable_bytes += f->meta().size;
  }
  const Tablet::Traffic& traffic = t->traffic();
  s.row_reads = traffic.row_reads.load(std::memory_order_relaxed);
  s.row_read_samples = traffic.row_read_samples.Read();
  s.scans = traffic.scans.load(std::memory_order_relaxed);
  s.writes = traffic.writes.Read();
  s.rows_written = traffic.rows_written.load(std::memory_order_relaxed);
  return s;
}

Status TabletManager::Close() {
  {
    absl::MutexLock l(&mu_);
    if (closing_) return absl::FailedPreconditionError("engine is closed");
    closing_ = true;
  }
  // Queued writers finish first.
  queue_.Close();
  {
    absl::MutexLock l(&mu_);
    closed_ = true;
    // Jobs that have not started are cancelled (their work is in the commit log); running ones
    // finish.
    for (auto it = queued_jobs_.begin(); it != queued_jobs_.end();) {
      if (executor_->Cancel(it->second)) {
        --background_jobs_;
        it = queued_jobs_.erase(it);
      } else {
        ++it;  // already taken by a worker: it runs, and is waited for below
      }
    }
    while (background_jobs_ > 0) bg_cv_.Wait(&mu_);
  }
  own_pool_.reset();
  Status s;
  if (log_ != nullptr) {
    s = log_->Sync();
    Status c = log_->Close();
    if (s.ok()) s = c;
  }
  dir_lock_.reset();
  return s;
}

}  // namespace tessera::tablet
