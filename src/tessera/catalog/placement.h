// Placement: which live nodes hold a tablet's replicas, and which of them is its primary
// (docs/replication.md, "Placement"). One function, two strategies chosen per table:
//
//   ring     Cassandra §5.1–5.2. Every node has a token on an order-preserving ring: a token is
//            a row key, and row keys compare as byte strings. A row key belongs to the node with
//            the smallest token strictly greater than the key, and a key at or above the largest
//            token wraps round to the node with the smallest token:
//
//                owner(key) = the first node with token > key, else the first node
//
//            (nodes in (token, endpoint) order). So the node with token t_i owns
//            [t_{i-1}, t_i), and the first node also owns the wrap-around, [t_last, "") and
//            ["", t_0). A ring table's tablets are cut at the tokens (RingSplits), and every key
//            of one tablet has the same owner. A tablet's primary is the owner of its start
//            row; its other replicas are the next nodes clockwise from there.
//   tablets  Bigtable §5.2. The master puts each tablet on the least loaded live nodes.
//
// Both strategies choose the same way, one replica at a time: the most preferred node (the
// nearest clockwise from the owner, or the least loaded) of a group still short of its count,
// passing over a node on a rack its group already uses while the group has an unused rack
// (ring when rack-aware; tablets always). A group is every live node, or, with per-DC
// replication factors, the nodes of one listed datacenter; nodes of other datacenters are
// never chosen. Between equally loaded nodes (tablets) the one whose rack holds less in total
// (this tablet's replicas chosen so far included) comes first, then the smaller endpoint: that
// keeps every node within one replica of every other when racks are the same size.
//
// The replicas come back clockwise (ring), so the primary is the first chosen node clockwise
// from the start row (the owner, unless the policy passes over its datacenter); or by (load,
// endpoint) (tablets), so the primary is the least loaded.
//
// Racks are named within their datacenter: rack "r1" of dc1 and rack "r1" of dc2 are two racks.
//
// Everything here is pure and deterministic: no clock, no randomness, no I/O; the order in
// which live nodes are listed never changes the answer.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::catalog {

// A live node as placement sees it (from gossip and the lock service).
struct PlacementNode {
  // The node's "host:port", as it appears in TabletConfig::replicas. Non-empty; no two live
  // nodes share one.
  std::string endpoint;
  // Its datacenter and rack (`--dc`, `--rack`, gossiped). A rack is named within its dc.
  std::string dc;
  std::string rack;
  // Its ring position (ring only): a non-empty row key, kept in the lock service and chosen by
  // ChooseToken when the node first joined. Ignored by the tablets strategy.
  std::string token;
  // What the node already holds (tablets only): the number of tablet replicas the master has
  // placed on it. Lower is preferred; the caller counts each placement it makes.
  uint64_t load = 0;
};

// How one table's tablets are placed: the table option's value, in the text form below.
//
//   policy      := strategy ":" [ "rack:" ] replication
//   strategy    := "ring" | "tablets"
//   replication := rf | dc "=" rf { "," dc "=" rf }     (dcs distinct; formatted in name order)
//   rf          := decimal digits, a value in [1, kMaxReplicationFactor]
//   dc          := one or more characters, none of them ":" "=" "," or whitespace
//
// Examples: "ring:3", "ring:rack:3", "ring:dc1=3,dc2=2", "ring:rack:dc1=2,dc2=2", "tablets:3",
// "tablets:dc1=2,dc2=1". "rack:" is for ring only: the tablets strategy always spreads replicas
// over racks, so "tablets:rack:..." is refused rather than accepted as a second spelling.
struct PlacementPolicy {
  enum class Strategy { kRing, kTablets };
  static constexpr int kMaxReplicationFactor = 64;

  Strategy strategy = Strategy::kRing;
  // The number of replicas when per_dc_rf is empty, in [1, kMaxReplicationFactor]. Must be 0
  // when per_dc_rf is set (each policy has one form).
  int replication_factor = 0;
  // Ring only: replicas on distinct racks while unused racks remain. Must be false for
  // kTablets, which always does so.
  bool rack_aware = false;
  // Datacenter-aware when non-empty: the number of replicas in each named datacenter, each in
  // [1, kMaxReplicationFactor]; nodes of other datacenters hold none. Names as `dc` above.
  std::map<std::string, int, std::less<>> per_dc_rf;

  // The replicas of one tablet: replication_factor, or the sum of per_dc_rf.
  int TotalReplicas() const;

  // InvalidArgument naming the problem: a replication factor out of range (overall or of a
  // datacenter, named), a datacenter name that is empty or holds a reserved character, both a
  // replication_factor and per_dc_rf, rack_aware with kTablets, the total above
  // kMaxReplicationFactor.
  Status Validate() const;

  friend bool operator==(const PlacementPolicy&, const PlacementPolicy&) = default;
};

// The text form above; InvalidArgument `invalid placement "<text>": <problem>` for anything
// else (unknown strategy, missing or malformed replication, a repeated datacenter, and every
// problem Validate() names).
StatusOr<PlacementPolicy> ParsePlacementPolicy(std::string_view text);
// REQUIRES: policy.Validate().ok(). ParsePlacementPolicy(FormatPlacementPolicy(p)) == p.
std::string FormatPlacementPolicy(const PlacementPolicy& policy);

// One tablet to place. Rows are [start_row, end_row); "" is unbounded (the table's start, or
// its end), as everywhere else.
struct TabletRange {
  uint64_t tablet_id = 0;  // named in errors only
  std::string start_row;
  std::string end_row;
};

// The endpoints of `tablet`'s replicas, policy.TotalReplicas() of them, distinct, primary
// first (see the top of this file for the rules).
// Errors:
//   InvalidArgument     the policy does not validate; a live node with an empty endpoint, an
//                       endpoint listed twice, or (ring) no token; end_row not after start_row.
//   FailedPrecondition  too few live nodes for the policy: "... needs 3 live nodes, there are
//                       2", or, for a datacenter of per_dc_rf, "... needs 2 live nodes in
//                       datacenter dc2, there are 1". Placing cannot succeed until nodes join
//                       or the policy changes, so this is not the retryable Unavailable.
StatusOr<std::vector<std::string>> Place(const PlacementPolicy& policy,
                                         const std::vector<PlacementNode>& live,
                                         const TabletRange& tablet);

// The split keys of a ring table: the nodes' distinct tokens, sorted. The table's tablets are
// ["", t_0), [t_0, t_1), ..., [t_last, ""); Place gives [t_{i-1}, t_i) the node with token t_i
// as primary, and both ["", t_0) and [t_last, "") the node with token t_0. A node without a
// token is not on the ring and gives no split.
std::vector<std::string> RingSplits(const std::vector<PlacementNode>& nodes);

// Ring tokens are 8 bytes: a position p in [0, 2^64) written big-endian (a valid row key,
// never empty; it may contain any byte). Any other token stands on the ring at the position of
// its first 8 bytes, zero-padded.
inline constexpr size_t kTokenBytes = 8;

// The token for a node joining a ring whose nodes hold `existing_tokens` (empty ones are
// ignored): the midpoint of the widest gap between consecutive positions, going round the ring
// (the gap from the last position to the first wraps through 2^64). Ties go to the gap that
// starts at the smallest position. On an empty ring: 0x80 00 00 00 00 00 00 00. The new token's
// position differs from every existing one (on any ring of fewer than 2^63 tokens).
std::string ChooseToken(const std::vector<std::string>& existing_tokens);

// The share of the ring each token owns, in [0, 1], by token (`tessera admin ring`): the node
// with token t_i owns [t_{i-1}, t_i) and the first also the wrap-around (see the top), measured
// in token positions. Shares add up to 1 (to rounding); one token owns all of it. Empty tokens
// are ignored; equal tokens count once; a token at the position of a smaller one gets 0.
std::map<std::string, double> RingShares(const std::vector<std::string>& tokens);

// A new table's replication factor on a cluster of `live_nodes` nodes: min(3, live_nodes), and
// at least 1.
int DefaultReplicationFactor(int live_nodes);

}  // namespace tessera::catalog
