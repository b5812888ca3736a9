#include "tessera/testing/node_lock_service.h"

#include <atomic>
#include <utility>

namespace tessera::testing {

// A session of the shared service, as the node sees it.
class NodeLockService::NodeSession final : public coord::Session {
 public:
  NodeSession(NodeLockService* owner, std::unique_ptr<coord::Session> inner,
              std::shared_ptr<std::atomic<bool>> abandoned)
      : owner_(owner), inner_(std::move(inner)), abandoned_(std::move(abandoned)) {}

  // An abandoned session is handed back to the owner, open; any other closes.
  ~NodeSession() override {
    owner_->Forget(this, abandoned_->load() ? std::move(inner_) : nullptr);
  }

  // The node's process is gone: the lease is no longer renewed, and the node never closes it.
  void Abandon() {
    abandoned_->store(true);
    inner_->StopKeepAliveForTesting();
  }

  coord::SessionId id() const override { return inner_->id(); }
  coord::SessionState state() const override { return inner_->state(); }
  int64_t ttl_ms() const override { return inner_->ttl_ms(); }
  Status Close() override { return abandoned_->load() ? Status() : inner_->Close(); }
  StatusOr<bool> TryAcquire(std::string_view lock, std::string_view value) override {
    return inner_->TryAcquire(lock, value);
  }
  Status Acquire(std::string_view lock, std::string_view value, int64_t timeout_ms) override {
    return inner_->Acquire(lock, value, timeout_ms);
  }
  Status Release(std::string_view lock) override { return inner_->Release(lock); }
  StatusOr<coord::LockHolder> GetLockHolder(std::string_view lock) override {
    return inner_->GetLockHolder(lock);
  }
  StatusOr<coord::FileInfo> Get(std::string_view name) override { return inner_->Get(name); }
  StatusOr<coord::FileInfo> Put(std::string_view name, std::string_view value,
                                const coord::PutOptions& options) override {
    return inner_->Put(name, value, options);
  }
  Status Delete(std::string_view name, std::optional<int64_t> expected_version) override {
    return inner_->Delete(name, expected_version);
  }
  StatusOr<coord::Listing> List(std::string_view prefix) override { return inner_->List(prefix); }
  StatusOr<std::unique_ptr<coord::Watch>> StartWatch(const coord::WatchOptions& options,
                                                     coord::WatchCallback callback) override {
    return inner_->StartWatch(options, std::move(callback));
  }
  void StopKeepAliveForTesting() override { inner_->StopKeepAliveForTesting(); }

 private:
  NodeLockService* const owner_;
  std::unique_ptr<coord::Session> inner_;
  const std::shared_ptr<std::atomic<bool>> abandoned_;
};

NodeLockService::~NodeLockService() {
  std::vector<std::unique_ptr<coord::Session>> abandoned;
  {
    absl::MutexLock l(&mu_);
    abandoned = std::move(abandoned_);
  }
  // Destroyed outside mu_: closing may run callbacks of the shared service.
  abandoned.clear();
}

StatusOr<std::unique_ptr<coord::Session>> NodeLockService::CreateSession(
    const coord::SessionOptions& options) {
  auto abandoned = std::make_shared<std::atomic<bool>>(false);
  coord::SessionOptions forwarded = options;
  if (options.on_state_change) {
    // A dead node hears nothing, its session's expiry included.
    forwarded.on_state_change = [abandoned,
                                 notify = options.on_state_change](coord::SessionState state) {
      if (!abandoned->load()) notify(state);
    };
  }
  ASSIGN_OR_RETURN(std::unique_ptr<coord::Session> inner, shared_->CreateSession(forwarded));
  auto session = std::make_unique<NodeSession>(this, std::move(inner), std::move(abandoned));
  absl::MutexLock l(&mu_);
  open_.insert(session.get());
  return session;
}

void NodeLockService::Abandon() {
  absl::MutexLock l(&mu_);
  for (NodeSession* session : open_) session->Abandon();
}

void NodeLockService::StopRenewing() {
  absl::MutexLock l(&mu_);
  for (NodeSession* session : open_) session->StopKeepAliveForTesting();
}

void NodeLockService::Forget(NodeSession* session, std::unique_ptr<coord::Session> keep) {
  absl::MutexLock l(&mu_);
  open_.erase(session);
  if (keep != nullptr) abandoned_.push_back(std::move(keep));
}

}  // namespace tessera::testing
