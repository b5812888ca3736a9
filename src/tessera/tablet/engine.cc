// The engine: tablets, the group-commit write path, background flush and compaction, recovery.
// See engine.h for the contract and docs/storage_engine.md for the design.
#include "tessera/tablet/engine.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/storage/block_cache.h"
#include "tessera/storage/commit_log.h"
#include "tessera/storage/manifest.h"
#include "tessera/storage/memtable.h"
#include "tessera/storage/merger.h"
#include "tessera/storage/table.h"
#include "tessera/tablet/compaction.h"
#include "tessera/tablet/row_reader.h"
#include "tessera/tablet/row_samples.h"
#include "tessera/tablet/snapshot.h"
#include "tessera/tablet/table_file.h"
#include "tessera/util/executor.h"
#include "tessera/util/logging.h"
#include "tessera/util/rate_limiter.h"

namespace tessera::tablet {
namespace {

using storage::SequenceNumber;

constexpr char kCommitLogSubdir[] = "commitlog";
// Held for the engine's lifetime (FileSystem::LockFile), as leveldb's LOCK.
constexpr char kLockFileName[] = "LOCK";
// A group commit takes at most this many bytes of records.
constexpr size_t kMaxGroupBytes = 4 << 20;

// Bloom filters are built over rows: "may this file hold row R?" is one probe.
class RowFilterKeyExtractor final : public storage::FilterKeyExtractor {
 public:
  std::string_view FilterKey(std::string_view table_key) const override {
    if (table_key.size() < storage::kTrailerSize) return table_key;
    return model::RowPrefix(storage::ExtractUserKey(table_key));
  }
  const char* Name() const override { return "tessera.CellRowPrefix.v1"; }
};

const RowFilterKeyExtractor* RowFilterKey() {
  static const RowFilterKeyExtractor instance;
  return &instance;
}

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

// Commit-log record: varint64(tablet id) fixed64(first sequence) row-mutation bytes. The
// mutation's i-th entry has sequence first + i.
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

// Inserts the cells of one encoded mutation into `mem`, numbering them from `first`.
// Inserts the entries of `encoded` with sequences from `first` on. Raises *some_versions_deleted
// to the sequence of each entry that deletes some versions of a column only
// (model::DeletesSomeVersions; see Tablet::some_versions_deleted).
Status InsertMutation(storage::MemTable* mem, SequenceNumber first, std::string_view encoded,
                      SequenceNumber* some_versions_deleted) {
  SequenceNumber seq = first;
  thread_local std::string scratch;
  return model::ForEachCellEntry(encoded, &scratch, [&](std::string_view key, std::string_view value) {
    if (model::DeletesSomeVersions(key, value)) {
      *some_versions_deleted = std::max(*some_versions_deleted, seq);
    }
    mem->Add(seq++, storage::ValueType::kValue, key, value);
  });
}

struct Tablet {
  TabletId id = 0;
  std::shared_ptr<const TabletDescriptor> descriptor;
  std::shared_ptr<storage::MemTable> mem;
  uint64_t mem_first_segment = 0;  // commit-log segment of mem's oldest record; 0 = none
  struct Immutable {
    std::shared_ptr<storage::MemTable> mem;
    uint64_t first_segment = 0;
  };
  std::deque<Immutable> imm;  // oldest first
  std::shared_ptr<const FileSet> files = std::make_shared<FileSet>();
  SequenceNumber flushed_sequence = 0;
  // The newest sequence of an entry that deletes some versions of a column only (a column
  // tombstone with a time range), or after Open of any entry in the files (they are not read
  // to find out). A flush or compaction counts versions for GC only when its inputs reach this
  // sequence: such a delete outside them can make an older version the newest (issue 9).
  SequenceNumber some_versions_deleted = 0;
  bool flush_running = false;
  bool compaction_running = false;
  bool dropping = false;  // DropTablet is waiting for running jobs; schedule nothing new
  // TruncateTablet is replacing the files: no flush or compaction may start (CompactTablet
  // waits), so none installs files from before the truncation afterwards.
  bool paused = false;
};

// A flush of the tablet's immutable memtables is running or may be scheduled.
bool FlushMayRun(const Tablet& t) {
  return !t.imm.empty() && (t.flush_running || (!t.paused && !t.dropping));
}

// A place in the group-commit queue: a caller of Apply, or an operation that must run between
// write groups, alone (its writer leads a group of one).
struct Writer {
  enum class Kind {
    kMutation,        // Apply
    kSwitchMemtable,  // Flush: seal the tablet's memtable while nobody inserts
    kSchemaChange,    // UpdateSchema
    kTruncate,        // TruncateTablet
  };
  Kind kind = Kind::kMutation;
  TabletId id = 0;
  const model::RowMutation* mutation = nullptr;  // kMutation
  // kMutation: the descriptor `mutation` was validated against. When the tablet's descriptor
  // changed since (UpdateSchema), the leader validates the mutation again.
  std::shared_ptr<const TabletDescriptor> validated_with;
  const model::TableSchema* schema = nullptr;  // kSchemaChange
  Status status;
  bool done = false;
  absl::CondVar cv;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineOptions& options, const EngineEnv& env)
      : options_(options),
        env_(env),
        block_cache_(options.block_cache_bytes),
        rate_limiter_(options.compaction_bytes_per_second, env.clock) {
    table_options_.comparator = storage::InternalKeyComparator();
    table_options_.filter_key_extractor = RowFilterKey();
    table_options_.block_size = options.block_size;
    table_options_.compression = ToStorage(options.compression);
    table_options_.bloom_bits_per_key = options.bloom_bits_per_key;
  }

  ~EngineImpl() override { (void)Close(); }

  Status Recover();

  Status CreateTablet(TabletId id, const TabletDescriptor& descriptor) override;
  Status DropTablet(TabletId id) override;
  Status UpdateSchema(TabletId id, const model::TableSchema& schema) override;
  Status TruncateTablet(TabletId id) override;
  StatusOr<TabletDescriptor> GetTablet(TabletId id) const override;
  std::vector<TabletId> ListTablets() const override;
  Status Apply(TabletId id, const model::RowMutation& mutation) override;
  StatusOr<std::optional<model::Row>> ReadRow(TabletId id, std::string_view row,
                                              const model::ReadSpec& spec) const override;
  using Engine::Scan;
  StatusOr<std::unique_ptr<RowIterator>> Scan(TabletId id, const model::RowRange& range,
                                              const model::ReadSpec& spec,
                                              const ScanOptions& options) const override;
  StatusOr<uint64_t> ApproximateTabletBytes(TabletId id) const override;
  StatusOr<std::vector<std::string>> SampleRowKeys(TabletId id,
                                                   uint64_t every_bytes) const override;
  Status WarmRow(TabletId id, std::string_view row) override;
  Status Flush(std::optional<TabletId> id) override;
  Status CompactTablet(TabletId id) override;
  Status WaitForBackgroundWork() override;
  EngineStats GetStats() const override;
  Status Close() override;

 private:
  // --- write path ---
  Status ValidateMutation(const TabletDescriptor& d, const model::RowMutation& m) const;
  Status JoinQueueAndLead(Writer* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The operations that run alone in the queue, called by their writer once it leads. They
  // may release mu_ while writing the manifest; no write group runs meanwhile.
  Status RunAlone(Writer* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status ChangeSchemaAlone(TabletId id, const model::TableSchema& schema)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status TruncateAlone(TabletId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status MakeRoomForWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SwitchMemtable(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t MemtableBytes() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PeriodicSyncLoop();

  // --- background work ---
  void MaybeScheduleFlush(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundFlush(TabletId id);
  Status FlushOldestImmutable(TabletId id);
  void MaybeScheduleCompaction(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundCompaction(TabletId id);
  // Merges `inputs` of one group of tablet `id` into new files and installs them. With
  // `inputs` empty, picks a size-tiered run. REQUIRES: t->compaction_running set by the caller.
  Status CompactFiles(TabletId id, LocalityGroup group,
                      std::vector<std::shared_ptr<TableFile>> inputs, bool purge);
  // Installs new files for tablet `id`, replacing `removed`, after logging the edit.
  Status InstallFiles(TabletId id, const std::vector<storage::FileMeta>& added,
                      const std::vector<std::shared_ptr<TableFile>>& removed,
                      std::optional<SequenceNumber> flushed) ABSL_LOCKS_EXCLUDED(mu_);
  StatusOr<std::shared_ptr<TableFile>> OpenTableFile(const storage::FileMeta& meta);
  void DeleteObsoleteLogSegments() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordBackgroundError(const Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status RemoveOrphanFiles(const storage::ManifestState& state);

  Status CheckOpen() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("engine is closed");
    return Status();
  }

  // --- reads ---
  StatusOr<TabletSnapshot> Snapshot(TabletId id) const;

  uint64_t NewFileNumber() { return next_file_number_.fetch_add(1); }
  // Arena blocks scale with the memtable size, so that a small memtable is not one big block.
  std::shared_ptr<storage::MemTable> NewMemTable() const {
    storage::MemTableOptions o;
    o.arena_block_size = std::clamp<size_t>(options_.memtable_bytes / 16, 4096, 1 << 20);
    return std::make_shared<storage::MemTable>(o);
  }

  const EngineOptions options_;
  const EngineEnv env_;
  storage::TableOptions table_options_;
  storage::BlockCache block_cache_;
  RateLimiter rate_limiter_;
  std::unique_ptr<storage::Manifest> manifest_;
  std::unique_ptr<FileLock> dir_lock_;  // released by Close()
  std::unique_ptr<storage::CommitLog> log_;
  std::unique_ptr<Executor> executor_;
  std::atomic<uint64_t> next_file_number_{1};
  std::thread syncer_;

  // Serializes tablet creation, removal and schema changes (manifest writes included).
  absl::Mutex admin_mu_;
  // The commit log has one writer without a lock of its own: the group-commit leader (only one
  // leads at a time), then Close, which runs once no writer is queued and none can join. The
  // periodic syncer needs no lock (CommitLog::SyncFlushedConcurrently).
  // Records were handed to the OS since the syncer's last fdatasync (periodic mode).
  std::atomic<bool> log_dirty_{false};

  mutable absl::Mutex mu_;
  absl::CondVar bg_cv_;  // signalled when background work finishes
  std::map<TabletId, std::unique_ptr<Tablet>> tablets_ ABSL_GUARDED_BY(mu_);
  std::deque<Writer*> writers_ ABSL_GUARDED_BY(mu_);
  SequenceNumber last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  Status bg_error_ ABSL_GUARDED_BY(mu_);
  int background_jobs_ ABSL_GUARDED_BY(mu_) = 0;  // scheduled or running
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_syncer_ ABSL_GUARDED_BY(mu_) = false;
  EngineStats stats_ ABSL_GUARDED_BY(mu_);
};

// ------------------------------------------------------------------------------------------
// Recovery

Status EngineImpl::Recover() {
  FileSystem* fs = env_.fs;
  RETURN_IF_ERROR(fs->CreateDirs(options_.dir));
  // One process per data folder: two would both append commit-log segments.
  StatusOr<std::unique_ptr<FileLock>> lock = fs->LockFile(JoinPath(options_.dir, kLockFileName));
  if (!lock.ok()) {
    if (!absl::IsFailedPrecondition(lock.status())) return lock.status();
    return absl::FailedPreconditionError(
        StrCat("data folder ", options_.dir, " is in use by another process (",
               lock.status().message(), "); stop it, or give this one another --data-dir"));
  }
  dir_lock_ = *std::move(lock);
  const std::string log_dir = JoinPath(options_.dir, kCommitLogSubdir);
  RETURN_IF_ERROR(fs->CreateDirs(log_dir));
  RETURN_IF_ERROR(fs->SyncDir(options_.dir));
  ASSIGN_OR_RETURN(manifest_, storage::Manifest::Open(fs, options_.dir, /*create_if_missing=*/true));
  const storage::ManifestState& state = manifest_->state();
  if (!state.comparator.empty() && state.comparator != table_options_.comparator->Name()) {
    return absl::InvalidArgumentError(StrCat("engine in ", options_.dir, " was written with key order ",
                                             state.comparator, ", not ",
                                             table_options_.comparator->Name()));
  }
  next_file_number_ = state.next_file_number;

  absl::MutexLock l(&mu_);
  last_sequence_ = state.last_sequence;
  for (const auto& [id, ts] : state.tablets) {
    auto t = std::make_unique<Tablet>();
    t->id = id;
    ASSIGN_OR_RETURN(TabletDescriptor d, TabletDescriptor::Decode(ts.descriptor));
    t->descriptor = std::make_shared<const TabletDescriptor>(std::move(d));
    t->mem = NewMemTable();
    t->flushed_sequence = ts.flushed_sequence;
    auto files = std::make_shared<FileSet>();
    for (const auto& [number, meta] : ts.files) {
      ASSIGN_OR_RETURN(auto file, OpenTableFile(meta));
      files->files.push_back(std::move(file));
    }
    std::sort(files->files.begin(), files->files.end(), [](const auto& a, const auto& b) {
      return a->meta().max_sequence > b->meta().max_sequence;
    });
    for (const auto& f : files->files) {
      t->some_versions_deleted = std::max(t->some_versions_deleted, f->meta().max_sequence);
    }
    t->files = std::move(files);
    tablets_[id] = std::move(t);
  }
  // Every sequence given out from now on must lie above every mark the manifest holds: replay
  // skips a tablet's records up to its flushed mark, and a dropped family hides its entries up
  // to its drop mark. The engine records last_sequence with each mark, but the log records that
  // raised it may be gone (a dropped or truncated tablet's log is recycled), and a manifest
  // written before those records existed (older engines) holds marks above it. Numbering new
  // writes from state.last_sequence alone would then number them below a mark, and the next
  // replay would skip acknowledged writes. So the marks themselves raise the floor.
  SequenceNumber marks = 0;
  for (const auto& [id, t] : tablets_) {
    marks = std::max(marks, t->flushed_sequence);
    for (const auto& f : t->files->files) marks = std::max(marks, f->meta().max_sequence);
    for (const auto& [family, dropped_at] : t->descriptor->schema.dropped_families) {
      marks = std::max<SequenceNumber>(marks, dropped_at);
    }
  }
  if (marks > last_sequence_) {
    TLOG_WARN("engine {}: manifest last sequence {} is below a tablet's mark {}; numbering new "
              "writes above the mark",
              options_.dir, last_sequence_, marks);
    last_sequence_ = marks;
  }
  RETURN_IF_ERROR(RemoveOrphanFiles(state));

  storage::CommitLogOptions log_options;
  log_options.dir = log_dir;
  log_options.segment_bytes = options_.commit_log_segment_bytes;
  ASSIGN_OR_RETURN(log_, storage::CommitLog::Open(log_options, fs));
  uint64_t replayed = 0, skipped = 0;
  Status s = log_->Replay([&](uint64_t segment, std::string_view record)
                              ABSL_NO_THREAD_SAFETY_ANALYSIS -> Status {
    TabletId id;
    SequenceNumber first;
    std::string_view mutation;
    if (!DecodeLogRecord(record, &id, &first, &mutation)) {
      return absl::DataLossError(StrCat(log_->SegmentPath(segment), ": malformed record header"));
    }
    auto it = tablets_.find(id);
    if (it == tablets_.end() || first <= it->second->flushed_sequence) {
      // A dropped tablet's, or already in the tablet's files. Its sequence numbers still count:
      // a tablet created later under the same id must start above them.
      ASSIGN_OR_RETURN(model::RowMutation m, model::RowMutation::FromEncoded(mutation));
      last_sequence_ = std::max(last_sequence_, first + m.size() - 1);
      ++skipped;
      return Status();
    }
    Tablet* t = it->second.get();
    if (t->mem_first_segment == 0) t->mem_first_segment = segment;
    RETURN_IF_ERROR_CTX(InsertMutation(t->mem.get(), first, mutation, &t->some_versions_deleted),
                        StrCat(log_->SegmentPath(segment), ": bad mutation"));
    last_sequence_ = std::max(last_sequence_, t->mem->LargestSequence());
    if (t->mem->ApproximateMemoryUsage() >= options_.memtable_bytes) SwitchMemtable(t);
    ++replayed;
    return Status();
  });
  RETURN_IF_ERROR(s);
  TLOG_INFO("engine {}: {} tablets, {} log records replayed, {} skipped, last sequence {}",
            options_.dir, tablets_.size(), replayed, skipped, last_sequence_);

  executor_ = NewThreadPoolExecutor(std::max(1, options_.background_threads));
  for (auto& [id, t] : tablets_) {
    MaybeScheduleFlush(t.get());
    MaybeScheduleCompaction(t.get());
  }
  if (options_.sync_mode == SyncMode::kPeriodic) {
    syncer_ = std::thread([this] { PeriodicSyncLoop(); });
  }
  return Status();
}

Status EngineImpl::RemoveOrphanFiles(const storage::ManifestState& state) {
  // Tables written by a flush or compaction that crashed before the manifest recorded them.
  std::set<uint64_t> live;
  for (const auto& [id, ts] : state.tablets) {
    for (const auto& [number, meta] : ts.files) live.insert(number);
  }
  ASSIGN_OR_RETURN(auto children, env_.fs->GetChildren(options_.dir));
  for (const auto& name : children) {
    std::optional<uint64_t> number = ParseTableFileName(name);
    if (!number.has_value() || live.contains(*number)) continue;
    TLOG_INFO("removing orphan table {}", name);
    RETURN_IF_ERROR(env_.fs->RemoveFile(JoinPath(options_.dir, name)));
  }
  return Status();
}

StatusOr<std::shared_ptr<TableFile>> EngineImpl::OpenTableFile(const storage::FileMeta& meta) {
  std::string path = TableFileName(options_.dir, meta.number);
  ASSIGN_OR_RETURN(auto file, env_.fs->NewRandomAccessFile(path));
  ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size != meta.size) {
    return absl::DataLossError(StrCat(path, ": size ", size, " but the manifest says ", meta.size));
  }
  bool in_memory = static_cast<LocalityGroup>(meta.group) == LocalityGroup::kInMemory;
  ASSIGN_OR_RETURN(auto table,
                   storage::Table::Open(table_options_, path, std::move(file), size,
                                        &block_cache_, block_cache_.NewId(), in_memory));
  return std::make_shared<TableFile>(meta, path, std::move(table), env_.fs);
}

// ------------------------------------------------------------------------------------------
// Tablets

Status EngineImpl::CreateTablet(TabletId id, const TabletDescriptor& descriptor) {
  RETURN_IF_ERROR(descriptor.schema.Validate());
  if (!descriptor.end_row.empty() && descriptor.end_row <= descriptor.start_row) {
    return absl::InvalidArgumentError("tablet end row must sort after its start row");
  }
  TabletDescriptor d = descriptor;
  // The engine owns the drop marks: nothing in a new tablet is older than it.
  d.schema.dropped_families.clear();
  absl::MutexLock admin(&admin_mu_);
  SequenceNumber created_at;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (tablets_.contains(id)) {
      return absl::AlreadyExistsError(StrCat("tablet ", id, " already exists"));
    }
    created_at = last_sequence_;
  }
  storage::VersionEdit edit;
  edit.AddTablet(id, d.Encode());
  // Log records of an earlier tablet with this id must not replay into this one. The last
  // sequence is recorded too: should the log segments holding it be deleted, sequences after a
  // restart must still start above the mark, or replay would skip new writes.
  edit.SetFlushed(id, created_at);
  edit.last_sequence = created_at;
  edit.comparator = table_options_.comparator->Name();
  edit.next_file_number = next_file_number_.load();
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  absl::MutexLock l(&mu_);
  auto t = std::make_unique<Tablet>();
  t->id = id;
  t->descriptor = std::make_shared<const TabletDescriptor>(std::move(d));
  t->mem = NewMemTable();
  t->flushed_sequence = created_at;
  tablets_[id] = std::move(t);
  return Status();
}

Status EngineImpl::DropTablet(TabletId id) {
  absl::MutexLock admin(&admin_mu_);
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (!tablets_.contains(id)) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    // Wait for background work on it, so no job installs files into a removed tablet.
    Tablet* t = tablets_[id].get();
    t->dropping = true;
    mu_.Await(absl::Condition(
        +[](Tablet* t) { return !t->flush_running && !t->compaction_running; }, t));
  }
  storage::VersionEdit edit;
  edit.RemoveTablet(id);
  RETURN_IF_ERROR(manifest_->LogAndApply(edit));
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  for (const auto& f : it->second->files->files) f->MarkObsolete();
  tablets_.erase(it);
  DeleteObsoleteLogSegments();
  return Status();
}

Status EngineImpl::UpdateSchema(TabletId id, const model::TableSchema& schema) {
  RETURN_IF_ERROR(schema.Validate());
  absl::MutexLock admin(&admin_mu_);
  Writer w;
  w.kind = Writer::Kind::kSchemaChange;
  w.id = id;
  w.schema = &schema;
  absl::MutexLock l(&mu_);
  return JoinQueueAndLead(&w);
}

Status EngineImpl::ChangeSchemaAlone(TabletId id, const model::TableSchema& schema) {
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
  // No write group is in flight: every write so far has a sequence <= last_sequence_, and every
  // later one gets a larger sequence and is validated against the new schema. So a family
  // dropped now is dead up to exactly this sequence.
  const SequenceNumber now = last_sequence_;
  TabletDescriptor d = *it->second->descriptor;
  model::TableSchema next = schema;
  next.dropped_families = d.schema.dropped_families;
  for (const auto& [name, family] : d.schema.families) {
    if (next.families.contains(name)) continue;
    uint64_t& dropped = next.dropped_families[name];
    dropped = std::max<uint64_t>(dropped, now);
  }
  d.schema = std::move(next);
  storage::VersionEdit edit;
  edit.AddTablet(id, d.Encode());
  // A drop mark must stay below every sequence given out after a restart.
  edit.last_sequence = now;
  mu_.Unlock();
  Status s = manifest_->LogAndApply(edit);
  mu_.Lock();
  RETURN_IF_ERROR(s);
  it = tablets_.find(id);  // still there: admin_mu_ keeps DropTablet out
  if (it != tablets_.end()) {
    it->second->descriptor = std::make_shared<const TabletDescriptor>(std::move(d));
  }
  return Status();
}

Status EngineImpl::TruncateTablet(TabletId id) {
  absl::MutexLock admin(&admin_mu_);
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    auto it = tablets_.find(id);
    if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    // Stop background work on the tablet, so that nothing installs files made of old data
    // after the truncation. admin_mu_ keeps the tablet alive.
    Tablet* t = it->second.get();
    t->paused = true;
    mu_.Await(absl::Condition(
        +[](Tablet* t) { return !t->flush_running && !t->compaction_running; }, t));
  }
  Writer w;
  w.kind = Writer::Kind::kTruncate;
  w.id = id;
  absl::MutexLock l(&mu_);
  Status s = JoinQueueAndLead(&w);
  auto it = tablets_.find(id);
  if (it != tablets_.end()) {
    Tablet* t = it->second.get();
    t->paused = false;
    MaybeScheduleFlush(t);
    MaybeScheduleCompaction(t);
  }
  bg_cv_.SignalAll();  // Flush and CompactTablet calls waiting on the tablet
  return s;
}

Status EngineImpl::TruncateAlone(TabletId id) {
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
  Tablet* t = it->second.get();
  // As for a schema change, the sequence splits the writes exactly. The tablet is paused, so
  // its files do not change while the edit is written.
  const SequenceNumber truncated_at = last_sequence_;
  const std::shared_ptr<const FileSet> old_files = t->files;
  storage::VersionEdit edit;
  for (const auto& f : old_files->files) edit.DeleteFile(id, f->meta().number);
  // Replay skips the tablet's records up to here: they are deleted, as if flushed. One edit:
  // after a crash either the files and the records are all gone or nothing happened.
  edit.SetFlushed(id, truncated_at);
  edit.last_sequence = truncated_at;
  edit.next_file_number = next_file_number_.load();
  mu_.Unlock();
  Status s = manifest_->LogAndApply(edit);
  mu_.Lock();
  RETURN_IF_ERROR(s);
  it = tablets_.find(id);
  if (it == tablets_.end()) return Status();
  t = it->second.get();
  for (const auto& f : old_files->files) f->MarkObsolete();
  t->files = std::make_shared<FileSet>();
  t->mem = NewMemTable();
  t->mem_first_segment = 0;
  t->imm.clear();
  t->flushed_sequence = std::max(t->flushed_sequence, truncated_at);
  DeleteObsoleteLogSegments();
  return Status();
}

StatusOr<TabletDescriptor> EngineImpl::GetTablet(TabletId id) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
  return *it->second->descriptor;
}

std::vector<TabletId> EngineImpl::ListTablets() const {
  absl::MutexLock l(&mu_);
  std::vector<TabletId> ids;
  for (const auto& [id, t] : tablets_) ids.push_back(id);
  return ids;
}

// ------------------------------------------------------------------------------------------
// Write path

Status EngineImpl::ValidateMutation(const TabletDescriptor& d,
                                    const model::RowMutation& m) const {
  if (m.empty()) return absl::InvalidArgumentError("a row mutation needs at least one mutation");
  if (!d.ContainsRow(m.row())) {
    return absl::InvalidArgumentError(
        StrCat("row is outside tablet [", d.start_row, ", ", d.end_row, ") of table ", d.table));
  }
  Status bad;
  Status s = model::ForEachMutation(m.encoded(), [&](const model::MutationView& v) {
    if (!bad.ok() || v.type == model::MutationType::kDeleteFromRow) return;
    if (d.schema.Find(v.family) == nullptr) {
      bad = absl::InvalidArgumentError(
          StrCat("family \"", v.family, "\" does not exist in table ", d.table));
    }
  });
  RETURN_IF_ERROR(s);
  return bad;
}

Status EngineImpl::Apply(TabletId id, const model::RowMutation& mutation) {
  std::shared_ptr<const TabletDescriptor> d;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(id);
    if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    d = it->second->descriptor;
  }
  RETURN_IF_ERROR(ValidateMutation(*d, mutation));
  Writer w;
  w.id = id;
  w.mutation = &mutation;
  w.validated_with = std::move(d);
  absl::MutexLock l(&mu_);
  return JoinQueueAndLead(&w);
}

Status EngineImpl::JoinQueueAndLead(Writer* w) {
  if (closed_) return absl::FailedPreconditionError("engine is closed");
  writers_.push_back(w);
  while (!w->done && w != writers_.front()) w->cv.Wait(&mu_);
  if (w->done) return w->status;

  // This writer leads: it writes the group that starts with it.
  Status s = bg_error_;
  if (s.ok() && w->kind == Writer::Kind::kMutation) s = MakeRoomForWrite();
  std::vector<Writer*> group;
  if (w->kind != Writer::Kind::kMutation) {
    group.push_back(w);
    if (s.ok()) s = RunAlone(w);
  } else if (s.ok()) {
    // Gather followers, stopping at a switch request or a full group.
    size_t bytes = 0;
    struct Pending {
      Writer* writer;
      std::shared_ptr<storage::MemTable> mem;
      SequenceNumber first;
      SequenceNumber some_versions_deleted = 0;
    };
    std::vector<Pending> pending;
    std::vector<std::string> records;
    SequenceNumber seq = last_sequence_;
    const uint64_t segment = log_->current_segment();
    for (Writer* x : writers_) {
      if (x->kind != Writer::Kind::kMutation ||
          (bytes > 0 && bytes + x->mutation->encoded().size() > kMaxGroupBytes)) {
        break;
      }
      auto it = tablets_.find(x->id);
      if (it == tablets_.end()) {
        // Dropped while waiting; this writer fails alone.
        x->status = absl::NotFoundError(StrCat("tablet ", x->id, " not found"));
        group.push_back(x);
        continue;
      }
      Tablet* t = it->second.get();
      if (t->descriptor != x->validated_with) {
        // The schema changed while this writer waited (a family may be gone).
        Status valid = ValidateMutation(*t->descriptor, *x->mutation);
        if (!valid.ok()) {
          x->status = std::move(valid);
          group.push_back(x);
          continue;
        }
      }
      if (t->mem->Empty() && t->mem_first_segment == 0) t->mem_first_segment = segment;
      pending.push_back({x, t->mem, seq + 1, 0});
      records.emplace_back();
      EncodeLogRecord(&records.back(), x->id, seq + 1, x->mutation->encoded());
      seq += x->mutation->size();
      bytes += x->mutation->encoded().size();
      group.push_back(x);
    }
    mu_.Unlock();
    // Only the leader runs here: log and memtables have one writer.
    {
      std::vector<std::string_view> views(records.begin(), records.end());
      if (!views.empty()) s = log_->AddRecords(views).status();
      if (s.ok()) {
        if (options_.sync_mode == SyncMode::kBatch) {
          s = log_->Sync();
        } else {
          // Acknowledged before fdatasync, but never before the bytes reach the kernel: a
          // process crash loses nothing, a machine crash at most one sync interval. The
          // syncer thread makes them durable without blocking this path.
          s = log_->Flush();
          log_dirty_.store(true, std::memory_order_release);
        }
      }
    }
    if (s.ok()) {
      for (Pending& p : pending) {
        Status is = InsertMutation(p.mem.get(), p.first, p.writer->mutation->encoded(),
                                   &p.some_versions_deleted);
        if (!is.ok()) p.writer->status = is;
      }
    }
    mu_.Lock();
    if (s.ok()) {
      last_sequence_ = seq;
      for (const Pending& p : pending) {
        auto it = tablets_.find(p.writer->id);
        if (it == tablets_.end()) continue;
        Tablet* t = it->second.get();
        // Before the memtable can be sealed: its flush must know.
        t->some_versions_deleted = std::max(t->some_versions_deleted, p.some_versions_deleted);
        if (t->mem == p.mem && t->mem->ApproximateMemoryUsage() >= options_.memtable_bytes) {
          SwitchMemtable(t);
        }
      }
    }
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

Status EngineImpl::RunAlone(Writer* w) {
  switch (w->kind) {
    case Writer::Kind::kSwitchMemtable: {
      // Nobody is inserting now.
      auto it = tablets_.find(w->id);
      if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", w->id, " not found"));
      if (!it->second->mem->Empty()) SwitchMemtable(it->second.get());
      return Status();
    }
    case Writer::Kind::kSchemaChange:
      return ChangeSchemaAlone(w->id, *w->schema);
    case Writer::Kind::kTruncate:
      return TruncateAlone(w->id);
    case Writer::Kind::kMutation:
      break;
  }
  return absl::InternalError("a write group cannot run alone");
}

size_t EngineImpl::MemtableBytes() const {
  size_t total = 0;
  for (const auto& [id, t] : tablets_) {
    total += t->mem->ApproximateMemoryUsage();
    for (const auto& i : t->imm) total += i.mem->ApproximateMemoryUsage();
  }
  return total;
}

Status EngineImpl::MakeRoomForWrite() {
  bool stalled = false;
  while (bg_error_.ok() && !closed_ && MemtableBytes() > options_.memory_hard_limit_bytes) {
    // Over the bound: make sure the biggest active memtable is on its way to disk, then wait.
    Tablet* biggest = nullptr;
    for (auto& [id, t] : tablets_) {
      if (!t->mem->Empty() && (biggest == nullptr || t->mem->ApproximateMemoryUsage() >
                                                         biggest->mem->ApproximateMemoryUsage())) {
        biggest = t.get();
      }
    }
    if (biggest != nullptr) SwitchMemtable(biggest);
    bool flushing = false;
    for (auto& [id, t] : tablets_) flushing |= FlushMayRun(*t);
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

void EngineImpl::SwitchMemtable(Tablet* t) {
  if (t->mem->Empty()) return;
  t->imm.push_back({t->mem, t->mem_first_segment});
  t->mem = NewMemTable();
  t->mem_first_segment = 0;
  MaybeScheduleFlush(t);
}

void EngineImpl::PeriodicSyncLoop() {
  const absl::Duration interval =
      absl::Milliseconds(std::max<int64_t>(1, options_.periodic_sync_interval_ms));
  while (true) {
    {
      absl::MutexLock l(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_syncer_), interval);
      if (stop_syncer_) return;
    }
    if (!log_dirty_.exchange(false, std::memory_order_acq_rel)) continue;
    Status s = log_->SyncFlushedConcurrently();
    if (!s.ok()) {
      TLOG_WARN("periodic commit-log sync failed: {}", s);
      log_dirty_.store(true, std::memory_order_release);  // try again next interval
    }
  }
}

// ------------------------------------------------------------------------------------------
// Flush

void EngineImpl::MaybeScheduleFlush(Tablet* t) {
  if (t->dropping || t->paused || t->flush_running || t->imm.empty() || executor_ == nullptr ||
      closed_ || !bg_error_.ok()) {
    return;
  }
  t->flush_running = true;
  ++background_jobs_;
  TabletId id = t->id;
  executor_->Schedule([this, id] { BackgroundFlush(id); });
}

void EngineImpl::BackgroundFlush(TabletId id) {
  Status s = FlushOldestImmutable(id);
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it != tablets_.end()) {
    Tablet* t = it->second.get();
    t->flush_running = false;
    if (s.ok()) {
      MaybeScheduleFlush(t);
      MaybeScheduleCompaction(t);
    }
  }
  if (!s.ok()) RecordBackgroundError(s);
  --background_jobs_;
  bg_cv_.SignalAll();
}

Status EngineImpl::FlushOldestImmutable(TabletId id) {
  std::shared_ptr<storage::MemTable> mem;
  std::shared_ptr<const TabletDescriptor> descriptor;
  int64_t now;
  bool purge;
  bool by_versions;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(id);
    if (it == tablets_.end() || it->second->imm.empty()) return Status();
    Tablet* t = it->second.get();
    mem = t->imm.front().mem;
    // The schema and the time are read together: GC applies the rules in force at that instant,
    // never an old rule with a later time.
    descriptor = t->descriptor;
    now = env_.clock->NowMicros();
    // Nothing older than the oldest memtable exists when the tablet has no files.
    purge = t->files->files.empty();
    by_versions = t->some_versions_deleted <= mem->LargestSequence();
  }
  CompactionJobOptions job;
  job.dir = options_.dir;
  job.table_options = table_options_;
  job.can_purge_tombstones = purge;
  job.gc_by_versions = by_versions;
  job.now_micros = now;
  job.schema = &descriptor->schema;
  job.new_file_number = [this] { return NewFileNumber(); };
  std::unique_ptr<storage::Iterator> input = mem->NewIterator();
  ASSIGN_OR_RETURN(CompactionResult result, RunCompaction(job, env_.fs, input.get()));
  RETURN_IF_ERROR(env_.fs->SyncDir(options_.dir));
  RETURN_IF_ERROR(InstallFiles(id, result.outputs, {}, mem->LargestSequence()));
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it != tablets_.end()) {
    Tablet* t = it->second.get();
    if (!t->imm.empty() && t->imm.front().mem == mem) t->imm.pop_front();
  }
  ++stats_.flushes;
  DeleteObsoleteLogSegments();
  return Status();
}

Status EngineImpl::InstallFiles(TabletId id, const std::vector<storage::FileMeta>& added,
                                const std::vector<std::shared_ptr<TableFile>>& removed,
                                std::optional<SequenceNumber> flushed) {
  std::vector<std::shared_ptr<TableFile>> opened;
  for (const auto& meta : added) {
    ASSIGN_OR_RETURN(auto f, OpenTableFile(meta));
    opened.push_back(std::move(f));
  }
  storage::VersionEdit edit;
  for (const auto& meta : added) edit.AddFile(id, meta);
  for (const auto& f : removed) edit.DeleteFile(id, f->meta().number);
  if (flushed.has_value()) edit.SetFlushed(id, *flushed);
  edit.next_file_number = next_file_number_.load();
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(id);
    if (it == tablets_.end() || it->second->dropping) {
      // Being dropped: DropTablet waits for this job, then logs the removal.
      for (auto& f : opened) f->MarkObsolete();
      return Status();
    }
    edit.last_sequence = last_sequence_;
  }
  Status s = manifest_->LogAndApply(edit);
  if (!s.ok()) {
    for (auto& f : opened) f->MarkObsolete();  // never recorded: remove the new files
    return s;
  }
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return Status();
  Tablet* t = it->second.get();
  auto files = std::make_shared<FileSet>();
  for (const auto& f : t->files->files) {
    bool gone = std::any_of(removed.begin(), removed.end(),
                            [&](const auto& r) { return r.get() == f.get(); });
    if (!gone) files->files.push_back(f);
  }
  for (auto& f : opened) files->files.push_back(std::move(f));
  std::stable_sort(files->files.begin(), files->files.end(), [](const auto& a, const auto& b) {
    return a->meta().max_sequence > b->meta().max_sequence;
  });
  t->files = std::move(files);
  if (flushed.has_value()) t->flushed_sequence = std::max(t->flushed_sequence, *flushed);
  for (const auto& f : removed) f->MarkObsolete();
  return Status();
}

void EngineImpl::DeleteObsoleteLogSegments() {
  if (log_ == nullptr) return;
  uint64_t keep_from = log_->current_segment();
  for (const auto& [id, t] : tablets_) {
    if (t->mem_first_segment != 0) keep_from = std::min(keep_from, t->mem_first_segment);
    for (const auto& i : t->imm) {
      if (i.first_segment != 0) keep_from = std::min(keep_from, i.first_segment);
    }
  }
  Status s = log_->DeleteSegmentsBefore(keep_from);
  if (!s.ok()) TLOG_WARN("could not delete old commit-log segments: {}", s);
}

void EngineImpl::RecordBackgroundError(const Status& s) {
  if (bg_error_.ok() && !closed_) {
    TLOG_ERROR("background work failed; writes are refused until restart: {}", s);
    bg_error_ = s;
  }
}

// ------------------------------------------------------------------------------------------
// Compaction

void EngineImpl::MaybeScheduleCompaction(Tablet* t) {
  if (t->dropping || t->paused || t->compaction_running || executor_ == nullptr || closed_ ||
      !bg_error_.ok()) {
    return;
  }
  bool work = false;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    std::vector<uint64_t> sizes;
    for (const auto& f : t->files->files) {
      if (f->group() == g) sizes.push_back(f->meta().size);
    }
    work |= !PickSizeTieredRun(sizes, options_.size_tier_min_files, options_.size_tier_max_files,
                               options_.size_tier_ratio)
                 .empty();
  }
  if (!work) return;
  t->compaction_running = true;
  ++background_jobs_;
  TabletId id = t->id;
  executor_->Schedule([this, id] { BackgroundCompaction(id); });
}

void EngineImpl::BackgroundCompaction(TabletId id) {
  Status s;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    s = CompactFiles(id, g, {}, false);
    if (!s.ok()) break;
  }
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it != tablets_.end()) {
    it->second->compaction_running = false;
    if (s.ok()) MaybeScheduleCompaction(it->second.get());
  }
  if (!s.ok()) RecordBackgroundError(s);
  --background_jobs_;
  bg_cv_.SignalAll();
}

Status EngineImpl::CompactFiles(TabletId id, LocalityGroup group,
                                std::vector<std::shared_ptr<TableFile>> inputs, bool purge) {
  std::shared_ptr<const TabletDescriptor> descriptor;
  int64_t now;
  bool by_versions;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(id);
    if (it == tablets_.end()) return Status();
    Tablet* t = it->second.get();
    descriptor = t->descriptor;  // with the time, as in FlushOldestImmutable
    now = env_.clock->NowMicros();
    std::vector<std::shared_ptr<TableFile>> group_files;
    for (const auto& f : t->files->files) {
      if (f->group() == group) group_files.push_back(f);
    }
    if (inputs.empty()) {
      std::vector<uint64_t> sizes;
      for (const auto& f : group_files) sizes.push_back(f->meta().size);
      std::vector<size_t> run = PickSizeTieredRun(
          sizes, options_.size_tier_min_files, options_.size_tier_max_files, options_.size_tier_ratio);
      if (run.empty()) return Status();
      for (size_t i : run) inputs.push_back(group_files[i]);
      // Tombstones may go when nothing older than the run exists.
      purge = (run.back() == group_files.size() - 1);
    }
    SequenceNumber inputs_reach = 0;
    for (const auto& f : inputs) inputs_reach = std::max(inputs_reach, f->meta().max_sequence);
    by_versions = t->some_versions_deleted <= inputs_reach;
  }
  std::vector<std::unique_ptr<storage::Iterator>> children;
  storage::TableReadOptions ro;
  ro.fill_cache = false;
  for (const auto& f : inputs) children.push_back(f->table()->NewIterator(ro));
  auto input = storage::NewMergingIterator(storage::InternalKeyComparator(), std::move(children));
  CompactionJobOptions job;
  job.dir = options_.dir;
  job.table_options = table_options_;
  job.fixed_group = group;
  job.can_purge_tombstones = purge;
  job.gc_by_versions = by_versions;
  job.now_micros = now;
  job.schema = &descriptor->schema;
  job.rate_limiter = &rate_limiter_;
  job.new_file_number = [this] { return NewFileNumber(); };
  ASSIGN_OR_RETURN(CompactionResult result, RunCompaction(job, env_.fs, input.get()));
  input.reset();
  RETURN_IF_ERROR(env_.fs->SyncDir(options_.dir));
  RETURN_IF_ERROR(InstallFiles(id, result.outputs, inputs, std::nullopt));
  absl::MutexLock l(&mu_);
  ++stats_.compactions;
  stats_.compaction_bytes_written += result.bytes_written;
  return Status();
}

Status EngineImpl::CompactTablet(TabletId id) {
  RETURN_IF_ERROR(Flush(id));
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (!tablets_.contains(id)) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    // Looked up each time: the tablet may be dropped meanwhile.
    auto ready = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = tablets_.find(id);
      return it == tablets_.end() || (!it->second->compaction_running && !it->second->paused);
    };
    mu_.Await(absl::Condition(&ready));
    auto it = tablets_.find(id);
    if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
    it->second->compaction_running = true;
  }
  Status s;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    std::vector<std::shared_ptr<TableFile>> inputs;
    {
      absl::MutexLock l(&mu_);
      auto it = tablets_.find(id);
      if (it == tablets_.end()) break;
      for (const auto& f : it->second->files->files) {
        if (f->group() == g) inputs.push_back(f);
      }
    }
    if (inputs.empty()) continue;
    // Every file of the group takes part: tombstones have nothing older left to hide.
    s = CompactFiles(id, g, std::move(inputs), /*purge=*/true);
    if (!s.ok()) break;
  }
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  if (it != tablets_.end()) it->second->compaction_running = false;
  bg_cv_.SignalAll();
  return s;
}

// ------------------------------------------------------------------------------------------
// Flush, waiting, stats, close

Status EngineImpl::Flush(std::optional<TabletId> id) {
  std::vector<TabletId> ids;
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (id.has_value()) {
      if (!tablets_.contains(*id)) return absl::NotFoundError(StrCat("tablet ", *id, " not found"));
      ids.push_back(*id);
    } else {
      for (const auto& [tid, t] : tablets_) ids.push_back(tid);
    }
  }
  for (TabletId tid : ids) {
    Writer w;
    w.kind = Writer::Kind::kSwitchMemtable;
    w.id = tid;
    absl::MutexLock l(&mu_);
    Status s = JoinQueueAndLead(&w);
    if (absl::IsNotFound(s)) continue;  // dropped meanwhile
    RETURN_IF_ERROR(s);
    auto done = [this, tid]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = tablets_.find(tid);
      return it == tablets_.end() || !bg_error_.ok() ||
             (it->second->imm.empty() && !it->second->flush_running);
    };
    while (!done()) bg_cv_.Wait(&mu_);
    RETURN_IF_ERROR(bg_error_);
  }
  return Status();
}

Status EngineImpl::WaitForBackgroundWork() {
  absl::MutexLock l(&mu_);
  while (background_jobs_ > 0) bg_cv_.Wait(&mu_);
  return bg_error_;
}

EngineStats EngineImpl::GetStats() const {
  absl::MutexLock l(&mu_);
  EngineStats s = stats_;
  s.memtable_bytes = MemtableBytes();
  for (const auto& [id, t] : tablets_) {
    for (const auto& f : t->files->files) {
      ++s.sstable_files;
      s.sstable_bytes += f->meta().size;
    }
  }
  auto cache = block_cache_.GetStats();
  s.block_cache_hits = cache.hits;
  s.block_cache_misses = cache.misses;
  s.block_cache_usage = cache.usage;
  s.commit_log_segments = log_ ? log_->LiveSegments().size() : 0;
  s.last_sequence = last_sequence_;
  return s;
}

Status EngineImpl::Close() {
  {
    absl::MutexLock l(&mu_);
    if (closed_) return absl::FailedPreconditionError("engine is closed");
    // Let queued writers finish first.
    mu_.Await(absl::Condition(+[](std::deque<Writer*>* w) { return w->empty(); }, &writers_));
    closed_ = true;
    stop_syncer_ = true;
    while (background_jobs_ > 0) bg_cv_.Wait(&mu_);
  }
  if (syncer_.joinable()) syncer_.join();
  executor_.reset();
  Status s;
  if (log_ != nullptr) {
    s = log_->Sync();
    Status c = log_->Close();
    if (s.ok()) s = c;
  }
  dir_lock_.reset();
  return s;
}

// ------------------------------------------------------------------------------------------
// Reads

StatusOr<TabletSnapshot> EngineImpl::Snapshot(TabletId id) const {
  TabletSnapshot snap;
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckOpen());
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
  const Tablet* t = it->second.get();
  snap.descriptor = t->descriptor;
  snap.memtables.push_back(t->mem);
  for (auto i = t->imm.rbegin(); i != t->imm.rend(); ++i) snap.memtables.push_back(i->mem);
  snap.files = t->files;
  snap.sequence = last_sequence_;
  snap.now_micros = env_.clock->NowMicros();
  return snap;
}

StatusOr<std::optional<model::Row>> EngineImpl::ReadRow(TabletId id, std::string_view row,
                                                        const model::ReadSpec& spec) const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot(id));
  if (!snap.descriptor->ContainsRow(row)) {
    return absl::InvalidArgumentError(StrCat("row is outside tablet [", snap.descriptor->start_row,
                                             ", ", snap.descriptor->end_row, ")"));
  }
  return ReadRowFromSnapshot(snap, row, spec);
}

StatusOr<std::unique_ptr<RowIterator>> EngineImpl::Scan(TabletId id, const model::RowRange& range,
                                                        const model::ReadSpec& spec,
                                                        const ScanOptions& options) const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot(id));
  return NewSnapshotScan(std::move(snap), range, spec, options);
}

StatusOr<uint64_t> EngineImpl::ApproximateTabletBytes(TabletId id) const {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckOpen());
  auto it = tablets_.find(id);
  if (it == tablets_.end()) return absl::NotFoundError(StrCat("tablet ", id, " not found"));
  const Tablet& t = *it->second;
  uint64_t bytes = t.mem->ApproximateMemoryUsage();
  for (const auto& i : t.imm) bytes += i.mem->ApproximateMemoryUsage();
  for (const auto& f : t.files->files) bytes += f->meta().size;
  return bytes;
}

StatusOr<std::vector<std::string>> EngineImpl::SampleRowKeys(TabletId id,
                                                             uint64_t every_bytes) const {
  if (every_bytes == 0) return absl::InvalidArgumentError("SampleRowKeys needs every_bytes > 0");
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot(id));
  // (row, bytes of data ending at that row) pieces from every source, then one walk in row
  // order. The cached file samples stay alive in `file_samples`.
  std::vector<std::shared_ptr<const std::vector<RowSample>>> file_samples;
  std::vector<RowSample> memtable_samples;
  for (const auto& f : snap.files->files) {
    ASSIGN_OR_RETURN(auto samples, f->RowSamples());
    file_samples.push_back(std::move(samples));
  }
  for (const auto& mem : snap.memtables) {
    std::unique_ptr<storage::Iterator> it = mem->NewIterator();
    RETURN_IF_ERROR(SampleIterator(it.get(), options_.block_size, &memtable_samples));
  }
  std::vector<std::pair<std::string_view, uint64_t>> pieces;
  for (const auto& samples : file_samples) {
    for (const RowSample& b : *samples) pieces.emplace_back(b.row, b.bytes);
  }
  for (const RowSample& b : memtable_samples) pieces.emplace_back(b.row, b.bytes);
  std::sort(pieces.begin(), pieces.end());
  std::vector<std::string> rows;
  uint64_t pending = 0;
  for (const auto& [row, bytes] : pieces) {
    pending += bytes;
    if (pending < every_bytes || row <= std::string_view(snap.descriptor->start_row) ||
        (!rows.empty() && row <= std::string_view(rows.back()))) {
      continue;
    }
    rows.emplace_back(row);
    pending = 0;
  }
  return rows;
}

Status EngineImpl::WarmRow(TabletId id, std::string_view row) {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot(id));
  return WarmRowInSnapshot(snap, row);
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options,
                                               const EngineEnv& env) {
  if (options.dir.empty()) return absl::InvalidArgumentError("engine needs a data folder (dir)");
  auto engine = std::make_unique<EngineImpl>(options, env);
  RETURN_IF_ERROR(engine->Recover());
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace tessera::tablet
