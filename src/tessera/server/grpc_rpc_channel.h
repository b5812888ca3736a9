// GrpcRpcChannel: the replication protocol's RpcChannel (replication/rpc_channel.h) between
// processes, as `tessera.v1.Replica/Stream` on each node's one gRPC port, and ReplicaService, the
// serving end registered on that port. MessageRpcChannel (replication/message_rpc_channel.h)
// is the same contract on a simulated network.
//
// Client side: one gRPC channel per peer, kept for the channel's life, reconnecting with a
// short backoff (as GrpcTransport does), and on it one bidirectional stream that carries every
// call to that peer and its answers (docs/replication.md, "Messages between nodes"). A call is a
// frame; frames queued while a message is being written go out together in the next message, so
// under load many calls share one HTTP/2 message, one write and one wake-up at each end. A
// stream that fails is replaced by a new one at the next call; a stream on which a call timed
// out with nothing received for `silent_stream_us` while calls waited on it is given up
// (cancelled, its calls failing Unavailable) the same way, so a peer that hangs or vanishes
// without closing its connection is reached again once it answers, while one that stalls for
// less (a slow disk, an overloaded machine) keeps the calls it will still answer. A
// peer that does not answer holds at most `max_in_flight_per_peer` calls; beyond that Call()
// fails at once with Unavailable ("too many calls in flight to <peer>").
//
// Outcomes: the handler's response, or its failure with code and message unchanged, or
//   DeadlineExceeded     no answer within timeout_us (the handler may have run);
//   FailedPrecondition   the peer belongs to another cluster (the message names both);
//   ResourceExhausted    a request or response above max_message_bytes;
//   Unavailable          anything else that kept the call from the handler or its answer
//                        from us: connection refused, unknown host, the stream failing, the
//                        peer shutting down or not serving the protocol, this channel shut
//                        down.
// A reply frame's status is always the handler's own, so a handler's DeadlineExceeded or
// Unavailable reaches the caller unchanged.
//
// Callbacks: every `done` of Call runs as a task on the Executor given at construction — never
// on a gRPC thread, never inside Call() — so a callback may call Call() and take the caller's
// locks. CallInline's runs on the loop thread that read the answer (rpc_channel.h says what
// such a callback may do). Streams run on the node's gRPC loop (rpc/loop.h).
// Handlers run as tasks of the executor, each call of a message its own, so that a handler
// that blocks (on its commit log, say) holds up neither the loop nor another call — but for
// the options' inline_methods, which never wait and run on the loop thread that read them. A
// handler may answer later, from any thread; answers to a stream that has ended are dropped.
//
// Thread-safety: all methods are thread-safe.
// Lifetime: Shutdown() (or the destructor) cancels the streams and waits until every `done`
// has run and no handler is running; it must not be called from a handler, a callback or a
// task of the executor. The ReplicaService must be unregistered (its server shut down) before
// the channel is destroyed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "tessera/replication/handler_slot.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/rpc/client.h"
#include "tessera/rpc/server.h"
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
  // A call timing out gives its stream up when nothing has come back on it for this long while
  // calls waited (from the first call sent since the latest answer).
  int64_t silent_stream_us = 2'000'000;
  // Methods whose handler never waits (for its commit log, another node, a lock): served on
  // the loop thread that read them, a hand-off less (a read at its tablet's primary, say). Every
  // other method is served on the executor.
  std::set<std::string, std::less<>> inline_methods;
  // How calls to peers are secured (rpc/tls.h: the node's certificate under mutual TLS); null:
  // plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

class GrpcRpcChannel final : public replication::RpcChannel {
 public:
  // `executor` runs the callbacks and must outlive the channel; the streams run on `loop`,
  // which must too.
  GrpcRpcChannel(GrpcRpcChannelOptions options, Executor* executor, rpc::Loop* loop);
  ~GrpcRpcChannel() override;

  GrpcRpcChannel(const GrpcRpcChannel&) = delete;
  GrpcRpcChannel& operator=(const GrpcRpcChannel&) = delete;

  const std::string& self() const override { return options_.self; }
  void Call(const std::string& to, std::string_view method, std::string request, int64_t timeout_us,
            Done done) override;
  // `done` runs on the loop thread that completes the call (a call refused at once still
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

  // Serve, as a task of the executor (counted: Shutdown waits for it).
  void ServeLater(std::string from, std::string method, std::string request, Responder respond);

  const std::string& cluster_name() const { return options_.cluster_name; }
  int max_message_bytes() const { return options_.max_message_bytes; }
  // Whether `method` is served on the thread that read it (GrpcRpcChannelOptions).
  bool ServesInline(std::string_view method) const {
    return options_.inline_methods.find(method) != options_.inline_methods.end();
  }

 private:
  class PeerStream;
  struct Peer {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
    PeerStream* stream = nullptr;  // the stream new calls go on (null: none yet, or it failed)
    int in_flight = 0;
  };
  struct PendingCall {
    std::string to;
    PeerStream* stream = nullptr;
    absl::Time deadline;
    int64_t timeout_us = 0;
    bool inline_done = false;  // CallInline: `done` runs on the loop thread that read the answer
    Done done;
  };

  Peer& PeerLocked(const std::string& to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Start(const std::string& to, std::string_view method, std::string request,
             int64_t timeout_us, Done done, bool inline_done);
  using InlineDones = std::vector<std::pair<Done, StatusOr<std::string>>>;
  // Takes call `id` out of the pending ones (false when it is not there any more) and hands its
  // result on: to `*inline_dones` when it is an inline one (and that is not null), else as an
  // executor task.
  bool CompleteLocked(uint64_t id, StatusOr<std::string> result, InlineDones* inline_dones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the inline callbacks CompleteLocked collected (without the lock).
  void RunInline(InlineDones dones) ABSL_LOCKS_EXCLUDED(mu_);
  // Stream callbacks (PeerStream): the answers of one message read (returning the inline
  // callbacks to run once the next read is started), and the stream's end.
  InlineDones Answered(PeerStream* stream, ::tessera::v1::ReplicaFrames* frames)
      ABSL_LOCKS_EXCLUDED(mu_);
  void StreamDone(PeerStream* stream, const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails the calls whose deadline has passed, until Shutdown (the timer thread).
  void ExpireCalls();
  // Runs done(result) as an executor task, counted until it has run.
  void CompleteLater(Done done, StatusOr<std::string> result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // No call pending, no callback waiting to run, no stream open and no call being served
  // (what Shutdown waits for).
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return calls_.empty() && completing_ == 0 && streams_.empty() && serving_ == 0;
  }

  const GrpcRpcChannelOptions options_;
  Executor* const executor_;
  rpc::Loop* const loop_;
  replication::HandlerSlot handlers_;

  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  int completing_ ABSL_GUARDED_BY(mu_) = 0;             // callbacks scheduled, not yet run
  std::set<PeerStream*> streams_ ABSL_GUARDED_BY(mu_);  // not yet done
  int serving_ ABSL_GUARDED_BY(mu_) = 0;  // incoming calls handed to the executor, not run
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Peer, std::less<>> peers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, PendingCall> calls_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, uint64_t>> deadlines_ ABSL_GUARDED_BY(mu_);  // of calls_
  absl::CondVar timer_cv_;  // a deadline before timer_wakes_at_, or Shutdown
  // When the timer thread wakes next: it never sleeps longer than kTimerIdleTick, so a call
  // whose deadline is later (nearly all) need not wake it. (absl::InfinitePast: not waiting.)
  absl::Time timer_wakes_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread timer_;
};

// The serving end of both methods: refuses another cluster's calls or streams with
// FAILED_PRECONDITION and hands the calls to the channel's handler, answering each when its
// Responder is called.
class ReplicaService final {
 public:
  // `channel` must outlive the service's server.
  explicit ReplicaService(GrpcRpcChannel* channel) : channel_(channel) {}

  // Registers both methods (on the loop: they hand every call to the channel's executor).
  void Register(rpc::Services* services);

  rpc::UnaryReactor* Call(rpc::ServerContext* context,
                                 const ::tessera::v1::ReplicaCall* request,
                                 ::tessera::v1::ReplicaReply* reply);
  rpc::BidiReactor<::tessera::v1::ReplicaFrames, ::tessera::v1::ReplicaFrames>* Stream(
      rpc::ServerContext* context);

 private:
  GrpcRpcChannel* const channel_;
};

// Moves frames from the front of `queue` into `message` (cleared first): as many as fit in a
// few MiB and in max_message_bytes, and at least one. Both ends batch their frames with it.
void PackReplicaFrames(std::vector<::tessera::v1::ReplicaFrame>* queue,
                       ::tessera::v1::ReplicaFrames* message, int max_message_bytes);
// What a frame adds to its payload, method and message at most (id, tags, lengths): a frame
// whose parts and this exceed max_message_bytes is refused with ResourceExhausted.
inline constexpr size_t kFrameOverheadBytes = 64;

// The metadata keys a stream's caller names itself with.
inline constexpr char kStreamClusterKey[] = "tessera-cluster";
inline constexpr char kStreamFromKey[] = "tessera-from";

}  // namespace tessera::server
