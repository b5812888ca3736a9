#include "tessera/cluster/node.h"

#include <algorithm>

#include "absl/synchronization/notification.h"

#include "absl/strings/numbers.h"
#include "nlohmann/json.hpp"
#include "tessera/util/logging.h"

namespace tessera::cluster {

namespace {

constexpr std::string_view kGenerationFile = "gossip_generation";
// The persistent file in the lock service that names the cluster's state there.
constexpr std::string_view kClusterIdFile = "cluster_id";

// The directory entry's value: what an operator or the master needs to know about a node.
std::string DirectoryEntry(const NodeOptions& o, int64_t generation) {
  nlohmann::json j = {{"endpoint", o.endpoint},
                      {"dc", o.dc},
                      {"rack", o.rack},
                      {"cluster", o.cluster_name},
                      {"generation", generation}};
  return j.dump();
}

}  // namespace

StatusOr<int64_t> NextGeneration(FileSystem* fs, const std::string& data_dir, Clock* clock) {
  const std::string path = JoinPath(data_dir, kGenerationFile);
  int64_t last = 0;
  if (fs->FileExists(path)) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(fs, path));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (!absl::SimpleAtoi(text, &last) || last < 0) {
      return absl::DataLossError(
          tessera::StrCat(path, " does not hold a generation number: \"", text, "\""));
    }
  }
  const int64_t generation = std::max(clock->NowMicros() / 1'000'000, last + 1);
  const std::string tmp = path + ".tmp";
  RETURN_IF_ERROR(WriteStringToFile(fs, tmp, tessera::StrCat(generation, "\n"), /*sync=*/true));
  RETURN_IF_ERROR(fs->RenameFile(tmp, path));
  RETURN_IF_ERROR(fs->SyncDir(data_dir));
  return generation;
}

ClusterNode::ClusterNode(NodeOptions options, coord::LockService* lock_service,
                         Transport* transport, NodeHooks hooks, const Env& env, int64_t generation)
    : options_(std::move(options)),
      lock_service_(lock_service),
      transport_(transport),
      hooks_(std::move(hooks)),
      env_(env),
      clock_(env.clock),
      generation_(generation),
      random_(env.NewRandom(tessera::StrCat("node ", options_.endpoint))),
      election_(options_.endpoint, [this](int64_t term, size_t nodes) {
        gossiper_->SetApplicationState(kMasterKey, tessera::StrCat(term));
        TLOG_INFO("cluster: {} is master (term {}); the directory lists {} nodes",
                  options_.endpoint, term, nodes);
      }) {}

StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Start(NodeOptions options,
                                                          coord::LockService* lock_service,
                                                          Transport* transport, NodeHooks hooks,
                                                          const Env& env) {
  absl::Notification done;
  Status started;
  ASSIGN_OR_RETURN(
      std::unique_ptr<ClusterNode> node,
      Begin(std::move(options), lock_service, transport, std::move(hooks), env, [&](Status s) {
        started = std::move(s);
        done.Notify();
      }));
  done.WaitForNotification();  // bounded: the join step gives up after join_timeout_ms
  if (!started.ok()) {
    node->Stop();
    return started;
  }
  return node;
}

StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Begin(NodeOptions options,
                                                          coord::LockService* lock_service,
                                                          Transport* transport, NodeHooks hooks,
                                                          const Env& env,
                                                          std::function<void(Status)> on_started) {
  if (options.endpoint.empty()) return absl::InvalidArgumentError("node endpoint must be set");
  if (options.data_dir.empty()) return absl::InvalidArgumentError("node data_dir must be set");
  if (options.cluster_name.empty()) {
    return absl::InvalidArgumentError("cluster name must not be empty");
  }
  if (options.session_ttl_ms <= 0 || options.join_timeout_ms < 0 || options.election_poll_ms <= 0 ||
      options.reregister_backoff_ms <= 0 || options.load_interval_ms <= 0) {
    return absl::InvalidArgumentError("node timing options must be positive");
  }
  if (env.fs == nullptr || env.clock == nullptr || env.executor == nullptr) {
    return absl::InvalidArgumentError("node env needs a file system, a clock and an executor");
  }
  options.gossip.cluster_name = options.cluster_name;
  options.gossip.self = options.endpoint;
  options.gossip.seeds = options.seeds;
  RETURN_IF_ERROR(ValidateGossipOptions(options.gossip));
  ASSIGN_OR_RETURN(int64_t generation, NextGeneration(env.fs, options.data_dir, env.clock));

  std::unique_ptr<ClusterNode> node(new ClusterNode(std::move(options), lock_service, transport,
                                                    std::move(hooks), env, generation));
  const NodeOptions& o = node->options_;
  ASSIGN_OR_RETURN(node->gossiper_,
                   Gossiper::Create(o.gossip, generation, env.clock, &node->random_, transport));
  ASSIGN_OR_RETURN(const std::string cluster_id, node->ReadClusterId());
  node->gossiper_->SetApplicationState(kClusterIdKey, cluster_id);
  node->gossiper_->SetApplicationState(
      kLockServiceKey, o.lock_service_address.empty() ? std::string(lock_service->backend_name())
                                                      : o.lock_service_address);
  node->gossiper_->SetApplicationState(kDcKey, o.dc);
  node->gossiper_->SetApplicationState(kRackKey, o.rack);
  node->gossiper_->SetApplicationState(kStatusKey, kStatusJoining);
  if (o.load) node->gossiper_->SetApplicationState(kLoadKey, tessera::StrCat(o.load()));
  node->gossiper_->Start();
  TLOG_INFO("cluster: node {} (cluster '{}', {}/{}, generation {}) starting with seeds [{}]",
            o.endpoint, o.cluster_name, o.dc, o.rack, generation, fmt::join(o.seeds, ", "));
  {
    absl::MutexLock lock(&node->mu_);
    const int64_t now = node->clock_->MonotonicMicros();
    node->on_started_ = std::move(on_started);
    node->join_deadline_us_ = now + o.join_timeout_ms * 1000;
    node->next_round_us_ = now;
    node->next_load_us_ = now + o.load_interval_ms * 1000;
    node->ScheduleLocked(Loop::kGossip, 0);
    node->ScheduleLocked(Loop::kJoin, 0);
  }
  return node;
}

ClusterNode::~ClusterNode() { Stop(); }
StatusOr<std::string> ClusterNode::ReadClusterId() {
  coord::SessionOptions so;
  so.ttl_ms = options_.session_ttl_ms;
  StatusOr<std::unique_ptr<coord::Session>> session = lock_service_->CreateSession(so);
  if (!session.ok()) {
    return absl::Status(session.status().code(), tessera::StrCat("cannot reach the lock service: ",
                                                                 session.status().message()));
  }
  coord::PutOptions create;
  create.expected_version = 0;  // only the first node of a cluster creates it
  const std::string fresh = fmt::format("{:016x}", random_.Next64());
  StatusOr<coord::FileInfo> put = (*session)->Put(kClusterIdFile, fresh, create);
  std::string id;
  if (put.ok()) {
    id = fresh;
    TLOG_INFO("cluster: {} created cluster id {} in the {} lock service", options_.endpoint, id,
              lock_service_->backend_name());
  } else if (absl::IsAborted(put.status())) {
    ASSIGN_OR_RETURN(coord::FileInfo existing, (*session)->Get(kClusterIdFile));
    id = existing.value;
  } else {
    return put.status();
  }
  (*session)->Close().IgnoreError();
  return id;
}

Status ClusterNode::JoinCheck() {
  const bool seed_of_itself = std::find(options_.seeds.begin(), options_.seeds.end(),
                                        options_.endpoint) != options_.seeds.end();
  std::vector<NodeId> others;
  for (const NodeId& s : options_.seeds) {
    if (s != options_.endpoint) others.push_back(s);
  }
  if (others.empty() || seed_of_itself) return Status();
  int64_t deadline;
  {
    absl::MutexLock lock(&mu_);
    deadline = join_deadline_us_;
  }
  {
    // A seed that uses another lock service (or only such nodes heard from): no waiting will
    // help, and the operator must be told what to pass. A stray node of another lock service
    // elsewhere in the cluster's gossip is refused but must not keep every joiner out.
    std::map<NodeId, Gossiper::ClusterIdRefusal> mismatched = gossiper_->ClusterIdRefusals();
    auto refused = mismatched.end();
    for (const NodeId& s : others) {
      if (auto it = mismatched.find(s); it != mismatched.end()) refused = it;
    }
    if (refused == mismatched.end() && !mismatched.empty() && gossiper_->KnownEndpoints() == 1) {
      refused = mismatched.begin();
    }
    if (refused != mismatched.end()) {
      const Gossiper::ClusterIdRefusal& r = refused->second;
      return absl::FailedPreconditionError(tessera::StrCat(
          "cannot join cluster '", options_.cluster_name, "': ", r.why,
          ". Every node of a cluster must name the same lock service: start this node with "
          "--lock-service ",
          r.lock_service));
    }
    // Hearing from anyone of our cluster is enough: the rest follows through gossip.
    if (gossiper_->KnownEndpoints() > 1) {
      TLOG_INFO("cluster: {} joined; it knows {} nodes", options_.endpoint,
                gossiper_->KnownEndpoints());
      return Status();
    }
    std::map<NodeId, std::string> refusals = transport_->Refusals();
    bool all_refused = true;
    for (const NodeId& s : others) all_refused = all_refused && refusals.count(s) > 0;
    if (all_refused) {
      std::string why;
      for (const NodeId& s : others) why += tessera::StrCat("; ", s, ": ", refusals[s]);
      return absl::FailedPreconditionError(
          tessera::StrCat("cannot join: every seed refused this node of cluster '",
                          options_.cluster_name, "'", why));
    }
    if (clock_->MonotonicMicros() >= deadline) {
      std::string why;
      for (const auto& [peer, message] : refusals) {
        why += tessera::StrCat("; ", peer, " refused: ", message);
      }
      return absl::UnavailableError(
          tessera::StrCat("cannot join: no seed of [", fmt::format("{}", fmt::join(others, ", ")),
                          "] answered within ", options_.join_timeout_ms,
                          " ms (are they up, and in cluster '", options_.cluster_name, "'?)", why));
    }
    return absl::UnavailableError("");  // not yet
  }
}

Status ClusterNode::Register() {
  coord::SessionOptions so;
  so.ttl_ms = options_.session_ttl_ms;
  so.on_state_change = [this](coord::SessionState state) {
    if (state != coord::SessionState::kExpired) return;
    {
      absl::MutexLock lock(&mu_);
      session_lost_ = true;
      serving_ = false;  // stop serving at once, before anything else happens
      if (outage_start_us_ == 0) {
        outage_start_us_ = clock_->MonotonicMicros();
        outage_failures_ = 0;
        outage_error_ = Status();
      }
    }
    election_.Demote();
    TLOG_ERROR(
        "cluster: {} lost its lock-service session; it stops serving until it registers "
        "again (the end of the outage will be logged)",
        options_.endpoint);
    Wake();
  };
  ASSIGN_OR_RETURN(std::unique_ptr<coord::Session> created, lock_service_->CreateSession(so));
  std::shared_ptr<coord::Session> session = std::move(created);
  coord::PutOptions put;
  put.ephemeral = true;
  RETURN_IF_ERROR(
      session->Put(DirectoryName(options_.endpoint), DirectoryEntry(options_, generation_), put)
          .status());
  // A watch on the master lock wakes the coordinator the moment the master goes.
  coord::WatchOptions wo;
  wo.target = coord::WatchTarget::kLocks;
  wo.key = std::string(kMasterLock);
  ASSIGN_OR_RETURN(std::unique_ptr<coord::Watch> watch,
                   session->StartWatch(wo, [this](const coord::WatchEvent& e) {
                     if (e.type != coord::WatchEventType::kPut) Wake();
                   }));
  // The hook is the last step that can fail, so nothing it attached outlives a failed attempt.
  if (hooks_.on_registered) RETURN_IF_ERROR(hooks_.on_registered(session.get()));
  int registrations = 0;
  int64_t outage_us = 0;
  int outage_failures = 0;
  {
    absl::MutexLock lock(&mu_);
    session_ = session;
    master_watch_ = std::move(watch);
    session_lost_ = session->state() == coord::SessionState::kExpired;
    serving_ = !session_lost_;
    registrations = ++registrations_;
    if (serving_ && outage_start_us_ != 0) {
      outage_us = clock_->MonotonicMicros() - outage_start_us_;
      outage_failures = outage_failures_;
      outage_start_us_ = 0;
    }
  }
  if (outage_us > 0) {
    // As loud as the start of the outage, which it closes.
    TLOG_WARN(
        "cluster: {} serves again: the lock-service outage lasted {:.1f} s ({} failed "
        "attempts to register)",
        options_.endpoint, outage_us / 1e6, outage_failures);
  }
  gossiper_->SetApplicationState(kStatusKey, kStatusNormal);
  TLOG_INFO("cluster: {} registered with the {} lock service (session {}, TTL {} ms{})",
            options_.endpoint, lock_service_->backend_name(), session->id().value,
            session->ttl_ms(), registrations > 1 ? ", again after a session loss" : "");
  election_.Reset(session);
  election_.Step();
  return Status();
}

void ClusterNode::DropSession() {
  std::shared_ptr<coord::Session> session;
  std::unique_ptr<coord::Watch> master_watch;
  {
    absl::MutexLock lock(&mu_);
    serving_ = false;
    session = std::move(session_);
    master_watch = std::move(master_watch_);
  }
  election_.Reset(nullptr);
  if (session == nullptr) return;
  if (hooks_.on_session_lost) hooks_.on_session_lost();
  master_watch.reset();
  Status closed = session->Close();
  if (!closed.ok() && session->state() == coord::SessionState::kAlive) {
    TLOG_WARN("cluster: closing the session: {}", closed);
  }
}

Status ClusterNode::CheckServing() const {
  // The hot path (every data request) takes no lock.
  if (serving_.load(std::memory_order_acquire)) return Status();
  absl::MutexLock lock(&mu_);
  std::string why;
  if (fatal_) {
    why = " and is exiting";
  } else if (stopping_) {
    why = " (stopping)";
  } else if (outage_start_us_ == 0) {
    why = " (registering)";
  } else {
    const double lost_s = (clock_->MonotonicMicros() - outage_start_us_) / 1e6;
    const std::string lock_service = options_.lock_service_address.empty()
                                         ? std::string(lock_service_->backend_name())
                                         : options_.lock_service_address;
    if (outage_error_.ok()) {
      why = fmt::format(
          ": it lost its session {:.1f} s ago and is registering again (no answer from the lock "
          "service yet)",
          lost_s);
    } else if (absl::IsUnavailable(outage_error_) || absl::IsDeadlineExceeded(outage_error_)) {
      why = fmt::format(
          ": it lost its session {:.1f} s ago and the lock service ({}) is unreachable or has "
          "no quorum: {}",
          lost_s, lock_service, outage_error_.message());
    } else {
      why = fmt::format(": it lost its session {:.1f} s ago and cannot register again: {}", lost_s,
                        outage_error_.ToString());
    }
  }
  return absl::UnavailableError(tessera::StrCat(
      "node ", options_.endpoint, " is not serving: it has no lock-service session", why));
}

bool ClusterNode::serving() const { return serving_.load(std::memory_order_acquire); }

bool ClusterNode::is_master() const { return election_.is_master(); }

coord::SessionId ClusterNode::session_id() const {
  absl::MutexLock lock(&mu_);
  return session_ != nullptr ? session_->id() : coord::SessionId{};
}

int ClusterNode::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

}  // namespace tessera::cluster
