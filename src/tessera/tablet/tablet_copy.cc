// Moving a tablet's data between engines: checkpoints (pinned files at a flush point), ingest
// (a tablet made of copied files) and the tablet data state. See tablet_manager.h and
// docs/tablet.md ("Checkpoint and ingest", "Tablet data state").
#include <algorithm>

#include "tessera/tablet/tablet_manager.h"

namespace tessera::tablet {

using storage::SequenceNumber;

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
