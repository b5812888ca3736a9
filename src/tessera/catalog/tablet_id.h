// Tablet ids that name the same tablet on every node.
//
// A tablet id (tablet::TabletId, 64 bits) is the table's tablet prefix and the tablet's ordinal:
//
//   id = prefix << 16 | ordinal          ordinal: the tablet's place among the table's tablets
//                                        when the table was made (0 = the one starting at "")
//
// The prefix is the same on every node for one incarnation of a table, so every node that holds
// a tablet calls it by the same id, and an id is never given to two tablets of a cluster:
//   * A table made by the cluster (the schema store): the lock-service revision that created the
//     table's schema record, in [1, 2^47). Every node learns it from the record's create
//     revision; a table deleted and made again under the same name gets a new revision.
//   * A table made by a node alone (no cluster schema): a random number in [2^47, 2^48), drawn
//     when the table is made, so that it meets no revision and (but for a 2^-47 chance, which
//     CreateTablet reports as AlreadyExists) no other node's table. When such a table later
//     joins a cluster's schema, its record carries its prefix (SchemaRecord::tablet_prefix) and
//     every node uses it.
//   * Tablets made before tablet ids were cluster-wide (a per-node counter: 1, 2, 3, …) have
//     prefix 0 and keep their ids; they are unique on their node only (docs/catalog.md).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

inline constexpr int kTabletOrdinalBits = 16;
// A table starts with at most this many tablets (so at most this many minus one initial splits).
inline constexpr size_t kMaxInitialTablets = size_t{1} << kTabletOrdinalBits;
// Prefixes drawn by a node alone have this bit set; revisions stay below it.
inline constexpr uint64_t kLocalPrefixBit = uint64_t{1} << 47;

// The id of the tablet with `ordinal` in the table with `prefix`.
// REQUIRES: prefix < 2^48, ordinal < kMaxInitialTablets.
inline uint64_t MakeTabletId(uint64_t prefix, size_t ordinal) {
  return prefix << kTabletOrdinalBits | static_cast<uint64_t>(ordinal);
}
inline uint64_t TabletIdPrefix(uint64_t id) { return id >> kTabletOrdinalBits; }
// True for a tablet of a table the cluster made (prefix in [1, 2^47)): the only tablets that
// are replicated. The others (a node's own tables that joined a cluster, tablets from before
// cluster-wide ids) stay on the node that holds them, served by it alone (docs/replication.md).
inline bool IsClusterTabletId(uint64_t id) {
  const uint64_t prefix = TabletIdPrefix(id);
  return prefix >= 1 && prefix < kLocalPrefixBit;
}
inline size_t TabletIdOrdinal(uint64_t id) { return id & (kMaxInitialTablets - 1); }

// The prefix of a table made by the cluster, from its record's create revision.
// InvalidArgument when the revision is not in [1, 2^47).
StatusOr<uint64_t> TabletPrefixFromRevision(int64_t create_revision);

// A prefix for a table made by this node alone: uniform in [2^47, 2^48).
uint64_t NewLocalTabletPrefix(Random* random);

// The prefix shared by a table's tablet ids, given in start-row order, when they are exactly
// MakeTabletId(prefix, 0 .. n-1) with a non-zero prefix; nullopt otherwise (tablets made before
// cluster-wide ids, or an empty list).
std::optional<uint64_t> CommonTabletPrefix(const std::vector<uint64_t>& ids_in_row_order);

}  // namespace tessera::catalog
