#include "tessera/storage/manifest.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "fmt/format.h"
#include "tessera/storage/log_reader.h"
#include "tessera/util/logging.h"

namespace tessera::storage {
namespace {

constexpr std::string_view kManifestPrefix = "MANIFEST-";
constexpr std::string_view kCurrentName = "CURRENT";
constexpr std::string_view kCurrentTmpName = "CURRENT.tmp";

template <typename... Args>
Status NotApplicable(const Args&... args) {
  return absl::FailedPreconditionError(StrCat("version edit does not apply: ", args...));
}

// Replays the manifest file at `path` into `*state` (which starts empty). Sets `*torn_at` to the
// offset of a torn tail, if any. `*records` counts the edits applied; `*first_record_end` is the
// offset just past the first one (the snapshot).
Status ReplayManifestFile(FileSystem* fs, const std::string& path, ManifestState* state,
                          std::optional<uint64_t>* torn_at, uint64_t* records,
                          uint64_t* first_record_end) {
  ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs->NewSequentialFile(path));
  log::LogReader reader(std::move(file), path);
  *state = ManifestState();
  *records = 0;
  torn_at->reset();
  VersionEdit edit;
  std::string_view record;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader.ReadRecord(&record));
    if (!more) break;
    Status s = edit.DecodeFrom(record);
    if (s.ok()) s = state->Apply(edit);
    if (!s.ok()) return CorruptionError(path, reader.LastRecordOffset(), std::string(s.message()));
    if (++*records == 1) *first_record_end = reader.EndOfValidData();
  }
  if (reader.TornTail()) *torn_at = reader.EndOfValidData();
  return Status();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ManifestState

Status ManifestState::CheckApplicable(const VersionEdit& edit) const {
  std::set<uint64_t> added;
  for (const VersionEdit::Tablet& t : edit.tablets) {
    if (!added.insert(t.tablet_id).second) {
      return NotApplicable("tablet ", t.tablet_id, " added twice");
    }
  }
  auto known = [&](uint64_t id) { return tablets.contains(id) || added.contains(id); };

  std::set<std::pair<uint64_t, uint64_t>> deleted;
  for (const VersionEdit::DeletedFile& d : edit.deleted_files) {
    auto it = tablets.find(d.tablet_id);
    if (it == tablets.end()) {
      return NotApplicable("deleting file ", d.file_number, " of unknown tablet ", d.tablet_id);
    }
    if (!it->second.files.contains(d.file_number)) {
      return NotApplicable("deleting file ", d.file_number, " which tablet ", d.tablet_id,
                           " does not have");
    }
    if (!deleted.insert({d.tablet_id, d.file_number}).second) {
      return NotApplicable("file ", d.file_number, " of tablet ", d.tablet_id, " deleted twice");
    }
  }
  std::set<std::pair<uint64_t, uint64_t>> added_files;
  for (const VersionEdit::NewFile& nf : edit.new_files) {
    const uint64_t number = nf.meta.number;
    if (!known(nf.tablet_id)) {
      return NotApplicable("adding file ", number, " to unknown tablet ", nf.tablet_id);
    }
    auto it = tablets.find(nf.tablet_id);
    bool live = it != tablets.end() && it->second.files.contains(number) &&
                !deleted.contains({nf.tablet_id, number});
    if (live || !added_files.insert({nf.tablet_id, number}).second) {
      return NotApplicable("file ", number, " added twice to tablet ", nf.tablet_id);
    }
  }
  for (const VersionEdit::Flushed& f : edit.flushed) {
    if (!known(f.tablet_id)) {
      return NotApplicable("flushed mark for unknown tablet ", f.tablet_id);
    }
  }
  for (const VersionEdit::DataState& d : edit.data_states) {
    if (!known(d.tablet_id)) return NotApplicable("data state for unknown tablet ", d.tablet_id);
  }
  for (const VersionEdit::DropMarks& d : edit.drop_marks) {
    if (!known(d.tablet_id)) return NotApplicable("drop marks for unknown tablet ", d.tablet_id);
  }
  for (const VersionEdit::ReplicaEpoch& r : edit.replica_epochs) {
    if (!known(r.tablet_id)) {
      return NotApplicable("replica epoch for unknown tablet ", r.tablet_id);
    }
  }
  for (const VersionEdit::ReplayFrom& r : edit.replay_from) {
    if (!known(r.tablet_id)) return NotApplicable("replay-from for unknown tablet ", r.tablet_id);
  }
  std::set<uint64_t> removed;
  for (uint64_t id : edit.removed_tablets) {
    if (added.contains(id)) return NotApplicable("tablet ", id, " both added and removed");
    if (!tablets.contains(id)) return NotApplicable("removing unknown tablet ", id);
    if (!removed.insert(id).second) return NotApplicable("tablet ", id, " removed twice");
  }
  return Status();
}

Status ManifestState::Apply(const VersionEdit& edit) {
  RETURN_IF_ERROR(CheckApplicable(edit));
  // Never moves backwards: edits from concurrent flushes and compactions may be logged in
  // another order than the one they took their numbers in.
  if (edit.next_file_number) next_file_number = std::max(next_file_number, *edit.next_file_number);
  if (edit.last_sequence) last_sequence = std::max(last_sequence, *edit.last_sequence);
  if (edit.comparator) comparator = *edit.comparator;
  tablet_sequences |= edit.tablet_sequences;
  for (const VersionEdit::Tablet& t : edit.tablets) tablets[t.tablet_id].descriptor = t.descriptor;
  for (const VersionEdit::DeletedFile& d : edit.deleted_files) {
    tablets[d.tablet_id].files.erase(d.file_number);
  }
  for (const VersionEdit::NewFile& nf : edit.new_files) {
    tablets[nf.tablet_id].files[nf.meta.number] = nf.meta;
  }
  for (const VersionEdit::Flushed& f : edit.flushed) {
    tablets[f.tablet_id].flushed_sequence = f.flushed_sequence;
  }
  for (const VersionEdit::DataState& d : edit.data_states) {
    tablets[d.tablet_id].data_state = d.state;
  }
  for (const VersionEdit::DropMarks& d : edit.drop_marks) {
    tablets[d.tablet_id].drop_marks = d.marks;
  }
  for (const VersionEdit::ReplicaEpoch& r : edit.replica_epochs) {
    tablets[r.tablet_id].replica_epoch = r.epoch;
  }
  for (const VersionEdit::ReplayFrom& r : edit.replay_from) {
    tablets[r.tablet_id].replay_from_segment = r.segment;
  }
  for (uint64_t id : edit.removed_tablets) tablets.erase(id);
  return Status();
}

VersionEdit ManifestState::ToSnapshotEdit() const {
  VersionEdit edit;
  edit.next_file_number = next_file_number;
  edit.last_sequence = last_sequence;
  edit.tablet_sequences = tablet_sequences;
  if (!comparator.empty()) edit.comparator = comparator;
  for (const auto& [id, tablet] : tablets) {
    edit.AddTablet(id, tablet.descriptor);
    for (const auto& [number, meta] : tablet.files) edit.AddFile(id, meta);
    if (tablet.flushed_sequence != 0) edit.SetFlushed(id, tablet.flushed_sequence);
    if (tablet.data_state != 0) edit.SetDataState(id, tablet.data_state);
    if (!tablet.drop_marks.empty()) edit.SetDropMarks(id, tablet.drop_marks);
    if (tablet.replica_epoch != 0) edit.SetReplicaEpoch(id, tablet.replica_epoch);
    if (tablet.replay_from_segment != 0) edit.SetReplayFrom(id, tablet.replay_from_segment);
  }
  return edit;
}

// ---------------------------------------------------------------------------------------------
// Manifest

std::string Manifest::ManifestFileName(uint64_t number) {
  return NumberedFileName(kManifestPrefix, number, "");
}

std::optional<uint64_t> Manifest::ParseManifestFileName(std::string_view name) {
  return ParseNumberedFileName(name, kManifestPrefix, "");
}

Manifest::Manifest(FileSystem* fs, std::string dir, const ManifestOptions& options)
    : fs_(fs), dir_(std::move(dir)), options_(options) {}

Manifest::~Manifest() {
  absl::MutexLock l(&write_mu_);
  writer_.reset();
  if (file_ != nullptr) {
    Status s = file_->Close();
    if (!s.ok()) TLOG_WARN("manifest {}: close failed: {}", dir_, s.ToString());
  }
}

StatusOr<std::unique_ptr<Manifest>> Manifest::Open(FileSystem* fs, std::string dir,
                                                   bool create_if_missing) {
  ManifestOptions options;
  options.create_if_missing = create_if_missing;
  return Open(fs, std::move(dir), options);
}

StatusOr<std::unique_ptr<Manifest>> Manifest::Open(FileSystem* fs, std::string dir,
                                                   const ManifestOptions& options) {
  const std::string current = JoinPath(dir, kCurrentName);
  if (!fs->FileExists(current)) {
    if (!options.create_if_missing) {
      return absl::NotFoundError(StrCat(dir, ": no manifest (", kCurrentName, " does not exist)"));
    }
    return Create(fs, std::move(dir), options);
  }
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(fs, current));
  std::optional<uint64_t> number;
  if (!contents.empty() && contents.back() == '\n') {
    number = ParseManifestFileName(std::string_view(contents).substr(0, contents.size() - 1));
  }
  if (!number) {
    return CorruptionError(
        current, 0, StrCat("malformed contents '", absl::CHexEscape(contents.substr(0, 64)), "'"));
  }
  std::unique_ptr<Manifest> manifest(new Manifest(fs, std::move(dir), options));
  RETURN_IF_ERROR(manifest->Recover(*number));
  manifest->RemoveLeftovers();
  return manifest;
}

StatusOr<std::unique_ptr<Manifest>> Manifest::Create(FileSystem* fs, std::string dir,
                                                     const ManifestOptions& options) {
  RETURN_IF_ERROR_CTX(fs->CreateDirs(dir), "manifest: creating directory");
  // CURRENT is missing. Manifest files may be left from a crash while creating, which hold an
  // empty state; anything more means CURRENT was lost, and starting afresh would drop tablets.
  ASSIGN_OR_RETURN(std::vector<std::string> children, fs->GetChildren(dir));
  for (const std::string& name : children) {
    if (!ParseManifestFileName(name)) continue;
    const std::string path = JoinPath(dir, name);
    ManifestState state;
    std::optional<uint64_t> torn_at;
    uint64_t records, first_record_end;
    Status s = ReplayManifestFile(fs, path, &state, &torn_at, &records, &first_record_end);
    if (!s.ok() || !(state == ManifestState())) {
      return CorruptionError(
          JoinPath(dir, kCurrentName), 0,
          StrCat("missing, but ", name, " holds a manifest; not creating a new one"));
    }
  }
  std::unique_ptr<Manifest> manifest(new Manifest(fs, std::move(dir), options));
  {
    absl::MutexLock l(&manifest->write_mu_);
    std::string snapshot;
    ManifestState().ToSnapshotEdit().EncodeTo(&snapshot);
    RETURN_IF_ERROR(manifest->SwitchToNewFile(1, snapshot));
  }
  manifest->RemoveLeftovers();
  TLOG_INFO("manifest {}: created", manifest->dir_);
  return manifest;
}

Status Manifest::Recover(uint64_t number) {
  const std::string name = ManifestFileName(number);
  const std::string path = JoinPath(dir_, name);
  if (!fs_->FileExists(path)) {
    return CorruptionError(JoinPath(dir_, kCurrentName), 0,
                           StrCat("names ", name, ", which does not exist"));
  }
  ManifestState state;
  std::optional<uint64_t> torn_at;
  uint64_t records = 0;
  uint64_t first_record_end = 0;
  RETURN_IF_ERROR(ReplayManifestFile(fs_, path, &state, &torn_at, &records, &first_record_end));
  if (records == 0) {
    // The snapshot record is synced before CURRENT names the file, so it cannot be torn.
    return CorruptionError(path, 0, "manifest holds no complete record");
  }
  if (torn_at) {
    TLOG_WARN("manifest {}: cutting a torn tail at offset {}", path, *torn_at);
    RETURN_IF_ERROR_CTX(fs_->Truncate(path, *torn_at), "manifest: cutting a torn tail");
  }
  absl::MutexLock w(&write_mu_);
  ASSIGN_OR_RETURN(file_, fs_->NewAppendableFile(path));
  if (torn_at) RETURN_IF_ERROR_CTX(file_->Sync(), "manifest: syncing after cutting its tail");
  writer_ = std::make_unique<log::LogWriter>(file_.get());
  manifest_number_ = number;
  snapshot_size_ = first_record_end;
  absl::MutexLock s(&state_mu_);
  state_ = std::move(state);
  TLOG_INFO("manifest {}: recovered {} edits, {} tablets", path, records, state_.tablets.size());
  return Status();
}

void Manifest::RemoveLeftovers() {
  absl::MutexLock l(&write_mu_);
  StatusOr<std::vector<std::string>> children = fs_->GetChildren(dir_);
  if (!children.ok()) return;
  for (const std::string& name : *children) {
    std::optional<uint64_t> number = ParseManifestFileName(name);
    if ((number && *number != manifest_number_) || name == kCurrentTmpName) {
      Status s = fs_->RemoveFile(JoinPath(dir_, name));
      if (!s.ok()) TLOG_WARN("manifest {}: could not remove {}: {}", dir_, name, s.ToString());
    }
  }
}

Status Manifest::SwitchToNewFile(uint64_t number, std::string_view snapshot) {
  const std::string name = ManifestFileName(number);
  const std::string path = JoinPath(dir_, name);
  const std::string tmp = JoinPath(dir_, kCurrentTmpName);

  std::unique_ptr<WritableFile> file;
  std::unique_ptr<log::LogWriter> writer;
  Status s = [&]() -> Status {
    ASSIGN_OR_RETURN(file, fs_->NewWritableFile(path));
    writer = std::make_unique<log::LogWriter>(file.get());
    RETURN_IF_ERROR(writer->AddRecord(snapshot));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(WriteStringToFile(fs_, tmp, StrCat(name, "\n"), /*sync=*/true));
    return fs_->RenameFile(tmp, JoinPath(dir_, kCurrentName));
  }();
  if (!s.ok()) {
    // CURRENT still names the old file (a rename that fails changes nothing); drop the new one.
    writer.reset();
    if (file != nullptr) (void)file->Close();
    (void)fs_->RemoveFile(path);
    (void)fs_->RemoveFile(tmp);
    return Annotate(s, StrCat("manifest: starting ", path));
  }
  s = fs_->SyncDir(dir_);
  if (!s.ok()) {
    // After a crash CURRENT may name either file. Both hold every edit so far, but an edit
    // appended to one would be lost if the other won: stop here.
    sticky_error_ = Annotate(s, StrCat("manifest: switching to ", path, " left CURRENT uncertain"));
    return sticky_error_;
  }
  const uint64_t old_number = manifest_number_;
  writer_.reset();
  if (file_ != nullptr) (void)file_->Close();
  file_ = std::move(file);
  writer_ = std::move(writer);
  manifest_number_ = number;
  snapshot_size_ = writer_->good_size();
  if (old_number != 0) {
    const std::string old_path = JoinPath(dir_, ManifestFileName(old_number));
    Status r = fs_->RemoveFile(old_path);
    if (!r.ok()) TLOG_WARN("manifest: could not remove {}: {}", old_path, r.ToString());
  }
  TLOG_INFO("manifest: now writing {}", path);
  return Status();
}

Status Manifest::CutBackAfterFailedWrite(uint64_t good_size) {
  const std::string path = JoinPath(dir_, ManifestFileName(manifest_number_));
  writer_.reset();
  if (file_ != nullptr) (void)file_->Close();
  file_.reset();
  RETURN_IF_ERROR(fs_->Truncate(path, good_size));
  ASSIGN_OR_RETURN(file_, fs_->NewAppendableFile(path));
  RETURN_IF_ERROR(file_->Sync());
  writer_ = std::make_unique<log::LogWriter>(file_.get());
  return Status();
}

Status Manifest::LogAndApply(const VersionEdit& edit) {
  absl::MutexLock w(&write_mu_);
  if (!sticky_error_.ok()) return sticky_error_;
  {
    absl::MutexLock l(&state_mu_);
    RETURN_IF_ERROR(state_.CheckApplicable(edit));
  }
  record_.clear();
  edit.EncodeTo(&record_);
  const uint64_t good_size = writer_->good_size();
  Status s = writer_->AddRecord(record_);
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    if (absl::IsInvalidArgument(s) && writer_->error().ok()) return s;  // too large; no write
    // The file may hold part or all of the edit. Cut it off so that it cannot come back after a
    // crash; if that fails too, whether the edit is durable is unknown.
    Status cut = CutBackAfterFailedWrite(good_size);
    if (!cut.ok()) {
      sticky_error_ = Annotate(cut, StrCat("manifest: after failing to write an edit (",
                                           s.message(), "), cutting it off failed"));
    }
    return Annotate(s, "manifest: writing an edit");
  }
  // A state whose snapshot alone nears the limit would otherwise start a new file per edit.
  const bool start_new_file =
      writer_->good_size() >= std::max(options_.max_file_bytes, 2 * snapshot_size_);
  std::string snapshot;
  {
    absl::MutexLock l(&state_mu_);
    Status a = state_.Apply(edit);
    if (!a.ok()) {  // cannot happen: checked above, and only this thread changes the state
      sticky_error_ = Annotate(a, "manifest: applying a logged edit");
      return sticky_error_;
    }
    if (start_new_file) state_.ToSnapshotEdit().EncodeTo(&snapshot);
  }
  if (start_new_file) {
    // The edit is durable in the current file whatever happens here.
    Status r = SwitchToNewFile(manifest_number_ + 1, snapshot);
    if (!r.ok()) TLOG_WARN("manifest: could not start a new file: {}", r.ToString());
  }
  return Status();
}

ManifestState Manifest::CopyState() const {
  absl::MutexLock l(&state_mu_);
  return state_;
}

std::string Manifest::manifest_file_name() const {
  absl::MutexLock l(&write_mu_);
  return ManifestFileName(manifest_number_);
}

}  // namespace tessera::storage
