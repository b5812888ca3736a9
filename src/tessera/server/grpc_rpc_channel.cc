// The calling end of GrpcRpcChannel: a stream per peer (grpc_replica_service.cc is the serving
// end).
#include "tessera/server/grpc_rpc_channel.h"

#include <algorithm>
#include <utility>

#include "tessera/util/status.h"

namespace tessera::server {

namespace v1 = ::tessera::v1;

// Bytes of frames one message carries at most (below max_message_bytes when that is lower);
// more queued frames wait for the next message.
constexpr size_t kMessageBudgetBytes = 4 << 20;
// The longest the timer thread sleeps; a call whose deadline comes before its next wake wakes
// it, any other call leaves it asleep (a wake-up per call cost a thread switch, measured).
constexpr absl::Duration kTimerIdleTick = absl::Milliseconds(100);
// gRPC's words for a call that found no connection to the peer (its pick_first policy).
constexpr std::string_view kNoConnection = "failed to connect to all addresses";
// The stream's method path.
const std::string kStreamMethod = "/tessera.v1.Replica/Stream";

size_t FrameBytes(const v1::ReplicaFrame& frame) {
  return frame.payload().size() + frame.method().size() + frame.message().size() +
         kFrameOverheadBytes;
}

void PackReplicaFrames(std::vector<v1::ReplicaFrame>* queue, v1::ReplicaFrames* message,
                       int max_message_bytes) {
  message->Clear();
  const size_t budget = std::min(kMessageBudgetBytes, static_cast<size_t>(max_message_bytes));
  size_t bytes = 0;
  size_t taken = 0;
  for (v1::ReplicaFrame& frame : *queue) {
    const size_t size = FrameBytes(frame);
    if (taken > 0 && bytes + size > budget) break;
    bytes += size;
    *message->add_frames() = std::move(frame);
    ++taken;
  }
  queue->erase(queue->begin(), queue->begin() + static_cast<std::ptrdiff_t>(taken));
}

// One stream to one peer. Its state is guarded by the channel's mutex; gRPC's Start* calls are
// made without it. One write is outstanding at a time (`writing`: packed into `out` by whoever
// set it, then written), and one read always, until the stream ends (`ended`: a read failed).
// A hold keeps gRPC from finishing the stream while a thread may still be about to write; it
// is released once the stream has ended and no write is wanted. OnDone then hands the stream
// back to the channel, which deletes it.
class GrpcRpcChannel::PeerStream final
    : public rpc::ClientBidiReactor<v1::ReplicaFrames, v1::ReplicaFrames> {
 public:
  PeerStream(GrpcRpcChannel* owner, std::string to) : to(std::move(to)), owner_(owner) {}

  // Starts the call with the first message (`out`; `writing` is set).
  void Begin(grpc::GenericStub* stub) {
    Start(stub, kStreamMethod, &context, owner_->loop_);
    AddHold();
    StartRead(&in_);
    StartWrite(&out);
    StartCall();
  }
  void WriteOut() { StartWrite(&out); }

  void OnWriteDone(bool ok) override {
    bool more = false;
    bool release = false;
    {
      absl::MutexLock lock(&owner_->mu_);
      if (ok && !ended && !queued.empty()) {
        PackReplicaFrames(&queued, &out, owner_->max_message_bytes());
        more = true;
      } else {
        writing = false;  // after a failed write the read fails too
        release = ended;
      }
    }
    if (more) WriteOut();
    if (release) RemoveHold();
  }
  void OnReadDone(bool ok) override {
    if (ok) {
      GrpcRpcChannel* owner = owner_;  // the stream may be gone once the next read is started
      InlineDones dones = owner->Answered(this, &in_);
      StartRead(&in_);
      owner->RunInline(std::move(dones));
      return;
    }
    bool release = false;
    {
      absl::MutexLock lock(&owner_->mu_);
      ended = true;
      release = !writing;
    }
    if (release) RemoveHold();
  }
  void OnDone(const grpc::Status& status) override { owner_->StreamDone(this, status); }

  // Guarded by the channel's mutex (`context` is gRPC's).
  const std::string to;
  grpc::ClientContext context;
  std::vector<v1::ReplicaFrame> queued;
  v1::ReplicaFrames out;
  bool writing = false;
  bool ended = false;
  uint64_t reads = 0;       // messages read so far
  uint64_t sent_reads = 0;  // `reads` when the latest call was queued
  // When the first call queued since the latest read was (the stream's start at first).
  absl::Time waiting_since = absl::Now();

 private:
  GrpcRpcChannel* const owner_;
  v1::ReplicaFrames in_;  // touched only by the reading side (one read at a time)
};

GrpcRpcChannel::GrpcRpcChannel(GrpcRpcChannelOptions options, Executor* executor,
                               rpc::Loop* loop)
    : options_(std::move(options)), executor_(executor), loop_(loop), handlers_(options_.self) {
  timer_ = std::thread([this] { ExpireCalls(); });
}

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
  peer.channel = grpc::CreateCustomChannel(
      to,
      options_.credentials != nullptr ? options_.credentials : grpc::InsecureChannelCredentials(),
      args);
  peer.stub = std::make_unique<grpc::GenericStub>(peer.channel);
  return peers_.emplace(to, std::move(peer)).first->second;
}

void GrpcRpcChannel::Call(const std::string& to, std::string_view method, std::string request,
                          int64_t timeout_us, Done done) {
  Start(to, method, std::move(request), timeout_us, std::move(done), /*inline_done=*/false);
}

void GrpcRpcChannel::CallInline(const std::string& to, std::string_view method, std::string request,
                                int64_t timeout_us, Done done) {
  Start(to, method, std::move(request), timeout_us, std::move(done), /*inline_done=*/true);
}

void GrpcRpcChannel::Start(const std::string& to, std::string_view method, std::string request,
                           int64_t timeout_us, Done done, bool inline_done) {
  PeerStream* begin = nullptr;  // a new stream, to start
  PeerStream* write = nullptr;  // an idle stream, to write on
  grpc::GenericStub* stub = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      CompleteLater(std::move(done), replication::NotSent(absl::UnavailableError(
                                         StrCat("call to ", to, " failed: channel closed"))));
      return;
    }
    if (request.size() + method.size() + kFrameOverheadBytes >
        static_cast<size_t>(options_.max_message_bytes)) {
      CompleteLater(std::move(done),
                    absl::ResourceExhaustedError(
                        StrCat("call to ", to, ": a request of ", request.size(),
                               " bytes is above the limit of ", options_.max_message_bytes)));
      return;
    }
    Peer& peer = PeerLocked(to);
    if (peer.in_flight >= options_.max_in_flight_per_peer) {
      CompleteLater(std::move(done), replication::NotSent(absl::UnavailableError(
                                         StrCat("too many calls in flight to ", to))));
      return;
    }
    peer.in_flight++;
    PeerStream* stream = peer.stream;
    if (stream != nullptr && stream->ended) stream = peer.stream = nullptr;
    if (stream == nullptr) {
      stream = new PeerStream(this, to);
      stream->context.AddMetadata(kStreamClusterKey, options_.cluster_name);
      stream->context.AddMetadata(kStreamFromKey, options_.self);
      peer.stream = stream;
      streams_.insert(stream);
      begin = stream;
      stub = peer.stub.get();
    }
    const uint64_t id = ++next_id_;
    v1::ReplicaFrame& frame = stream->queued.emplace_back();
    frame.set_id(id);
    frame.set_method(std::string(method));
    frame.set_payload(std::move(request));
    const absl::Time now = absl::Now();
    if (stream->sent_reads != stream->reads) stream->waiting_since = now;  // read since the last
    stream->sent_reads = stream->reads;
    const absl::Time deadline = now + absl::Microseconds(timeout_us);
    const bool earliest = deadline < timer_wakes_at_;
    deadlines_.emplace(deadline, id);
    calls_.emplace(id, PendingCall{.to = to,
                                   .stream = stream,
                                   .deadline = deadline,
                                   .timeout_us = timeout_us,
                                   .inline_done = inline_done,
                                   .done = std::move(done)});
    if (earliest) timer_cv_.Signal();
    if (!stream->writing) {
      stream->writing = true;
      PackReplicaFrames(&stream->queued, &stream->out, options_.max_message_bytes);
      if (begin == nullptr) write = stream;
    }
  }
  // A Shutdown() before the start cancels the context first, which gRPC honours.
  if (begin != nullptr) begin->Begin(stub);
  if (write != nullptr) write->WriteOut();
}

bool GrpcRpcChannel::CompleteLocked(uint64_t id, StatusOr<std::string> result,
                                    InlineDones* inline_dones) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return false;
  PendingCall& call = it->second;
  auto peer = peers_.find(call.to);
  if (peer != peers_.end()) peer->second.in_flight--;
  deadlines_.erase({call.deadline, id});
  if (call.inline_done && inline_dones != nullptr) {
    ++completing_;  // Shutdown waits for it as for a scheduled one
    inline_dones->emplace_back(std::move(call.done), std::move(result));
  } else {
    CompleteLater(std::move(call.done), std::move(result));
  }
  calls_.erase(it);
  return true;
}

void GrpcRpcChannel::RunInline(InlineDones dones) {
  for (auto& [done, result] : dones) {
    done(std::move(result));
    done = nullptr;
  }
  if (dones.empty()) return;
  absl::MutexLock lock(&mu_);
  completing_ -= static_cast<int>(dones.size());
}

GrpcRpcChannel::InlineDones GrpcRpcChannel::Answered(PeerStream* stream,
                                                     v1::ReplicaFrames* frames) {
  InlineDones inline_dones;
  {
    absl::MutexLock lock(&mu_);
    stream->reads++;
    for (v1::ReplicaFrame& frame : *frames->mutable_frames()) {
      StatusOr<std::string> result =
          frame.code() == 0 ? StatusOr<std::string>(std::move(*frame.mutable_payload()))
                            : StatusOr<std::string>(Status(
                                  static_cast<absl::StatusCode>(frame.code()), frame.message()));
      CompleteLocked(frame.id(), std::move(result), &inline_dones);  // gone: it timed out
    }
  }
  frames->Clear();
  return inline_dones;
}

void GrpcRpcChannel::StreamDone(PeerStream* stream, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  Status failure;
  switch (status.error_code()) {
    case grpc::StatusCode::FAILED_PRECONDITION:
      failure = absl::FailedPreconditionError(
          StrCat(stream->to, " refused the call: ", status.error_message()));
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      failure = absl::ResourceExhaustedError(
          StrCat("call to ", stream->to, ": ", status.error_message()));
      break;
    default:
      failure = absl::UnavailableError(
          StrCat("call to ", stream->to,
                 " failed: ", status.ok() ? "the peer ended the stream" : status.error_message()));
      // gRPC fails a call this way only when it could pick no connection for it, before any
      // byte of it was written (a call on a connection that breaks fails otherwise: "Socket
      // closed", "Connection reset by peer"), and a stream that read nothing never connected.
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE && stream->reads == 0 &&
          status.error_message().find(kNoConnection) != std::string::npos) {
        failure = replication::NotSent(std::move(failure));
      }
  }
  std::vector<uint64_t> failed;
  for (const auto& [id, call] : calls_) {
    if (call.stream == stream) failed.push_back(id);
  }
  for (uint64_t id : failed) CompleteLocked(id, failure, nullptr);
  auto peer = peers_.find(stream->to);
  if (peer != peers_.end() && peer->second.stream == stream) peer->second.stream = nullptr;
  streams_.erase(stream);
  // The ClientContext goes under the lock, before Shutdown can see the channel idle (see
  // GrpcTransport::Finish: a context outliving gRPC aborts the process).
  delete stream;
}

void GrpcRpcChannel::ExpireCalls() {
  absl::MutexLock lock(&mu_);
  while (!shut_down_) {
    const absl::Time now = absl::Now();
    const absl::Time next = deadlines_.empty() ? absl::InfiniteFuture() : deadlines_.begin()->first;
    if (now < next) {
      timer_wakes_at_ = std::min(next, now + kTimerIdleTick);
      timer_cv_.WaitWithDeadline(&mu_, timer_wakes_at_);
      timer_wakes_at_ = absl::InfinitePast();
      continue;
    }
    const uint64_t id = deadlines_.begin()->second;
    PendingCall& call = calls_.at(id);
    PeerStream* stream = call.stream;
    Status expired = absl::DeadlineExceededError(
        StrCat("no answer from ", call.to, " within ", call.timeout_us, " us"));
    CompleteLocked(id, std::move(expired), nullptr);
    // Nothing came back for silent_stream_us while calls waited: the stream may hang (a peer
    // paused, a connection dropped without a reset). Calls from now on take a new one.
    if (stream->reads == stream->sent_reads &&
        now - stream->waiting_since >= absl::Microseconds(options_.silent_stream_us)) {
      auto peer = peers_.find(stream->to);
      if (peer != peers_.end() && peer->second.stream == stream) {
        peer->second.stream = nullptr;
        stream->context.TryCancel();  // gRPC runs no reaction inside it
      }
    }
  }
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

void GrpcRpcChannel::ServeLater(std::string from, std::string method, std::string request,
                                Responder respond) {
  {
    absl::MutexLock lock(&mu_);
    ++serving_;
  }
  executor_->Schedule([this, from = std::move(from), method = std::move(method),
                       request = std::move(request), respond = std::move(respond)]() mutable {
    Serve(from, method, std::move(request), std::move(respond));
    respond = nullptr;
    absl::MutexLock lock(&mu_);
    --serving_;
  });
}

void GrpcRpcChannel::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (!shut_down_) {
      shut_down_ = true;
      timer_cv_.Signal();
    }
    for (auto& [to, peer] : peers_) peer.stream = nullptr;
    for (PeerStream* stream : streams_) stream->context.TryCancel();
  }
  if (timer_.joinable()) timer_.join();
  // Running handlers may still call out (failing at once, counted in completing_), so they end
  // before the wait for the callbacks.
  handlers_.Close();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &GrpcRpcChannel::Idle));
}

}  // namespace tessera::server
