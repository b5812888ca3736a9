// RpcChannel: request and response between nodes, for the replication protocol
// (docs/replication.md, "Messages between nodes"). Each node has one channel; a call names the
// peer's endpoint, a method and the request's bytes (an encoded tessera.v1 replica message), and
// its callback gets the response's bytes or the failure. Two implementations:
//   * GrpcRpcChannel (server/grpc_rpc_channel.h): the `tessera.v1.Replica` service on the
//     node's one gRPC port, the calls to each peer multiplexed on one stream;
//   * MessageRpcChannel (message_rpc_channel.h): over a best-effort cluster::Transport, so that
//     the protocol runs on a SimNetwork on simulated time (docs/simulation.md).
//
// Semantics every implementation keeps:
//   * At most once per call: the handler may run zero or one time for a request (a lost request
//     never runs, a duplicate is not delivered twice), and `done` runs exactly once — with the
//     handler's response, or with a failure: DeadlineExceeded when no answer arrived within
//     timeout_us (the handler may still have run), Unavailable when the peer could not be
//     reached. A caller therefore treats every failure as "may have been applied", except one
//     marked NotSent (below): its request certainly never reached the peer.
//   * The handler's own Status travels back unchanged (code and message) when it fails.
//   * No ordering between calls, even to the same peer: the protocol numbers what it sends.
//   * Callbacks and handlers run on threads (or simulation tasks) the channel owns, never inside
//     Call() itself, so a callback may call Call() again and may take the caller's locks.
//
// Thread-safety: every method may be called from any thread. SetHandler must not be called from
// within a handler; when it returns the earlier handler is not running and will not run again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/cord.h"
#include "tessera/util/status.h"

namespace tessera::replication {

// The mark of a failed call whose request certainly never left this node (no connection to the
// peer could be made, the channel was closed, too many calls were in flight): the handler did
// not run, so even a write may be tried again. The mark is a payload; code and message stay.
inline constexpr char kNotSentPayload[] = "type.tessera.dev/rpc.NotSent";
inline Status NotSent(Status failure) {
  failure.SetPayload(kNotSentPayload, absl::Cord("1"));
  return failure;
}
inline bool WasNotSent(const Status& status) {
  return !status.ok() && status.GetPayload(kNotSentPayload).has_value();
}

class RpcChannel {
 public:
  // Sends the response (or the handler's error) back. Must be called exactly once, from any
  // thread, possibly after the handler has returned.
  using Responder = std::function<void(StatusOr<std::string> response)>;
  // Serves one incoming request: `from` is the caller's endpoint as it names itself.
  using Handler = std::function<void(const std::string& from, const std::string& method,
                                     std::string request, Responder respond)>;
  using Done = std::function<void(StatusOr<std::string> response)>;

  virtual ~RpcChannel() = default;

  // This node's endpoint, as peers name it.
  virtual const std::string& self() const = 0;

  // Calls `method` on the node at `to` and returns at once; `done` runs later, exactly once.
  // REQUIRES: timeout_us > 0.
  virtual void Call(const std::string& to, std::string_view method, std::string request,
                    int64_t timeout_us, Done done) = 0;
  // Call, except that `done` may run on the transport's own thread as the answer arrives (one
  // thread hand-off less per call), so it must be quick: it may call Call, take locks held
  // only briefly and read this node's storage, but must not wait for another node's answer or
  // for the commit log. Still never inside the call itself. The default is Call.
  virtual void CallInline(const std::string& to, std::string_view method, std::string request,
                          int64_t timeout_us, Done done) {
    Call(to, method, std::move(request), timeout_us, std::move(done));
  }

  // Installs the handler of incoming calls (nullptr: refuse them with Unavailable).
  virtual void SetHandler(Handler handler) = 0;
};

}  // namespace tessera::replication
