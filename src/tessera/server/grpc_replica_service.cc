// The serving end of GrpcRpcChannel (grpc_rpc_channel.h): ReplicaService's unary Call, for
// nodes of the previous version, and its Stream, which this version's nodes call.
#include <memory>
#include <utility>
#include <vector>

#include "tessera/server/grpc_rpc_channel.h"
#include "tessera/server/grpc_status.h"
#include "tessera/util/status.h"

namespace tessera::server {
namespace {

namespace v1 = ::tessera::v1;

// Trailing metadata of a unary call whose status is the handler's own, not gRPC's.
constexpr char kHandlerStatusKey[] = "tessera-handler-status";

// Taken once, by whoever finishes a call first; shared with Responders that may outlive it.
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

// One served unary call. Finished exactly once: by the Responder, by a refusal, or by OnCancel
// when the caller gave up; gRPC deletes it (OnDone) only after that, so whoever claims the
// finish may still use it until it calls Finish.
class ServeReactor final : public rpc::UnaryReactor {
 public:
  ServeReactor(rpc::ServerContext* context, v1::ReplicaReply* reply)
      : rpc::UnaryReactor(context),
        context_(context), reply_(reply), claim_(std::make_shared<Claim>()) {}

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
  rpc::ServerContext* const context_;
  v1::ReplicaReply* const reply_;
  const std::shared_ptr<Claim> claim_;
};

grpc::Status OtherCluster(const GrpcRpcChannel& channel, std::string_view theirs) {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      StrCat("this node belongs to cluster '", channel.cluster_name(), "', not '", theirs, "'"));
}

std::string MetadataValue(const rpc::ServerContext& context, std::string_view key) {
  auto it = context.client_metadata().find(grpc::string_ref(key.data(), key.size()));
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// One served stream. Reads a message at a time and serves its calls; answers go out as frames,
// batched as the caller's (PackReplicaFrames), one write outstanding at a time.
// The stream's state lives in `Shared`, which Responders keep: an answer after the stream has
// finished is dropped. Finish is called once no write is outstanding and the caller is gone
// (its half-close, a failed read, or cancellation); gRPC then deletes the reactor (OnDone).
class StreamReactor final : public rpc::BidiReactor<v1::ReplicaFrames, v1::ReplicaFrames> {
 public:
  StreamReactor(rpc::ServerContext* context, GrpcRpcChannel* channel, std::string from)
      : rpc::BidiReactor<v1::ReplicaFrames, v1::ReplicaFrames>(context),
        channel_(channel),
        from_(std::move(from)),
        shared_(std::make_shared<Shared>(this)) {}

  void Begin() { StartRead(&in_); }
  void Refuse(const grpc::Status& status) {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->finished = true;
    }
    Finish(status);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      EndLater(grpc::Status::OK);
      return;
    }
    std::vector<v1::ReplicaFrame> frames;
    frames.reserve(static_cast<size_t>(in_.frames_size()));
    for (v1::ReplicaFrame& frame : *in_.mutable_frames()) frames.push_back(std::move(frame));
    in_.Clear();
    StartRead(&in_);  // the next message may be served on another thread meanwhile
    // A call that may block (on its commit log) goes to the executor, so that it holds up
    // neither the loop, which serves every call of the node, nor another call.
    for (v1::ReplicaFrame& frame : frames) {
      if (channel_->ServesInline(frame.method())) {
        channel_->Serve(from_, frame.method(), std::move(*frame.mutable_payload()),
                        Responder(frame.id()));
      } else {
        channel_->ServeLater(from_, std::move(*frame.mutable_method()),
                             std::move(*frame.mutable_payload()), Responder(frame.id()));
      }
    }
  }
  void OnWriteDone(bool ok) override {
    bool more = false;
    bool finish = false;
    {
      absl::MutexLock lock(&shared_->mu);
      if (ok && !shared_->ending && !shared_->queued.empty()) {
        PackReplicaFrames(&shared_->queued, &out_, channel_->max_message_bytes());
        more = true;
      } else {
        shared_->writing = false;
        finish = FinishWantedLocked();
      }
    }
    if (more) StartWrite(&out_);
    if (finish) Finish(end_status_);
  }
  void OnCancel() override { EndLater(grpc::Status::CANCELLED); }
  void OnDone() override {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->reactor = nullptr;
    }
    delete this;
  }

 private:
  struct Shared {
    explicit Shared(StreamReactor* r) : reactor(r) {}
    absl::Mutex mu;
    StreamReactor* reactor ABSL_GUARDED_BY(mu);
    std::vector<v1::ReplicaFrame> queued ABSL_GUARDED_BY(mu);
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool ending ABSL_GUARDED_BY(mu) = false;    // the caller is gone: finish when not writing
    bool finished ABSL_GUARDED_BY(mu) = false;  // Finish was called (or is about to be)
  };

  // The stream should end: now, unless a write is outstanding (then when it completes).
  void EndLater(grpc::Status status) {
    bool finish = false;
    {
      absl::MutexLock lock(&shared_->mu);
      if (!shared_->ending) end_status_ = std::move(status);
      shared_->ending = true;
      finish = FinishWantedLocked();
    }
    if (finish) Finish(end_status_);
  }
  bool FinishWantedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    if (!shared_->ending || shared_->writing || shared_->finished) return false;
    shared_->finished = true;
    return true;
  }

  replication::RpcChannel::Responder Responder(uint64_t id) {
    return [shared = shared_, id,
            limit = channel_->max_message_bytes()](StatusOr<std::string> result) {
      v1::ReplicaFrame frame;
      frame.set_id(id);
      if (result.ok() && result->size() + kFrameOverheadBytes > static_cast<size_t>(limit)) {
        result = absl::ResourceExhaustedError(
            StrCat("a response of ", result->size(), " bytes is above the limit of ", limit));
      }
      if (result.ok()) {
        frame.set_payload(*std::move(result));
      } else {
        frame.set_code(static_cast<int>(result.status().code()));
        frame.set_message(std::string(result.status().message()));
      }
      StreamReactor* write = nullptr;
      {
        absl::MutexLock lock(&shared->mu);
        if (shared->finished || shared->ending) return;  // the caller is gone
        shared->queued.push_back(std::move(frame));
        if (shared->writing) return;  // goes with the next message
        shared->writing = true;
        write = shared->reactor;
        PackReplicaFrames(&shared->queued, &write->out_, limit);
      }
      // Not finished while `writing`: the reactor lives until this write completes.
      write->StartWrite(&write->out_);
    };
  }

  GrpcRpcChannel* const channel_;
  const std::string from_;
  const std::shared_ptr<Shared> shared_;
  v1::ReplicaFrames in_;     // the reading side's (one read at a time)
  v1::ReplicaFrames out_;    // the message being written (while Shared::writing)
  grpc::Status end_status_;  // set once, under Shared::mu, before `ending`
};

}  // namespace

rpc::UnaryReactor* ReplicaService::Call(rpc::ServerContext* context,
                                               const v1::ReplicaCall* request,
                                               v1::ReplicaReply* reply) {
  auto* reactor = new ServeReactor(context, reply);
  if (request->cluster_name() != channel_->cluster_name()) {
    reactor->Refuse(OtherCluster(*channel_, request->cluster_name()));
    return reactor;
  }
  channel_->ServeLater(request->from(), request->method(), request->payload(),
                       reactor->Responder());
  return reactor;
}

void ReplicaService::Register(rpc::Services* services) {
  constexpr const char* kService = v1::Replica::service_full_name();
  services->Add(kService, "Call", this, &ReplicaService::Call);
  services->Add(kService, "Stream", this, &ReplicaService::Stream);
}

rpc::BidiReactor<v1::ReplicaFrames, v1::ReplicaFrames>* ReplicaService::Stream(
    rpc::ServerContext* context) {
  auto* reactor = new StreamReactor(context, channel_, MetadataValue(*context, kStreamFromKey));
  const std::string cluster = MetadataValue(*context, kStreamClusterKey);
  if (cluster != channel_->cluster_name()) {
    reactor->Refuse(OtherCluster(*channel_, cluster));
    return reactor;
  }
  reactor->Begin();
  return reactor;
}

}  // namespace tessera::server
