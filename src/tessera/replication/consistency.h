// Consistency levels: how many replicas of a tablet must have a write before it is
// acknowledged, and where a read is served (docs/replication.md, "The write path", "Reads").
//
// Write levels count the members of the tablet's current configuration that have the
// mutation durable, the primary included:
//   ONE           the primary alone (lost if the primary dies before replicating it)
//   QUORUM        a majority of the replica set: floor(RF / 2) + 1 (the default)
//   ALL           every replica
//   LOCAL_QUORUM  a majority of the replicas in the coordinator's data centre
// Read levels:
//   PRIMARY  at the primary under its lease: linearizable (the default)
//   QUORUM   a majority answers; the newest by sequence wins and stale replicas are repaired
//   ONE      the nearest live replica, which may be behind
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tessera::replication {

enum class WriteLevel : int { kOne = 1, kQuorum = 2, kAll = 3, kLocalQuorum = 4 };
enum class ReadLevel : int { kPrimary = 1, kQuorum = 2, kOne = 3 };

std::string_view WriteLevelName(WriteLevel level);  // "one", "quorum", "all", "local_quorum"
std::string_view ReadLevelName(ReadLevel level);    // "primary", "quorum", "one"
// The level a name (as above, lower case) stands for; nullopt for anything else.
std::optional<WriteLevel> ParseWriteLevel(std::string_view name);
std::optional<ReadLevel> ParseReadLevel(std::string_view name);
// From the wire (ForwardTarget): nullopt for a number no level has.
std::optional<WriteLevel> WriteLevelFromInt(int value);
std::optional<ReadLevel> ReadLevelFromInt(int value);

// floor(n / 2) + 1 for n >= 1.
inline size_t Majority(size_t n) { return n / 2 + 1; }

// How many of `members` replicas must acknowledge at `level` (LOCAL_QUORUM: a majority of
// `local_members`, the members in the coordinator's data centre; at least 1).
size_t RequiredAcks(WriteLevel level, size_t members, size_t local_members);

}  // namespace tessera::replication
