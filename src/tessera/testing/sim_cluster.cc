#include "tessera/testing/sim_cluster.h"

#include <map>
#include <utility>

#include "tessera/replication/message_rpc_channel.h"
#include "tessera/util/env.h"
#include "tessera/util/random.h"

namespace tessera::testing {

namespace {

constexpr int64_t kMs = 1000;
// How often the shared lock service expires sessions and delivers its callbacks.
constexpr int64_t kLockServicePollUs = 10 * kMs;
// The simulation's time at the start: a plausible wall clock.
constexpr int64_t kStartMicros = 1'700'000'000'000'000;

// Sends to a node's replication endpoint: the protocol names nodes by their endpoint.
class ReplicaTransport final : public cluster::Transport {
 public:
  explicit ReplicaTransport(cluster::Transport* inner) : inner_(inner) {}
  void Send(const cluster::NodeId& to, std::string bytes) override {
    inner_->Send(to + "/replica", std::move(bytes));
  }
  bool Refuses(const cluster::NodeId& to) const override { return inner_->Refuses(to + "/replica"); }
  void SetReceiver(Receiver receiver) override { inner_->SetReceiver(std::move(receiver)); }

 private:
  cluster::Transport* const inner_;
};

}  // namespace

cluster::NodeOptions DefaultSimNodeOptions() {
  cluster::NodeOptions o;
  o.cluster_name = "sim";
  cluster::SetGossipInterval(&o.gossip, 100);
  o.session_ttl_ms = 2000;
  o.election_poll_ms = 100;
  o.reregister_backoff_ms = 100;
  o.join_timeout_ms = 5000;
  return o;
}

tablet::EngineOptions DefaultSimEngineOptions() {
  tablet::EngineOptions o;
  o.sync_mode = tablet::SyncMode::kBatch;
  o.memtable_bytes = 1ull << 30;
  o.memory_hard_limit_bytes = 2ull << 30;
  o.block_cache_bytes = 8ull << 20;
  return o;
}

SimCluster::SimCluster(SimClusterOptions options)
    : options_(std::move(options)),
      clock_(kStartMicros),
      sim_(&clock_),
      network_(&sim_, Env{.seed = options_.seed}.NewRandom("network"), options_.network),
      nodes_(options_.nodes) {
  for (Node& n : nodes_) {
    n.fs = std::make_unique<MemFileSystem>();
    n.clock = std::make_unique<DriftingClock>(&clock_);
    n.executor = std::make_unique<NodeExecutor>(&sim_, n.clock.get(), &clock_);
  }
}

SimCluster::~SimCluster() {
  // Sessions close before the service goes (the abandoned ones with their NodeLockService);
  // transports before the network.
  for (Node& n : nodes_) n.core.reset();
  for (Node& n : nodes_) {
    n.transport.reset();
    n.replica_transport.reset();
  }
  nodes_.clear();
}

std::string SimCluster::Endpoint(int node) { return StrCat("10.0.0.", node + 1, ":7000"); }

std::string SimCluster::ReplicaEndpoint(int node) { return Endpoint(node) + "/replica"; }

void SimCluster::SetDown(int node, bool down) {
  network_.SetDown(Endpoint(node), down);
  network_.SetDown(ReplicaEndpoint(node), down);
}

Status SimCluster::CheckIndex(int node) const {
  if (node < 0 || node >= size()) {
    return absl::OutOfRangeError(StrCat("no node ", node, " in a cluster of ", size()));
  }
  return Status();
}

server::NodeCore* SimCluster::core(int node) const {
  return CheckIndex(node).ok() ? nodes_[node].core.get() : nullptr;
}

bool SimCluster::serving(int node) const {
  server::NodeCore* c = core(node);
  return c != nullptr && c->CheckServing().ok();
}

MemFileSystem* SimCluster::fs(int node) const {
  return CheckIndex(node).ok() ? nodes_[node].fs.get() : nullptr;
}

void SimCluster::PollLockService() {
  lock_service_->Poll();
  sim_.ScheduleAfter(kLockServicePollUs, [this] { PollLockService(); });
}

Status SimCluster::Start() {
  if (lock_service_ != nullptr) return absl::FailedPreconditionError("already started");
  coord::EmbeddedLockServiceOptions lo;
  lo.fs = &lock_fs_;
  lo.clock = &clock_;
  lo.dir = "/coord";
  lo.background_thread = false;  // PollLockService, a task of the simulation
  ASSIGN_OR_RETURN(lock_service_, coord::EmbeddedLockService::Open(lo));
  sim_.Schedule([this] { PollLockService(); });
  for (Node& n : nodes_) n.lock_service = std::make_unique<NodeLockService>(lock_service_.get());
  std::vector<int> all;
  for (int i = 0; i < size(); ++i) {
    if (Status s = Open(i); !s.ok()) return Status(s.code(), StrCat("node ", i, ": ", s.message()));
    all.push_back(i);
  }
  return AwaitStarted(all);
}

Status SimCluster::Open(int i) {
  Node& n = nodes_[i];
  server::NodeCoreOptions o;
  o.engine = options_.engine;
  o.engine.dir = StrCat("/node", i);
  o.cluster.node = options_.node;
  o.cluster.replica = options_.replica;
  o.cluster.node.endpoint = Endpoint(i);
  o.cluster.node.seeds = {Endpoint(0)};
  // The agreement wait would block the simulation's one thread, where the answers arrive.
  o.cluster.schema_agreement_timeout_us = 0;
  if (static_cast<size_t>(i) < options_.places.size()) {
    o.cluster.node.dc = options_.places[i].first;
    o.cluster.node.rack = options_.places[i].second;
  }
  // Each node draws its own numbers, all from the one seed.
  const uint64_t node_seed = Env{.seed = options_.seed}.NewRandom(StrCat("node", i)).Next64();
  server::NodeCoreEnv env{.env = Env{.fs = n.fs.get(),
                                     .clock = n.clock.get(),
                                     .executor = n.executor.get(),
                                     .seed = node_seed},
                          .engine_executor = n.executor.get(),
                          .shared_lock_service = n.lock_service.get()};
  if (options_.replicated) {
    if (n.replica_transport == nullptr) {
      ASSIGN_OR_RETURN(n.replica_transport, network_.Attach(ReplicaEndpoint(i)));
    }
    cluster::Transport* raw = n.replica_transport.get();
    Executor* executor = n.executor.get();
    Clock* clock = n.clock.get();
    env.replica_channel = [raw, executor, clock](const std::string& self)
        -> StatusOr<std::unique_ptr<replication::RpcChannel>> {
      auto mapped = std::make_shared<ReplicaTransport>(raw);
      // The channel keeps the adapter alive through a holder it owns.
      struct Owned final : replication::RpcChannel {
        Owned(std::shared_ptr<ReplicaTransport> t, std::string self, Executor* e, Clock* c)
            : transport(std::move(t)), channel(std::move(self), transport.get(), e, c) {}
        const std::string& self() const override { return channel.self(); }
        void Call(const std::string& to, std::string_view method, std::string request,
                  int64_t timeout_us, Done done) override {
          channel.Call(to, method, std::move(request), timeout_us, std::move(done));
        }
        void SetHandler(Handler handler) override { channel.SetHandler(std::move(handler)); }
        std::shared_ptr<ReplicaTransport> transport;
        replication::MessageRpcChannel channel;
      };
      return std::unique_ptr<replication::RpcChannel>(
          std::make_unique<Owned>(std::move(mapped), self, executor, clock));
    };
  }
  ASSIGN_OR_RETURN(n.core, server::NodeCore::Open(o, env));
  if (n.transport == nullptr) {
    ASSIGN_OR_RETURN(n.transport, network_.Attach(Endpoint(i)));
  }
  n.started.reset();
  return n.core->BeginNode(Endpoint(i), n.transport.get(),
                           [this, i](Status s) { nodes_[i].started = std::move(s); });
}

Status SimCluster::AwaitStarted(const std::vector<int>& which) {
  auto all_started = [&] {
    for (int i : which) {
      if (!nodes_[i].started.has_value()) return false;
    }
    return true;
  };
  RunUntil(all_started, options_.start_limit_us);
  std::string missing;
  for (int i : which) {
    const std::optional<Status>& s = nodes_[i].started;
    if (!s.has_value()) {
      missing += StrCat(missing.empty() ? "" : ", ", i);
    } else if (!s->ok()) {
      return Status(s->code(), StrCat("node ", i, ": ", s->message()));
    }
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(StrCat("nodes [", missing, "] did not start within ",
                                              options_.start_limit_us / kMs, " ms"));
  }
  return Status();
}

void SimCluster::RunFor(int64_t micros) { sim_.RunFor(micros); }

void SimCluster::Schedule(int64_t delay_us, std::function<void()> task) {
  sim_.ScheduleAfter(delay_us, std::move(task));
}

bool SimCluster::RunUntil(const std::function<bool()>& done, int64_t limit_us) {
  const int64_t deadline = clock_.MonotonicMicros() + limit_us;
  while (!done()) {
    std::optional<int64_t> next = sim_.NextDueMicros();
    if (!next.has_value() || *next > deadline) {
      sim_.RunUntil(deadline);
      return done();
    }
    sim_.RunNext();
  }
  return true;
}

Status SimCluster::Crash(int i) {
  RETURN_IF_ERROR(CheckIndex(i));
  Node& n = nodes_[i];
  if (n.core == nullptr) return absl::FailedPreconditionError(StrCat("node ", i, " is down"));
  SetDown(i, true);  // its goodbye never leaves
  n.fs->SimulateCrash();
  n.lock_service->Abandon();  // its sessions now run out on their own
  // What the closing core writes lands in files the crash has cut loose: nothing of it stays.
  n.core.reset();
  n.executor->DropAll();
  n.transport.reset();
  n.replica_transport.reset();
  SetDown(i, false);
  return Status();
}

Status SimCluster::Restart(int i) {
  RETURN_IF_ERROR(CheckIndex(i));
  if (nodes_[i].core != nullptr) {
    return absl::FailedPreconditionError(StrCat("node ", i, " is up"));
  }
  if (Status s = Open(i); !s.ok()) return Status(s.code(), StrCat("node ", i, ": ", s.message()));
  return AwaitStarted({i});
}

Status SimCluster::Pause(int i, int64_t micros) {
  RETURN_IF_ERROR(CheckIndex(i));
  Node& n = nodes_[i];
  if (n.core == nullptr) return absl::FailedPreconditionError(StrCat("node ", i, " is down"));
  n.executor->Hold(clock_.MonotonicMicros() + micros);
  if (micros >= options_.node.session_ttl_ms * kMs) n.lock_service->StopRenewing();
  SetDown(i, true);
  sim_.ScheduleAfter(micros, [this, i] { SetDown(i, false); });
  return Status();
}

void SimCluster::Partition(const std::vector<std::vector<int>>& groups) {
  std::map<cluster::NodeId, int> side_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int i : groups[g]) {
      side_of[Endpoint(i)] = static_cast<int>(g) + 1;
      side_of[ReplicaEndpoint(i)] = static_cast<int>(g) + 1;
    }
  }
  network_.SetPartition(std::move(side_of));
}

void SimCluster::Heal() { network_.Heal(); }

void SimCluster::SetLoss(double loss) {
  NetworkOptions o = options_.network;
  o.loss = loss;
  network_.SetOptions(o);
}

void SimCluster::SetClockDrift(int i, int64_t offset_us, double rate) {
  if (CheckIndex(i).ok()) nodes_[i].clock->SetDrift(offset_us, rate);
}

}  // namespace tessera::testing
