#include "tessera/storage/commit_log.h"

#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "tessera/storage/log_reader.h"
#include "tessera/util/logging.h"

namespace tessera::storage {
namespace {

constexpr std::string_view kSegmentPrefix = "commitlog-";
constexpr std::string_view kSegmentSuffix = ".log";

// Cuts `path` to `size` bytes and makes the cut durable before anything is written after it.
Status CutFile(FileSystem* fs, const std::string& path, uint64_t size) {
  RETURN_IF_ERROR(fs->Truncate(path, size));
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewAppendableFile(path));
  RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

}  // namespace

std::string CommitLog::SegmentFileName(uint64_t segment) {
  return NumberedFileName(kSegmentPrefix, segment, kSegmentSuffix);
}

std::optional<uint64_t> CommitLog::ParseSegmentFileName(std::string_view name) {
  return ParseNumberedFileName(name, kSegmentPrefix, kSegmentSuffix);
}

std::string CommitLog::SegmentPath(uint64_t segment) const {
  return JoinPath(options_.dir, SegmentFileName(segment));
}

StatusOr<std::unique_ptr<CommitLog>> CommitLog::Open(const CommitLogOptions& options,
                                                     FileSystem* fs) {
  if (options.dir.empty()) return absl::InvalidArgumentError("commit log: no directory given");
  RETURN_IF_ERROR_CTX(fs->CreateDirs(options.dir), "commit log: creating directory");
  ASSIGN_OR_RETURN(std::vector<std::string> children, fs->GetChildren(options.dir));
  std::set<uint64_t> segments;
  for (const std::string& name : children) {
    if (std::optional<uint64_t> n = ParseSegmentFileName(name)) segments.insert(*n);
  }
  return std::unique_ptr<CommitLog>(new CommitLog(options, fs, std::move(segments)));
}

CommitLog::CommitLog(const CommitLogOptions& options, FileSystem* fs, std::set<uint64_t> segments)
    : options_(options),
      fs_(fs),
      segments_(std::move(segments)),
      current_(segments_.empty() ? 1 : *segments_.rbegin() + 1) {}

CommitLog::~CommitLog() { CloseCurrentFile(); }

Status CommitLog::Replay(
    const std::function<Status(uint64_t segment, std::string_view record)>& fn) {
  if (wrote_ || closed_) {
    return absl::FailedPreconditionError("commit log: Replay after the log was written");
  }
  std::vector<uint64_t> segments;
  {
    absl::MutexLock l(&mu_);
    segments.assign(segments_.begin(), segments_.end());
  }
  uint64_t records = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const uint64_t segment = segments[i];
    const std::string path = SegmentPath(segment);
    ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs_->NewSequentialFile(path));
    log::LogReader reader(std::move(file), path);
    std::string_view record;
    while (true) {
      ASSIGN_OR_RETURN(bool more, reader.ReadRecord(&record));
      if (!more) break;
      RETURN_IF_ERROR(fn(segment, record));
      ++records;
    }
    if (!reader.TornTail()) continue;
    if (i + 1 < segments.size()) {
      // Rolling trims a segment's reserved space durably before the next one exists.
      return CorruptionError(path, reader.EndOfValidData(),
                             StrCat("torn tail of ", reader.TornBytes(),
                                    " bytes in a commit log segment that is not the last"));
    }
    if (reader.ZeroTail()) {
      // Space reserved ahead of the appends (Reserve) that a crash kept from being trimmed.
      TLOG_INFO("commit log {}: trimming {} reserved bytes at offset {}", path, reader.TornBytes(),
                reader.EndOfValidData());
    } else {
      TLOG_WARN("commit log {}: cutting a torn tail of {} bytes at offset {}", path,
                reader.TornBytes(), reader.EndOfValidData());
    }
    RETURN_IF_ERROR_CTX(CutFile(fs_, path, reader.EndOfValidData()),
                        StrCat("commit log: cutting the torn tail of ", path));
  }
  TLOG_INFO("commit log {}: replayed {} records from {} segments", options_.dir, records,
            segments.size());
  return Status();
}

void CommitLog::SetSyncableFile() {
  absl::MutexLock l(&mu_);
  syncable_file_ = file_;
}

Status CommitLog::SyncFlushedConcurrently() {
  std::shared_ptr<WritableFile> file;
  {
    absl::MutexLock l(&mu_);
    file = syncable_file_;
  }
  if (file == nullptr) return Status();
  return file->SyncFlushed();
}

void CommitLog::CloseCurrentFile() {
  writer_.reset();
  {
    absl::MutexLock l(&mu_);
    syncable_file_.reset();
  }
  if (file_ != nullptr) {
    // A concurrent SyncFlushedConcurrently may still hold the file: it closes it then.
    Status s = file_.use_count() == 1 ? file_->Close() : Status();
    if (!s.ok()) {
      TLOG_WARN("commit log {}: close failed: {}", SegmentPath(file_number_), s.ToString());
    }
    file_.reset();
  }
}

Status CommitLog::PrepareForWrite() {
  if (closed_) return absl::FailedPreconditionError("commit log is closed");
  wrote_ = true;
  if (needs_repair_) RETURN_IF_ERROR(Repair());
  if (file_ == nullptr || file_->Size() >= options_.segment_bytes) RETURN_IF_ERROR(Roll());
  return Status();
}

Status CommitLog::Roll() {
  if (file_ != nullptr) {
    // Everything in the old segment must be durable before records go to the new one: only the
    // last segment may have a torn tail.
    if (synced_size_ < writer_->good_size()) {
      Status s = file_->Sync();
      if (!s.ok()) {
        needs_repair_ = true;
        return Annotate(s, StrCat("commit log: syncing ", SegmentPath(file_number_)));
      }
    }
    const uint64_t size = writer_->good_size();
    const bool reserved = reserved_ > size;
    CloseCurrentFile();
    if (reserved) {
      // Closing trimmed the reserved space; only the last segment may keep some after a crash.
      RETURN_IF_ERROR_CTX(CutFile(fs_, SegmentPath(file_number_), size),
                          StrCat("commit log: trimming ", SegmentPath(file_number_)));
    }
  }
  uint64_t number;
  {
    absl::MutexLock l(&mu_);
    number = current_created_ ? current_ + 1 : current_;
  }
  const std::string path = SegmentPath(number);
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_->NewWritableFile(path));
  // The new file must survive a crash before any record in it is acknowledged.
  RETURN_IF_ERROR_CTX(fs_->SyncDir(options_.dir),
                      StrCat("commit log: syncing directory for ", path));
  {
    absl::MutexLock l(&mu_);
    current_ = number;
    current_created_ = true;
    segments_.insert(number);
  }
  file_ = std::move(file);
  SetSyncableFile();
  writer_ = std::make_unique<log::LogWriter>(file_.get());
  file_number_ = number;
  synced_size_ = 0;
  reserved_ = 0;
  TLOG_INFO("commit log: writing segment {}", path);
  return Status();
}

void CommitLog::Reserve(size_t bytes) {
  const uint64_t end = file_->Size() + bytes;
  if (end <= reserved_) return;
  const uint64_t want = end + kReserveBytes;
  // At the periodic sync mode a segment is synced now and then, so copying small records
  // into a mapping of the reserve saves a system call each; at the batch mode it is synced
  // after every group commit, and a write costs less than the fault a synced page takes.
  const auto how = options_.sync_mode == CommitLogSyncMode::kPeriodic
                       ? WritableFile::ReservedAppends::kMapped
                       : WritableFile::ReservedAppends::kWrite;
  if (Status s = file_->Preallocate(want, how); !s.ok()) {
    // Only slower: appends grow the file as without the reservation.
    TLOG_DEBUG("commit log {}: reserving space: {}", SegmentPath(file_number_), s.ToString());
    reserved_ = std::numeric_limits<uint64_t>::max();
    return;
  }
  reserved_ = want;
}

Status CommitLog::Repair() {
  // file_number_ is the segment whose append or sync failed; repair_size_ its whole records.
  const std::string path = SegmentPath(file_number_);
  if (writer_ != nullptr) repair_size_ = writer_->good_size();
  CloseCurrentFile();
  RETURN_IF_ERROR_CTX(CutFile(fs_, path, repair_size_), StrCat("commit log: repairing ", path));
  ASSIGN_OR_RETURN(file_, fs_->NewAppendableFile(path));
  SetSyncableFile();
  writer_ = std::make_unique<log::LogWriter>(file_.get());
  synced_size_ = repair_size_;
  reserved_ = 0;  // an appendable file reserves nothing
  needs_repair_ = false;
  TLOG_WARN("commit log {}: repaired after a failed write; continuing at offset {}", path,
            repair_size_);
  return Status();
}

StatusOr<uint64_t> CommitLog::AddRecord(std::string_view record) {
  return AddRecords(std::span<const std::string_view>(&record, 1));
}

StatusOr<uint64_t> CommitLog::AddRecords(std::span<const std::string_view> records) {
  RETURN_IF_ERROR(PrepareForWrite());
  size_t bytes = 0;
  for (std::string_view r : records) bytes += log::kHeaderSize + r.size();
  Reserve(bytes);
  Status s = writer_->AddRecords(records);
  if (!s.ok()) {
    if (!writer_->error().ok()) needs_repair_ = true;
    return Annotate(s, StrCat("commit log: appending to ", SegmentPath(file_number_)));
  }
  return file_number_;
}

StatusOr<uint64_t> CommitLog::StartNewSegment() {
  if (closed_) return absl::FailedPreconditionError("commit log is closed");
  wrote_ = true;
  if (needs_repair_) RETURN_IF_ERROR(Repair());
  RETURN_IF_ERROR(Roll());
  return file_number_;
}

Status CommitLog::Sync() {
  if (closed_) return absl::FailedPreconditionError("commit log is closed");
  if (needs_repair_) return Repair();  // the repair leaves every whole record durable
  if (file_ == nullptr) return Status();
  const uint64_t size = writer_->good_size();
  if (synced_size_ == size) return Status();
  Status s = file_->Sync();
  if (!s.ok()) {
    needs_repair_ = true;
    return Annotate(s, StrCat("commit log: syncing ", SegmentPath(file_number_)));
  }
  synced_size_ = size;
  return Status();
}

Status CommitLog::Flush() {
  if (closed_) return absl::FailedPreconditionError("commit log is closed");
  if (needs_repair_ || file_ == nullptr) return Status();
  Status s = file_->Flush();
  if (!s.ok()) {
    needs_repair_ = true;
    return Annotate(s, StrCat("commit log: writing ", SegmentPath(file_number_)));
  }
  return Status();
}

uint64_t CommitLog::current_segment() const {
  absl::MutexLock l(&mu_);
  return current_;
}

std::vector<uint64_t> CommitLog::LiveSegments() const {
  absl::MutexLock l(&mu_);
  return std::vector<uint64_t>(segments_.begin(), segments_.end());
}

Status CommitLog::DeleteSegmentsBefore(uint64_t segment) {
  std::vector<uint64_t> doomed;
  {
    absl::MutexLock l(&mu_);
    for (auto it = segments_.begin(); it != segments_.end() && *it < segment;) {
      if (current_created_ && *it == current_) break;  // the current one is the largest
      doomed.push_back(*it);
      it = segments_.erase(it);
    }
  }
  if (doomed.empty()) return Status();
  Status result;
  for (uint64_t n : doomed) {
    Status s = fs_->RemoveFile(SegmentPath(n));
    if (s.ok() || absl::IsNotFound(s)) continue;
    if (result.ok()) result = s;
    absl::MutexLock l(&mu_);
    segments_.insert(n);  // still there
  }
  // Not needed for correctness (a resurrected segment only replays flushed records), but keeps
  // a crash from bringing deleted files back.
  Status s = fs_->SyncDir(options_.dir);
  if (result.ok()) result = s;
  TLOG_INFO("commit log {}: deleted {} segments below {}", options_.dir, doomed.size(), segment);
  return Annotate(result, "commit log: deleting segments");
}

Status CommitLog::Close() {
  if (closed_) return Status();
  Status s = Sync();
  CloseCurrentFile();
  closed_ = true;
  return s;
}

}  // namespace tessera::storage
