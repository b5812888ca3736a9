// TabletConfig: one tablet's configuration — its replica set, its primary, its epoch and its
// state — as the master writes it into the lock service under `tablets/<tablet id>` with
// compare-and-set (docs/replication.md, "Where the tablet map lives"). Every node mirrors the
// prefix; replicas and coordinators act on the epoch they read here.
//
//   record := format(1 byte = 0x01) varint64(tablet id) varint64(epoch)
//             varint64(epoch start sequence) state(1 byte)
//             varint32(replicas) lp(endpoint)*replicas varint32(primary index)
//             varint32(rebuild) varint32(replica index)*rebuild
//             varint32(history) (varint64(epoch) varint64(start sequence))*history
//   state: 1 creating, 2 serving, 3 moving, 4 tombstoned
//   primary index: into the replicas, in [0, replicas)
//   rebuild: indexes of the replicas marked "needs rebuild", strictly increasing, none the
//            primary
//   history: the start sequence of the last epochs, oldest first, epochs strictly increasing,
//            the last being (epoch, epoch start sequence); at most kMaxHistory entries
// A reader refuses an unknown format byte and anything that does not validate.
//
// Thread-safety: a value type; the functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::catalog {

enum class TabletConfigState : uint8_t {
  kCreating = 1,    // replicas are being made; not serving yet
  kServing = 2,     // the primary serves
  kMoving = 3,      // a replica is being added or removed (later issue)
  kTombstoned = 4,  // the tablet's table was deleted; replicas drop their data
};
std::string_view TabletConfigStateName(TabletConfigState state);

// Where one epoch began: the primary's last sequence when the epoch was written.
struct EpochStart {
  uint64_t epoch = 0;
  uint64_t start_sequence = 0;
  friend bool operator==(const EpochStart&, const EpochStart&) = default;
};

struct TabletConfig {
  static constexpr uint8_t kFormat = 0x01;
  static constexpr size_t kMaxHistory = 16;

  uint64_t tablet_id = 0;
  // Bumped by every change of the replica set or the primary; >= 1. Every replication message
  // carries it, and a replica refuses one below the epoch it has sealed.
  uint64_t epoch = 0;
  // The primary's last sequence when this epoch began: a replica of an older epoch holding
  // more than this holds mutations nobody acknowledged at QUORUM, and is rebuilt.
  uint64_t epoch_start_sequence = 0;
  TabletConfigState state = TabletConfigState::kCreating;
  // Node endpoints ("host:port"), in placement order; distinct, non-empty.
  std::vector<std::string> replicas;
  size_t primary = 0;  // index into replicas
  // Indexes of replicas that were away too long for hints and must be rebuilt.
  std::vector<size_t> needs_rebuild;
  // The lineage: the start of the last epochs, ending with this one's (docs/replication.md,
  // "The lineage check"). A replica that joined epoch J with last sequence L may join this
  // epoch only if L <= start_sequence of every epoch after J.
  std::vector<EpochStart> history;

  const std::string& primary_endpoint() const { return replicas[primary]; }
  // The replicas the consistency levels count: every one but those needing a rebuild.
  size_t live_members() const { return replicas.size() - needs_rebuild.size(); }
  bool NeedsRebuild(size_t replica) const;
  // The index of `endpoint` among the replicas, or -1.
  int IndexOf(std::string_view endpoint) const;
  // The configuration of the next epoch with `primary` (an index) starting at `start`: epoch
  // + 1, the history extended (and trimmed to kMaxHistory).
  TabletConfig NextEpoch(size_t primary, uint64_t start) const;
  // True when a replica that joined epoch `joined` and holds `last` may join this epoch
  // without a rebuild (the lineage check). False too when the history does not reach back.
  bool LineageAllows(uint64_t joined, uint64_t last) const;
  // How much of what such a replica holds is the lineage's: its mutations up to the start of
  // the first epoch after `joined` (all of them, `last`, when none began below it). nullopt
  // when the history does not reach back, or `joined` is above this epoch.
  // LineageAllows(joined, last) == (LineagePrefix(joined, last) == last).
  std::optional<uint64_t> LineagePrefix(uint64_t joined, uint64_t last) const;

  // InvalidArgument naming the problem: tablet id 0, epoch 0, an unknown state, no replicas,
  // an empty or repeated endpoint, a primary index out of range, rebuild indexes out of order,
  // out of range or naming the primary, a history out of order, too long or not ending with
  // (epoch, epoch_start_sequence).
  Status Validate() const;
  std::string Encode() const;  // REQUIRES: Validate().ok()
  // DataLoss "malformed tablet configuration: <what>" for bytes that do not decode or do not
  // validate.
  static StatusOr<TabletConfig> Decode(std::string_view encoded);

  friend bool operator==(const TabletConfig&, const TabletConfig&) = default;
};

// "tablets/" followed by the id in 16 lowercase hex digits, so that the prefix lists in id
// order.
std::string TabletConfigName(uint64_t tablet_id);
// The id as 16 lower-case hex digits (the last part of its configuration name), and back:
// nullopt for anything else.
std::string TabletIdHex(uint64_t tablet_id);
std::optional<uint64_t> ParseTabletIdHex(std::string_view hex);
// "tablet <16 hex digits>": how messages and logs name a tablet (as its configuration's file).
std::string TabletName(uint64_t tablet_id);
// The id in a TabletConfigName; InvalidArgument for anything else.
StatusOr<uint64_t> ParseTabletConfigName(std::string_view name);

}  // namespace tessera::catalog
