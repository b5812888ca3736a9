#include "tessera/server/grpc_rpc_channel.h"

#include <chrono>
#include <utility>

#include "tessera/server/grpc_status.h"
#include "tessera/util/status.h"

namespace tessera::server {
namespace {

// Trailing metadata of a call whose status is the handler's own, not gRPC's.
constexpr char kHandlerStatusKey[] = "tessera-handler-status";

// One served call. Finished exactly once: by the Responder, by a refusal, or by OnCancel when
// the caller gave up; gRPC deletes it (OnDone) only after that, so whoever claims the finish
// may still use it until it calls Finish.
class ServeReactor final : public grpc::ServerUnaryReactor {
 public:
  ServeReactor(grpc::CallbackServerContext* context, ::tessera::v1::ReplicaReply* reply)
      : context_(context), reply_(reply), claim_(std::make_shared<Claim>()) {}

  replication::RpcChannel::Responder Responder() {
    return [this, claim = claim_](StatusOr<std::string> result) {
      if (!claim->Take()) return;  // cancelled (and perhaps deleted) already
      if (result.ok()) {
        reply_->set_payload(*std::move(result));
      } else {
        context_->AddTrailingMetadata(kHandlerStatusKey, "1");
      }
      Finish(ToGrpcStatus(result.status()));
    };
  }

  void Refuse(const grpc::Status& status) {
    if (claim_->Take()) Finish(status);
  }

  void OnCancel() override {
    if (claim_->Take()) Finish(grpc::Status::CANCELLED);
  }
  void OnDone() override { delete this; }

 private:
  // Shared with the Responder, which may outlive the reactor.
  struct Claim {
    absl::Mutex mu;
    bool taken ABSL_GUARDED_BY(mu) = false;
    bool Take() {
      absl::MutexLock lock(&mu);
      if (taken) return false;
      taken = true;
      return true;
    }
  };

  grpc::CallbackServerContext* const context_;
  ::tessera::v1::ReplicaReply* const reply_;
  const std::shared_ptr<Claim> claim_;
};

bool FromHandler(const grpc::ClientContext& context) {
  return context.GetServerTrailingMetadata().count(kHandlerStatusKey) != 0;
}

}  // namespace

struct GrpcRpcChannel::PendingCall {
  std::string to;
  int64_t timeout_us = 0;
  bool inline_done = false;  // CallInline: `done` runs on the completing gRPC thread
  Done done;
  grpc::ClientContext context;
  ::tessera::v1::ReplicaCall request;
  ::tessera::v1::ReplicaReply reply;
};

GrpcRpcChannel::GrpcRpcChannel(GrpcRpcChannelOptions options, Executor* executor)
    : options_(std::move(options)), executor_(executor), handlers_(options_.self) {}

GrpcRpcChannel::~GrpcRpcChannel() { Shutdown(); }

void GrpcRpcChannel::SetHandler(Handler handler) { handlers_.Set(std::move(handler)); }

GrpcRpcChannel::Peer& GrpcRpcChannel::PeerLocked(const std::string& to) {
  auto it = peers_.find(to);
  if (it != peers_.end()) return it->second;
  grpc::ChannelArguments args;
  // A restarted or healed peer must be reached again within about a second, not after gRPC's
  // default backoff of up to two minutes (the same settings as GrpcTransport's).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  Peer peer;
  peer.channel = grpc::CreateCustomChannel(to, grpc::InsecureChannelCredentials(), args);
  peer.stub = ::tessera::v1::Replica::NewStub(peer.channel);
  return peers_.emplace(to, std::move(peer)).first->second;
}

void GrpcRpcChannel::Call(const std::string& to, std::string_view method, std::string request,
                          int64_t timeout_us, Done done) {
  Start(to, method, std::move(request), timeout_us, std::move(done), /*inline_done=*/false);
}

void GrpcRpcChannel::CallInline(const std::string& to, std::string_view method,
                                std::string request, int64_t timeout_us, Done done) {
  Start(to, method, std::move(request), timeout_us, std::move(done), /*inline_done=*/true);
}

void GrpcRpcChannel::Start(const std::string& to, std::string_view method, std::string request,
                           int64_t timeout_us, Done done, bool inline_done) {
  PendingCall* call = nullptr;
  ::tessera::v1::Replica::Stub* stub = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      CompleteLater(std::move(done),
                    absl::UnavailableError(StrCat("call to ", to, " failed: channel closed")));
      return;
    }
    Peer& peer = PeerLocked(to);
    if (peer.in_flight >= options_.max_in_flight_per_peer) {
      CompleteLater(std::move(done),
                    absl::UnavailableError(StrCat("too many calls in flight to ", to)));
      return;
    }
    peer.in_flight++;
    auto owned = std::make_unique<PendingCall>();
    call = owned.get();
    call->to = to;
    call->timeout_us = timeout_us;
    call->inline_done = inline_done;
    call->done = std::move(done);
    call->request.set_cluster_name(options_.cluster_name);
    call->request.set_from(options_.self);
    call->request.set_method(std::string(method));
    call->request.set_payload(std::move(request));
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::microseconds(timeout_us));
    calls_.emplace(call, std::move(owned));
    stub = peer.stub.get();
  }
  // A Shutdown() between here and the start cancels the context first, which gRPC honours.
  stub->async()->Call(&call->context, &call->request, &call->reply,
                      [this, call](grpc::Status status) { Finish(call, status); });
}

void GrpcRpcChannel::Finish(PendingCall* call, const grpc::Status& status) {
  StatusOr<std::string> result;
  if (status.ok()) {
    result = std::move(*call->reply.mutable_payload());
  } else if (FromHandler(call->context)) {
    result = FromGrpcStatus(status);
  } else {
    switch (status.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        result = absl::DeadlineExceededError(
            StrCat("no answer from ", call->to, " within ", call->timeout_us, " us"));
        break;
      case grpc::StatusCode::FAILED_PRECONDITION:
        result = absl::FailedPreconditionError(
            StrCat(call->to, " refused the call: ", status.error_message()));
        break;
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        result = absl::ResourceExhaustedError(
            StrCat("call to ", call->to, ": ", status.error_message()));
        break;
      default:
        result = absl::UnavailableError(
            StrCat("call to ", call->to, " failed: ", status.error_message()));
    }
  }
  Done done;
  {
    absl::MutexLock lock(&mu_);
    auto peer = peers_.find(call->to);
    if (peer != peers_.end()) peer->second.in_flight--;
    if (call->inline_done) {
      done = std::move(call->done);
      ++completing_;  // Shutdown waits for it as for a scheduled one
    } else {
      CompleteLater(std::move(call->done), std::move(result));
    }
    // The ClientContext goes under the lock, before Shutdown can see the channel idle (see
    // GrpcTransport::Finish: a context outliving gRPC aborts the process).
    calls_.erase(call);
  }
  if (done == nullptr) return;
  done(std::move(result));
  done = nullptr;
  absl::MutexLock lock(&mu_);
  --completing_;
}

void GrpcRpcChannel::CompleteLater(Done done, StatusOr<std::string> result) {
  ++completing_;
  executor_->Schedule([this, done = std::move(done), result = std::move(result)]() mutable {
    done(std::move(result));
    done = nullptr;
    absl::MutexLock lock(&mu_);
    --completing_;
  });
}

void GrpcRpcChannel::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (auto& [call, owned] : calls_) call->context.TryCancel();
  }
  // Running handlers may still call out (failing at once, counted in completing_), so they end
  // before the wait for the callbacks.
  handlers_.Close();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &GrpcRpcChannel::Idle));
}

grpc::ServerUnaryReactor* ReplicaService::Call(grpc::CallbackServerContext* context,
                                               const ::tessera::v1::ReplicaCall* request,
                                               ::tessera::v1::ReplicaReply* reply) {
  auto* reactor = new ServeReactor(context, reply);
  if (request->cluster_name() != channel_->cluster_name()) {
    reactor->Refuse(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 StrCat("this node belongs to cluster '", channel_->cluster_name(),
                                        "', not '", request->cluster_name(), "'")));
    return reactor;
  }
  channel_->Serve(request->from(), request->method(), request->payload(), reactor->Responder());
  return reactor;
}

}  // namespace tessera::server
