// The POSIX FileSystem: buffered appends with pwrite(2) (or through a mapping of the space
// Preallocate reserved), fdatasync(2) for Sync, pread(2) for random reads. errno maps to Status
// codes: ENOENT -> NotFound, ENOSPC/EDQUOT -> ResourceExhausted, anything else -> Unavailable;
// every message names the path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tessera/util/file_system.h"

namespace tessera {
namespace {

Status PosixError(const std::string& context, int err) {
  std::string msg = StrCat(context, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

// Appends go to a 64 KiB buffer that Flush() hands to the OS with pwrite(2), except, when
// Preallocate() asked for ReservedAppends::kMapped, small appends inside the reserved space:
// those are copied into a shared mapping of the file, which puts them in the page cache at once
// -- what a write(2) does, without a system call per append (Cassandra's commit log writes
// through a mapping for the same reason). A process crash after Append() returns loses nothing
// of such a copy; Sync() (fdatasync) makes both kinds durable. The mapping is a window of
// kMapWindow bytes that moves with the appends, so the file's pages stay in the page cache, not
// in the process's resident memory. Appends of kMapMaxAppend bytes or more are written, since
// faulting in their pages one by one costs more than one system call.
//
// Never touched: a page of the file past the reserved space (which would raise SIGBUS), since
// a mapped copy stays below allocated_, which posix_fallocate made the file's size.
class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size, bool appending)
      : path_(std::move(path)), fd_(fd), size_(size), appending_(appending) {
    buf_.reserve(kBufferSize);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }

  Status Append(std::string_view data) override {
    if (map_appends_ && buf_.empty() && data.size() < kMapMaxAppend &&
        size_ + data.size() <= allocated_) {
      // What the mapping could not take (the file could not be mapped) goes the buffered way.
      CopyToMapping(&data);
      if (data.empty()) return Status();
    }
    if (buf_.size() + data.size() > kBufferSize) {
      Status s = FlushBuffer();
      if (!s.ok()) {
        size_ += data.size();
        return s;
      }
    }
    const uint64_t offset = size_;
    size_ += data.size();
    if (buf_.size() + data.size() <= kBufferSize) {
      buf_.append(data.data(), data.size());
      return Status();
    }
    return WriteRaw(data.data(), data.size(), offset);
  }

  Status Flush() override { return FlushBuffer(); }

  Status Sync() override {
    RETURN_IF_ERROR(FlushBuffer());
    if (::fdatasync(fd_) != 0) return PosixError(path_, errno);
    return Status();
  }

  Status SyncFlushed() override {
    if (::fdatasync(fd_) != 0) return PosixError(path_, errno);
    return Status();
  }

  Status Close() override {
    if (fd_ < 0) return Status();
    Status s = FlushBuffer();
    Unmap();
    if (s.ok() && allocated_ > size_ && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      s = PosixError(path_, errno);
    }
    if (::close(fd_) != 0 && s.ok()) s = PosixError(path_, errno);
    fd_ = -1;
    return s;
  }

  uint64_t Size() const override { return size_; }

  Status Preallocate(uint64_t bytes, ReservedAppends how) override {
    // With O_APPEND every write would go past the reserved space.
    if (appending_) return Status();
    if (how == ReservedAppends::kWrite) {
      map_appends_ = false;
      Unmap();
    }
    if (bytes <= allocated_) return Status();
    // Buffered bytes precede any mapped copy, so that the mapping never writes ahead of them.
    RETURN_IF_ERROR(FlushBuffer());
    const int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
    if (err != 0) return PosixError(path_, err);
    allocated_ = bytes;
    map_appends_ = how == ReservedAppends::kMapped && mappable_;
    return Status();
  }

 private:
  static constexpr size_t kBufferSize = 64 * 1024;
  static constexpr uint64_t kMapWindow = 2u << 20;
  static constexpr size_t kMapMaxAppend = 16 * 1024;

  // Copies `*data` to the file at size_ through the mapping, moving the window as it goes, and
  // removes what it copied from `*data`: all of it, unless the file cannot be mapped (then the
  // caller writes the rest, and mapping is not tried again).
  // REQUIRES: buf_ is empty and size_ + data->size() <= allocated_.
  void CopyToMapping(std::string_view* data) {
    while (!data->empty()) {
      if ((size_ < map_offset_ || size_ >= map_offset_ + map_len_) && !MapWindowAt(size_)) return;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(data->size(), map_offset_ + map_len_ - size_));
      std::memcpy(map_ + (size_ - map_offset_), data->data(), n);
      size_ += n;
      data->remove_prefix(n);
    }
  }

  // Maps the window of the file that holds `offset`, up to allocated_.
  bool MapWindowAt(uint64_t offset) {
    Unmap();
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const uint64_t len = std::min<uint64_t>(kMapWindow, allocated_ - start);
    void* p =
        ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(start));
    if (p == MAP_FAILED) {
      mappable_ = false;
      map_appends_ = false;
      return false;
    }
    map_ = static_cast<char*>(p);
    map_offset_ = start;
    map_len_ = len;
    return true;
  }

  void Unmap() {
    if (map_ == nullptr) return;
    ::munmap(map_, map_len_);
    map_ = nullptr;
    map_offset_ = 0;
    map_len_ = 0;
  }

  Status FlushBuffer() {
    if (buf_.empty()) return Status();
    Status s = WriteRaw(buf_.data(), buf_.size(), size_ - buf_.size());
    buf_.clear();
    return s;
  }

  // Writes at `offset` (the end of the file: with O_APPEND the kernel ignores the offset).
  Status WriteRaw(const char* p, size_t n, uint64_t offset) {
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return Status();
  }

  std::string path_;
  int fd_;
  uint64_t size_;
  const bool appending_;    // opened with O_APPEND
  uint64_t allocated_ = 0;  // bytes reserved by Preallocate: the file's size is at least this
  std::string buf_;         // the bytes of [size_ - buf_.size(), size_), not yet written
  bool mappable_ = true;    // cleared when mmap fails
  bool map_appends_ = false;  // small appends inside the reserve go through the mapping
  char* map_ = nullptr;     // the file's [map_offset_, map_offset_ + map_len_), or null
  uint64_t map_offset_ = 0;
  uint64_t map_len_ = 0;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return std::string_view(scratch, done);
  }

  StatusOr<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return PosixError(path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  std::string path_;
  int fd_;
};

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  StatusOr<std::string_view> Read(size_t n, char* scratch) override {
    while (true) {
      ssize_t r = ::read(fd_, scratch, n);
      if (r < 0) {
        if (errno == EINTR) continue;
        return PosixError(path_, errno);
      }
      return std::string_view(scratch, static_cast<size_t>(r));
    }
  }

  Status Skip(uint64_t n) override {
    if (::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) return PosixError(path_, errno);
    return Status();
  }

 private:
  std::string path_;
  int fd_;
};

// flock(2) locks belong to the open file description, so a second open of the same file
// conflicts even within one process (fcntl locks would not).
class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

class PosixFileSystemImpl final : public FileSystem {
 public:
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    // Read and write: a shared writable mapping (PosixWritableFile) needs both.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, 0, /*appending=*/false));
  }

  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return PosixError(path, err);
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size), /*appending=*/true));
  }

  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, errno);
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd));
  }

  StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError(path, errno);
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError(dir, errno);
    std::vector<std::string> out;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      out.emplace_back(e->d_name);
    }
    ::closedir(d);
    return out;
  }

  StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError(path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError(path, errno);
    return Status();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError(StrCat(from, " -> ", to), errno);
    }
    return Status();
  }

  Status CreateDirs(const std::string& dir) override {
    if (dir.empty()) return Status();
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir.find('/', pos + 1);
      partial = dir.substr(0, pos);
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        return PosixError(partial, errno);
      }
    }
    return Status();
  }

  Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return PosixError(dir, errno);
    return Status();
  }

  Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return PosixError(path, errno);
    return Status();
  }

  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError(path, errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {};
      const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) return PosixError(path, err);
      std::string holder;
      if (n > 0) {
        std::string_view text(buf, static_cast<size_t>(n));
        while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
          holder = StrCat(" by process ", text);
        }
      }
      return absl::FailedPreconditionError(StrCat(path, " is locked", holder));
    }
    const std::string pid = StrCat(::getpid(), "\n");
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      const int err = errno;
      ::close(fd);
      return PosixError(path, err);
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(fd));
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError(dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError(dir, errno);
    ::close(fd);
    return s;
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static PosixFileSystemImpl instance;
  return &instance;
}

}  // namespace tessera
