// The text of a consistency token and the rule that says when a tablet has reached it
// (GenerateConsistencyToken / CheckConsistency; docs/replication.md, "Consistency tokens").
// Clients treat a token as opaque; two versions exist:
//
//   version 1 (one node, not replicated):  "tessera-consistency-" decimal(last sequence)
//     Every acknowledged write is already visible to every reader: always consistent.
//   version 2 (a replicated table):        "2:" base64(tessera.v1.ConsistencyToken)
//     The table's full name and, per tablet, (tablet id, epoch, the primary's last sequence).
//
// A tablet of a version-2 token is consistent once every replica of its current configuration
// holds the lineage's mutations through RequiredSequence: the token's sequence, or the start
// of a later epoch if one began below it. Sequences are dense and carry over epochs, and the
// mutations of the token's epoch above the start of a later epoch were never acknowledged
// (docs/replication.md, "The lineage check"), so they need not, and may never, arrive.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/catalog/tablet_config.h"
#include "tessera/util/status.h"

namespace tessera::replication {

// --- version 1 ---
std::string SingleNodeToken(uint64_t last_sequence);
// True for a well-formed version-1 token.
bool IsSingleNodeToken(std::string_view text);

// --- version 2 ---
struct TokenTablet {
  uint64_t tablet_id = 0;
  uint64_t epoch = 0;     // the epoch the primary was at
  uint64_t sequence = 0;  // its last sequence then
  friend bool operator==(const TokenTablet&, const TokenTablet&) = default;
};

struct ConsistencyToken {
  std::string table_name;  // the table's full name
  std::vector<TokenTablet> tablets;
  friend bool operator==(const ConsistencyToken&, const ConsistencyToken&) = default;

  std::string Encode() const;
  // InvalidArgument 'consistency token "<text>" ...' when `text` is not a version-2 token
  // that decodes.
  static StatusOr<ConsistencyToken> Decode(std::string_view text);
};

// The sequence every replica must hold for `tablet` of a token, under the tablet's `current`
// configuration: min(tablet.sequence, the start sequence of every epoch after tablet.epoch in
// current.history). The token's own sequence when no later epoch is known, or when the history
// no longer reaches back to tablet.epoch + 1 (then a later write fills the sequence).
uint64_t RequiredSequence(const TokenTablet& tablet, const catalog::TabletConfig& current);

// True when a replica that joined epoch `joined` and holds `last` holds the lineage of
// `current` through `required`: last >= required, and what it holds is the lineage's
// (TabletConfig::LineageAllows; a replica that took mutations a later epoch disowned has not
// reached anything until it is rebuilt).
bool ReplicaReached(const catalog::TabletConfig& current, uint64_t joined, uint64_t last,
                    uint64_t required);

}  // namespace tessera::replication
