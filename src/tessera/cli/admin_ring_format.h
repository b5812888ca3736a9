// What `tessera admin ring` makes of a node's answers: the cluster status
// (tessera.v1.ClusterAdmin/GetClusterStatus: each node's dc, rack and state) and the ring
// (tessera.v1.TabletAdmin/GetRing: each node's token), merged into one line per node in ring
// order, with the share of the ring each node owns (Cassandra's `nodetool ring`). No RPCs
// here; admin.cc asks the node.
//
// A node owns the row keys from the previous token (inclusive) to its own (exclusive), the
// first node also the wrap-around (catalog/placement.h); its share is that arc's length over
// the whole ring, measured in token positions (catalog::RingShares).
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tessera/v1/cluster.pb.h"
#include "tessera/v1/tablet_admin.pb.h"

namespace tessera::cli {

struct RingLine {
  std::string endpoint;
  std::string dc;    // "" when the status does not list the node
  std::string rack;  // likewise
  // Liveness and gossiped status as the answering node sees them ("up normal", "down
  // shutdown", ...); "?" when the status does not list the node (removed, or never gossiped).
  std::string state;
  std::string token;           // its raw bytes; "" when the node has not chosen one yet
  std::optional<double> owns;  // its share of the ring, in [0, 1]; none without a token
};

// Every node of the ring, and every node of the status without a token, by token (ring
// order), then the ones without a token, by endpoint.
std::vector<RingLine> MergeRing(const ::tessera::v1::ClusterStatus& status,
                                const ::tessera::v1::Ring& ring);

// A header line (how many nodes, the cluster's name), then one aligned line per node:
// ADDRESS, DC, RACK, STATE, OWNS (a percentage with two decimals, "-" without a token) and
// TOKEN (hex: 16 digits for the 8-byte tokens nodes choose; "-" without one).
std::string FormatRing(const std::string& cluster_name, const std::vector<RingLine>& lines);

// {"cluster": name, "nodes": [{endpoint, dc, rack, state, token (hex or null), owns (a
// fraction or null)}]}, in ring order.
nlohmann::json RingToJson(const std::string& cluster_name, const std::vector<RingLine>& lines);

}  // namespace tessera::cli
