// The file-system interface: every contact of the engine with files goes through it, so the
// engine runs on the POSIX implementation in production and on MemFileSystem (which can
// simulate a crash or a full disk) in tests.
//
// Durability contract (what a crash keeps):
//   - bytes appended to a WritableFile survive a crash only after Sync() returned OK;
//   - a new file, a rename or a removal survives a crash only after SyncDir() of its directory
//     returned OK.
// Errors: NotFound for a missing file; ResourceExhausted when the disk is full; Unavailable for
// other I/O errors. Paths are plain strings joined with '/'.
//
// Thread-safety: FileSystem methods may be called concurrently. A file object is used by one
// thread at a time, except RandomAccessFile::Read, which is safe to call concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // Hands buffered bytes to the OS (no durability).
  virtual Status Flush() = 0;
  // Makes every appended byte durable (fdatasync).
  virtual Status Sync() = 0;
  // Makes durable the bytes already handed to the OS by Flush() (or a full buffer), without
  // touching the file's own buffer: safe to call from another thread while one thread appends.
  // Implementations that may be used that way must override it.
  virtual Status SyncFlushed() { return Sync(); }
  virtual Status Close() = 0;
  // Bytes appended so far, including the size the file had when opened for append.
  virtual uint64_t Size() const = 0;
  // Reserves the file's space up to `bytes` ahead of the appends, so that a later Sync of
  // bytes inside it writes data only (no allocation, no size change to make durable: on ext4
  // one device write instead of two). The file's size on disk becomes at least `bytes`, the
  // reserved part reading as zeros, until Close() trims it to Size() (not made durable: a
  // reader must take a tail of zeros for the end). Size() does not change. Performance only:
  // files that cannot (opened for append, or the file system refuses) do nothing, and an error
  // means only that nothing was reserved. `how` says how appends into the reserve reach the
  // file; it is a hint that changes no guarantee.
  enum class ReservedAppends {
    // With a system call each, like any append: the cheaper way for a file synced after almost
    // every append (a synced page is write-protected again, so copying into a mapping of it
    // takes a fault, and syncing it a TLB flush).
    kWrite,
    // Small appends copied into a shared mapping of the reserve, with no system call: for a
    // file synced now and then (a commit log at the periodic sync mode).
    kMapped,
  };
  virtual Status Preallocate(uint64_t /*bytes*/, ReservedAppends /*how*/) { return Status(); }
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to `n` bytes at `offset`. The returned view points into `scratch` (which must hold
  // `n` bytes) or into memory owned by the file, and is valid while both live. A short result
  // means end of file.
  virtual StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const = 0;
  virtual StatusOr<uint64_t> Size() const = 0;
};

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to `n` bytes; an empty result means end of file. The view points into `scratch`.
  virtual StatusOr<std::string_view> Read(size_t n, char* scratch) = 0;
  virtual Status Skip(uint64_t n) = 0;
};

// An exclusive lock on a file, held until this object is destroyed (FileSystem::LockFile).
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates (or truncates) a file for writing.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Opens a file for appending, creating it when missing.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  virtual StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  virtual StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, in no particular order.
  virtual StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  virtual StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Atomically replaces `to` with `from`.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  virtual Status RemoveDir(const std::string& dir) = 0;
  // Cuts the file to `size` bytes (used to drop a torn log tail).
  virtual Status Truncate(const std::string& path, uint64_t size) = 0;
  // Makes creations, renames and removals in `dir` durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // Takes an exclusive lock on `path` (created when missing) for as long as the returned
  // object lives, and writes this process's id into the file, as leveldb's LOCK. While it is
  // held, another LockFile of the same path — by another process or by this one — fails with
  // FailedPrecondition whose message names the path and, where the file tells it, the holder's
  // pid. The lock goes when its holder dies; the file stays. Advisory: it keeps out only
  // those who ask for it.
  virtual StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
};

// The process's POSIX file system. Never null; lives for the whole process.
FileSystem* PosixFileSystem();

// Helpers over any FileSystem.
Status WriteStringToFile(FileSystem* fs, const std::string& path, std::string_view data, bool sync);
StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path);
std::string JoinPath(std::string_view dir, std::string_view name);
// The number in a file name `<prefix><digits><suffix>` written with at least 6 digits
// ("commitlog-000012.log", "MANIFEST-000003", "000042.sst"); nullopt for any other spelling, so
// that two names never denote one number. Zero is not a valid number.
std::optional<uint64_t> ParseNumberedFileName(std::string_view name, std::string_view prefix,
                                              std::string_view suffix);
std::string NumberedFileName(std::string_view prefix, uint64_t number, std::string_view suffix);
std::string_view Dirname(std::string_view path);

}  // namespace tessera
