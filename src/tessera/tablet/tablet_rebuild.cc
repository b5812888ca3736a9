// The replica side of a tablet copy: a sink that writes the copied entries to new SSTables on
// the caller's thread, and the one manifest edit that makes them the tablet's whole content.
// See engine.h (TabletCopySink) and docs/tablet.md ("Copying a tablet").
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model/cell_key.h"
#include "tessera/storage/comparator.h"
#include "tessera/tablet/compaction.h"
#include "tessera/tablet/copy_chunk.h"
#include "tessera/tablet/tablet_manager.h"

namespace tessera::tablet {

using storage::SequenceNumber;

// Friend of TabletManager: it writes with the manager's options and file numbers. Must not
// outlive the manager.
class RebuildSink final : public TabletCopySink {
 public:
  RebuildSink(TabletManager* manager, std::shared_ptr<Tablet> tablet)
      : manager_(manager),
        tablet_(std::move(tablet)),
        descriptor_(tablet_->descriptor()),
        start_key_(model::EncodeRowPrefix(descriptor_->start_row)),
        end_key_(descriptor_->end_row.empty() ? std::string()
                                              : model::EncodeRowPrefix(descriptor_->end_row)) {
    // No fixed group: the entries go to the locality groups of the tablet's own schema.
    job_.dir = manager_->options_.dir;
    job_.table_options = manager_->table_options_;
    job_.schema = &descriptor_->schema;
    job_.new_file_number = [manager = manager_] { return manager->NewFileNumber(); };
    writer_ = std::make_unique<TableWriter>(job_, manager_->env_.fs);
  }

  Status Add(std::string_view chunk) override {
    RETURN_IF_ERROR(CheckUsable());
    ASSIGN_OR_RETURN(std::vector<ChunkEntry> entries, DecodeChunk(chunk));
    // Checked whole before anything is written: a refused chunk leaves the sink as it was.
    std::vector<storage::ParsedInternalKey> parsed(entries.size());
    std::string_view previous = last_key_;
    for (size_t i = 0; i < entries.size(); ++i) {
      RETURN_IF_ERROR(CheckEntry(entries[i].internal_key, previous, &parsed[i]));
      previous = entries[i].internal_key;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      Status s = writer_->Add(parsed[i], entries[i].internal_key, entries[i].value);
      if (!s.ok()) {
        spoilt_ = s;
        return s;
      }
      max_sequence_ = std::max(max_sequence_, parsed[i].sequence);
    }
    last_key_.assign(previous.data(), previous.size());
    return Status();
  }

  Status Finish(uint64_t sequence, const DropMarks& marks) override {
    RETURN_IF_ERROR(CheckUsable());
    finished_ = true;  // spent, whatever happens below
    if (sequence > storage::kMaxSequenceNumber) {
      return absl::InvalidArgumentError(StrCat("tablet ", tablet_->id(), ": rebuild sequence ",
                                               sequence, " is above ",
                                               storage::kMaxSequenceNumber));
    }
    if (max_sequence_ > sequence) {
      return absl::InvalidArgumentError(StrCat("tablet ", tablet_->id(), ": a copied entry has ",
                                               "sequence ", max_sequence_,
                                               ", above the rebuild sequence ", sequence));
    }
    for (const auto& [family, dropped_at] : marks) {
      if (dropped_at > sequence) {
        return absl::InvalidArgumentError(
            StrCat("tablet ", tablet_->id(), ": drop mark of family \"", family, "\" at ",
                   dropped_at, " is above the rebuild sequence ", sequence));
      }
    }
    CompactionResult result;
    RETURN_IF_ERROR(writer_->Finish(&result));
    return manager_->InstallRebuild(tablet_, result.outputs, sequence, marks);
  }

 private:
  Status CheckUsable() const {
    if (finished_) {
      return absl::FailedPreconditionError(
          StrCat("tablet ", tablet_->id(), ": the rebuild was finished"));
    }
    if (!spoilt_.ok()) {
      return absl::FailedPreconditionError(
          StrCat("tablet ", tablet_->id(), ": the rebuild failed to write its files: ", spoilt_));
    }
    return Status();
  }

  // OK when `key` is a well-formed entry of the tablet's rows that sorts after `previous`.
  Status CheckEntry(std::string_view key, std::string_view previous,
                    storage::ParsedInternalKey* parsed) const {
    model::CellKeyLayout layout;
    if (!storage::ParseInternalKey(key, parsed) ||
        !model::ParseCellKeyLayout(parsed->user_key, &layout)) {
      return absl::InvalidArgumentError(
          StrCat("tablet ", tablet_->id(), ": a copied entry has a malformed key"));
    }
    if (!previous.empty() && storage::InternalKeyComparator()->Compare(previous, key) >= 0) {
      return absl::InvalidArgumentError(StrCat("tablet ", tablet_->id(),
                                               ": copied entries out of order (a chunk missing, ",
                                               "repeated or out of place)"));
    }
    if (parsed->user_key < std::string_view(start_key_) ||
        (!end_key_.empty() && parsed->user_key >= std::string_view(end_key_))) {
      return absl::InvalidArgumentError(
          StrCat("tablet ", tablet_->id(), ": a copied entry's row is outside the tablet"));
    }
    return Status();
  }

  TabletManager* const manager_;
  const std::shared_ptr<Tablet> tablet_;
  // The tablet's descriptor when the rebuild began: its schema routes entries to locality
  // groups, its range bounds them.
  const std::shared_ptr<const TabletDescriptor> descriptor_;
  const std::string start_key_;
  const std::string end_key_;  // empty: no end
  CompactionJobOptions job_;
  std::unique_ptr<TableWriter> writer_;  // removes unfinished files when destroyed
  std::string last_key_;                 // of the last entry added
  SequenceNumber max_sequence_ = 0;
  Status spoilt_;
  bool finished_ = false;
};

StatusOr<std::unique_ptr<TabletCopySink>> TabletManager::BeginTabletRebuild(TabletId id) {
  ASSIGN_OR_RETURN(std::shared_ptr<Tablet> t, OpenTablet(id));
  return std::make_unique<RebuildSink>(this, std::move(t));
}

Status TabletManager::InstallRebuild(const std::shared_ptr<Tablet>& t,
                                     const std::vector<storage::FileMeta>& outputs,
                                     SequenceNumber sequence, const DropMarks& marks) {
  std::vector<std::shared_ptr<TableFile>> opened;
  Status s = env_.fs->SyncDir(options_.dir);
  for (const storage::FileMeta& meta : outputs) {
    if (!s.ok()) break;
    StatusOr<std::shared_ptr<TableFile>> file = OpenTableFile(meta);
    if (!file.ok()) {
      s = file.status();
      break;
    }
    opened.push_back(*std::move(file));
  }
  if (s.ok()) {
    absl::MutexLock admin(&admin_mu_);  // keeps the tablet in the map until the edit is done
    {
      absl::MutexLock l(&mu_);
      s = CheckOpen();
      if (s.ok() && FindLocked(t->id()) != t) {
        s = absl::NotFoundError(StrCat("tablet ", t->id(), " was dropped during its rebuild"));
      }
    }
    if (s.ok()) {
      // Alone in the queue: no write group is in flight, so every record of the tablet's old
      // content is in a segment below `replay_from`, and every later one at or above it.
      s = queue_.RunAlone([&]() -> Status {
        absl::MutexLock install(&install_mu_);
        ASSIGN_OR_RETURN(const uint64_t replay_from, log_->StartNewSegment());
        storage::VersionEdit edit;
        const std::shared_ptr<const FileSet> files = t->files();  // held: the loop reads it
        for (const auto& f : files->files) edit.DeleteFile(t->id(), f->meta().number);
        for (const storage::FileMeta& meta : outputs) edit.AddFile(t->id(), meta);
        // Exactly `sequence`, even when lower: the files hold everything up to it, and records
        // above it that replay could meet are all in skipped segments.
        edit.SetFlushed(t->id(), sequence);
        edit.SetDropMarks(t->id(), marks);
        edit.SetReplayFrom(t->id(), replay_from);
        edit.next_file_number = next_file_number_.load();
        RETURN_IF_ERROR(manifest_->LogAndApply(edit));
        t->ReplaceContent(opened, marks, sequence);
        absl::MutexLock l(&mu_);
        DeleteObsoleteLogSegments();
        MaybeScheduleCompaction(t.get());
        bg_cv_.SignalAll();  // a Flush waiting for the old immutable memtables
        return Status();
      });
    }
  }
  if (!s.ok()) {
    // Never recorded: the opened files go when `opened` does, the others now.
    for (const auto& f : opened) f->MarkObsolete();
    for (size_t i = opened.size(); i < outputs.size(); ++i) {
      (void)env_.fs->RemoveFile(TableFileName(options_.dir, outputs[i].number));
    }
  }
  return s;
}

}  // namespace tessera::tablet
