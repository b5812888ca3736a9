// GrpcTransport: gossip between processes over gRPC (tessera.v1.Gossip/Exchange, one unary call
// per message, fire and forget), and GossipService, the receiving end registered on the node's
// gRPC server.
//
// Sending never blocks the caller: Send() starts an asynchronous call and returns. A peer that
// does not answer (dead, paused, partitioned) costs at most `max_in_flight_per_peer` pending
// calls, each bounded by `call_timeout_ms`; further messages to it are dropped, as a lossy
// network would, and the gossip protocol recovers from that. Channels are kept per peer and
// reconnect with a short backoff, so a restarted peer is reached again within about a second.
//
// Refusal: every packet carries the sender's cluster name. A receiver from another cluster
// answers FAILED_PRECONDITION naming its cluster; the sender records it (Refusals()), which is
// how a node configured with the wrong cluster name learns why no seed talks to it.
//
// Thread-safety: all methods are thread-safe. The receiver runs on the gRPC loop's thread.
// Lifetime: Shutdown() (or the destructor) cancels pending calls and waits for their callbacks;
// the GossipService must be unregistered (its server shut down) before the transport dies.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "tessera/cluster/transport.h"
#include "tessera/rpc/client.h"
#include "tessera/rpc/server.h"
#include "tessera/v1/cluster.grpc.pb.h"

namespace tessera::cluster {

struct GrpcTransportOptions {
  std::string cluster_name;  // sent with every packet; packets with another are refused
  int64_t call_timeout_ms = 2000;
  int max_in_flight_per_peer = 4;
  rpc::Loop* loop = nullptr;  // the calls run here; required, must outlive the transport
  // How packets to peers are secured (rpc/tls.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr;
};

class GrpcTransport final : public Transport {
 public:
  explicit GrpcTransport(GrpcTransportOptions options);
  ~GrpcTransport() override;

  void Send(const NodeId& to, std::string bytes) override;
  void SetReceiver(Receiver receiver) override;

  // Hands an arriving payload to the receiver (called by GossipService).
  void Deliver(std::string_view bytes);

  // Peers that refused our packets, with the cluster name each one reported ("cluster 'x'").
  std::map<NodeId, std::string> Refusals() const override;

  // Waits until every call started so far has finished, or `timeout_ms` passed.
  void Drain(int64_t timeout_ms) override;

  // Cancels pending calls and waits for their callbacks; later Sends are dropped. Idempotent.
  void Shutdown();

  const std::string& cluster_name() const { return options_.cluster_name; }

 private:
  struct Peer {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
    int in_flight = 0;
  };
  struct Call;

  void Finish(Call* call, const grpc::Status& status);
  // No call is in flight (the condition Drain and Shutdown wait for).
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_.empty(); }

  const GrpcTransportOptions options_;
  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  Receiver receiver_ ABSL_GUARDED_BY(mu_);
  int delivering_ ABSL_GUARDED_BY(mu_) = 0;  // receiver calls running now
  std::map<NodeId, Peer, std::less<>> peers_ ABSL_GUARDED_BY(mu_);
  std::map<Call*, std::unique_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  std::map<NodeId, std::string> refusals_ ABSL_GUARDED_BY(mu_);
};

// The receiving end: checks the cluster name and hands the payload to the transport.
class GossipService final {
 public:
  explicit GossipService(GrpcTransport* transport) : transport_(transport) {}

  // Registers Exchange (on the loop: delivering a packet waits for nothing).
  void Register(rpc::Services* services);

  rpc::UnaryReactor* Exchange(rpc::ServerContext* context,
                                     const ::tessera::v1::GossipPacket* request,
                                     ::tessera::v1::GossipReply* reply);

 private:
  GrpcTransport* const transport_;
};

}  // namespace tessera::cluster
