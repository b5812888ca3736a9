#include "tessera/cluster/election.h"

#include "tessera/util/logging.h"
#include "tessera/util/status.h"

namespace tessera::cluster {

namespace {

std::map<std::string, std::string> DirectoryOf(const coord::Listing& listing) {
  std::map<std::string, std::string> out;
  for (const coord::FileInfo& f : listing.files) {
    out[f.name.substr(kDirectoryPrefix.size())] = f.value;
  }
  return out;
}

}  // namespace

void MasterElection::Reset(std::shared_ptr<coord::Session> session) {
  std::unique_ptr<coord::Watch> old_watch;
  std::shared_ptr<coord::Session> old_session;
  {
    absl::MutexLock lock(&mu_);
    old_watch = std::move(directory_watch_);
    old_session = std::move(session_);
    session_ = std::move(session);
    master_ = false;
    term_ = 0;
    directory_.clear();
  }
  // The watch goes before its session (a Watch may outlive its Session, but not the service).
  old_watch.reset();
}

void MasterElection::Demote() {
  absl::MutexLock lock(&mu_);
  master_ = false;
  term_ = 0;
}

bool MasterElection::Step() {
  std::shared_ptr<coord::Session> session;
  {
    absl::MutexLock lock(&mu_);
    if (master_) return true;
    if (session_ == nullptr || session_->state() != coord::SessionState::kAlive) return false;
    session = session_;
  }
  StatusOr<bool> acquired = session->TryAcquire(kMasterLock, endpoint_);
  if (!acquired.ok() || !*acquired) {
    if (!acquired.ok()) TLOG_DEBUG("election {}: master lock: {}", endpoint_, acquired.status());
    return false;
  }
  StatusOr<coord::LockHolder> holder = session->GetLockHolder(kMasterLock);
  StatusOr<coord::Listing> listing = session->List(kDirectoryPrefix);
  std::unique_ptr<coord::Watch> watch;
  if (holder.ok() && listing.ok()) {
    coord::WatchOptions wo;
    wo.key = std::string(kDirectoryPrefix);
    wo.prefix = true;
    wo.start_revision = listing->revision + 1;
    StatusOr<std::unique_ptr<coord::Watch>> started =
        session->StartWatch(wo, [this](const coord::WatchEvent& e) { OnDirectoryEvent(e); });
    if (started.ok()) watch = std::move(*started);
  }
  if (watch == nullptr) {
    TLOG_WARN(
        "election {}: won the master lock but cannot follow the directory ({}); giving "
        "it back",
        endpoint_,
        !holder.ok()    ? holder.status().ToString()
        : !listing.ok() ? listing.status().ToString()
                        : "watch failed");
    (void)session->Release(kMasterLock);
    return false;
  }
  const int64_t term = holder->revision;
  const size_t nodes = listing->files.size();
  {
    absl::MutexLock lock(&mu_);
    // Lost (Demote) or replaced (Reset) meanwhile: the lock went, or goes, with that session.
    if (session_ != session || session->state() != coord::SessionState::kAlive) return false;
    master_ = true;
    term_ = term;
    directory_ = DirectoryOf(*listing);
    directory_watch_ = std::move(watch);
  }
  if (on_master_) on_master_(term, nodes);
  return true;
}

void MasterElection::OnDirectoryEvent(const coord::WatchEvent& e) {
  const std::string endpoint = e.name.size() > kDirectoryPrefix.size()
                                   ? e.name.substr(kDirectoryPrefix.size())
                                   : std::string();
  switch (e.type) {
    case coord::WatchEventType::kPut: {
      bool is_new = false;
      {
        absl::MutexLock lock(&mu_);
        is_new = directory_.insert_or_assign(endpoint, e.value).second;
      }
      if (is_new) TLOG_INFO("master: node {} joined: {}", endpoint, e.value);
      break;
    }
    case coord::WatchEventType::kDelete: {
      size_t erased = 0;
      {
        absl::MutexLock lock(&mu_);
        erased = directory_.erase(endpoint);
      }
      if (erased > 0) {
        TLOG_WARN("master: node {} left the directory (its session ended)", endpoint);
      }
      break;
    }
    case coord::WatchEventType::kReset: {
      // Changes were lost: read the directory again. Runs on the backend's thread, which may
      // call the service (lock_service.h).
      std::shared_ptr<coord::Session> session;
      {
        absl::MutexLock lock(&mu_);
        session = session_;
      }
      if (session == nullptr) break;
      StatusOr<coord::Listing> listing = session->List(kDirectoryPrefix);
      if (!listing.ok()) break;
      absl::MutexLock lock(&mu_);
      directory_ = DirectoryOf(*listing);
      break;
    }
    case coord::WatchEventType::kSessionExpired:
      break;  // the session's own callback demotes
  }
}

bool MasterElection::is_master() const {
  absl::MutexLock lock(&mu_);
  return master_;
}

int64_t MasterElection::term() const {
  absl::MutexLock lock(&mu_);
  return term_;
}

std::map<std::string, std::string> MasterElection::directory() const {
  absl::MutexLock lock(&mu_);
  return directory_;
}

}  // namespace tessera::cluster
