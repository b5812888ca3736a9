// Moving a tablet's data between engines: checkpoints (pinned files at a flush point), ingest
// (a tablet made of copied files), the source of a tablet copy (its raw entries in chunks) and
// the tablet data state. The replica side of a copy is in tablet_rebuild.cc. See
// tablet_manager.h and docs/tablet.md ("Checkpoint and ingest", "Copying a tablet", "Tablet
// data state").
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "tessera/tablet/copy_chunk.h"
#include "tessera/tablet/tablet_manager.h"

namespace tessera::tablet {

using storage::SequenceNumber;

namespace {

class CopySource final : public TabletCopySource {
 public:
  explicit CopySource(TabletSnapshot snapshot)
      : sequence_(snapshot.sequence),
        drop_marks_(snapshot.drop_marks == nullptr ? DropMarks() : *snapshot.drop_marks),
        entries_(std::move(snapshot)) {}

  uint64_t sequence() const override { return sequence_; }
  const DropMarks& drop_marks() const override { return drop_marks_; }

  StatusOr<std::string> NextChunk(size_t max_bytes) override {
    RETURN_IF_ERROR(entries_.status());
    ChunkBuilder chunk;
    for (; entries_.Valid(); entries_.Next()) {
      const std::string_view key = entries_.internal_key();
      // An entry still in a memtable and already in the file it was flushed to comes twice.
      if (key == last_key_) continue;
      const std::string_view value = entries_.value();
      // Length prefixes and the checksum included, roughly.
      if (!chunk.empty() && chunk.size() + key.size() + value.size() + 14 > max_bytes) break;
      chunk.Add(key, value);
      last_key_.assign(key.data(), key.size());
    }
    RETURN_IF_ERROR(entries_.status());
    if (chunk.empty()) return std::string();
    return chunk.Finish();
  }

 private:
  const uint64_t sequence_;
  const DropMarks drop_marks_;
  EntryIterator entries_;
  std::string last_key_;  // the last entry returned
};

}  // namespace

StatusOr<std::unique_ptr<TabletCopySource>> TabletManager::BeginTabletCopy(TabletId id) {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  // Alone in the queue: no write group is in flight, so the sequence and the drop marks are of
  // the same instant (a mark is never above the sequence).
  std::optional<TabletSnapshot> snapshot;
  RETURN_IF_ERROR(queue_.RunAlone([&]() -> Status {
    ASSIGN_OR_RETURN(snapshot, t->Snapshot());
    return Status();
  }));
  return std::make_unique<CopySource>(*std::move(snapshot));
}

StatusOr<TabletCheckpoint> TabletManager::Checkpoint(TabletId id) {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  RETURN_IF_ERROR(t->CheckServing());
  RETURN_IF_ERROR(Flush(id));
  return t->Checkpoint();
}

Status TabletManager::Ingest(TabletId id, const TabletDescriptor& descriptor,
                             const DropMarks& drop_marks,
                             const std::vector<TabletCheckpoint::File>& files) {
  RETURN_IF_ERROR(descriptor.schema.Validate());
  if (!descriptor.end_row.empty() && descriptor.end_row <= descriptor.start_row) {
    return absl::InvalidArgumentError("tablet end row must sort after its start row");
  }
  absl::MutexLock admin(&admin_mu_);
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (tablets_.contains(id)) {
      return absl::AlreadyExistsError(StrCat("tablet ", id, " already exists"));
    }
  }
  // Bring every file under a number of this engine and open it. A file that fails is removed
  // here; those opened before are marked obsolete below, which removes them.
  auto file_set = std::make_shared<FileSet>();
  SequenceNumber max_sequence = 0;
  Status s;
  for (const TabletCheckpoint::File& f : files) {
    storage::FileMeta meta = f.meta;
    meta.number = NewFileNumber();
    const std::string path = TableFileName(options_.dir, meta.number);
    s = env_.fs->RenameFile(f.path, path);
    if (!s.ok()) break;
    StatusOr<std::shared_ptr<TableFile>> file = OpenTableFile(meta);
    if (!file.ok()) {
      s = file.status();
      (void)env_.fs->RemoveFile(path);
      break;
    }
    max_sequence = std::max(max_sequence, meta.max_sequence);
    file_set->files.push_back(*std::move(file));
  }
  if (s.ok()) s = env_.fs->SyncDir(options_.dir);
  std::sort(file_set->files.begin(), file_set->files.end(), [](const auto& a, const auto& b) {
    return a->meta().max_sequence > b->meta().max_sequence;
  });
  if (s.ok()) {
    s = queue_.RunAlone([&]() -> Status {
      // The tablet's writes are numbered above `flushed` (Tablet's constructor), so above every
      // ingested entry and mark, and replay skips any older record of a tablet with this id.
      SequenceNumber flushed = max_sequence;
      {
        absl::MutexLock l(&mu_);
        flushed = std::max(flushed, RetiredSequence(id));
      }
      storage::VersionEdit edit;
      edit.AddTablet(id, descriptor.Encode());
      for (const auto& f : file_set->files) edit.AddFile(id, f->meta());
      edit.SetFlushed(id, flushed);
      if (!drop_marks.empty()) edit.SetDropMarks(id, drop_marks);
      edit.comparator = table_options_.comparator->Name();
      edit.next_file_number = next_file_number_.load();
      RETURN_IF_ERROR(manifest_->LogAndApply(edit));
      absl::MutexLock l(&mu_);
      retired_sequences_.erase(id);  // the flushed mark holds it now
      std::shared_ptr<Tablet> t =
          NewTablet(id, descriptor, drop_marks, flushed, file_set, TabletDataState::kServing);
      tablets_[id] = t;
      MaybeScheduleCompaction(t.get());
      return Status();
    });
  }
  if (!s.ok()) {
    for (const auto& f : file_set->files) f->MarkObsolete();
  }
  return s;
}

Status TabletManager::SetTabletState(TabletId id, TabletDataState state) {
  if (state == TabletDataState::kTombstoned) return DeleteTabletData(id, state);
  absl::MutexLock admin(&admin_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  // In the queue: writes before it were checked against the old state, writes after it against
  // the new one.
  return queue_.RunAlone([&]() -> Status {
    storage::VersionEdit edit;
    edit.SetDataState(id, static_cast<uint32_t>(state));
    RETURN_IF_ERROR(manifest_->LogAndApply(edit));
    t->SetState(state);
    return Status();
  });
}

}  // namespace tessera::tablet
