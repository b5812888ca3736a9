// GrpcRpcChannel: the replication protocol's RpcChannel (replication/rpc_channel.h) between
// processes, as `tessera.v1.Replica/Call` on each node's one gRPC port, and ReplicaService, the
// serving end registered on that port. MessageRpcChannel (replication/message_rpc_channel.h)
// is the same contract on a simulated network.
//
// Client side: one gRPC channel per peer, kept for the channel's life, reconnecting with a
// short backoff (as GrpcTransport does), and one unary call per Call() with a deadline of
// timeout_us. A peer that does not answer holds at most `max_in_flight_per_peer` calls; beyond
// that Call() fails at once with Unavailable ("too many calls in flight to <peer>").
//
// Outcomes: the handler's response, or its failure with code and message unchanged, or
//   DeadlineExceeded     no answer within timeout_us (the handler may have run);
//   FailedPrecondition   the peer belongs to another cluster (the message names both);
//   ResourceExhausted    a message above max_message_bytes;
//   Unavailable          anything else that kept the call from the handler or its answer
//                        from us: connection refused, unknown host, the peer shutting down or
//                        not serving the protocol, this channel shut down.
// The serving end marks a status that is the handler's with trailing metadata
// (`tessera-handler-status`), so that a handler's own DeadlineExceeded or Unavailable is told
// apart from gRPC's and reaches the caller unchanged.
//
// Callbacks: every `done` of Call runs as a task on the Executor given at construction — never
// on a gRPC thread, never inside Call() — so a callback may call Call() and take the caller's
// locks. CallInline's runs on the gRPC thread that completed the call (rpc_channel.h says
// what such a callback may do).
// Handlers run on gRPC's server threads (a handler that blocks holds one; the replication
// code hands slow work to its own executor) and may answer later, from any thread. A call
// whose caller gave up (deadline, cancellation) is finished CANCELLED at once, so the server
// can shut down; its Responder then does nothing.
//
// Thread-safety: all methods are thread-safe.
// Lifetime: Shutdown() (or the destructor) cancels pending calls and waits until every `done`
// has run and no handler is running; it must not be called from a handler, a callback or a
// task of the executor. The ReplicaService must be unregistered (its server shut down) before
// the channel is destroyed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "tessera/replication/handler_slot.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/util/executor.h"
#include "tessera/v1/replica.grpc.pb.h"

namespace tessera::server {

struct GrpcRpcChannelOptions {
  std::string self;          // this node's endpoint (host:port), as peers name it
  std::string cluster_name;  // sent with every call; calls carrying another are refused
  // Calls pending towards one peer at most (> 0); beyond it Call() fails with Unavailable.
  int max_in_flight_per_peer = 1024;
  // The largest request or response (bytes) a call may carry; the node's gRPC server must
  // accept at least as much (ServerBuilder::SetMaxReceiveMessageSize).
  int max_message_bytes = 64 << 20;
};

class GrpcRpcChannel final : public replication::RpcChannel {
 public:
  // `executor` runs the callbacks and must outlive the channel.
  GrpcRpcChannel(GrpcRpcChannelOptions options, Executor* executor);
  ~GrpcRpcChannel() override;

  GrpcRpcChannel(const GrpcRpcChannel&) = delete;
  GrpcRpcChannel& operator=(const GrpcRpcChannel&) = delete;

  const std::string& self() const override { return options_.self; }
  void Call(const std::string& to, std::string_view method, std::string request, int64_t timeout_us,
            Done done) override;
  // `done` runs on gRPC's callback thread that completes the call (a call refused at once still
  // completes on the executor, never inside CallInline).
  void CallInline(const std::string& to, std::string_view method, std::string request,
                  int64_t timeout_us, Done done) override;
  void SetHandler(Handler handler) override;

  // Cancels pending calls and waits for their callbacks and for running handlers; later calls
  // fail with Unavailable (through the executor) and incoming ones are answered Unavailable.
  // Idempotent.
  void Shutdown();

  // Serves one incoming call (ReplicaService): hands it to the handler, or answers Unavailable
  // when there is none or the channel is shut down.
  void Serve(const std::string& from, const std::string& method, std::string request,
             Responder respond) {
    handlers_.Serve(from, method, std::move(request), std::move(respond));
  }

  const std::string& cluster_name() const { return options_.cluster_name; }

 private:
  struct Peer {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<::tessera::v1::Replica::Stub> stub;
    int in_flight = 0;
  };
  struct PendingCall;

  Peer& PeerLocked(const std::string& to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Start(const std::string& to, std::string_view method, std::string request,
             int64_t timeout_us, Done done, bool inline_done);
  void Finish(PendingCall* call, const grpc::Status& status);
  // Runs done(result) as an executor task, counted until it has run.
  void CompleteLater(Done done, StatusOr<std::string> result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // No call pending and no callback waiting to run (what Shutdown waits for).
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return calls_.empty() && completing_ == 0;
  }

  const GrpcRpcChannelOptions options_;
  Executor* const executor_;
  replication::HandlerSlot handlers_;

  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  int completing_ ABSL_GUARDED_BY(mu_) = 0;  // callbacks scheduled, not yet run
  std::map<std::string, Peer, std::less<>> peers_ ABSL_GUARDED_BY(mu_);
  std::map<PendingCall*, std::unique_ptr<PendingCall>> calls_ ABSL_GUARDED_BY(mu_);
};

// The serving end: refuses another cluster's calls with FAILED_PRECONDITION and hands the rest
// to the channel's handler, finishing the call when its Responder is called.
class ReplicaService final : public ::tessera::v1::Replica::CallbackService {
 public:
  // `channel` must outlive the service's server.
  explicit ReplicaService(GrpcRpcChannel* channel) : channel_(channel) {}

  grpc::ServerUnaryReactor* Call(grpc::CallbackServerContext* context,
                                 const ::tessera::v1::ReplicaCall* request,
                                 ::tessera::v1::ReplicaReply* reply) override;

 private:
  GrpcRpcChannel* const channel_;
};

}  // namespace tessera::server
