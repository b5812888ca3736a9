// TabletManager: the tablets of one node (Kudu's TSTabletManager), and the tablet::Engine that
// Engine::Open returns. It opens a data folder (recovery: the manifest, then commit-log replay,
// tablet_recovery.cc), creates, drops and lists tablets, and owns what the tablets share: the
// Manifest, the CommitLog with its CommitQueue, the BlockCache and the background executor.
// It schedules and runs flushes and compactions and records their files in the manifest
// (background.cc); it pins a tablet's files for copying, creates a tablet from copied files and
// copies a tablet's entries into another's (tablet_copy.cc, tablet_rebuild.cc); it stalls writers
// above the memory limit and keeps the sticky background error. engine.h documents every Engine
// method; docs/tablet.md the design.
//
// Thread-safety: every method is safe to call from many threads. Lock order (docs/tablet.md):
// admin_mu_ > CommitQueue::mu_ > install_mu_ > mu_ > Tablet::mu_.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/storage/block_cache.h"
#include "tessera/storage/commit_log.h"
#include "tessera/storage/manifest.h"
#include "tessera/storage/table_options.h"
#include "tessera/tablet/commit_queue.h"
#include "tessera/tablet/engine.h"
#include "tessera/tablet/tablet.h"
#include "tessera/util/executor.h"
#include "tessera/util/rate_limiter.h"

namespace tessera::tablet {

class TabletManager final : public Engine {
 public:
  // Opens (or creates) the data folder options.dir and recovers its tablets.
  static StatusOr<std::unique_ptr<TabletManager>> Open(const EngineOptions& options,
                                                       const Env& env = Env());
  ~TabletManager() override;

  // A handle on the tablet; NotFound for an unknown id. See tablet.h for what a handle may do.
  StatusOr<std::shared_ptr<Tablet>> tablet(TabletId id) const;

  // Flushes the tablet, then pins its files at that flush point (tablet.h: TabletCheckpoint).
  // Errors: NotFound, Unavailable (not serving), the flush's error.
  StatusOr<TabletCheckpoint> Checkpoint(TabletId id);
  // Creates tablet `id` (serving) from SSTables copied from a checkpoint: `files` name each
  // copy's path (on this engine's file system, outside its own numbered files) and the meta the
  // checkpoint gave. Each file is renamed to a new file number of this engine and checked
  // against its meta; one manifest edit then adds the tablet with its files. Ordered in the
  // commit queue: the tablet's later writes are numbered above every sequence in the files, so
  // they win over the ingested data. `drop_marks` (the checkpoint's) are kept: they number the
  // same entries as the files. On error no tablet exists and files already renamed are removed.
  // Errors: AlreadyExists, InvalidArgument (descriptor), NotFound (a file), DataLoss (a size or
  // a table that does not match), Unavailable (I/O).
  Status Ingest(TabletId id, const TabletDescriptor& descriptor, const DropMarks& drop_marks,
                const std::vector<TabletCheckpoint::File>& files);
  // Moves the tablet to `state` (docs/tablet.md), durably, ordered against writes in the commit
  // queue. Tombstoning deletes the data as TruncateTablet does, in the same manifest edit.
  // Errors: NotFound, Unavailable (I/O), a sticky background error.
  Status SetTabletState(TabletId id, TabletDataState state);

  Status CreateTablet(TabletId id, const TabletDescriptor& descriptor) override;
  Status DropTablet(TabletId id) override;
  Status UpdateSchema(TabletId id, const model::TableSchema& schema) override;
  StatusOr<DropMarks> GetDropMarks(TabletId id) const override;
  Status TruncateTablet(TabletId id) override;
  StatusOr<TabletDescriptor> GetTablet(TabletId id) const override;
  std::vector<TabletId> ListTablets() const override;
  StatusOr<SequenceRange> ApplyBatch(TabletId id,
                                     std::span<const model::RowMutation> mutations) override;
  StatusOr<uint64_t> ApplyReplicated(TabletId id, uint64_t first_sequence,
                                     std::span<const model::RowMutation> mutations) override;
  StatusOr<uint64_t> LastSequence(TabletId id) const override;
  Status RaiseReplicaEpoch(TabletId id, uint64_t epoch) override;
  StatusOr<uint64_t> GetReplicaEpoch(TabletId id) const override;
  StatusOr<std::unique_ptr<TabletCopySource>> BeginTabletCopy(TabletId id) override;
  StatusOr<std::unique_ptr<TabletCopySink>> BeginTabletRebuild(TabletId id) override;
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
  StatusOr<std::vector<SstableInfo>> ListSstables(TabletId id) const override;
  Status WaitForBackgroundWork() override;
  EngineStats GetStats() const override;
  void SetCompactionBytesPerSecond(int64_t bytes_per_second) override {
    rate_limiter_.SetBytesPerSecond(bytes_per_second);
  }
  int64_t compaction_bytes_per_second() const override { return rate_limiter_.bytes_per_second(); }
  StatusOr<TabletStats> GetTabletStats(TabletId id) const override;
  Status Close() override;

 private:
  TabletManager(const EngineOptions& options, const Env& env);

  // --- tablet copies (tablet_copy.cc) ---
  friend class RebuildSink;
  // The end of a rebuild of `t` (TabletCopySink::Finish): installs the finished files
  // `outputs` as the tablet's whole content at `sequence` with `marks`, in one manifest edit
  // that also makes replay skip every log segment written before (CommitLog::StartNewSegment).
  // On error the files are removed.
  Status InstallRebuild(const std::shared_ptr<Tablet>& t,
                        const std::vector<storage::FileMeta>& outputs,
                        storage::SequenceNumber sequence, const DropMarks& marks);

  // --- recovery (tablet_recovery.cc) ---
  Status Recover();
  // Opens the manifest's tablets. For a data folder numbered by one node-wide counter, raises
  // every tablet to that counter and moves the drop marks out of the schemas (one manifest edit).
  Status OpenTablets(const storage::ManifestState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status ReplayCommitLog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Status RemoveOrphanFiles(const storage::ManifestState& state);
  StatusOr<std::shared_ptr<TableFile>> OpenTableFile(const storage::FileMeta& meta);

  // --- tablets ---
  // The tablet, for a caller that also needs the engine open.
  StatusOr<std::shared_ptr<Tablet>> OpenTablet(TabletId id) const;
  std::shared_ptr<Tablet> FindLocked(TabletId id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::shared_ptr<Tablet> NewTablet(TabletId id, TabletDescriptor descriptor, DropMarks drop_marks,
                                    storage::SequenceNumber flushed_sequence,
                                    std::shared_ptr<const FileSet> files,
                                    TabletDataState state) const;
  // Deletes the tablet's data (TruncateTablet), then moves it to `state` when given.
  Status DeleteTabletData(TabletId id, std::optional<TabletDataState> state);
  // Run alone in the commit queue (admin_mu_ held by the caller), at the tablet's last sequence.
  Status ChangeSchemaAlone(Tablet* t, const model::TableSchema& schema);
  Status TruncateAlone(Tablet* t, std::optional<TabletDataState> state);
  // The sequence a new tablet `id` starts from: above every record of an earlier tablet of
  // that id that the commit log may still hold (0 when there is none).
  storage::SequenceNumber RetiredSequence(TabletId id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // --- write path ---
  // Validates `mutations` against the tablet's descriptor and writes them through the queue.
  StatusOr<SequenceRange> WriteBatch(TabletId id, std::span<const model::RowMutation> mutations,
                                     std::optional<storage::SequenceNumber> given_first);
  // The CommitQueue's hooks.
  Status BeforeTurn(bool write_group) ABSL_LOCKS_EXCLUDED(mu_);
  Status MakeRoomForWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t MemtableBytes() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether the memtables hold more than memory_hard_limit_bytes. Costs one atomic load while
  // they are under it, however many tablets there are.
  bool OverMemoryLimit() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // --- background work (background.cc) ---
  // Queues `job` on the executor as one background job (counted in background_jobs_, which
  // the job must decrement when it ends); Close cancels it if it has not started.
  void ScheduleJobLocked(std::function<void()> job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeScheduleFlush(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundFlush(std::shared_ptr<Tablet> t);
  Status FlushOldestImmutable(Tablet* t);
  void MaybeScheduleCompaction(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BackgroundCompaction(std::shared_ptr<Tablet> t);
  // Merges `inputs` of one group of `t` into new files and installs them. With `inputs` empty,
  // picks a size-tiered run. REQUIRES: a compaction of t started (TryStart*Compaction).
  Status CompactFiles(Tablet* t, LocalityGroup group,
                      std::vector<std::shared_ptr<TableFile>> inputs, bool purge);
  // Opens the new files of a flush or compaction; on error removes them all.
  StatusOr<std::vector<std::shared_ptr<TableFile>>> OpenTableFiles(
      const std::vector<storage::FileMeta>& metas);
  // Installs `added` (new files, or files moved to another level) for `t`, replacing `removed`,
  // after logging the edit — unless the tablet was dropped or left content `generation`
  // (Tablet::generation) meanwhile: then the new files are removed and the call is OK.
  Status InstallFiles(Tablet* t, uint64_t generation, std::vector<std::shared_ptr<TableFile>> added,
                      const std::vector<std::shared_ptr<TableFile>>& removed,
                      std::optional<storage::SequenceNumber> flushed) ABSL_LOCKS_EXCLUDED(mu_);
  void DeleteObsoleteLogSegments() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordBackgroundError(const Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Status CheckOpen() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (closed_) return absl::FailedPreconditionError("engine is closed");
    return Status();
  }
  uint64_t NewFileNumber() { return next_file_number_.fetch_add(1); }

  const EngineOptions options_;
  const Env env_;  // fs and clock never null (defaults filled in)
  storage::TableOptions table_options_;
  storage::BlockCache block_cache_;
  RateLimiter rate_limiter_;
  std::unique_ptr<storage::Manifest> manifest_;
  std::unique_ptr<FileLock> dir_lock_;  // released by Close()
  std::unique_ptr<storage::CommitLog> log_;
  // Without env.executor the manager runs its own: a pool for background work and one thread
  // for the periodic sync, so that long compactions never delay a sync. Declared before the
  // queue, whose Close (in its destructor too) needs the sync executor alive.
  std::unique_ptr<Executor> own_pool_;
  std::unique_ptr<Executor> own_sync_thread_;
  Executor* executor_ = nullptr;  // env.executor or own_pool_; set by Recover
  CommitQueue queue_;
  const TabletContext tablet_context_;
  std::atomic<uint64_t> next_file_number_{1};

  // Serializes tablet creation, removal, schema changes, truncation and replica epochs (manifest
  // writes included).
  absl::Mutex admin_mu_;

  // Held by InstallFiles from its check of the tablet to the install, and by a rebuild while it
  // replaces the content, so that no job installs files of content that was replaced.
  absl::Mutex install_mu_;

  mutable absl::Mutex mu_;
  absl::CondVar bg_cv_;  // signalled when background work finishes
  std::map<TabletId, std::shared_ptr<Tablet>> tablets_ ABSL_GUARDED_BY(mu_);
  // For ids of dropped tablets: the largest sequence of the dropped tablet, which the commit log
  // may still hold records of (recovery finds them again as records of unknown tablets). A
  // tablet created again under that id starts above it, so replay never mistakes the old
  // records for its own.
  std::map<TabletId, storage::SequenceNumber> retired_sequences_ ABSL_GUARDED_BY(mu_);
  Status bg_error_ ABSL_GUARDED_BY(mu_);
  int background_jobs_ ABSL_GUARDED_BY(mu_) = 0;  // scheduled or running
  // Jobs scheduled but not started, by job number: Close cancels them.
  std::map<uint64_t, TimerId> queued_jobs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_job_ ABSL_GUARDED_BY(mu_) = 1;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // Close() was called
  bool closed_ ABSL_GUARDED_BY(mu_) = false;   // the queue is closed too
  EngineStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::tablet
