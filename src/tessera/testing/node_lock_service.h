// NodeLockService: one simulated node's handle on the lock service its cluster shares
// (sim_cluster.h). Everything is forwarded to the shared service, except what a crash changes:
// Abandon() makes the node's open sessions behave as a dead process's do — they stop renewing
// their leases and are never closed by the node, so they expire when their TTL runs out (only
// then do the node's locks, such as the master lock, and its ephemeral files, such as its
// directory entry, go), and their callbacks no longer reach the node. A session destroyed after
// Abandon() is kept here, not closed, until this object is destroyed.
//
// Sessions created after Abandon() (by the restarted node) are ordinary again.
//
// Thread-safety: every method is safe to call from any thread. Must outlive every session it
// returns, and the shared service must outlive it.
#pragma once

#include <memory>
#include <set>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/coord/lock_service.h"

namespace tessera::testing {

class NodeLockService final : public coord::LockService {
 public:
  explicit NodeLockService(coord::LockService* shared) : shared_(shared) {}
  ~NodeLockService() override;  // closes the abandoned sessions that have not expired

  std::string_view backend_name() const override { return shared_->backend_name(); }
  StatusOr<std::unique_ptr<coord::Session>> CreateSession(
      const coord::SessionOptions& options) override;
  Status RevokeSession(coord::SessionId id) override { return shared_->RevokeSession(id); }

  // What a crash does to the sessions open now (see above).
  void Abandon();
  // What a pause longer than the TTL does: the open sessions stop renewing and expire when
  // their TTL runs out, but stay the node's (it hears of the expiry when it runs again).
  void StopRenewing();

 private:
  class NodeSession;
  void Forget(NodeSession* session, std::unique_ptr<coord::Session> keep);

  coord::LockService* const shared_;
  absl::Mutex mu_;
  std::set<NodeSession*> open_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<coord::Session>> abandoned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::testing
