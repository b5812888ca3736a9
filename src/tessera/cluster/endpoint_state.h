// The versioned state one node publishes through gossip, and the rules for merging copies of it
// (Scuttlebutt, as in Cassandra §5.3).
//
// Every node owns one EndpointState: a heartbeat and a small set of application states (status,
// load, data centre, rack, master, and free-form keys such as the tablets it holds). Each change
// of the owner's state takes the next number from one per-node counter, so an endpoint's state
// is totally ordered by (generation, version): the generation changes when the node restarts
// (its start time, in seconds), the version counts changes within one generation. Other nodes
// hold copies and bring them up to date with deltas: "everything whose version is above v".
//
// Invariant of every copy (the prefix rule): a copy at (generation g, max version m) holds, for
// every key, the owner's latest value among versions <= m. ApplyDelta() keeps it by refusing a
// delta that would leave a hole (one that starts above the copy's max version, or one from a new
// generation that does not start at 0).
//
// Thread-safety: plain values; no internal locking.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::cluster {

// A node's name in gossip: its gossip address ("10.0.0.7:7946") or, in simulation, "n17".
using NodeId = std::string;

// Well-known application state keys. They travel as one-byte tags; any other key travels by
// name (see docs/cluster_membership.md).
inline constexpr std::string_view kStatusKey = "status";  // kStatusJoining / kStatusNormal / ...
inline constexpr std::string_view kLoadKey = "load";      // bytes stored, decimal
inline constexpr std::string_view kDcKey = "dc";
inline constexpr std::string_view kRackKey = "rack";
inline constexpr std::string_view kMasterKey = "master";  // set by the master: its lease term
inline constexpr std::string_view kStatusJoining = "joining";
inline constexpr std::string_view kStatusNormal = "normal";
inline constexpr std::string_view kStatusLeaving = "leaving";
// A clean stop, announced by the node itself (Gossiper::AnnounceShutdown): peers mark it down at
// once, without waiting for phi, until a new generation of it appears (Cassandra's "shutdown").
inline constexpr std::string_view kStatusShutdown = "shutdown";
// A tombstone an operator put for a dead node (Gossiper::RemoveEndpoint, `tessera admin
// removenode`): one generation above the dead one, so it wins over every copy; hidden from views.
inline constexpr std::string_view kStatusRemoved = "removed";
// Free-form keys (sent by name) every node of a cluster publishes. cluster_id: the id kept in the
// cluster's lock service (the first node creates it); a node whose cluster_id differs from ours
// uses another lock service and is refused. lock_service: the address the node was given
// ("etcd://...", "embedded"), so a refusal can say what to pass.
inline constexpr std::string_view kClusterIdKey = "cluster_id";
inline constexpr std::string_view kLockServiceKey = "lock_service";
// http: the node's HTTP port (metrics, the dashboard: server/dashboard.h), HOST:PORT; absent
// when it serves none.
inline constexpr std::string_view kHttpKey = "http";

struct VersionedValue {
  std::string value;
  int64_t version = 0;

  friend bool operator==(const VersionedValue&, const VersionedValue&) = default;
};

using AppStates = std::map<std::string, VersionedValue, std::less<>>;

struct EndpointState {
  int64_t generation = 0;
  int64_t heartbeat_version = 0;
  AppStates app_states;

  // The highest version in this state: the heartbeat's or an application state's.
  int64_t MaxVersion() const;
  // The highest version among application states only (0 when there are none).
  int64_t MaxAppVersion() const;
  // The value of `key`, or nullptr. Valid until the state changes.
  const std::string* Find(std::string_view key) const;

  friend bool operator==(const EndpointState&, const EndpointState&) = default;
};

// What one node sends another about one endpoint: the owner's state restricted to versions above
// `from_version`. The heartbeat always travels (it is monotonic, so taking the larger one is
// always safe); every application state in the delta has version > from_version.
struct EndpointDelta {
  NodeId endpoint;
  int64_t generation = 0;
  int64_t from_version = 0;  // 0: the whole state
  int64_t heartbeat_version = 0;
  AppStates app_states;

  friend bool operator==(const EndpointDelta&, const EndpointDelta&) = default;
};

// The part of `state` a peer that holds versions <= from_version is missing.
EndpointDelta MakeDelta(std::string_view endpoint, const EndpointState& state,
                        int64_t from_version);

enum class MergeOutcome {
  kNewGeneration,    // the owner restarted: the copy was replaced by the delta
  kUpdated,          // same generation, something newer arrived
  kUnchanged,        // nothing in the delta was newer than the copy
  kStaleGeneration,  // the delta is from an older generation: ignored
  kRejectedHole,     // applying it would break the prefix rule: ignored (asked for again later)
};

struct MergeResult {
  MergeOutcome outcome = MergeOutcome::kUnchanged;
  // Within the same generation, the heartbeat moved forward (the failure detector's signal).
  bool heartbeat_advanced = false;
};

// Merge rules: a higher generation wins (only as a whole state, from_version 0); within a
// generation the higher version of each key wins and the heartbeat takes the maximum.
// REQUIRES: copy != nullptr (the local copy of delta.endpoint's state).
MergeResult MergeDelta(const EndpointDelta& delta, EndpointState* copy);

// The first copy of an endpoint's state: the delta itself when it is whole (from_version 0),
// nullopt otherwise (a partial delta cannot start a copy without breaking the prefix rule).
std::optional<EndpointState> StateFromDelta(const EndpointDelta& delta);

const char* MergeOutcomeName(MergeOutcome outcome);

}  // namespace tessera::cluster
