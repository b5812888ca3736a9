// Test-only helpers for the log, commit log and manifest tests: status assertions and a file
// system whose appends can be made to fail half way (which MemFileSystem never does).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage::logtest {

inline const Status& ToStatus(const Status& s) { return s; }
template <typename T>
const Status& ToStatus(const StatusOr<T>& s) {
  return s.status();
}

}  // namespace tessera::storage::logtest

#define TESSERA_ASSERT_OK(expr)                                                                  \
  do {                                                                                           \
    const auto& tessera_result_ = (expr);                                                        \
    ASSERT_TRUE(tessera_result_.ok()) << ::tessera::storage::logtest::ToStatus(tessera_result_); \
  } while (0)

#define TESSERA_EXPECT_OK(expr)                                                                  \
  do {                                                                                           \
    const auto& tessera_result_ = (expr);                                                        \
    EXPECT_TRUE(tessera_result_.ok()) << ::tessera::storage::logtest::ToStatus(tessera_result_); \
  } while (0)

namespace tessera::storage::logtest {

// Forwards to another FileSystem. When `partial_appends` is set, the next appends to files opened
// through it write only the first half of their data, make it durable and then fail with
// ResourceExhausted: a disk that filled up in the middle of a write whose first part the OS
// wrote back anyway.
class PartialAppendFileSystem : public FileSystem {
 public:
  // `base` must outlive this object.
  explicit PartialAppendFileSystem(FileSystem* base) : base_(base) {}

  std::atomic<int> partial_appends{0};

  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    ASSIGN_OR_RETURN(auto f, base_->NewWritableFile(path));
    return std::unique_ptr<WritableFile>(new File(this, std::move(f)));
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    ASSIGN_OR_RETURN(auto f, base_->NewAppendableFile(path));
    return std::unique_ptr<WritableFile>(new File(this, std::move(f)));
  }
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    return base_->NewSequentialFile(path);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return base_->GetChildren(dir);
  }
  StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    return base_->GetFileSize(path);
  }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return base_->RenameFile(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }

 private:
  class File : public WritableFile {
   public:
    File(PartialAppendFileSystem* fs, std::unique_ptr<WritableFile> base)
        : fs_(fs), base_(std::move(base)) {}
    Status Append(std::string_view data) override {
      if (fs_->partial_appends.load() > 0) {
        fs_->partial_appends.fetch_sub(1);
        RETURN_IF_ERROR(base_->Append(data.substr(0, data.size() / 2)));
        RETURN_IF_ERROR(base_->Sync());
        return absl::ResourceExhaustedError("no space left on device (half written, simulated)");
      }
      return base_->Append(data);
    }
    Status Flush() override { return base_->Flush(); }
    Status Sync() override { return base_->Sync(); }
    Status Close() override { return base_->Close(); }
    uint64_t Size() const override { return base_->Size(); }

   private:
    PartialAppendFileSystem* fs_;
    std::unique_ptr<WritableFile> base_;
  };

  FileSystem* base_;
};

}  // namespace tessera::storage::logtest
