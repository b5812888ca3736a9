#include "tessera/cluster/grpc_transport.h"

#include <chrono>

#include "tessera/util/logging.h"
#include "tessera/util/status.h"

namespace tessera::cluster {

namespace {
const std::string kExchangeMethod = "/tessera.v1.Gossip/Exchange";
}  // namespace

struct GrpcTransport::Call {
  NodeId to;
  grpc::ClientContext context;
  ::tessera::v1::GossipPacket packet;
  ::tessera::v1::GossipReply reply;
};

GrpcTransport::GrpcTransport(GrpcTransportOptions options) : options_(std::move(options)) {}

GrpcTransport::~GrpcTransport() { Shutdown(); }

void GrpcTransport::SetReceiver(Receiver receiver) {
  Receiver old;
  absl::MutexLock lock(&mu_);
  old = std::move(receiver_);
  receiver_ = std::move(receiver);
  mu_.Await(absl::Condition(
      +[](int* delivering) { return *delivering == 0; }, &delivering_));
}

void GrpcTransport::Deliver(std::string_view bytes) {
  Receiver receiver;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || !receiver_) return;
    receiver = receiver_;
    ++delivering_;
  }
  receiver(bytes);
  receiver = nullptr;
  absl::MutexLock lock(&mu_);
  --delivering_;
}

void GrpcTransport::Send(const NodeId& to, std::string bytes) {
  Call* call = nullptr;
  grpc::GenericStub* stub = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    auto it = peers_.find(to);
    if (it == peers_.end()) {
      grpc::ChannelArguments args;
      // A restarted or healed peer must be found again within a few gossip rounds, not after
      // gRPC's default backoff of up to two minutes.
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      Peer peer;
      peer.channel = grpc::CreateCustomChannel(to,
                                               options_.credentials != nullptr
                                                   ? options_.credentials
                                                   : grpc::InsecureChannelCredentials(),
                                               args);
      peer.stub = std::make_unique<grpc::GenericStub>(peer.channel);
      it = peers_.emplace(to, std::move(peer)).first;
    }
    Peer& peer = it->second;
    // A peer that does not answer holds a bounded number of calls; the rest is lost, as on a
    // congested network.
    if (peer.in_flight >= options_.max_in_flight_per_peer) return;
    peer.in_flight++;
    auto owned = std::make_unique<Call>();
    call = owned.get();
    call->to = to;
    call->packet.set_cluster_name(options_.cluster_name);
    call->packet.set_payload(std::move(bytes));
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(options_.call_timeout_ms));
    calls_.emplace(call, std::move(owned));
    stub = peer.stub.get();
  }
  rpc::CallUnary(options_.loop, stub, kExchangeMethod, &call->context, call->packet, &call->reply,
                 [this, call](grpc::Status status) { Finish(call, status); });
}

void GrpcTransport::Finish(Call* call, const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      auto [it, inserted] = refusals_.insert_or_assign(call->to, status.error_message());
      if (inserted) {
        TLOG_WARN("gossip: {} refused our messages: {}", call->to, status.error_message());
      }
    }
    auto peer = peers_.find(call->to);
    if (peer != peers_.end()) peer->second.in_flight--;
    // The call (its ClientContext) is destroyed under the lock, before Shutdown can see the
    // transport idle: destroyed after it, it could outlive the channel and gRPC itself (a
    // "prior > 0" ref-count abort when the process's last gRPC object goes).
    calls_.erase(call);
  }
}

std::map<NodeId, std::string> GrpcTransport::Refusals() const {
  absl::MutexLock lock(&mu_);
  return refusals_;
}

void GrpcTransport::Drain(int64_t timeout_ms) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(this, &GrpcTransport::Idle), absl::Milliseconds(timeout_ms));
}

void GrpcTransport::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (auto& [call, owned] : calls_) call->context.TryCancel();
  mu_.Await(absl::Condition(this, &GrpcTransport::Idle));
  receiver_ = nullptr;
  mu_.Await(absl::Condition(
      +[](int* delivering) { return *delivering == 0; }, &delivering_));
}

void GossipService::Register(rpc::Services* services) {
  services->Add(::tessera::v1::Gossip::service_full_name(), "Exchange", this,
                &GossipService::Exchange);
}

rpc::UnaryReactor* GossipService::Exchange(rpc::ServerContext* context,
                                                  const ::tessera::v1::GossipPacket* request,
                                                  ::tessera::v1::GossipReply* /*reply*/) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  // The gossiper decodes the payload, refuses a stranger itself (logging and counting it), and
  // answers through its own Sends; the reply only tells a stranger why nobody talks to it.
  transport_->Deliver(request->payload());
  if (request->cluster_name() != transport_->cluster_name()) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                     tessera::StrCat("this node belongs to cluster '", transport_->cluster_name(),
                                     "', not '", request->cluster_name(), "'")));
  } else {
    reactor->Finish(grpc::Status::OK);
  }
  return reactor;
}

}  // namespace tessera::cluster
