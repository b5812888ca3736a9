#include "tessera/coord/etcd_lock_service.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcdserverpb/rpc.grpc.pb.h"
#include "tessera/rpc/client.h"
#include "tessera/util/logging.h"

namespace tessera::coord {

namespace pb = ::etcdserverpb;

namespace {

// Keys in one List page.
constexpr int64_t kListPageSize = 1000;
// Reconnect backoff of a broken watch stream.
constexpr int64_t kWatchBackoffMinMs = 50;
constexpr int64_t kWatchBackoffMaxMs = 1000;

// The smallest key above every key that starts with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    const auto c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd: "every key >= key"
}

bool IsLeaseNotFound(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::NOT_FOUND &&
         s.error_message().find("lease not found") != std::string::npos;
}

// Maps a gRPC failure of etcd call `what` to our codes: anything that a retry against a
// reachable etcd could fix is Unavailable.
Status FromGrpc(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string message = StrCat("etcd ", what, ": ", s.error_message());
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::PermissionDeniedError(message);
    case grpc::StatusCode::OUT_OF_RANGE:
      return absl::OutOfRangeError(message);
    default:
      return absl::UnavailableError(message);
  }
}

Status SessionGone(SessionId id) {
  return absl::FailedPreconditionError(
      StrCat("lock-service session ", id.value, " (etcd lease) has expired or was closed"));
}

std::chrono::system_clock::time_point DeadlineIn(int64_t micros) {
  return std::chrono::system_clock::now() + std::chrono::microseconds(std::max<int64_t>(0, micros));
}

// The IPv4 address `host` names: itself when it is one, else the first A record (resolved once,
// here: a member list is fixed at start).
StatusOr<std::string> ResolveIpv4(const std::string& host) {
  in_addr addr{};
  if (inet_pton(AF_INET, host.c_str(), &addr) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return absl::InvalidArgumentError(StrCat(
        "etcd member host '", host,
        "' does not resolve to an IPv4 address: ", rc != 0 ? gai_strerror(rc) : "no address"));
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return std::string(text);
}

// The gRPC target for etcd's client URL(s): "HOST:PORT" for one member, "ipv4:A:P,B:Q" for
// several (gRPC's pick_first then fails over between them in order; names are resolved to
// IPv4 addresses once, here, since gRPC's ipv4: scheme takes addresses only).
StatusOr<std::string> GrpcTarget(std::string_view endpoints) {
  std::vector<std::string> members;
  size_t start = 0;
  while (start <= endpoints.size()) {
    size_t comma = endpoints.find(',', start);
    if (comma == std::string_view::npos) comma = endpoints.size();
    std::string_view e = endpoints.substr(start, comma - start);
    start = comma + 1;
    if (e.starts_with("https://")) {
      return absl::InvalidArgumentError(
          StrCat("etcd endpoint '", e,
                 "': name it without https://; TLS comes from --etcd-tls-ca (docs/security.md)"));
    }
    if (e.starts_with("http://")) e.remove_prefix(7);
    while (e.ends_with("/")) e.remove_suffix(1);
    const size_t colon = e.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == e.size()) {
      return absl::InvalidArgumentError(StrCat("etcd endpoint '", e, "' is not HOST:PORT"));
    }
    members.emplace_back(e);
  }
  if (members.size() == 1) return members[0];
  std::string target = "ipv4:";
  for (size_t i = 0; i < members.size(); ++i) {
    const size_t colon = members[i].rfind(':');
    ASSIGN_OR_RETURN(const std::string ip, ResolveIpv4(members[i].substr(0, colon)));
    target += StrCat(i == 0 ? "" : ",", ip, members[i].substr(colon));
  }
  return target;
}

}  // namespace

// The channel, stubs and key layout shared by the service, its sessions and its watches.
class EtcdLockService::Client {
 public:
  Client(const EtcdLockServiceOptions& options, std::shared_ptr<grpc::Channel> channel)
      : options_(options),
        files_root_(StrCat(options.key_root, "f/")),
        locks_root_(StrCat(options.key_root, "l/")),
        loop_(options.loop != nullptr
                  ? std::shared_ptr<rpc::Loop>(options.loop, [](rpc::Loop*) {})
                  : std::shared_ptr<rpc::Loop>(rpc::Loop::ClientOnly(1))),
        channel_(std::move(channel)),
        kv_(pb::KV::NewStub(channel_)),
        lease_(pb::Lease::NewStub(channel_)),
        watch_(std::make_unique<grpc::GenericStub>(channel_)) {}

  const EtcdLockServiceOptions& options() const { return options_; }
  int64_t NowMicros() const { return options_.clock->MonotonicMicros(); }
  pb::KV::Stub* kv() { return kv_.get(); }
  pb::Lease::Stub* lease() { return lease_.get(); }
  // Watch streams run on the loop (rpc/client.h).
  grpc::GenericStub* watch() { return watch_.get(); }
  const std::shared_ptr<rpc::Loop>& loop() const { return loop_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  const std::string& Root(WatchTarget target) const {
    return target == WatchTarget::kFiles ? files_root_ : locks_root_;
  }
  std::string FileKey(std::string_view name) const { return StrCat(files_root_, name); }
  std::string LockKey(std::string_view name) const { return StrCat(locks_root_, name); }

  void SetRpcDeadline(grpc::ClientContext* ctx) const {
    ctx->set_deadline(DeadlineIn(options_.rpc_timeout_ms * 1000));
  }

 private:
  const EtcdLockServiceOptions options_;
  const std::string files_root_;
  const std::string locks_root_;
  // The options' loop, or one of the service's own (a tool, a test), which lives until the
  // last watch thread is done with it.
  const std::shared_ptr<rpc::Loop> loop_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<pb::KV::Stub> kv_;
  const std::unique_ptr<pb::Lease::Stub> lease_;
  const std::unique_ptr<grpc::GenericStub> watch_;
};

namespace {

using Client = EtcdLockService::Client;

FileInfo ToFileInfo(std::string_view name, const mvccpb::KeyValue& kv) {
  FileInfo info;
  info.name = std::string(name);
  info.value = kv.value();
  info.version = kv.version();
  info.create_revision = kv.create_revision();
  info.mod_revision = kv.mod_revision();
  info.owner = SessionId{kv.lease()};
  return info;
}

// One etcd Watch stream on the gRPC loop (rpc/client.h), read by a thread of ours that blocks
// on the stream's own mutex. A thread blocked in a synchronous Read would wait inside gRPC's
// polling, which on Linux (the epoll1 engine) is shared by every connection of the process: it
// is woken to do the I/O of calls that are not its own and hand them over, one more thread
// switch per message between nodes (measured: about 40 % of a loaded node's wake-ups,
// docs/bench.md).
//
// Thread-safe. The reactor deletes itself when gRPC is done with the stream; what the reader
// needs after that lives in the shared State. The ClientContext must outlive Finish().
class WatchStream {
 public:
  // Opens the stream on `ctx` and sends `first`.
  WatchStream(grpc::GenericStub* stub, rpc::Loop* loop, grpc::ClientContext* ctx,
              pb::WatchRequest first)
      : state_(std::make_shared<State>()) {
    new Reactor(stub, loop, ctx, std::move(first), state_);
  }

  // Blocks until the next response (true) or the end of the stream (false; see Finish).
  bool Read(pb::WatchResponse* response) {
    absl::MutexLock l(&state_->mu);
    state_->mu.Await(absl::Condition(state_.get(), &State::Readable));
    if (state_->responses.empty()) return false;
    *response = std::move(state_->responses.front());
    state_->responses.pop_front();
    return true;
  }

  // Blocks until gRPC is done with the stream (after ctx->TryCancel() if it is to end early)
  // and returns its status.
  grpc::Status Finish() {
    absl::MutexLock l(&state_->mu);
    state_->mu.Await(absl::Condition(&state_->done));
    return state_->status;
  }

 private:
  struct State {
    bool Readable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return done || !responses.empty(); }

    absl::Mutex mu;
    std::deque<pb::WatchResponse> responses ABSL_GUARDED_BY(mu);
    bool done ABSL_GUARDED_BY(mu) = false;
    grpc::Status status ABSL_GUARDED_BY(mu);
  };

  class Reactor final : public rpc::ClientBidiReactor<pb::WatchRequest, pb::WatchResponse> {
   public:
    Reactor(grpc::GenericStub* stub, rpc::Loop* loop, grpc::ClientContext* ctx,
            pb::WatchRequest first, std::shared_ptr<State> state)
        : first_(std::move(first)), state_(std::move(state)) {
      Start(stub, "/etcdserverpb.Watch/Watch", ctx, loop);
      StartWrite(&first_);
      StartRead(&incoming_);
      StartCall();
    }

    void OnReadDone(bool ok) override {
      if (!ok) return;  // the stream ended: OnDone follows
      {
        absl::MutexLock l(&state_->mu);
        state_->responses.push_back(std::move(incoming_));
      }
      incoming_.Clear();
      StartRead(&incoming_);
    }

    void OnDone(const grpc::Status& status) override {
      {
        absl::MutexLock l(&state_->mu);
        state_->status = status;
        state_->done = true;
      }
      delete this;
    }

   private:
    pb::WatchRequest first_;
    pb::WatchResponse incoming_;  // the read in progress
    const std::shared_ptr<State> state_;
  };

  const std::shared_ptr<State> state_;
};

// One watch: its etcd stream, the thread that reads it and runs the callback. Shared by the
// Watch handle, the session (which tells it of expiry or close) and the thread itself. The
// thread uses only what the core owns (its own stub on a shared channel, a share of the loop),
// so a thread left to finish after its Watch was destroyed from its own callback needs nothing
// else to live.
class WatchCore {
 public:
  WatchCore(Client* client, WatchOptions options, WatchCallback callback)
      : rpc_timeout_ms_(client->options().rpc_timeout_ms),
        stub_(std::make_unique<grpc::GenericStub>(client->channel())),
        loop_(client->loop()),
        options_(std::move(options)),
        callback_(std::move(callback)),
        root_(client->Root(options_.target)),
        key_(StrCat(root_, options_.key)),
        range_end_(options_.prefix ? PrefixEnd(key_) : std::string()),
        next_revision_(options_.start_revision) {}

  // Starts the thread and waits (up to the RPC timeout) until etcd has confirmed the watch.
  Status Start(const std::shared_ptr<WatchCore>& self) {
    thread_ = std::thread([self] { self->Run(); });
    Status failed;
    {
      absl::MutexLock l(&mu_);
      const absl::Time give_up = absl::Now() + absl::Milliseconds(rpc_timeout_ms_);
      while (!start_done_ && absl::Now() < give_up) cv_.WaitWithDeadline(&mu_, give_up);
      if (start_done_ && start_status_.ok()) return absl::OkStatus();
      failed =
          start_done_
              ? start_status_
              : absl::UnavailableError(StrCat("etcd did not confirm the watch on '", options_.key,
                                              "' within ", rpc_timeout_ms_, " ms"));
      canceled_ = true;
      if (ctx_ != nullptr) ctx_->TryCancel();
      cv_.SignalAll();
    }
    thread_.join();
    return failed;
  }

  // Silences the watch (Watch destroyed or session closed).
  void Cancel() {
    absl::MutexLock l(&mu_);
    canceled_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
    cv_.SignalAll();
  }

  // The session expired: the watch delivers kSessionExpired after what it has read, then ends.
  void OnSessionExpired() {
    absl::MutexLock l(&mu_);
    session_expired_ = true;
    if (ctx_ != nullptr) ctx_->TryCancel();
    cv_.SignalAll();
  }

  // Called by the handle's destructor, after Cancel().
  void JoinOrDetach() {
    if (!thread_.joinable()) return;
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // destroyed from its own callback; the thread ends after it returns
    } else {
      thread_.join();
    }
  }

 private:
  // What to do after a response (kContinue: read on) or after a stream.
  enum class Next { kContinue, kReconnect, kStop };

  void Run() {
    int64_t backoff_ms = kWatchBackoffMinMs;
    while (true) {
      bool expired = false;
      {
        absl::MutexLock l(&mu_);
        if (canceled_) break;
        expired = session_expired_;
      }
      if (expired) {
        if (started_) {
          WatchEvent event;
          event.type = WatchEventType::kSessionExpired;
          event.revision = next_revision_ > 0 ? next_revision_ - 1 : 0;
          Deliver(event);
        } else {
          FinishStart(SessionGone(SessionId{}));
        }
        break;
      }
      const bool was_started = started_;
      if (RunStream() == Next::kStop) break;
      if (!started_) {
        FinishStart(absl::UnavailableError(
            StrCat("etcd watch on '", options_.key, "' could not start: ", last_error_)));
        break;
      }
      if (!was_started) backoff_ms = kWatchBackoffMinMs;
      // Broken stream: reconnect after a pause, from the next revision.
      absl::MutexLock l(&mu_);
      if (!canceled_ && !session_expired_) {
        cv_.WaitWithTimeout(&mu_, absl::Milliseconds(backoff_ms));
      }
      backoff_ms = std::min(backoff_ms * 2, kWatchBackoffMaxMs);
    }
  }

  // One Watch stream, from next_revision_, until it breaks (kReconnect) or the watch ends.
  Next RunStream() {
    grpc::ClientContext ctx;
    {
      absl::MutexLock l(&mu_);
      if (canceled_) return Next::kStop;
      ctx_ = &ctx;
    }
    pb::WatchRequest request;
    pb::WatchCreateRequest* create = request.mutable_create_request();
    create->set_key(key_);
    if (!range_end_.empty()) create->set_range_end(range_end_);
    create->set_start_revision(next_revision_);
    WatchStream stream(stub_.get(), loop_.get(), &ctx, std::move(request));
    Next next = Next::kContinue;
    pb::WatchResponse response;
    while (next == Next::kContinue && stream.Read(&response)) next = Handle(response);
    {
      absl::MutexLock l(&mu_);
      ctx_ = nullptr;
    }
    ctx.TryCancel();
    const grpc::Status status = stream.Finish();
    if (next == Next::kContinue) {
      // The stream broke under us.
      last_error_ = status.ok() ? "stream ended" : status.error_message();
      next = Next::kReconnect;
    }
    return next;
  }

  Next Handle(const pb::WatchResponse& response) {
    if (response.canceled()) {
      if (response.compact_revision() > 0) {
        // The history asked for is gone: restart at the current revision and say so.
        next_revision_ = 0;
        reset_pending_ = true;
        return Next::kReconnect;
      }
      last_error_ = StrCat("canceled by etcd: ", response.cancel_reason());
      if (!started_) {
        FinishStart(absl::UnavailableError(
            StrCat("etcd refused the watch on '", options_.key, "': ", response.cancel_reason())));
        return Next::kStop;
      }
      return Next::kReconnect;
    }
    if (response.created()) {
      if (next_revision_ == 0) next_revision_ = response.header().revision() + 1;
      if (!started_) {
        started_ = true;
        FinishStart(absl::OkStatus());
      }
      if (reset_pending_) {
        reset_pending_ = false;
        WatchEvent event;
        event.type = WatchEventType::kReset;
        event.revision = next_revision_ - 1;
        if (!Deliver(event)) return Next::kStop;
      }
      return Next::kContinue;
    }
    // Events of one revision (a Txn, a lease's end) share it and arrive in one response.
    const int64_t from = next_revision_;
    for (const mvccpb::Event& e : response.events()) {
      const mvccpb::KeyValue& kv = e.kv();
      if (kv.mod_revision() < from) continue;  // delivered before a reconnect
      WatchEvent event;
      event.name = kv.key().substr(std::min(root_.size(), kv.key().size()));
      event.revision = kv.mod_revision();
      if (e.type() == mvccpb::Event::PUT) {
        event.type = WatchEventType::kPut;
        event.value = kv.value();
        event.version = kv.version();
        event.owner = SessionId{kv.lease()};
      } else {
        event.type = WatchEventType::kDelete;
      }
      next_revision_ = std::max(next_revision_, kv.mod_revision() + 1);
      if (!Deliver(event)) return Next::kStop;
    }
    return Next::kContinue;
  }

  // Runs the callback unless the watch was canceled; false if it was.
  bool Deliver(const WatchEvent& event) {
    {
      absl::MutexLock l(&mu_);
      if (canceled_) return false;
    }
    callback_(event);
    return true;
  }

  void FinishStart(Status status) {
    absl::MutexLock l(&mu_);
    if (start_done_) return;
    start_done_ = true;
    start_status_ = std::move(status);
    cv_.SignalAll();
  }

  const int64_t rpc_timeout_ms_;
  const std::unique_ptr<grpc::GenericStub> stub_;
  const std::shared_ptr<rpc::Loop> loop_;
  const WatchOptions options_;
  const WatchCallback callback_;
  const std::string root_;
  const std::string key_;
  const std::string range_end_;
  std::thread thread_;  // set by Start before anything else can see it

  // Used by the watch thread only (and by Start before the thread runs).
  int64_t next_revision_;       // 0 = "now"
  bool reset_pending_ = false;  // deliver kReset once the restarted stream is created
  bool started_ = false;        // etcd confirmed the first stream
  std::string last_error_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool canceled_ ABSL_GUARDED_BY(mu_) = false;
  bool session_expired_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;  // the live stream's, to cancel it
  bool start_done_ ABSL_GUARDED_BY(mu_) = false;
  Status start_status_ ABSL_GUARDED_BY(mu_);
};

class EtcdWatch final : public Watch {
 public:
  explicit EtcdWatch(std::shared_ptr<WatchCore> core) : core_(std::move(core)) {}
  ~EtcdWatch() override {
    core_->Cancel();
    core_->JoinOrDetach();
  }

 private:
  const std::shared_ptr<WatchCore> core_;
};

class EtcdSession final : public Session {
 public:
  // `client` must outlive the session. `deadline_us`: the lease's local deadline on the client's
  // clock.
  EtcdSession(Client* client, int64_t lease, int64_t ttl_ms, int64_t deadline_us,
              std::function<void(SessionState)> on_state_change)
      : client_(client),
        lease_(lease),
        ttl_ms_(ttl_ms),
        on_state_change_(std::move(on_state_change)),
        deadline_us_(deadline_us),
        next_send_us_(client->NowMicros() + ttl_ms * 1000 / 3) {}

  void StartKeeper() {
    keeper_ = std::thread([this] { RunKeeper(); });
  }

  ~EtcdSession() override {
    Close().IgnoreError();
    if (keeper_.joinable()) {
      if (keeper_.get_id() == std::this_thread::get_id()) {
        keeper_.detach();  // REQUIRES forbids this; do not deadlock on it
      } else {
        keeper_.join();
      }
    }
  }

  SessionId id() const override { return SessionId{lease_}; }
  SessionState state() const override {
    absl::MutexLock l(&mu_);
    return alive_ && !closed_ ? SessionState::kAlive : SessionState::kExpired;
  }
  int64_t ttl_ms() const override { return ttl_ms_; }

  Status Close() override {
    bool revoke = false;
    std::vector<std::weak_ptr<WatchCore>> watches;
    {
      absl::MutexLock l(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      revoke = alive_;
      if (inflight_ != nullptr) inflight_->TryCancel();
      for (grpc::ClientContext* ctx : waits_) ctx->TryCancel();
      watches.swap(watches_);
      cv_.SignalAll();
    }
    if (keeper_.joinable() && keeper_.get_id() != std::this_thread::get_id()) keeper_.join();
    for (auto& w : watches) {
      if (auto core = w.lock()) core->Cancel();
    }
    if (!revoke) return absl::OkStatus();
    grpc::ClientContext ctx;
    client_->SetRpcDeadline(&ctx);
    pb::LeaseRevokeRequest request;
    request.set_id(lease_);
    pb::LeaseRevokeResponse response;
    const grpc::Status s = client_->lease()->LeaseRevoke(&ctx, request, &response);
    if (IsLeaseNotFound(s)) return absl::OkStatus();  // it ran out already
    return FromGrpc(s, StrCat("LeaseRevoke of session ", lease_));
  }

  // --- Locks ---

  StatusOr<bool> TryAcquire(std::string_view lock, std::string_view value) override {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    RETURN_IF_ERROR(ValidateValue(value));
    RETURN_IF_ERROR(CheckAlive());
    ASSIGN_OR_RETURN(const AcquireResult r, AcquireTxn(lock, value));
    return r.held;
  }

  Status Acquire(std::string_view lock, std::string_view value, int64_t timeout_ms) override {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    RETURN_IF_ERROR(ValidateValue(value));
    if (timeout_ms < 0) {
      return absl::InvalidArgumentError(StrCat("Acquire timeout_ms ", timeout_ms, " is negative"));
    }
    const int64_t deadline = client_->NowMicros() + timeout_ms * 1000;
    // Bounded by the deadline: each round either takes the lock, ends, or waits on a watch
    // whose gRPC deadline is the Acquire deadline.
    while (true) {
      RETURN_IF_ERROR(CheckAlive());
      ASSIGN_OR_RETURN(const AcquireResult r, AcquireTxn(lock, value));
      if (r.held) return absl::OkStatus();
      if (client_->NowMicros() >= deadline) {
        return absl::DeadlineExceededError(
            StrCat("lock '", lock, "' still held by another session after ", timeout_ms, " ms"));
      }
      RETURN_IF_ERROR(WaitForDelete(client_->LockKey(lock), r.revision + 1, deadline));
    }
  }

  Status Release(std::string_view lock) override {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    RETURN_IF_ERROR(CheckAlive());
    const std::string key = client_->LockKey(lock);
    pb::TxnRequest txn;
    pb::Compare* cmp = txn.add_compare();
    cmp->set_key(key);
    cmp->set_target(pb::Compare::LEASE);
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_lease(lease_);
    txn.add_success()->mutable_request_delete_range()->set_key(key);
    ASSIGN_OR_RETURN(const pb::TxnResponse response, Txn(txn, "Txn (release lock)"));
    if (!response.succeeded()) {
      return absl::NotFoundError(StrCat("lock '", lock, "' is not held by session ", lease_));
    }
    return absl::OkStatus();
  }

  StatusOr<LockHolder> GetLockHolder(std::string_view lock) override {
    RETURN_IF_ERROR(ValidateName("lock", lock));
    RETURN_IF_ERROR(CheckAlive());
    ASSIGN_OR_RETURN(const pb::RangeResponse response, RangeOne(client_->LockKey(lock)));
    if (response.kvs_size() == 0) return absl::NotFoundError(StrCat("lock '", lock, "' is free"));
    const mvccpb::KeyValue& kv = response.kvs(0);
    return LockHolder{SessionId{kv.lease()}, kv.value(), kv.create_revision()};
  }

  // --- Files ---

  StatusOr<FileInfo> Get(std::string_view name) override {
    RETURN_IF_ERROR(ValidateName("file", name));
    RETURN_IF_ERROR(CheckAlive());
    ASSIGN_OR_RETURN(const pb::RangeResponse response, RangeOne(client_->FileKey(name)));
    if (response.kvs_size() == 0) {
      return absl::NotFoundError(StrCat("file '", name, "' does not exist"));
    }
    return ToFileInfo(name, response.kvs(0));
  }

  StatusOr<FileInfo> Put(std::string_view name, std::string_view value,
                         const PutOptions& options) override {
    RETURN_IF_ERROR(ValidateName("file", name));
    RETURN_IF_ERROR(ValidateValue(value));
    if (options.expected_version.has_value() && *options.expected_version < 0) {
      return absl::InvalidArgumentError(
          StrCat("expected_version ", *options.expected_version, " is negative"));
    }
    RETURN_IF_ERROR(CheckAlive());
    const std::string key = client_->FileKey(name);
    pb::TxnRequest txn;
    if (options.expected_version.has_value()) {
      pb::Compare* cmp = txn.add_compare();
      cmp->set_key(key);
      cmp->set_target(pb::Compare::VERSION);
      cmp->set_result(pb::Compare::EQUAL);
      cmp->set_version(*options.expected_version);
      txn.add_failure()->mutable_request_range()->set_key(key);
    }
    pb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(std::string(value));
    put->set_lease(options.ephemeral ? lease_ : 0);
    put->set_prev_kv(true);
    ASSIGN_OR_RETURN(const pb::TxnResponse response, Txn(txn, "Txn (put file)"));
    if (!response.succeeded()) {
      int64_t current = 0;
      if (response.responses_size() > 0 && response.responses(0).response_range().kvs_size() > 0) {
        current = response.responses(0).response_range().kvs(0).version();
      }
      return absl::AbortedError(
          StrCat("file '", name, "' is at version ", current, ", not ", *options.expected_version));
    }
    const int64_t revision = response.header().revision();
    FileInfo info;
    info.name = std::string(name);
    info.value = std::string(value);
    info.mod_revision = revision;
    info.owner = options.ephemeral ? SessionId{lease_} : SessionId{};
    const mvccpb::KeyValue* prev = nullptr;
    if (response.responses_size() > 0 && response.responses(0).response_put().has_prev_kv()) {
      prev = &response.responses(0).response_put().prev_kv();
    }
    if (prev != nullptr && prev->create_revision() > 0) {
      info.version = prev->version() + 1;
      info.create_revision = prev->create_revision();
    } else {
      info.version = 1;
      info.create_revision = revision;
    }
    return info;
  }

  Status Delete(std::string_view name, std::optional<int64_t> expected_version) override {
    RETURN_IF_ERROR(ValidateName("file", name));
    if (expected_version.has_value() && *expected_version < 0) {
      return absl::InvalidArgumentError(
          StrCat("expected_version ", *expected_version, " is negative"));
    }
    RETURN_IF_ERROR(CheckAlive());
    const std::string key = client_->FileKey(name);
    pb::TxnRequest txn;
    pb::Compare* cmp = txn.add_compare();
    cmp->set_key(key);
    cmp->set_target(pb::Compare::VERSION);
    if (expected_version.has_value()) {
      cmp->set_result(pb::Compare::EQUAL);
      cmp->set_version(*expected_version);
    } else {
      cmp->set_result(pb::Compare::GREATER);  // exists
      cmp->set_version(0);
    }
    txn.add_success()->mutable_request_delete_range()->set_key(key);
    txn.add_failure()->mutable_request_range()->set_key(key);
    ASSIGN_OR_RETURN(const pb::TxnResponse response, Txn(txn, "Txn (delete file)"));
    const bool missing = response.succeeded()
                             ? response.responses_size() == 0 ||
                                   response.responses(0).response_delete_range().deleted() == 0
                             : response.responses_size() == 0 ||
                                   response.responses(0).response_range().kvs_size() == 0;
    if (missing) return absl::NotFoundError(StrCat("file '", name, "' does not exist"));
    if (!response.succeeded()) {
      return absl::AbortedError(StrCat("file '", name, "' is at version ",
                                       response.responses(0).response_range().kvs(0).version(),
                                       ", not ", *expected_version));
    }
    return absl::OkStatus();
  }

  StatusOr<Listing> List(std::string_view prefix) override {
    RETURN_IF_ERROR(ValidatePrefix(prefix));
    RETURN_IF_ERROR(CheckAlive());
    const std::string& root = client_->Root(WatchTarget::kFiles);
    const std::string start = StrCat(root, prefix);
    const std::string end = PrefixEnd(start);
    Listing listing;
    std::string from = start;
    // Pages read at the revision of the first, so the listing is one snapshot. Bounded: every
    // page advances `from` past the keys it returned.
    while (true) {
      pb::RangeRequest request;
      request.set_key(from);
      request.set_range_end(end);
      request.set_limit(kListPageSize);
      request.set_revision(listing.revision);
      grpc::ClientContext ctx;
      client_->SetRpcDeadline(&ctx);
      pb::RangeResponse response;
      const grpc::Status s = client_->kv()->Range(&ctx, request, &response);
      RETURN_IF_ERROR(FromGrpc(s, "Range (list files)"));
      if (listing.revision == 0) listing.revision = response.header().revision();
      for (const mvccpb::KeyValue& kv : response.kvs()) {
        listing.files.push_back(ToFileInfo(std::string_view(kv.key()).substr(root.size()), kv));
      }
      if (!response.more() || response.kvs_size() == 0) break;
      from = response.kvs(response.kvs_size() - 1).key();
      from.push_back('\0');
    }
    return listing;
  }

  // --- Watches ---

  StatusOr<std::unique_ptr<Watch>> StartWatch(const WatchOptions& options,
                                              WatchCallback callback) override {
    RETURN_IF_ERROR(ValidateWatchOptions(options));
    if (!callback) return absl::InvalidArgumentError("watch callback is empty");
    auto core = std::make_shared<WatchCore>(client_, options, std::move(callback));
    {
      absl::MutexLock l(&mu_);
      if (!alive_ || closed_) return SessionGone(id());
      // Registered before it starts, so an expiry during the start reaches it.
      std::erase_if(watches_, [](const std::weak_ptr<WatchCore>& w) { return w.expired(); });
      watches_.push_back(core);
    }
    Status started = core->Start(core);
    if (!started.ok()) {
      if (started.code() == absl::StatusCode::kFailedPrecondition) return SessionGone(id());
      return started;
    }
    return std::unique_ptr<Watch>(std::make_unique<EtcdWatch>(std::move(core)));
  }

  void StopKeepAliveForTesting() override {
    absl::MutexLock l(&mu_);
    keepalive_stopped_ = true;
    cv_.SignalAll();
  }

 private:
  struct AcquireResult {
    bool held = false;
    int64_t revision = 0;  // the store revision the answer is from
  };

  Status CheckAlive() const {
    absl::MutexLock l(&mu_);
    if (!alive_ || closed_) return SessionGone(id());
    return absl::OkStatus();
  }

  // etcd says our lease is gone (a call attached to it failed): expire now.
  void MarkLost() {
    absl::MutexLock l(&mu_);
    lost_ = true;
    cv_.SignalAll();
  }

  StatusOr<pb::TxnResponse> Txn(const pb::TxnRequest& txn, std::string_view what) {
    grpc::ClientContext ctx;
    client_->SetRpcDeadline(&ctx);
    pb::TxnResponse response;
    const grpc::Status s = client_->kv()->Txn(&ctx, txn, &response);
    if (IsLeaseNotFound(s)) {
      MarkLost();
      return SessionGone(id());
    }
    RETURN_IF_ERROR(FromGrpc(s, what));
    return response;
  }

  StatusOr<pb::RangeResponse> RangeOne(const std::string& key) {
    pb::RangeRequest request;
    request.set_key(key);
    grpc::ClientContext ctx;
    client_->SetRpcDeadline(&ctx);
    pb::RangeResponse response;
    const grpc::Status s = client_->kv()->Range(&ctx, request, &response);
    RETURN_IF_ERROR(FromGrpc(s, "Range"));
    return response;
  }

  // The lock recipe: create the key, attached to our lease, only if it does not exist; else
  // read it to see whether the holder is us.
  StatusOr<AcquireResult> AcquireTxn(std::string_view lock, std::string_view value) {
    const std::string key = client_->LockKey(lock);
    pb::TxnRequest txn;
    pb::Compare* cmp = txn.add_compare();
    cmp->set_key(key);
    cmp->set_target(pb::Compare::CREATE);
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_create_revision(0);
    pb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(std::string(value));
    put->set_lease(lease_);
    txn.add_failure()->mutable_request_range()->set_key(key);
    ASSIGN_OR_RETURN(const pb::TxnResponse response, Txn(txn, "Txn (acquire lock)"));
    AcquireResult r;
    r.revision = response.header().revision();
    if (response.succeeded()) {
      r.held = true;
    } else if (response.responses_size() > 0 &&
               response.responses(0).response_range().kvs_size() > 0) {
      r.held = response.responses(0).response_range().kvs(0).lease() == lease_;
    }
    return r;
  }

  // Waits until `key` is deleted at or after `start_revision`, the deadline passes (OK: the
  // caller looks at the clock), or the session ends (FailedPrecondition).
  Status WaitForDelete(const std::string& key, int64_t start_revision, int64_t deadline_us) {
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(deadline_us - client_->NowMicros()));
    {
      absl::MutexLock l(&mu_);
      if (!alive_ || closed_) return SessionGone(id());
      waits_.push_back(&ctx);
    }
    pb::WatchRequest request;
    pb::WatchCreateRequest* create = request.mutable_create_request();
    create->set_key(key);
    create->set_start_revision(start_revision);
    create->add_filters(pb::WatchCreateRequest::NOPUT);
    WatchStream stream(client_->watch(), client_->loop().get(), &ctx, std::move(request));
    bool deleted = false;
    pb::WatchResponse response;
    while (!deleted && stream.Read(&response)) {
      if (response.canceled()) break;  // compacted (cannot happen this soon) or refused
      for (const mvccpb::Event& e : response.events()) {
        if (e.type() == mvccpb::Event::DELETE) deleted = true;
      }
    }
    {
      absl::MutexLock l(&mu_);
      std::erase(waits_, &ctx);
    }
    ctx.TryCancel();
    const grpc::Status s = stream.Finish();
    RETURN_IF_ERROR(CheckAlive());
    if (deleted || client_->NowMicros() >= deadline_us) return absl::OkStatus();
    if (s.ok() || s.error_code() == grpc::StatusCode::CANCELLED) {
      return absl::UnavailableError("etcd ended the lock watch early");
    }
    return FromGrpc(s, "Watch (wait for lock)");
  }

  // One keepalive exchange on its own LeaseKeepAlive stream, bounded by `deadline_us`. Returns
  // the TTL etcd answered (seconds; <= 0: the lease is gone).
  StatusOr<int64_t> KeepAliveOnce(int64_t deadline_us) {
    grpc::ClientContext ctx;
    ctx.set_deadline(DeadlineIn(deadline_us - client_->NowMicros()));
    {
      absl::MutexLock l(&mu_);
      if (closed_) return absl::CancelledError("session closed");
      inflight_ = &ctx;
    }
    auto stream = client_->lease()->LeaseKeepAlive(&ctx);
    pb::LeaseKeepAliveRequest request;
    request.set_id(lease_);
    pb::LeaseKeepAliveResponse response;
    const bool answered = stream->Write(request) && stream->Read(&response);
    if (answered) stream->WritesDone();
    {
      absl::MutexLock l(&mu_);
      inflight_ = nullptr;
    }
    ctx.TryCancel();
    const grpc::Status s = stream->Finish();
    if (answered) return response.ttl();
    if (s.ok()) return absl::UnavailableError("etcd closed the keepalive stream");
    return FromGrpc(s, "LeaseKeepAlive");
  }

  // The keeper: renews the lease every TTL/3 and expires the session when the local deadline
  // passes or etcd says the lease is gone.
  void RunKeeper() {
    const int64_t retry_us = std::clamp<int64_t>(ttl_ms_ * 1000 / 10, 50'000, 250'000);
    bool warned = false;
    while (true) {
      int64_t rpc_deadline = 0;
      {
        absl::MutexLock l(&mu_);
        // Bounded: each round waits until the next keepalive or the deadline, both finite.
        while (true) {
          if (closed_) return;
          const int64_t now = client_->NowMicros();
          if (lost_ || now >= deadline_us_) break;
          const int64_t wake =
              keepalive_stopped_ ? deadline_us_ : std::min(next_send_us_, deadline_us_);
          if (now >= wake) break;
          cv_.WaitWithTimeout(&mu_, absl::Microseconds(wake - now));
        }
        if (lost_ || client_->NowMicros() >= deadline_us_) {
          alive_ = false;
          break;
        }
        rpc_deadline =
            std::min(deadline_us_, client_->NowMicros() + client_->options().rpc_timeout_ms * 1000);
      }
      const int64_t sent = client_->NowMicros();
      StatusOr<int64_t> ttl = KeepAliveOnce(rpc_deadline);
      absl::MutexLock l(&mu_);
      if (ttl.ok() && *ttl > 0) {
        deadline_us_ = std::max(deadline_us_, sent + *ttl * 1'000'000);
        next_send_us_ = sent + *ttl * 1'000'000 / 3;
        if (warned) TLOG_INFO("lock service: session {} keepalives reach etcd again", lease_);
        warned = false;
      } else if (ttl.ok()) {
        lost_ = true;  // etcd no longer knows the lease (revoked, or it ran out there)
      } else {
        if (!warned && !closed_) {
          TLOG_WARN("lock service: session {} keepalive failed: {}", lease_, ttl.status());
          warned = true;
        }
        next_send_us_ = client_->NowMicros() + retry_us;
      }
    }
    // Expired.
    std::vector<std::weak_ptr<WatchCore>> watches;
    {
      absl::MutexLock l(&mu_);
      for (grpc::ClientContext* ctx : waits_) ctx->TryCancel();
      watches.swap(watches_);
    }
    TLOG_INFO("lock service: session {} expired ({})", lease_,
              lost_for_log() ? "etcd dropped the lease" : "no keepalive answer within the TTL");
    for (auto& w : watches) {
      if (auto core = w.lock()) core->OnSessionExpired();
    }
    if (on_state_change_) on_state_change_(SessionState::kExpired);
  }

  bool lost_for_log() {
    absl::MutexLock l(&mu_);
    return lost_;
  }

  Client* const client_;
  const int64_t lease_;
  const int64_t ttl_ms_;
  const std::function<void(SessionState)> on_state_change_;
  std::thread keeper_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;                        // closed_, lost_ or keepalive_stopped_ changed
  bool alive_ ABSL_GUARDED_BY(mu_) = true;  // false once expired
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  bool keepalive_stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t deadline_us_ ABSL_GUARDED_BY(mu_);                      // local lease deadline
  int64_t next_send_us_ ABSL_GUARDED_BY(mu_);                     // next keepalive
  grpc::ClientContext* inflight_ ABSL_GUARDED_BY(mu_) = nullptr;  // the keepalive under way
  std::vector<grpc::ClientContext*> waits_ ABSL_GUARDED_BY(mu_);  // Acquire's lock watches
  std::vector<std::weak_ptr<WatchCore>> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

StatusOr<std::unique_ptr<EtcdLockService>> EtcdLockService::Open(
    const EtcdLockServiceOptions& options) {
  ASSIGN_OR_RETURN(const std::string target, GrpcTarget(options.endpoint));
  if (options.key_root.empty()) return absl::InvalidArgumentError("etcd key_root is empty");
  if (options.rpc_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        StrCat("etcd rpc_timeout_ms ", options.rpc_timeout_ms, " must be positive"));
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("etcd lock service: no clock");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // Reconnect quickly after etcd restarts: keepalives must get through within a TTL. (Not
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: despite its name it is the connect timeout, and a short
  // one fails connections to an etcd that is merely slow to answer on a busy machine.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Notice a silently dead connection under a long-lived watch stream (etcd accepts pings every
  // 5 s or more by default).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  if (options.credentials != nullptr && target.starts_with("ipv4:")) {
    // Several members under TLS: each member's certificate is checked for the first one's host
    // (the name a client of the whole cluster uses).
    const std::string first = options.endpoint.substr(0, options.endpoint.find(','));
    std::string_view host = first;
    if (host.starts_with("http://")) host.remove_prefix(7);
    args.SetSslTargetNameOverride(std::string(host.substr(0, host.rfind(':'))));
  }
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target,
      options.credentials != nullptr ? options.credentials : grpc::InsecureChannelCredentials(),
      args);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(StrCat("cannot make a channel to etcd at ", target));
  }
  return std::unique_ptr<EtcdLockService>(
      new EtcdLockService(std::make_unique<Client>(options, std::move(channel))));
}

EtcdLockService::EtcdLockService(std::unique_ptr<Client> client) : client_(std::move(client)) {}

EtcdLockService::~EtcdLockService() = default;

StatusOr<std::unique_ptr<Session>> EtcdLockService::CreateSession(const SessionOptions& options) {
  RETURN_IF_ERROR(ValidateTtl(options.ttl_ms));
  const int64_t ttl_s = (options.ttl_ms + 999) / 1000;
  grpc::ClientContext ctx;
  client_->SetRpcDeadline(&ctx);
  pb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  pb::LeaseGrantResponse response;
  const int64_t sent = client_->NowMicros();
  const grpc::Status s = client_->lease()->LeaseGrant(&ctx, request, &response);
  RETURN_IF_ERROR(FromGrpc(s, "LeaseGrant"));
  if (!response.error().empty() || response.id() == 0 || response.ttl() <= 0) {
    return absl::UnavailableError(StrCat("etcd LeaseGrant failed: ", response.error(), " (ID ",
                                         response.id(), ", TTL ", response.ttl(), ")"));
  }
  const int64_t granted_ms = response.ttl() * 1000;
  auto session = std::make_unique<EtcdSession>(client_.get(), response.id(), granted_ms,
                                               sent + granted_ms * 1000, options.on_state_change);
  session->StartKeeper();
  return std::unique_ptr<Session>(std::move(session));
}

Status EtcdLockService::RevokeSession(SessionId id) {
  grpc::ClientContext ctx;
  client_->SetRpcDeadline(&ctx);
  pb::LeaseRevokeRequest request;
  request.set_id(id.value);
  pb::LeaseRevokeResponse response;
  const grpc::Status s = client_->lease()->LeaseRevoke(&ctx, request, &response);
  if (IsLeaseNotFound(s)) {
    return absl::NotFoundError(StrCat("no live lock-service session ", id.value));
  }
  return FromGrpc(s, StrCat("LeaseRevoke of session ", id.value));
}

}  // namespace tessera::coord
