// Frames (one Transport message each; integers as in util/coding.h):
//
//   request:  kind = 1 (1 byte) | caller incarnation (fixed64) | call id (varint64) |
//             tessera.v1.ReplicaCall (the rest: from, method, payload)
//   response: kind = 2 (1 byte) | caller incarnation (fixed64) | call id (varint64) |
//             status code (varint32, 0 = OK) | status message (length-prefixed) |
//             tessera.v1.ReplicaReply (the rest: the payload, empty unless OK)
//
// The response repeats the caller's incarnation and call id, so the caller matches it to its
// pending call and ignores one meant for an earlier life of its channel.
#include "tessera/replication/message_rpc_channel.h"

#include <utility>

#include "tessera/util/coding.h"
#include "tessera/util/logging.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::replication {
namespace {

constexpr char kRequest = 1;
constexpr char kResponse = 2;

std::string FrameHeader(char kind, uint64_t incarnation, uint64_t id) {
  std::string frame(1, kind);
  PutFixed64(&frame, incarnation);
  PutVarint64(&frame, id);
  return frame;
}

}  // namespace

MessageRpcChannel::MessageRpcChannel(std::string self, cluster::Transport* transport,
                                     Executor* executor, Clock* clock,
                                     MessageRpcChannelOptions options)
    : self_(std::move(self)),
      transport_(transport),
      executor_(executor),
      options_(options),
      incarnation_(static_cast<uint64_t>(clock->NowMicros())),
      link_(std::make_shared<Link>()),
      handlers_(self_) {
  {
    absl::MutexLock lock(&link_->mu);
    link_->channel = this;
  }
  transport_->SetReceiver([this](std::string_view bytes) { Receive(bytes); });
}

MessageRpcChannel::~MessageRpcChannel() {
  // No frame arrives from here on, and none is being handled.
  transport_->SetReceiver(nullptr);
  {
    absl::MutexLock lock(&link_->mu);
    link_->channel = nullptr;
  }
  handlers_.Close();
  mu_.Lock();
  closed_ = true;
  // A callback below may call Call(), which (closed) only adds to pending_: drain to empty.
  while (!pending_.empty()) {
    auto node = pending_.extract(pending_.begin());
    if (node.mapped().timer != 0 && executor_->Cancel(node.mapped().timer)) --live_timers_;
    mu_.Unlock();
    node.mapped().done(
        absl::UnavailableError(StrCat("call to ", node.mapped().to, " failed: channel closed")));
    node = {};
    mu_.Lock();
  }
  // Timer tasks that had started when their Cancel came: they find nothing and finish.
  mu_.Await(absl::Condition(
      +[](int* live) { return *live == 0; }, &live_timers_));
  mu_.Unlock();
}

void MessageRpcChannel::Call(const std::string& to, std::string_view method, std::string request,
                             int64_t timeout_us, Done done) {
  uint64_t id;
  // Refused: never sent, and failed at once (on the timer's task, never inside Call).
  const bool refused = transport_->Refuses(to);
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    if (closed_) {
      // Only a callback run by the destructor gets here; the destructor completes it.
      pending_.emplace(id, Pending{to, std::move(done), 0});
      return;
    }
    Pending pending{to, std::move(done), 0};
    pending.timer = executor_->ScheduleAfter(
        refused ? 0 : timeout_us,
        [this, id, timeout_us, refused] { Expire(id, timeout_us, refused); });
    ++live_timers_;
    pending_.emplace(id, std::move(pending));
  }
  if (refused) return;
  ::tessera::v1::ReplicaCall call;
  call.set_from(self_);
  call.set_method(std::string(method));
  call.set_payload(std::move(request));
  std::string frame = FrameHeader(kRequest, incarnation_, id);
  call.AppendToString(&frame);
  transport_->Send(to, std::move(frame));
}

void MessageRpcChannel::SetHandler(Handler handler) { handlers_.Set(std::move(handler)); }

uint64_t MessageRpcChannel::frames_dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

void MessageRpcChannel::Receive(std::string_view bytes) {
  uint64_t incarnation = 0;
  uint64_t id = 0;
  const char kind = bytes.empty() ? 0 : bytes[0];
  std::string_view in = bytes.substr(bytes.empty() ? 0 : 1);
  if ((kind != kRequest && kind != kResponse) || !GetFixed64(&in, &incarnation) ||
      !GetVarint64(&in, &id)) {
    absl::MutexLock lock(&mu_);
    ++dropped_;
    TLOG_DEBUG("rpc {}: dropped a malformed frame of {} bytes", self_, bytes.size());
    return;
  }
  if (kind == kRequest) {
    ServeRequest(incarnation, id, in);
    return;
  }
  uint32_t code = 0;
  std::string_view message;
  ::tessera::v1::ReplicaReply reply;
  if (!GetVarint32(&in, &code) || !GetLengthPrefixed(&in, &message) ||
      !reply.ParseFromArray(in.data(), static_cast<int>(in.size()))) {
    absl::MutexLock lock(&mu_);
    ++dropped_;
    TLOG_DEBUG("rpc {}: dropped a malformed response to call {}", self_, id);
    return;
  }
  if (code == 0) {
    CompleteCall(incarnation, id, std::move(*reply.mutable_payload()));
  } else {
    CompleteCall(incarnation, id,
                 Status(static_cast<absl::StatusCode>(code), std::string(message)));
  }
}

void MessageRpcChannel::ServeRequest(uint64_t incarnation, uint64_t id, std::string_view body) {
  ::tessera::v1::ReplicaCall call;
  const bool parsed = call.ParseFromArray(body.data(), static_cast<int>(body.size()));
  {
    absl::MutexLock lock(&mu_);
    if (!parsed || !FirstSightLocked(call.from(), incarnation, id)) {
      ++dropped_;
      return;
    }
  }
  Responder respond = [link = link_, to = call.from(), incarnation, id](StatusOr<std::string> r) {
    absl::MutexLock lock(&link->mu);
    if (link->channel != nullptr) link->channel->SendResponse(to, incarnation, id, r);
  };
  handlers_.Serve(call.from(), call.method(), std::move(*call.mutable_payload()),
                  std::move(respond));
}

bool MessageRpcChannel::FirstSightLocked(const std::string& from, uint64_t incarnation,
                                         uint64_t id) {
  SenderWindow& window = senders_[from];
  if (incarnation < window.incarnation) return false;
  if (incarnation > window.incarnation) window = SenderWindow{incarnation, 0, {}};
  if (id <= window.floor || !window.seen.insert(id).second) return false;
  while (window.seen.size() > options_.dedup_window) {
    window.floor = *window.seen.begin();
    window.seen.erase(window.seen.begin());
  }
  return true;
}

void MessageRpcChannel::SendResponse(const std::string& to, uint64_t incarnation, uint64_t id,
                                     const StatusOr<std::string>& result) {
  std::string frame = FrameHeader(kResponse, incarnation, id);
  PutVarint32(&frame, static_cast<uint32_t>(result.status().code()));
  const absl::string_view message = result.status().message();  // empty when OK
  PutLengthPrefixed(&frame, std::string_view(message.data(), message.size()));
  ::tessera::v1::ReplicaReply reply;
  if (result.ok()) reply.set_payload(*result);
  reply.AppendToString(&frame);
  transport_->Send(to, std::move(frame));
}

void MessageRpcChannel::CompleteCall(uint64_t incarnation, uint64_t id,
                                     StatusOr<std::string> result) {
  Done done;
  {
    absl::MutexLock lock(&mu_);
    auto it = incarnation == incarnation_ ? pending_.find(id) : pending_.end();
    if (it == pending_.end()) {
      ++dropped_;  // late (timed out), duplicated, or for an earlier incarnation
      return;
    }
    done = std::move(it->second.done);
    if (executor_->Cancel(it->second.timer)) --live_timers_;
    pending_.erase(it);
  }
  done(std::move(result));
}

void MessageRpcChannel::Expire(uint64_t id, int64_t timeout_us, bool refused) {
  Done done;
  std::string to;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it != pending_.end()) {
      done = std::move(it->second.done);
      to = std::move(it->second.to);
      pending_.erase(it);
    }
  }
  if (done) {
    done(refused ? NotSent(absl::UnavailableError(
                       StrCat("call to ", to, " failed: connection refused (call ", id, ")")))
                 : absl::DeadlineExceededError(StrCat("no answer from ", to, " within ", timeout_us,
                                                      " us (call ", id, ")")));
    done = nullptr;
  }
  absl::MutexLock lock(&mu_);
  --live_timers_;
}

}  // namespace tessera::replication
