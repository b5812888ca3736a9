// TablePlacement: the placement one table gets (docs/replication.md, "Placement"). A table's
// option (tessera.v1.TableOptions.placement, kept in model::TableSchema::options) is resolved
// once, when the table is created, against the node's default (`tessera serve --placement`)
// and the live nodes, and stored in its whole text form; the master then places every tablet
// of the table with that policy (placement.h), whichever node is master.
//
// Option texts, for a table and for a node's default alike:
//   ""                the other text (the node's default); for the default itself: "tablets"
//   "ring" "tablets"  that strategy, replication factor DefaultReplicationFactor(live nodes)
//   anything else     a whole policy, ParsePlacementPolicy ("ring:rack:3", "tablets:dc1=2")
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/catalog/placement.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

// The node-wide default when none is given.
inline constexpr std::string_view kDefaultPlacement = "tablets";

// InvalidArgument unless `text` is a strategy alone or a whole policy (above); "" is refused.
// For the `--placement` flag, checked when the node starts.
Status ValidatePlacementText(std::string_view text);

// The policy of a new table: `option`, or `node_default` when it is "" (itself "" meaning
// kDefaultPlacement), resolved as above against `live`, and checked against it.
// InvalidArgument naming the problem: text that is neither form (ParsePlacementPolicy's
// message), a policy needing more replicas than there are live nodes ("placement "tablets:5"
// needs 5 nodes, the cluster has 3 live"), or more in a datacenter it names than that
// datacenter has ("... datacenter dc3 has no live nodes" when it has none).
StatusOr<PlacementPolicy> ResolveTablePlacement(std::string_view option,
                                                std::string_view node_default,
                                                const std::vector<PlacementNode>& live);

// The policy the master places a table's tablets with: its stored option, or, for a table made
// before placement options existed (""), the tablets strategy with a replication factor of
// DefaultReplicationFactor(live_nodes) capped at max_replication_factor (their behaviour then).
// InvalidArgument when the stored text is not a whole policy.
StatusOr<PlacementPolicy> StoredTablePlacement(std::string_view stored, int live_nodes,
                                               int max_replication_factor);

// The policy of Tessera's own METADATA table: every tablet location is read from it, so it must
// stay readable wherever clients are. On live nodes of one datacenter, the tablets strategy
// with DefaultReplicationFactor(live) replicas; across several, DefaultReplicationFactor of
// each datacenter's live nodes in each ("tablets:dc1=3,dc2=3"), so that a whole datacenter
// going away leaves the others their own copies to read at ONE. Every count is capped at
// max_replication_factor. `live` must not be empty.
PlacementPolicy MetadataPlacement(const std::vector<PlacementNode>& live,
                                  int max_replication_factor);

// The split keys of a new table: `initial_splits` (CreateTable's), and for a ring policy also
// the ring's tokens (RingSplits of `ring`), so that every tablet lies between two consecutive
// tokens and has one owner. The tokens follow the initial splits, which keep their order (so
// that NormalizeSplitKeys names a bad one by its index in the request).
std::vector<std::string> TableSplitKeys(const PlacementPolicy& policy,
                                        const std::vector<PlacementNode>& ring,
                                        std::vector<std::string> initial_splits);

}  // namespace tessera::catalog
