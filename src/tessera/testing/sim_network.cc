#include "tessera/testing/sim_network.h"

#include <utility>

#include "tessera/util/status.h"

namespace tessera::testing {

Status ValidateNetworkOptions(const NetworkOptions& o) {
  if (!(o.loss >= 0 && o.loss <= 1) || o.latency_us < 0 || o.jitter_us < 0) {
    return absl::InvalidArgumentError(
        StrCat("need loss in [0, 1] and latency, jitter >= 0; got loss ", o.loss, ", latency_us ",
               o.latency_us, ", jitter_us ", o.jitter_us));
  }
  return Status();
}

class SimNetwork::SimTransport final : public Transport {
 public:
  SimTransport(SimNetwork* network, NodeId endpoint)
      : network_(network), endpoint_(std::move(endpoint)) {}
  ~SimTransport() override { network_->Detach(endpoint_, this); }

  void Send(const NodeId& to, std::string bytes) override {
    network_->Send(endpoint_, to, std::move(bytes));
  }
  bool Refuses(const NodeId& to) const override { return network_->Refuses(endpoint_, to); }
  void SetReceiver(Receiver receiver) override {
    absl::MutexLock l(&mu_);
    receiver_ = std::move(receiver);
    mu_.Await(absl::Condition(
        +[](int* delivering) { return *delivering == 0; }, &delivering_));
  }
  void Deliver(std::string_view bytes) {
    Receiver receiver;
    {
      absl::MutexLock l(&mu_);
      if (!receiver_) return;
      receiver = receiver_;
      ++delivering_;
    }
    receiver(bytes);
    receiver = nullptr;
    absl::MutexLock l(&mu_);
    --delivering_;
  }

 private:
  SimNetwork* const network_;
  const NodeId endpoint_;
  absl::Mutex mu_;
  Receiver receiver_ ABSL_GUARDED_BY(mu_);
  int delivering_ ABSL_GUARDED_BY(mu_) = 0;  // receiver calls running now
};

SimNetwork::SimNetwork(Executor* executor, Random random, NetworkOptions options)
    : executor_(executor), random_(std::move(random)), options_(options) {}

SimNetwork::~SimNetwork() = default;

StatusOr<std::unique_ptr<Transport>> SimNetwork::Attach(const NodeId& endpoint) {
  auto transport = std::make_unique<SimTransport>(this, endpoint);
  absl::MutexLock l(&mu_);
  if (!attached_.emplace(endpoint, transport.get()).second) {
    return absl::AlreadyExistsError(StrCat("network: ", endpoint, " is already attached"));
  }
  return std::unique_ptr<Transport>(std::move(transport));
}

void SimNetwork::Detach(const NodeId& endpoint, SimTransport* transport) {
  absl::MutexLock l(&mu_);
  auto it = attached_.find(endpoint);
  if (it != attached_.end() && it->second == transport) attached_.erase(it);
}

void SimNetwork::SetOptions(NetworkOptions options) {
  absl::MutexLock l(&mu_);
  options_ = options;
}

void SimNetwork::SetPartition(std::map<NodeId, int> side_of) {
  absl::MutexLock l(&mu_);
  side_of_ = std::move(side_of);
}

void SimNetwork::Heal() {
  absl::MutexLock l(&mu_);
  side_of_.clear();
}

void SimNetwork::SetDown(const NodeId& endpoint, bool down) {
  absl::MutexLock l(&mu_);
  down_[endpoint] = down;
}

bool SimNetwork::CanTalkLocked(const NodeId& from, const NodeId& to) const {
  auto side = [&](const NodeId& n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = side_of_.find(n);
    return it == side_of_.end() ? 0 : it->second;
  };
  auto is_down = [&](const NodeId& n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = down_.find(n);
    return it != down_.end() && it->second;
  };
  return side(from) == side(to) && !is_down(from) && !is_down(to);
}

void SimNetwork::Send(const NodeId& from, const NodeId& to, std::string bytes) {
  int64_t delay_us;
  {
    absl::MutexLock l(&mu_);
    ++sent_;
    if (!CanTalkLocked(from, to) ||
        (options_.loss > 0 &&
         static_cast<double>(random_.Next64() >> 11) * 0x1.0p-53 < options_.loss)) {
      ++lost_;
      return;
    }
    delay_us = options_.latency_us +
               static_cast<int64_t>(random_.Uniform(static_cast<uint64_t>(options_.jitter_us) + 1));
  }
  executor_->ScheduleAfter(
      delay_us, [this, from, to, bytes = std::move(bytes)] { Deliver(from, to, bytes); });
}

void SimNetwork::Deliver(const NodeId& from, const NodeId& to, const std::string& bytes) {
  SimTransport* transport = nullptr;
  {
    absl::MutexLock l(&mu_);
    auto it = attached_.find(to);
    if (it == attached_.end() || !CanTalkLocked(from, to)) {
      ++lost_;
      return;
    }
    transport = it->second;
    ++delivered_;
  }
  // A transport is destroyed only by its node's owner, never while a delivery task runs
  // (deliveries run on the executor, which the owner drives or has stopped).
  transport->Deliver(bytes);
}

bool SimNetwork::Refuses(const NodeId& from, const NodeId& to) const {
  absl::MutexLock l(&mu_);
  return CanTalkLocked(from, to) && !attached_.contains(to);
}

uint64_t SimNetwork::messages_sent() const {
  absl::MutexLock l(&mu_);
  return sent_;
}
uint64_t SimNetwork::messages_lost() const {
  absl::MutexLock l(&mu_);
  return lost_;
}
uint64_t SimNetwork::messages_delivered() const {
  absl::MutexLock l(&mu_);
  return delivered_;
}

}  // namespace tessera::testing
