#include "tessera/coord/embedded_lock_service.h"

#include <algorithm>
#include <deque>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tessera/coord/embedded_snapshot.h"
#include "tessera/util/logging.h"

namespace tessera::coord {
namespace {

struct FileRec {
  std::string value;
  int64_t version = 0;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  SessionId owner;  // valid: ephemeral
};

struct LockRec {
  SessionId owner;
  std::string value;
  int64_t revision = 0;
};

struct SessionRec {
  int64_t ttl_us = 0;
  // Set by StopKeepAliveForTesting(); the session then expires at deadline_us.
  bool keepalive_stopped = false;
  int64_t deadline_us = 0;
  std::function<void(SessionState)> on_state_change;
};

// One watch's registration. Shared by the Watch handle and by queued deliveries, so a delivery
// queued before the handle was destroyed finds `canceled` instead of a dangling pointer.
struct WatchCore {
  int64_t id = 0;
  SessionId session;
  WatchOptions options;
  WatchCallback callback;
  bool canceled = false;  // guarded by Impl::mu_
};

// A queued callback: a watch event (watch set) or a session's expiry (state_callback set).
struct Delivery {
  std::shared_ptr<WatchCore> watch;
  WatchEvent event;
  std::function<void(SessionState)> state_callback;
};

struct Change {
  WatchTarget target;
  WatchEvent event;
};

bool Matches(const WatchOptions& o, WatchTarget target, std::string_view name) {
  if (o.target != target) return false;
  return o.prefix ? name.starts_with(o.key) : name == o.key;
}

FileInfo ToFileInfo(std::string_view name, const FileRec& r) {
  FileInfo info;
  info.name = std::string(name);
  info.value = r.value;
  info.version = r.version;
  info.create_revision = r.create_revision;
  info.mod_revision = r.mod_revision;
  info.owner = r.owner;
  return info;
}

Status SessionGone(SessionId id) {
  return absl::FailedPreconditionError(
      StrCat("lock-service session ", id.value, " has expired or was closed"));
}

}  // namespace

class EmbeddedLockService::Impl {
 public:
  explicit Impl(const EmbeddedLockServiceOptions& options)
      : options_(options),
        snapshot_path_(JoinPath(options.dir, kSnapshotFileName)),
        temp_path_(JoinPath(options.dir, kSnapshotTempFileName)) {}

  ~Impl() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
      work_cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
  }

  Status Load() {
    FileSystem* fs = options_.fs;
    if (!fs->FileExists(options_.dir)) {
      RETURN_IF_ERROR_CTX(fs->CreateDirs(options_.dir), "creating lock-service folder");
      RETURN_IF_ERROR_CTX(fs->SyncDir(std::string(Dirname(options_.dir))),
                          "syncing the lock-service folder's parent");
    }
    if (fs->FileExists(temp_path_)) {
      // A snapshot write that never got renamed into place: the previous snapshot is current.
      RETURN_IF_ERROR_CTX(fs->RemoveFile(temp_path_), "removing unfinished snapshot");
    }
    if (!fs->FileExists(snapshot_path_)) return absl::OkStatus();
    ASSIGN_OR_RETURN(const std::string data, ReadFileToString(fs, snapshot_path_));
    ASSIGN_OR_RETURN(SnapshotContents contents, DecodeSnapshot(data, snapshot_path_));
    absl::MutexLock l(&mu_);
    revision_ = contents.revision;
    history_floor_ = revision_;
    for (SnapshotFile& f : contents.files) {
      FileRec rec;
      rec.value = std::move(f.value);
      rec.version = f.version;
      rec.create_revision = f.create_revision;
      rec.mod_revision = f.mod_revision;
      files_.emplace(std::move(f.name), std::move(rec));
    }
    TLOG_INFO("lock service: loaded {} files at revision {} from {}", files_.size(), revision_,
              snapshot_path_);
    return absl::OkStatus();
  }

  void StartThread() {
    thread_ = std::thread([this] { Run(); });
  }

  int64_t revision() {
    absl::MutexLock l(&mu_);
    return revision_;
  }

  // --- Sessions ---

  SessionId CreateSession(const SessionOptions& options) {
    absl::MutexLock l(&mu_);
    const SessionId id{next_session_id_++};
    SessionRec rec;
    rec.ttl_us = options.ttl_ms * 1000;
    rec.on_state_change = options.on_state_change;
    sessions_.emplace(id, std::move(rec));
    return id;
  }

  bool Alive(SessionId id) {
    absl::MutexLock l(&mu_);
    ExpireDueLocked();
    return sessions_.contains(id);
  }

  void Close(SessionId id) {
    absl::MutexLock l(&mu_);
    if (sessions_.contains(id)) EndSessionLocked(id, /*expired=*/false);
  }

  Status Revoke(SessionId id) {
    absl::MutexLock l(&mu_);
    ExpireDueLocked();
    if (!sessions_.contains(id)) {
      return absl::NotFoundError(StrCat("no live lock-service session ", id.value));
    }
    TLOG_INFO("lock service: session {} revoked", id.value);
    EndSessionLocked(id, /*expired=*/true);
    return absl::OkStatus();
  }

  void StopKeepAlive(SessionId id) {
    absl::MutexLock l(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.keepalive_stopped) return;
    it->second.keepalive_stopped = true;
    it->second.deadline_us = options_.clock->MonotonicMicros() + it->second.ttl_us;
  }

  // --- Locks ---

  StatusOr<bool> TryAcquire(SessionId id, std::string_view lock, std::string_view value) {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    RETURN_IF_ERROR(ValidateValue(value));
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = locks_.find(lock);
    if (it != locks_.end()) return it->second.owner == id;
    LockRec rec{id, std::string(value), ++revision_};
    locks_.emplace(std::string(lock), rec);
    WatchEvent event{WatchEventType::kPut, std::string(lock), rec.value, 0, rec.revision, id};
    RecordChangeLocked(WatchTarget::kLocks, std::move(event));
    return true;
  }

  Status Acquire(SessionId id, std::string_view lock, std::string_view value,
                 int64_t timeout_ms) {
    if (timeout_ms < 0) {
      return absl::InvalidArgumentError(StrCat("Acquire timeout_ms ", timeout_ms, " is negative"));
    }
    Clock* clock = options_.clock;
    const int64_t deadline = clock->MonotonicMicros() + timeout_ms * 1000;
    const int64_t retry_us = std::max<int64_t>(1, options_.acquire_retry_ms) * 1000;
    // Bounded: every round sleeps (or, on a ManualClock, advances time) until the deadline.
    while (true) {
      ASSIGN_OR_RETURN(const bool held, TryAcquire(id, lock, value));
      if (held) return absl::OkStatus();
      const int64_t now = clock->MonotonicMicros();
      if (now >= deadline) {
        return absl::DeadlineExceededError(
            StrCat("lock '", lock, "' still held by another session after ", timeout_ms, " ms"));
      }
      clock->SleepForMicros(std::min(retry_us, deadline - now));
    }
  }

  Status Release(SessionId id, std::string_view lock) {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = locks_.find(lock);
    if (it == locks_.end() || it->second.owner != id) {
      return absl::NotFoundError(
          StrCat("lock '", lock, "' is not held by session ", id.value));
    }
    locks_.erase(it);
    WatchEvent event{WatchEventType::kDelete, std::string(lock), "", 0, ++revision_, {}};
    RecordChangeLocked(WatchTarget::kLocks, std::move(event));
    return absl::OkStatus();
  }

  StatusOr<LockHolder> GetLockHolder(SessionId id, std::string_view lock) {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = locks_.find(lock);
    if (it == locks_.end()) return absl::NotFoundError(StrCat("lock '", lock, "' is free"));
    return LockHolder{it->second.owner, it->second.value, it->second.revision};
  }

  // --- Files ---

  StatusOr<FileInfo> Get(SessionId id, std::string_view name) {
    RETURN_IF_ERROR(ValidateName("file", name));
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = files_.find(name);
    if (it == files_.end()) return absl::NotFoundError(StrCat("file '", name, "' does not exist"));
    return ToFileInfo(it->first, it->second);
  }

  StatusOr<FileInfo> Put(SessionId id, std::string_view name, std::string_view value,
                         const PutOptions& options) {
    RETURN_IF_ERROR(ValidateName("file", name));
    RETURN_IF_ERROR(ValidateValue(value));
    if (options.expected_version.has_value() && *options.expected_version < 0) {
      return absl::InvalidArgumentError(
          StrCat("expected_version ", *options.expected_version, " is negative"));
    }
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = files_.find(name);
    const int64_t current = it == files_.end() ? 0 : it->second.version;
    if (options.expected_version.has_value() && *options.expected_version != current) {
      return absl::AbortedError(StrCat("file '", name, "' is at version ", current, ", not ",
                                       *options.expected_version));
    }
    const int64_t revision = revision_ + 1;
    FileRec rec;
    rec.value = std::string(value);
    rec.version = current + 1;
    rec.create_revision = it == files_.end() ? revision : it->second.create_revision;
    rec.mod_revision = revision;
    rec.owner = options.ephemeral ? id : SessionId{};
    const bool was_persistent = it != files_.end() && !it->second.owner.valid();
    if (!options.ephemeral || was_persistent) {
      RETURN_IF_ERROR(PersistLocked(name, options.ephemeral ? nullptr : &rec, revision));
    }
    revision_ = revision;
    FileInfo info = ToFileInfo(name, rec);
    if (it == files_.end()) {
      files_.emplace(std::string(name), std::move(rec));
    } else {
      it->second = std::move(rec);
    }
    WatchEvent event{WatchEventType::kPut, info.name, info.value, info.version, revision,
                     info.owner};
    RecordChangeLocked(WatchTarget::kFiles, std::move(event));
    return info;
  }

  Status Delete(SessionId id, std::string_view name, std::optional<int64_t> expected_version) {
    RETURN_IF_ERROR(ValidateName("file", name));
    if (expected_version.has_value() && *expected_version < 0) {
      return absl::InvalidArgumentError(
          StrCat("expected_version ", *expected_version, " is negative"));
    }
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto it = files_.find(name);
    if (it == files_.end()) return absl::NotFoundError(StrCat("file '", name, "' does not exist"));
    if (expected_version.has_value() && *expected_version != it->second.version) {
      return absl::AbortedError(StrCat("file '", name, "' is at version ", it->second.version,
                                       ", not ", *expected_version));
    }
    const int64_t revision = revision_ + 1;
    if (!it->second.owner.valid()) RETURN_IF_ERROR(PersistLocked(name, nullptr, revision));
    revision_ = revision;
    files_.erase(it);
    RecordChangeLocked(WatchTarget::kFiles,
                       WatchEvent{WatchEventType::kDelete, std::string(name), "", 0, revision, {}});
    return absl::OkStatus();
  }

  StatusOr<Listing> List(SessionId id, std::string_view prefix) {
    RETURN_IF_ERROR(ValidatePrefix(prefix));
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    Listing listing;
    listing.revision = revision_;
    for (auto it = files_.lower_bound(prefix);
         it != files_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
      listing.files.push_back(ToFileInfo(it->first, it->second));
    }
    return listing;
  }

  // --- Watches ---

  StatusOr<std::shared_ptr<WatchCore>> StartWatch(SessionId id, const WatchOptions& options,
                                                  WatchCallback callback) {
    RETURN_IF_ERROR(ValidateWatchOptions(options));
    if (!callback) return absl::InvalidArgumentError("watch callback is empty");
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckSessionLocked(id));
    auto core = std::make_shared<WatchCore>();
    core->id = next_watch_id_++;
    core->session = id;
    core->options = options;
    core->callback = std::move(callback);
    if (options.start_revision > 0 && options.start_revision <= history_floor_) {
      // The changes asked for are gone: say so, and continue from now.
      WatchEvent reset;
      reset.type = WatchEventType::kReset;
      reset.revision = revision_;
      pending_.push_back(Delivery{core, std::move(reset), nullptr});
      work_cv_.Signal();
    } else if (options.start_revision > 0) {
      for (const Change& c : history_) {
        if (c.event.revision >= options.start_revision &&
            Matches(options, c.target, c.event.name)) {
          pending_.push_back(Delivery{core, c.event, nullptr});
        }
      }
      work_cv_.Signal();
    }
    watches_.emplace(core->id, core);
    return core;
  }

  // After this returns, `core`'s callback is not running (unless this runs inside it) and never
  // runs again.
  void CancelWatch(const std::shared_ptr<WatchCore>& core) {
    absl::MutexLock l(&mu_);
    core->canceled = true;
    watches_.erase(core->id);
    if (draining_ && drainer_ == std::this_thread::get_id()) return;  // from inside a callback
    while (delivering_ == core.get()) delivered_cv_.Wait(&mu_);
  }

  // --- Delivery ---

  void Poll() {
    {
      absl::MutexLock l(&mu_);
      ExpireDueLocked();
    }
    DeliverPending();
  }

 private:
  void Run() {
    while (true) {
      {
        absl::MutexLock l(&mu_);
        if (!stop_ && pending_.empty()) {
          work_cv_.WaitWithTimeout(&mu_, absl::Milliseconds(options_.poll_interval_ms));
        }
        if (stop_) return;
        ExpireDueLocked();
      }
      DeliverPending();
    }
  }

  // Runs queued callbacks in order on this thread, unless another call is already doing so (it
  // will run what we queued).
  void DeliverPending() {
    {
      absl::MutexLock l(&mu_);
      if (draining_) return;
      draining_ = true;
      drainer_ = std::this_thread::get_id();
    }
    while (true) {
      Delivery d;
      {
        absl::MutexLock l(&mu_);
        while (!pending_.empty() && pending_.front().watch != nullptr &&
               pending_.front().watch->canceled) {
          pending_.pop_front();
        }
        if (pending_.empty()) {
          draining_ = false;
          drainer_ = std::thread::id();
          return;
        }
        d = std::move(pending_.front());
        pending_.pop_front();
        delivering_ = d.watch.get();
      }
      if (d.watch != nullptr) {
        d.watch->callback(d.event);
      } else {
        d.state_callback(SessionState::kExpired);
      }
      absl::MutexLock l(&mu_);
      delivering_ = nullptr;
      delivered_cv_.SignalAll();
    }
  }

  Status CheckSessionLocked(SessionId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ExpireDueLocked();
    if (!sessions_.contains(id)) return SessionGone(id);
    return absl::OkStatus();
  }

  void ExpireDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t now = options_.clock->MonotonicMicros();
    std::vector<SessionId> due;
    for (const auto& [id, rec] : sessions_) {
      if (rec.keepalive_stopped && now >= rec.deadline_us) due.push_back(id);
    }
    for (SessionId id : due) {
      TLOG_INFO("lock service: session {} expired (lease ran out)", id.value);
      EndSessionLocked(id, /*expired=*/true);
    }
  }

  // Ends a session: its watches get kSessionExpired (expired) or are silenced (closed), its
  // locks are released and its ephemeral files deleted, and on expiry its callback is queued.
  void EndSessionLocked(SessionId id, bool expired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto sit = sessions_.find(id);
    SessionRec rec = std::move(sit->second);
    sessions_.erase(sit);
    if (expired && rec.on_state_change) {
      pending_.push_back(Delivery{nullptr, WatchEvent{}, std::move(rec.on_state_change)});
    }
    for (auto it = watches_.begin(); it != watches_.end();) {
      if (it->second->session != id) {
        ++it;
        continue;
      }
      if (expired) {
        WatchEvent event;
        event.type = WatchEventType::kSessionExpired;
        event.revision = revision_;
        pending_.push_back(Delivery{it->second, std::move(event), nullptr});
      } else {
        it->second->canceled = true;
      }
      it = watches_.erase(it);
    }
    for (auto it = locks_.begin(); it != locks_.end();) {
      if (it->second.owner != id) {
        ++it;
        continue;
      }
      WatchEvent event{WatchEventType::kDelete, it->first, "", 0, ++revision_, {}};
      it = locks_.erase(it);
      RecordChangeLocked(WatchTarget::kLocks, std::move(event));
    }
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->second.owner != id) {
        ++it;
        continue;
      }
      WatchEvent event{WatchEventType::kDelete, it->first, "", 0, ++revision_, {}};
      it = files_.erase(it);
      RecordChangeLocked(WatchTarget::kFiles, std::move(event));
    }
    work_cv_.Signal();
  }

  void RecordChangeLocked(WatchTarget target, WatchEvent event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [wid, core] : watches_) {
      if (event.revision >= core->options.start_revision &&
          Matches(core->options, target, event.name)) {
        pending_.push_back(Delivery{core, event, nullptr});
      }
    }
    history_bytes_ += event.name.size() + event.value.size();
    history_.push_back(Change{target, std::move(event)});
    while (history_.size() > std::max<size_t>(1, options_.history_limit) ||
           (history_.size() > 1 && history_bytes_ > options_.history_bytes_limit)) {
      const WatchEvent& oldest = history_.front().event;
      history_bytes_ -= oldest.name.size() + oldest.value.size();
      history_floor_ = oldest.revision;
      history_.pop_front();
    }
    work_cv_.Signal();
  }

  // Writes the snapshot as it will be once `name` is replaced by `rec` (nullptr: removed, or
  // made ephemeral) at `revision`. The in-memory state is changed only after this succeeds.
  Status PersistLocked(std::string_view name, const FileRec* rec, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    SnapshotContents contents;
    contents.revision = revision;
    for (const auto& [n, r] : files_) {
      if (n == name || r.owner.valid()) continue;
      contents.files.push_back(
          SnapshotFile{n, r.value, r.version, r.create_revision, r.mod_revision});
    }
    if (rec != nullptr) {
      contents.files.push_back(SnapshotFile{std::string(name), rec->value, rec->version,
                                            rec->create_revision, rec->mod_revision});
      std::sort(contents.files.begin(), contents.files.end(),
                [](const SnapshotFile& a, const SnapshotFile& b) { return a.name < b.name; });
    }
    std::string data;
    EncodeSnapshot(contents, &data);
    FileSystem* fs = options_.fs;
    RETURN_IF_ERROR_CTX(WriteStringToFile(fs, temp_path_, data, /*sync=*/true),
                        StrCat("writing ", temp_path_));
    RETURN_IF_ERROR_CTX(fs->RenameFile(temp_path_, snapshot_path_),
                        StrCat("renaming ", temp_path_));
    RETURN_IF_ERROR_CTX(fs->SyncDir(options_.dir), StrCat("syncing ", options_.dir));
    return absl::OkStatus();
  }

  const EmbeddedLockServiceOptions options_;
  const std::string snapshot_path_;
  const std::string temp_path_;
  std::thread thread_;  // the background thread, if any

  absl::Mutex mu_;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // Every change with a revision above this is in history_.
  int64_t history_floor_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, FileRec, std::less<>> files_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, LockRec, std::less<>> locks_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, SessionRec> sessions_ ABSL_GUARDED_BY(mu_);
  int64_t next_session_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::shared_ptr<WatchCore>> watches_ ABSL_GUARDED_BY(mu_);
  int64_t next_watch_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<Change> history_ ABSL_GUARDED_BY(mu_);
  size_t history_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // names and values in history_
  std::deque<Delivery> pending_ ABSL_GUARDED_BY(mu_);
  // Whether some thread (drainer_) is running callbacks, and whose callback runs right now.
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id drainer_ ABSL_GUARDED_BY(mu_);
  const WatchCore* delivering_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::CondVar work_cv_;       // something was queued, or stop_
  absl::CondVar delivered_cv_;  // a callback returned
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

class EmbeddedWatch final : public Watch {
 public:
  // `impl` must outlive this watch.
  EmbeddedWatch(EmbeddedLockService::Impl* impl, std::shared_ptr<WatchCore> core)
      : impl_(impl), core_(std::move(core)) {}
  ~EmbeddedWatch() override { impl_->CancelWatch(core_); }

 private:
  EmbeddedLockService::Impl* const impl_;
  const std::shared_ptr<WatchCore> core_;
};

class EmbeddedSession final : public Session {
 public:
  // `impl` must outlive this session.
  EmbeddedSession(EmbeddedLockService::Impl* impl, SessionId id, int64_t ttl_ms)
      : impl_(impl), id_(id), ttl_ms_(ttl_ms) {}
  ~EmbeddedSession() override { impl_->Close(id_); }

  SessionId id() const override { return id_; }
  SessionState state() const override {
    return impl_->Alive(id_) ? SessionState::kAlive : SessionState::kExpired;
  }
  int64_t ttl_ms() const override { return ttl_ms_; }
  Status Close() override {
    impl_->Close(id_);
    return absl::OkStatus();
  }

  StatusOr<bool> TryAcquire(std::string_view lock, std::string_view value) override {
    return impl_->TryAcquire(id_, lock, value);
  }
  Status Acquire(std::string_view lock, std::string_view value, int64_t timeout_ms) override {
    return impl_->Acquire(id_, lock, value, timeout_ms);
  }
  Status Release(std::string_view lock) override { return impl_->Release(id_, lock); }
  StatusOr<LockHolder> GetLockHolder(std::string_view lock) override {
    return impl_->GetLockHolder(id_, lock);
  }

  StatusOr<FileInfo> Get(std::string_view name) override { return impl_->Get(id_, name); }
  StatusOr<FileInfo> Put(std::string_view name, std::string_view value,
                         const PutOptions& options) override {
    return impl_->Put(id_, name, value, options);
  }
  Status Delete(std::string_view name, std::optional<int64_t> expected_version) override {
    return impl_->Delete(id_, name, expected_version);
  }
  StatusOr<Listing> List(std::string_view prefix) override { return impl_->List(id_, prefix); }

  StatusOr<std::unique_ptr<Watch>> StartWatch(const WatchOptions& options,
                                              WatchCallback callback) override {
    ASSIGN_OR_RETURN(std::shared_ptr<WatchCore> core,
                     impl_->StartWatch(id_, options, std::move(callback)));
    return std::unique_ptr<Watch>(std::make_unique<EmbeddedWatch>(impl_, std::move(core)));
  }

  void StopKeepAliveForTesting() override { impl_->StopKeepAlive(id_); }

 private:
  EmbeddedLockService::Impl* const impl_;
  const SessionId id_;
  const int64_t ttl_ms_;
};

}  // namespace

StatusOr<std::unique_ptr<EmbeddedLockService>> EmbeddedLockService::Open(
    const EmbeddedLockServiceOptions& options) {
  if (options.fs == nullptr) return absl::InvalidArgumentError("embedded lock service: no fs");
  if (options.clock == nullptr) {
    return absl::InvalidArgumentError("embedded lock service: no clock");
  }
  if (options.dir.empty()) return absl::InvalidArgumentError("embedded lock service: no dir");
  if (options.background_thread && options.poll_interval_ms <= 0) {
    return absl::InvalidArgumentError(
        StrCat("embedded lock service: poll_interval_ms ", options.poll_interval_ms,
               " must be positive"));
  }
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR_CTX(impl->Load(), StrCat("opening lock service in ", options.dir));
  if (options.background_thread) impl->StartThread();
  return std::unique_ptr<EmbeddedLockService>(new EmbeddedLockService(std::move(impl)));
}

EmbeddedLockService::EmbeddedLockService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EmbeddedLockService::~EmbeddedLockService() = default;

StatusOr<std::unique_ptr<Session>> EmbeddedLockService::CreateSession(
    const SessionOptions& options) {
  RETURN_IF_ERROR(ValidateTtl(options.ttl_ms));
  const SessionId id = impl_->CreateSession(options);
  return std::unique_ptr<Session>(std::make_unique<EmbeddedSession>(impl_.get(), id,
                                                                    options.ttl_ms));
}

Status EmbeddedLockService::RevokeSession(SessionId id) { return impl_->Revoke(id); }

void EmbeddedLockService::Poll() { impl_->Poll(); }

int64_t EmbeddedLockService::revision() const { return impl_->revision(); }

}  // namespace tessera::coord
