// An in-memory FileSystem for tests that can simulate what a machine crash or a full disk does.
//
// Every file keeps its whole contents and the prefix of it that is durable (synced). Every
// directory keeps its live entries and the set of entries that are durable (made durable by
// SyncDir). SimulateCrash() throws away everything that was not durable: unsynced bytes are cut
// from each file, files whose directory entry was never synced disappear, removals and renames
// that were not synced are undone. Open file objects from before the crash keep working on
// their old state but no longer affect the file system (like a dead process's descriptors).
//
// Fault injection:
//   - SetSpaceLimit(bytes): total file bytes above the limit fail with ResourceExhausted
//     ("no space left on device"); the failed append writes nothing.
//   - FailAfterOps(n): the n+1-th mutating operation and every one after it fail with
//     Unavailable, as if the process had died at that point; pair with SimulateCrash().
//   - Corrupt / truncate files through ReadFileToString/WriteStringToFile, or
//     FlipBitForTesting / TruncateForTesting below (these act on durable and live data alike).
//
// LockFile keeps its locks in memory only (no file is created, no operation counted), and
// SimulateCrash releases them all, as a crash ends the process holding them. The file system
// must outlive its locks.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/util/file_system.h"

namespace tessera {

class MemFileSystem final : public FileSystem {
 public:
  MemFileSystem();
  ~MemFileSystem() override;

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDirs(const std::string& dir) override;
  Status RemoveDir(const std::string& dir) override;
  Status Truncate(const std::string& path, uint64_t size) override;
  Status SyncDir(const std::string& dir) override;
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;

  // Drops every non-durable byte and directory change, and clears FailAfterOps.
  void SimulateCrash();
  // 0 = no limit.
  void SetSpaceLimit(uint64_t bytes);
  // Mutating operations (append, sync, create, rename, remove, truncate, sync dir) after the
  // first `n` fail. A negative value turns this off.
  void FailAfterOps(int64_t n);
  // Mutating operations performed so far (to pick crash points).
  int64_t MutatingOpsForTesting() const;
  uint64_t TotalBytesForTesting() const;

  Status FlipBitForTesting(const std::string& path, uint64_t offset, int bit);
  Status TruncateForTesting(const std::string& path, uint64_t size);

  struct FileState;  // shared with file objects; defined in the .cc

 private:
  class Writable;
  class Reader;
  class Lock;
  friend class Writable;

  // Returns a non-OK status when the next mutating op must fail; counts the op otherwise.
  Status CountOp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Live view: path -> file.
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
  // Durable view: path -> file, as of the last SyncDir of each path's directory.
  std::map<std::string, std::shared_ptr<FileState>> durable_files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
  uint64_t space_limit_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t fail_after_ops_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t ops_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by SimulateCrash
  // Held locks: path -> the holder's token (a Lock releases only its own entry).
  std::map<std::string, uint64_t> locks_ ABSL_GUARDED_BY(mu_);
  uint64_t next_lock_token_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tessera
