// How gossip messages move between nodes: one Transport per node, best effort, like UDP.
//
// A message may be lost, delayed, duplicated or reordered; the gossip protocol tolerates all of
// it. Implementations: the simulated network (simulator.cc) and GrpcTransport (grpc_transport.h:
// a unary call whose request carries the encoded bytes).
//
// Thread-safety: Send() may be called from any thread. The receiver may be called on any thread
// the implementation owns, but never while Send() is running on the same thread (no reentrancy:
// the simulator queues deliveries as events), so a receiver may call Send().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "tessera/cluster/endpoint_state.h"

namespace tessera::cluster {

class Transport {
 public:
  // Called with each message that arrives for this node. The bytes live only during the call.
  using Receiver = std::function<void(std::string_view bytes)>;

  virtual ~Transport() = default;

  // Queues `bytes` for node `to` and returns at once (never waits on the network). Unknown or
  // unreachable destinations drop the message silently: gossip finds out through silence.
  virtual void Send(const NodeId& to, std::string bytes) = 0;

  // Installs the receiver (replacing any earlier one; nullptr: none). When it returns, the
  // earlier receiver is not running and will not be called again, so its owner may go (the
  // gossiper's destructor relies on it). Must not be called from within a receiver.
  virtual void SetReceiver(Receiver receiver) = 0;

  // Whether a message to `to` would certainly not arrive, and so is better not sent: nothing
  // runs there to take it, as a connection to a port nobody listens on is refused at once.
  // False when unknown (the default: an unreachable peer shows only as silence).
  virtual bool Refuses(const NodeId& /*to*/) const { return false; }

  // Peers that answered that we are not of their cluster, each with its explanation. Only a
  // transport with replies (gRPC) can know; the default knows none.
  virtual std::map<NodeId, std::string> Refusals() const { return {}; }

  // Waits up to `timeout_ms` for messages already sent to leave (a node about to stop wants its
  // shutdown announcement delivered). The default has nothing to wait for.
  virtual void Drain(int64_t /*timeout_ms*/) {}
};

}  // namespace tessera::cluster
