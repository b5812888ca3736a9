// MessageRpcChannel: the RpcChannel (rpc_channel.h) over a best-effort cluster::Transport, so
// that the replication protocol runs on a SimNetwork on simulated time (docs/simulation.md).
// Production uses GrpcRpcChannel (server/grpc_rpc_channel.h); both keep the same semantics.
//
// How a call travels: Call() sends one request frame (caller's incarnation, call id, and the
// tessera.v1.ReplicaCall envelope) and sets a timer of timeout_us on the Executor; the peer's
// channel hands the request to its handler and sends one response frame back (the same
// incarnation and call id, the handler's status, the tessera.v1.ReplicaReply envelope). The
// frame layout is written atop message_rpc_channel.cc.
//
// The contract's guarantees, and how:
//   * `done` exactly once: the pending call is removed by whichever comes first, the response
//     or the timer (DeadlineExceeded, "no answer from <peer> within <n> us"); a later or
//     duplicated response finds nothing and is dropped. The timer runs on the Executor, so on a
//     SimExecutor the deadline is exact simulated time.
//   * The handler at most once per request: the receiver remembers, per sender, the call ids
//     it has seen above a floor; an id at or below the floor, or seen before, is dropped
//     unanswered (the caller times out). The floor rises when more than `dedup_window` ids
//     are remembered, so memory stays bounded and a request older than the window is treated
//     as lost, never run twice. A restarted sender is told apart by its incarnation (the
//     clock's wall time when its channel was made); frames of an older incarnation are
//     dropped, so a response meant for a previous life never completes a new call.
//     Not covered: a duplicate reaching a receiver that restarted in between (its memory is
//     gone). SimNetwork never duplicates, and the protocol above numbers what it sends.
//   * Unavailable: the Transport reports nothing (a message to an unreachable peer is lost), so
//     an unreachable peer shows as DeadlineExceeded. Unavailable comes from a peer with no
//     handler installed, from a channel being destroyed, and, marked NotSent, from a peer the
//     transport Refuses (nothing runs there: a crashed node), to which nothing is sent.
//   * Handlers and callbacks run inside the transport's receiver or a timer task, never inside
//     Call().
//
// No cluster name travels here: a SimNetwork carries one cluster.
//
// Thread-safety: every method may be called from any thread.
// Lifetime: the destructor uninstalls the transport's receiver (so it must not run inside one
// of this channel's handlers or callbacks), completes every pending call with Unavailable
// ("channel closed") on the destructor's thread — including calls those callbacks make — and
// waits for timer tasks already running; after it returns no handler or callback of this
// channel runs. A Responder called after that does nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/cluster/transport.h"
#include "tessera/replication/handler_slot.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"

namespace tessera::replication {

struct MessageRpcChannelOptions {
  // Call ids remembered per sender for duplicate detection (> 0). A request that arrives after
  // this many later ones from the same sender is dropped as if lost.
  size_t dedup_window = 4096;
};

class MessageRpcChannel final : public RpcChannel {
 public:
  // `self` is the endpoint `transport` is attached under. `transport`, `executor` and `clock`
  // must outlive the channel; the channel installs itself as the transport's receiver.
  MessageRpcChannel(std::string self, cluster::Transport* transport, Executor* executor,
                    Clock* clock, MessageRpcChannelOptions options = {});
  ~MessageRpcChannel() override;

  MessageRpcChannel(const MessageRpcChannel&) = delete;
  MessageRpcChannel& operator=(const MessageRpcChannel&) = delete;

  const std::string& self() const override { return self_; }
  void Call(const std::string& to, std::string_view method, std::string request, int64_t timeout_us,
            Done done) override;
  void SetHandler(Handler handler) override;

  // Frames dropped because they were malformed, duplicated, late or of an old incarnation.
  uint64_t frames_dropped() const;

 private:
  struct Pending {
    std::string to;
    Done done;
    TimerId timer = 0;  // 0: none (a call made while closing)
  };
  // What the receiver remembers of one sender's requests.
  struct SenderWindow {
    uint64_t incarnation = 0;
    uint64_t floor = 0;       // every id <= floor counts as seen
    std::set<uint64_t> seen;  // ids > floor already delivered
  };
  // Lets a Responder outlive the channel: it sends through `channel` while that is set.
  struct Link {
    absl::Mutex mu;
    MessageRpcChannel* channel ABSL_GUARDED_BY(mu);
  };

  void Receive(std::string_view bytes);
  void ServeRequest(uint64_t incarnation, uint64_t id, std::string_view body);
  void CompleteCall(uint64_t incarnation, uint64_t id, StatusOr<std::string> result);
  // Completes call `id`: DeadlineExceeded after timeout_us, or, `refused`, Unavailable marked
  // NotSent.
  void Expire(uint64_t id, int64_t timeout_us, bool refused);
  void SendResponse(const std::string& to, uint64_t incarnation, uint64_t id,
                    const StatusOr<std::string>& result);
  // True when (from, incarnation, id) is new; remembers it.
  bool FirstSightLocked(const std::string& from, uint64_t incarnation, uint64_t id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string self_;
  cluster::Transport* const transport_;
  Executor* const executor_;
  const MessageRpcChannelOptions options_;
  const uint64_t incarnation_;
  const std::shared_ptr<Link> link_;
  HandlerSlot handlers_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  int live_timers_ ABSL_GUARDED_BY(mu_) = 0;  // scheduled, neither cancelled nor finished
  std::map<std::string, SenderWindow> senders_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::replication
