// Recovery of a data folder: the lock, the manifest, the tablets and their files, then the commit
// log replayed into memtables. See engine.h ("Recovery") and docs/storage_engine.md.
#include <algorithm>
#include <map>
#include <set>

#include "tessera/tablet/tablet_manager.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {
namespace {

using storage::SequenceNumber;

constexpr char kCommitLogSubdir[] = "commitlog";
// Held for the engine's lifetime (FileSystem::LockFile), as leveldb's LOCK.
constexpr char kLockFileName[] = "LOCK";

}  // namespace

Status TabletManager::Recover() {
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
  RETURN_IF_ERROR(fs->CreateDirs(JoinPath(options_.dir, kCommitLogSubdir)));
  RETURN_IF_ERROR(fs->SyncDir(options_.dir));
  ASSIGN_OR_RETURN(manifest_,
                   storage::Manifest::Open(fs, options_.dir, /*create_if_missing=*/true));
  const storage::ManifestState& state = manifest_->state();
  if (!state.comparator.empty() && state.comparator != table_options_.comparator->Name()) {
    return absl::InvalidArgumentError(StrCat("engine in ", options_.dir,
                                             " was written with key order ", state.comparator,
                                             ", not ", table_options_.comparator->Name()));
  }
  next_file_number_ = state.next_file_number;

  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(OpenTablets(state));
  RETURN_IF_ERROR(RemoveOrphanFiles(state));
  RETURN_IF_ERROR(ReplayCommitLog());

  Executor* sync_executor = env_.executor;
  if (env_.executor == nullptr) {
    own_pool_ = NewThreadPoolExecutor(std::max(1, options_.background_threads));
    if (options_.sync_mode == SyncMode::kPeriodic) {
      own_sync_thread_ = NewThreadPoolExecutor(1);
    }
    sync_executor = own_sync_thread_.get();
  }
  executor_ = env_.executor != nullptr ? env_.executor : own_pool_.get();
  for (auto& [id, t] : tablets_) {
    MaybeScheduleFlush(t.get());
    MaybeScheduleCompaction(t.get());
  }
  queue_.Start(log_.get(), sync_executor, env_.clock);
  return Status();
}

Status TabletManager::OpenTablets(const storage::ManifestState& state) {
  // Each tablet's sequence starts at the largest of its flushed mark, its files and its drop
  // marks (Tablet's constructor), then replay raises it to its log records: every sequence it
  // gives out lies above every mark, so replay never skips an acknowledged write. A folder
  // numbered by one node-wide counter (docs/sequence_numbers.md, "Reading data folders...")
  // also raises every tablet to that counter, L, and its schemas carry the drop marks.
  const bool legacy = !state.tablet_sequences;
  storage::VersionEdit upgrade;
  for (const auto& [id, ts] : state.tablets) {
    DropMarks legacy_marks;
    ASSIGN_OR_RETURN(TabletDescriptor d, TabletDescriptor::Decode(ts.descriptor, &legacy_marks));
    DropMarks marks(ts.drop_marks.begin(), ts.drop_marks.end());
    for (const auto& [family, dropped_at] : legacy_marks) {
      uint64_t& mark = marks[family];
      mark = std::max(mark, dropped_at);
    }
    if (!legacy_marks.empty()) {
      // The schema no longer carries them: rewritten in the new encoding, the marks beside it.
      upgrade.AddTablet(id, d.Encode());
      upgrade.SetDropMarks(id, marks);
    }
    auto files = std::make_shared<FileSet>();
    for (const auto& [number, meta] : ts.files) {
      ASSIGN_OR_RETURN(auto file, OpenTableFile(meta));
      files->files.push_back(std::move(file));
    }
    std::sort(files->files.begin(), files->files.end(), [](const auto& a, const auto& b) {
      return a->meta().max_sequence > b->meta().max_sequence;
    });
    if (ts.data_state > kMaxTabletDataState) {
      return absl::DataLossError(
          StrCat(options_.dir, ": tablet ", id, " has unknown data state ", ts.data_state));
    }
    std::shared_ptr<Tablet> t =
        NewTablet(id, std::move(d), std::move(marks), ts.flushed_sequence, std::move(files),
                  static_cast<TabletDataState>(ts.data_state));
    t->SetReplicaEpoch(ts.replica_epoch);
    if (legacy) t->RaiseLastSequence(state.last_sequence);
    tablets_[id] = std::move(t);
  }
  if (!legacy) return Status();
  // One edit moves the marks and records that sequences are per tablet from now on; until it
  // is durable, the next open upgrades again, the same way.
  TLOG_INFO("engine {}: numbering each tablet on its own from now on, above the node-wide {}",
            options_.dir, state.last_sequence);
  upgrade.tablet_sequences = true;
  return manifest_->LogAndApply(upgrade);
}

Status TabletManager::ReplayCommitLog() {
  storage::CommitLogOptions log_options;
  log_options.dir = JoinPath(options_.dir, kCommitLogSubdir);
  log_options.segment_bytes = options_.commit_log_segment_bytes;
  log_options.sync_mode = options_.sync_mode == SyncMode::kPeriodic
                              ? storage::CommitLogSyncMode::kPeriodic
                              : storage::CommitLogSyncMode::kBatch;
  ASSIGN_OR_RETURN(log_, storage::CommitLog::Open(log_options, env_.fs));
  uint64_t replayed = 0, skipped = 0;
  // Per tablet, the first segment written after its last rebuild (0: none).
  std::map<TabletId, uint64_t> replay_from;
  for (const auto& [id, ts] : manifest_->state().tablets) {
    if (ts.replay_from_segment != 0) replay_from[id] = ts.replay_from_segment;
  }
  Status s = log_->Replay([&](uint64_t segment,
                              std::string_view record) ABSL_NO_THREAD_SAFETY_ANALYSIS -> Status {
    TabletId id;
    SequenceNumber first;
    std::string_view mutation;
    if (!DecodeLogRecord(record, &id, &first, &mutation)) {
      return absl::DataLossError(StrCat(log_->SegmentPath(segment), ": malformed record header"));
    }
    std::shared_ptr<Tablet> t = FindLocked(id);
    if (t == nullptr) {
      // A dropped tablet's. Its numbers still count: a tablet created later under the same id
      // must start above them (RetiredSequence).
      ASSIGN_OR_RETURN(model::RowMutation m, model::RowMutation::FromEncoded(mutation));
      SequenceNumber& retired = retired_sequences_[id];
      retired = std::max(retired, first + m.size() - 1);
      ++skipped;
      return Status();
    }
    if (first <= t->flushed_sequence()) {
      ++skipped;  // in the tablet's files (or truncated); its numbers are <= the flushed mark
      return Status();
    }
    if (auto it = replay_from.find(id); it != replay_from.end() && segment < it->second) {
      ++skipped;  // of the content a rebuild replaced, whatever its numbers
      return Status();
    }
    RETURN_IF_ERROR_CTX(t->Replay(segment, first, mutation),
                        StrCat(log_->SegmentPath(segment), ": bad mutation"));
    if (options_.on_replayed) options_.on_replayed(id, first, mutation);
    ++replayed;
    return Status();
  });
  RETURN_IF_ERROR(s);
  SequenceNumber largest = 0;
  for (const auto& [id, t] : tablets_) largest = std::max(largest, t->last_sequence());
  TLOG_INFO(
      "engine {}: {} tablets, {} log records replayed, {} skipped, largest tablet sequence {}",
      options_.dir, tablets_.size(), replayed, skipped, largest);
  return Status();
}

Status TabletManager::RemoveOrphanFiles(const storage::ManifestState& state) {
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

StatusOr<std::shared_ptr<TableFile>> TabletManager::OpenTableFile(const storage::FileMeta& meta) {
  std::string path = TableFileName(options_.dir, meta.number);
  ASSIGN_OR_RETURN(auto file, env_.fs->NewRandomAccessFile(path));
  ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size != meta.size) {
    return absl::DataLossError(StrCat(path, ": size ", size, " but the manifest says ", meta.size));
  }
  bool in_memory = static_cast<LocalityGroup>(meta.group) == LocalityGroup::kInMemory;
  ASSIGN_OR_RETURN(auto table,
                   storage::Table::Open(table_options_, path, std::move(file), size, &block_cache_,
                                        block_cache_.NewId(), in_memory));
  return std::make_shared<TableFile>(meta, path, std::move(table), env_.fs);
}

}  // namespace tessera::tablet
