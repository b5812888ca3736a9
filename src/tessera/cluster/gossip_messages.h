// The three gossip messages (Cassandra's GossipDigestSyn / Ack / Ack2) and their compact binary
// encoding, so that any transport (simulated, gRPC bytes field) can carry them.
//
// One exchange, initiated by A towards B:
//   SYN   A -> B  digests: for every endpoint A knows, (endpoint, generation, max version)
//   ACK   B -> A  digests: what B wants from A (endpoint, generation, the version B holds);
//                 deltas:  what A is missing from B (including endpoints A did not list)
//   ACK2  A -> B  deltas:  what B asked for
// Every message carries the cluster name and the sender; a receiver refuses a message whose
// cluster name is not its own.
//
// Wire format (all integers varints unless said; "lp" = varint length, then bytes):
//   message := magic 0x67 (1 byte) | format version 1 (1 byte) | type (1 byte: 1 SYN, 2 ACK,
//              3 ACK2) | lp cluster_name | lp sender | body
//   SYN  body := count | digest*
//   ACK  body := count | digest* | count | delta*
//   ACK2 body := count | delta*
//   digest := endpoint | generation | version
//   delta  := endpoint | generation | from_version | heartbeat_version | count | app_state*
//   endpoint := shared | lp suffix: the first `shared` bytes of the previous entry's endpoint
//               in the same list (none for the first), then the suffix. Lists are sent sorted
//               by endpoint, so "10.0.0.17:7000" after "10.0.0.16:7000" costs 8 bytes, not 15.
//   generation := zigzag varint of (generation - previous entry's generation; 0 for the first)
//   app_state := tag | [lp name, only when tag is 0] | lp value | version
//   tags: 1 status, 2 load, 3 dc, 4 rack, 5 master; 0 = any other key, named.
// Decoding is strict: trailing bytes, unknown tags, duplicate keys in one delta, a well-known
// key sent by name, empty or over-long names, counts larger than the remaining bytes could hold,
// values above INT64_MAX, and application-state versions not above the delta's from_version are
// all InvalidArgument errors naming the problem and its byte offset, as are a shared prefix
// longer than the previous endpoint and a generation that lands outside [0, INT64_MAX]. See
// docs/cluster_membership.md.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cluster/endpoint_state.h"
#include "tessera/util/status.h"

namespace tessera::cluster {

inline constexpr uint8_t kGossipMagic = 0x67;
inline constexpr uint8_t kGossipFormatVersion = 1;
// Longest cluster name, node id or application-state key accepted on the wire.
inline constexpr size_t kMaxGossipNameBytes = 1024;

enum class GossipMessageType : uint8_t { kSyn = 1, kAck = 2, kAck2 = 3 };

const char* GossipMessageTypeName(GossipMessageType type);

struct GossipDigest {
  NodeId endpoint;
  int64_t generation = 0;
  int64_t version = 0;  // SYN: the sender's max version; ACK: the version the requester holds

  friend bool operator==(const GossipDigest&, const GossipDigest&) = default;
};

// One struct for the three types: SYN uses `digests`, ACK both, ACK2 `deltas`. Encoding writes
// only the fields of the message's type.
struct GossipMessage {
  GossipMessageType type = GossipMessageType::kSyn;
  std::string cluster_name;
  NodeId sender;
  std::vector<GossipDigest> digests;
  std::vector<EndpointDelta> deltas;

  friend bool operator==(const GossipMessage&, const GossipMessage&) = default;
};

std::string EncodeGossipMessage(const GossipMessage& message);
StatusOr<GossipMessage> DecodeGossipMessage(std::string_view bytes);

// Encoded sizes, for keeping a message under a byte budget while building it: exact for the
// first entry of a list; later entries share a name prefix and usually take fewer bytes (a
// generation far from the previous entry's may take up to two more).
size_t EncodedDigestSize(const GossipDigest& digest);
size_t EncodedDeltaSize(const EndpointDelta& delta);

}  // namespace tessera::cluster
