#include "tessera/coord/prefix_mirror.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "tessera/util/logging.h"

namespace tessera::coord {

namespace {

Status NotRunning() { return absl::FailedPreconditionError("the prefix mirror is not running"); }

}  // namespace

Status LockServiceCallError(std::string_view doing, const Status& status) {
  if (absl::IsInvalidArgument(status)) {
    return absl::InvalidArgumentError(tessera::StrCat(doing, ": ", status.message()));
  }
  return absl::UnavailableError(tessera::StrCat("lock service: ", doing, ": ", status.ToString()));
}

// --- Lifecycle ------------------------------------------------------------------------------

StatusOr<std::unique_ptr<PrefixMirror>> PrefixMirror::Create(MirrorListener* listener,
                                                             PrefixMirrorOptions options) {
  if (listener == nullptr) return absl::InvalidArgumentError("PrefixMirror needs a listener");
  if (!options.prefix.empty()) RETURN_IF_ERROR(ValidatePrefix(options.prefix));
  return std::unique_ptr<PrefixMirror>(new PrefixMirror(listener, std::move(options)));
}

PrefixMirror::~PrefixMirror() { Stop(); }

PrefixMirror::SessionUse::~SessionUse() {
  if (mirror_ != nullptr) mirror_->EndUse();
}

void PrefixMirror::EndUse() {
  absl::MutexLock lock(&mu_);
  --in_use_;
}

StatusOr<PrefixMirror::SessionUse> PrefixMirror::UseSession() {
  absl::MutexLock lock(&mu_);
  if (!running_ || expired_ || session_ == nullptr) return NotRunning();
  ++in_use_;
  return SessionUse(this, session_);
}

bool PrefixMirror::running() const {
  absl::MutexLock lock(&mu_);
  return running_ && !expired_;
}

PrefixMirrorStats PrefixMirror::GetStats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void PrefixMirror::CountFailure() {
  absl::MutexLock lock(&mu_);
  ++stats_.failures;
}

Status PrefixMirror::Start(Session* session) {
  if (session == nullptr) return absl::InvalidArgumentError("PrefixMirror::Start needs a session");
  absl::MutexLock start(&start_mu_);
  StopLocked();
  {
    absl::MutexLock lock(&mu_);
    session_ = session;
    expired_ = false;
  }
  {
    // Revisions from an earlier session (maybe another service) mean nothing now: the listing
    // below decides, and every file in it is delivered again.
    absl::MutexLock deliver(&deliver_mu_);
    for (auto it = view_.begin(); it != view_.end();) {
      if (!it->second.live) {
        it = view_.erase(it);
      } else {
        it->second.revision = 0;
        ++it;
      }
    }
    floor_ = 0;
    needs_resync_ = false;
  }
  StatusOr<int64_t> revision = SyncWith(session);
  std::unique_ptr<Watch> watch;
  if (revision.ok()) {
    WatchOptions options;
    options.key = options_.prefix;
    options.prefix = true;
    options.start_revision = *revision + 1;
    StatusOr<std::unique_ptr<Watch>> started = session->StartWatch(
        options, [this, session](const WatchEvent& event) { OnWatchEvent(session, event); });
    if (started.ok()) {
      watch = *std::move(started);
    } else {
      revision =
          LockServiceCallError(tessera::StrCat("watching ", options_.what), started.status());
    }
  }
  absl::MutexLock lock(&mu_);
  if (!revision.ok()) {
    session_ = nullptr;
    return revision.status();
  }
  watch_ = std::move(watch);
  running_ = true;
  TLOG_DEBUG("{}: watching '{}' from revision {}", options_.log_name, options_.prefix,
             *revision + 1);
  return Status();
}

void PrefixMirror::Stop() {
  absl::MutexLock start(&start_mu_);
  StopLocked();
}

void PrefixMirror::StopLocked() {
  std::unique_ptr<Watch> watch;
  {
    absl::MutexLock lock(&mu_);
    if (session_ == nullptr) return;
    running_ = false;
    watch = std::move(watch_);
  }
  watch.reset();  // the callback is not running once this returns
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* in_use) { return *in_use == 0; }, &in_use_));
  session_ = nullptr;
}

Status PrefixMirror::Resync() {
  ASSIGN_OR_RETURN(SessionUse use, UseSession());
  return SyncWith(use.get()).status();
}

// --- Listing --------------------------------------------------------------------------------

StatusOr<int64_t> PrefixMirror::SyncWith(Session* session) {
  StatusOr<Listing> listing = session->List(options_.prefix);
  if (!listing.ok()) {
    return LockServiceCallError(tessera::StrCat("listing ", options_.what), listing.status());
  }
  const int64_t revision = listing->revision;

  absl::MutexLock deliver(&deliver_mu_);
  Status first_error;
  uint64_t failures = 0;
  auto note = [&](const Status& s, std::string_view name) {
    if (s.ok()) return;
    TLOG_ERROR("{}: reconciling {}: {}", options_.log_name, name, s.ToString());
    ++failures;
    if (first_error.ok()) first_error = s;
  };
  std::set<std::string, std::less<>> listed;
  for (const FileInfo& file : listing->files) {
    note(DeliverPutLocked(file, MirrorCause::kListing), file.name);
    listed.insert(file.name);
  }
  // Files the view holds that the listing does not, unless the view's change is newer.
  std::vector<std::string> gone;
  for (const auto& [name, entry] : view_) {
    if (entry.live && entry.revision <= revision && !listed.contains(name)) gone.push_back(name);
  }
  for (const std::string& name : gone) {
    note(DeliverDeleteLocked(name, revision, MirrorCause::kListing), name);
  }
  std::set<std::string, std::less<>> live;
  for (const auto& [name, entry] : view_) {
    if (entry.live) live.insert(name);
  }
  note(listener_->OnSynced(revision, live), "the listing");
  // The listing covers every deletion up to its revision.
  std::erase_if(view_,
                [&](const auto& e) { return !e.second.live && e.second.revision <= revision; });
  floor_ = std::max(floor_, revision);
  needs_resync_ = !first_error.ok();
  {
    absl::MutexLock lock(&mu_);
    stats_.failures += failures;
    if (first_error.ok()) ++stats_.resyncs;
  }
  if (!first_error.ok()) return first_error;
  TLOG_DEBUG("{}: reconciled {} file(s) at revision {}", options_.log_name, listing->files.size(),
             revision);
  return revision;
}

// --- Delivering -----------------------------------------------------------------------------

Status PrefixMirror::DeliverPutLocked(const FileInfo& file, MirrorCause cause) {
  Entry& entry = view_[file.name];
  if (file.mod_revision <= entry.revision) return Status();
  RETURN_IF_ERROR(listener_->OnPut(file, cause));
  entry = Entry{file.mod_revision, true, file};
  return Status();
}

Status PrefixMirror::DeliverDeleteLocked(const std::string& name, int64_t revision,
                                         MirrorCause cause) {
  Entry& entry = view_[name];
  if (revision < entry.revision) return Status();
  if (!entry.live) {
    entry.revision = revision;  // nothing to delete; a stale put must not come back
    return Status();
  }
  RETURN_IF_ERROR(listener_->OnDelete(name, revision, cause));
  entry = Entry{revision, false, FileInfo{}};
  return Status();
}

Status PrefixMirror::DeliverLocalPut(const FileInfo& file) {
  absl::MutexLock deliver(&deliver_mu_);
  return DeliverPutLocked(file, MirrorCause::kLocal);
}

Status PrefixMirror::DeliverLocalDelete(const std::string& name, int64_t revision) {
  absl::MutexLock deliver(&deliver_mu_);
  return DeliverDeleteLocked(name, revision, MirrorCause::kLocal);
}

void PrefixMirror::OnWatchEvent(Session* session, const WatchEvent& event) {
  switch (event.type) {
    case WatchEventType::kSessionExpired: {
      {
        absl::MutexLock lock(&mu_);
        expired_ = true;
      }
      listener_->OnSessionExpired();
      return;
    }
    case WatchEventType::kReset: {
      TLOG_WARN("{}: watch reset at revision {}; reconciling", options_.log_name, event.revision);
      (void)SyncWith(session);  // logged and counted inside
      return;
    }
    case WatchEventType::kPut:
    case WatchEventType::kDelete:
      break;
  }
  if (event.name.compare(0, options_.prefix.size(), options_.prefix) != 0) return;
  bool resync_first = false;
  {
    absl::MutexLock deliver(&deliver_mu_);
    resync_first = needs_resync_;
  }
  if (resync_first && SyncWith(session).ok()) {
    TLOG_INFO("{}: caught up after an earlier failure", options_.log_name);
  }
  Status s = DeliverWatchEvent(session, event);
  if (!s.ok()) {
    TLOG_ERROR("{}: applying {} {} (revision {}) failed: {}", options_.log_name,
               WatchEventTypeName(event.type), event.name, event.revision, s.ToString());
    {
      absl::MutexLock deliver(&deliver_mu_);
      needs_resync_ = true;
    }
    CountFailure();
  }
}

Status PrefixMirror::DeliverWatchEvent(Session* session, const WatchEvent& event) {
  if (event.type == WatchEventType::kDelete) {
    absl::MutexLock deliver(&deliver_mu_);
    if (event.revision <= floor_) return Status();  // in the last listing
    return DeliverDeleteLocked(event.name, event.revision, MirrorCause::kWatch);
  }
  FileInfo file;
  file.name = event.name;
  file.value = event.value;
  file.version = event.version;
  file.mod_revision = event.revision;
  file.owner = event.owner;
  {
    absl::MutexLock deliver(&deliver_mu_);
    if (event.revision <= floor_) return Status();
    auto it = view_.find(event.name);
    if (it != view_.end() && event.revision <= it->second.revision) return Status();  // seen
    if (event.version == 1) {
      file.create_revision = event.revision;  // the put that created the file
      return DeliverPutLocked(file, MirrorCause::kWatch);
    }
    if (it != view_.end() && it->second.live) {
      // Changes come in order: no delete came between the put delivered and this one.
      file.create_revision = it->second.file.create_revision;
      return DeliverPutLocked(file, MirrorCause::kWatch);
    }
  }
  // This file's creation was not seen: ask (outside the delivery lock: a lock-service call).
  StatusOr<FileInfo> got = session->Get(event.name);
  absl::MutexLock deliver(&deliver_mu_);
  if (got.ok()) return DeliverPutLocked(*got, MirrorCause::kWatch);
  if (absl::IsNotFound(got.status())) {
    return DeliverDeleteLocked(event.name, event.revision, MirrorCause::kWatch);
  }
  return LockServiceCallError(tessera::StrCat("reading ", event.name), got.status());
}

}  // namespace tessera::coord
