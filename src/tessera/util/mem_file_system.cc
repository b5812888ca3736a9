#include "tessera/util/mem_file_system.h"

#include <algorithm>
#include <cstring>

namespace tessera {

struct MemFileSystem::FileState {
  absl::Mutex mu;
  std::string data ABSL_GUARDED_BY(mu);
  size_t synced ABSL_GUARDED_BY(mu) = 0;  // data[0, synced) is durable
};

namespace {

std::string NormalizeDir(std::string_view dir) {
  std::string d(dir);
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

}  // namespace

class MemFileSystem::Writable final : public WritableFile {
 public:
  // `fs` must outlive this file.
  Writable(MemFileSystem* fs, std::string path, std::shared_ptr<FileState> state)
      : fs_(fs), path_(std::move(path)), state_(std::move(state)) {}

  Status Append(std::string_view data) override {
    {
      absl::MutexLock l(&fs_->mu_);
      RETURN_IF_ERROR(fs_->CountOp());
      if (fs_->space_limit_ > 0 && TotalBytesLocked() + data.size() > fs_->space_limit_) {
        return absl::ResourceExhaustedError(
            StrCat(path_, ": no space left on device (simulated)"));
      }
    }
    absl::MutexLock l(&state_->mu);
    state_->data.append(data.data(), data.size());
    return Status();
  }
  Status Flush() override { return Status(); }
  Status Sync() override {
    {
      absl::MutexLock l(&fs_->mu_);
      RETURN_IF_ERROR(fs_->CountOp());
    }
    absl::MutexLock l(&state_->mu);
    state_->synced = state_->data.size();
    return Status();
  }
  Status SyncFlushed() override { return Sync(); }  // no buffer of its own: same as Sync
  Status Close() override { return Status(); }
  uint64_t Size() const override {
    absl::MutexLock l(&state_->mu);
    return state_->data.size();
  }

 private:
  uint64_t TotalBytesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs_->mu_) {
    uint64_t total = 0;
    for (auto& [p, st] : fs_->files_) {
      absl::MutexLock l(&st->mu);
      total += st->data.size();
    }
    return total;
  }

  MemFileSystem* fs_;
  std::string path_;
  std::shared_ptr<FileState> state_;
};

class MemFileSystem::Reader final : public RandomAccessFile, public SequentialFile {
 public:
  explicit Reader(std::shared_ptr<FileState> state) : state_(std::move(state)) {}

  StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    absl::MutexLock l(&state_->mu);
    if (offset >= state_->data.size()) return std::string_view(scratch, 0);
    size_t len = std::min<uint64_t>(n, state_->data.size() - offset);
    std::memcpy(scratch, state_->data.data() + offset, len);
    return std::string_view(scratch, len);
  }
  StatusOr<uint64_t> Size() const override {
    absl::MutexLock l(&state_->mu);
    return state_->data.size();
  }
  StatusOr<std::string_view> Read(size_t n, char* scratch) override {
    ASSIGN_OR_RETURN(std::string_view r, Read(pos_, n, scratch));
    pos_ += r.size();
    return r;
  }
  Status Skip(uint64_t n) override {
    pos_ += n;
    return Status();
  }

 private:
  std::shared_ptr<FileState> state_;
  uint64_t pos_ = 0;
};

MemFileSystem::MemFileSystem() { dirs_.insert("/"); }
MemFileSystem::~MemFileSystem() = default;

Status MemFileSystem::CountOp() {
  if (fail_after_ops_ >= 0 && ops_ >= fail_after_ops_) {
    return absl::UnavailableError("injected failure (simulated crash point)");
  }
  ++ops_;
  return Status();
}

StatusOr<std::unique_ptr<WritableFile>> MemFileSystem::NewWritableFile(const std::string& path) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CountOp());
  if (!dirs_.contains(NormalizeDir(Dirname(path)))) {
    return absl::NotFoundError(StrCat(path, ": directory does not exist"));
  }
  auto state = std::make_shared<FileState>();
  files_[path] = state;
  return std::unique_ptr<WritableFile>(new Writable(this, path, std::move(state)));
}

StatusOr<std::unique_ptr<WritableFile>> MemFileSystem::NewAppendableFile(
    const std::string& path) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it != files_.end()) {
    return std::unique_ptr<WritableFile>(new Writable(this, path, it->second));
  }
  RETURN_IF_ERROR(CountOp());
  if (!dirs_.contains(NormalizeDir(Dirname(path)))) {
    return absl::NotFoundError(StrCat(path, ": directory does not exist"));
  }
  auto state = std::make_shared<FileState>();
  files_[path] = state;
  return std::unique_ptr<WritableFile>(new Writable(this, path, std::move(state)));
}

StatusOr<std::unique_ptr<RandomAccessFile>> MemFileSystem::NewRandomAccessFile(
    const std::string& path) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(StrCat(path, ": no such file"));
  return std::unique_ptr<RandomAccessFile>(new Reader(it->second));
}

StatusOr<std::unique_ptr<SequentialFile>> MemFileSystem::NewSequentialFile(
    const std::string& path) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(StrCat(path, ": no such file"));
  return std::unique_ptr<SequentialFile>(new Reader(it->second));
}

bool MemFileSystem::FileExists(const std::string& path) {
  absl::MutexLock l(&mu_);
  return files_.contains(path) || dirs_.contains(NormalizeDir(path));
}

StatusOr<std::vector<std::string>> MemFileSystem::GetChildren(const std::string& dir) {
  absl::MutexLock l(&mu_);
  std::string d = NormalizeDir(dir);
  if (!dirs_.contains(d)) return absl::NotFoundError(StrCat(dir, ": no such directory"));
  std::vector<std::string> out;
  for (const auto& [path, st] : files_) {
    if (Dirname(path) == d) out.push_back(path.substr(path.rfind('/') + 1));
  }
  for (const auto& sub : dirs_) {
    if (sub != d && Dirname(sub) == d) out.push_back(sub.substr(sub.rfind('/') + 1));
  }
  return out;
}

StatusOr<uint64_t> MemFileSystem::GetFileSize(const std::string& path) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(StrCat(path, ": no such file"));
  absl::MutexLock fl(&it->second->mu);
  return it->second->data.size();
}

Status MemFileSystem::RemoveFile(const std::string& path) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CountOp());
  if (files_.erase(path) == 0) return absl::NotFoundError(StrCat(path, ": no such file"));
  return Status();
}

Status MemFileSystem::RenameFile(const std::string& from, const std::string& to) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CountOp());
  auto it = files_.find(from);
  if (it == files_.end()) return absl::NotFoundError(StrCat(from, ": no such file"));
  auto state = it->second;
  files_.erase(it);
  files_[to] = std::move(state);
  return Status();
}

Status MemFileSystem::CreateDirs(const std::string& dir) {
  absl::MutexLock l(&mu_);
  std::string d = NormalizeDir(dir);
  while (!d.empty() && d != "/" && d != ".") {
    dirs_.insert(d);
    d = std::string(Dirname(d));
  }
  return Status();
}

Status MemFileSystem::RemoveDir(const std::string& dir) {
  absl::MutexLock l(&mu_);
  dirs_.erase(NormalizeDir(dir));
  return Status();
}

Status MemFileSystem::Truncate(const std::string& path, uint64_t size) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CountOp());
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(StrCat(path, ": no such file"));
  absl::MutexLock fl(&it->second->mu);
  if (size < it->second->data.size()) it->second->data.resize(size);
  it->second->synced = std::min<size_t>(it->second->synced, size);
  return Status();
}

Status MemFileSystem::SyncDir(const std::string& dir) {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CountOp());
  std::string d = NormalizeDir(dir);
  for (auto it = durable_files_.begin(); it != durable_files_.end();) {
    if (Dirname(it->first) == d) {
      it = durable_files_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [path, st] : files_) {
    if (Dirname(path) == d) durable_files_[path] = st;
  }
  return Status();
}

class MemFileSystem::Lock final : public FileLock {
 public:
  Lock(MemFileSystem* fs, std::string path, uint64_t token)
      : fs_(fs), path_(std::move(path)), token_(token) {}
  ~Lock() override {
    absl::MutexLock l(&fs_->mu_);
    auto it = fs_->locks_.find(path_);
    if (it != fs_->locks_.end() && it->second == token_) fs_->locks_.erase(it);
  }

 private:
  MemFileSystem* const fs_;
  const std::string path_;
  const uint64_t token_;
};

StatusOr<std::unique_ptr<FileLock>> MemFileSystem::LockFile(const std::string& path) {
  absl::MutexLock l(&mu_);
  if (locks_.count(path) != 0) {
    return absl::FailedPreconditionError(StrCat(path, " is locked by this process"));
  }
  const uint64_t token = next_lock_token_++;
  locks_[path] = token;
  return std::unique_ptr<FileLock>(new Lock(this, path, token));
}

void MemFileSystem::SimulateCrash() {
  absl::MutexLock l(&mu_);
  locks_.clear();
  // Fresh state objects: handles opened before the crash keep their old objects and can no
  // longer change what the file system holds.
  std::map<std::string, std::shared_ptr<FileState>> survivors;
  std::map<const FileState*, std::shared_ptr<FileState>> copies;  // hard links stay shared
  for (const auto& [path, st] : durable_files_) {
    auto& copy = copies[st.get()];
    if (!copy) {
      copy = std::make_shared<FileState>();
      absl::MutexLock fl(&st->mu);
      absl::MutexLock cl(&copy->mu);
      copy->data = st->data.substr(0, st->synced);
      copy->synced = copy->data.size();
    }
    survivors[path] = copy;
  }
  files_ = survivors;
  durable_files_ = std::move(survivors);
  fail_after_ops_ = -1;
  ++generation_;
}

void MemFileSystem::SetSpaceLimit(uint64_t bytes) {
  absl::MutexLock l(&mu_);
  space_limit_ = bytes;
}

void MemFileSystem::FailAfterOps(int64_t n) {
  absl::MutexLock l(&mu_);
  fail_after_ops_ = n < 0 ? -1 : ops_ + n;
}

int64_t MemFileSystem::MutatingOpsForTesting() const {
  absl::MutexLock l(&mu_);
  return ops_;
}

uint64_t MemFileSystem::TotalBytesForTesting() const {
  absl::MutexLock l(&mu_);
  uint64_t total = 0;
  for (const auto& [p, st] : files_) {
    absl::MutexLock fl(&st->mu);
    total += st->data.size();
  }
  return total;
}

Status MemFileSystem::FlipBitForTesting(const std::string& path, uint64_t offset, int bit) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(path);
  absl::MutexLock fl(&it->second->mu);
  if (offset >= it->second->data.size()) return absl::InvalidArgumentError("offset past end");
  it->second->data[offset] ^= static_cast<char>(1 << (bit & 7));
  return Status();
}

Status MemFileSystem::TruncateForTesting(const std::string& path, uint64_t size) {
  absl::MutexLock l(&mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(path);
  absl::MutexLock fl(&it->second->mu);
  if (size < it->second->data.size()) it->second->data.resize(size);
  it->second->synced = std::min<size_t>(it->second->synced, size);
  return Status();
}

}  // namespace tessera
