// MasterElection: one node's part in electing the cluster's master through the lock service
// (Bigtable §5: the master holds a unique lock in Chubby and watches the servers directory).
//
// A step-driven state machine with no thread of its own, so the same logic runs in a
// ClusterNode (its coordinator thread calls Step() every poll interval and when the lock
// watch fires) and on simulated time in tests (election_test.cc drives many electors over one
// embedded lock service on a ManualClock, with crashes, from a seed).
//
//   Step(): if this node is not master and has a live session, TryAcquire(kMasterLock,
//   endpoint). On success it learns the directory (List of kDirectoryPrefix) and watches it
//   from the listing's revision + 1, so no join or death is missed; the term is the lock's
//   revision, which grows with every new master. If the directory cannot be followed, it gives
//   the lock back (a master that cannot see the servers cannot do its job) and tries again
//   on a later step.
//   Demote(): called the moment the session is known lost (its expiry callback); the elector
//   stops claiming mastership at once. It never holds the lock past its session, because the
//   lock service frees the lock with the session, no earlier than the holder learns of it.
//   Reset(session): a new session after re-registration (or nullptr at shutdown): forgets the
//   old term and directory and drops the old watch.
//
// Safety (checked by the simulation): at any instant at most one elector whose session is
// alive claims to be master. Liveness: once a master's session ends, a live elector takes
// over at its next Step().
//
// Thread-safety: every method is thread-safe. Step() and Reset() make lock-service calls and
// must not run inside a lock-service callback of the same session; Demote() may.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/coord/lock_service.h"

namespace tessera::cluster {

// Lock-service names the cluster uses (below the service's key root, which holds the cluster
// name).
inline constexpr std::string_view kDirectoryPrefix = "nodes/";
// The directory file of the node at `endpoint`.
inline std::string DirectoryName(std::string_view endpoint) {
  return std::string(kDirectoryPrefix).append(endpoint);
}
inline constexpr std::string_view kMasterLock = "master";

class MasterElection {
 public:
  // Called, without the elector's lock, when this node becomes master (with its term).
  using BecameMaster = std::function<void(int64_t term, size_t directory_size)>;

  explicit MasterElection(std::string endpoint, BecameMaster on_master = nullptr)
      : endpoint_(std::move(endpoint)), on_master_(std::move(on_master)) {}
  ~MasterElection() { Reset(nullptr); }

  MasterElection(const MasterElection&) = delete;
  MasterElection& operator=(const MasterElection&) = delete;

  // Uses `session` from now on (nullptr: none); not master until a Step() wins.
  void Reset(std::shared_ptr<coord::Session> session);
  // Stops claiming mastership now (the session is lost). Safe inside a session callback.
  void Demote();
  // One attempt to become master (see the top). Returns is_master() afterwards.
  bool Step();

  bool is_master() const;
  int64_t term() const;  // 0 unless master
  // The master's view of the directory: endpoint -> entry (empty unless master).
  std::map<std::string, std::string> directory() const;
  const std::string& endpoint() const { return endpoint_; }

 private:
  void OnDirectoryEvent(const coord::WatchEvent& event);

  const std::string endpoint_;
  const BecameMaster on_master_;
  mutable absl::Mutex mu_;
  std::shared_ptr<coord::Session> session_ ABSL_GUARDED_BY(mu_);
  bool master_ ABSL_GUARDED_BY(mu_) = false;
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> directory_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<coord::Watch> directory_watch_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::cluster
