// `tessera admin snapshot | listsnapshots | clearsnapshot | restore` (docs/operations.md,
// "Snapshots"): Cassandra's nodetool snapshot, listsnapshots and clearsnapshot, and a restore
// that streams a snapshot back through the write path, as sstableloader does. They act on
// every node `nodes` names (admin.cc: the nodes `status` lists as registered), each of which
// snapshots, lists or clears the replicas it holds (server/table_snapshots.h).
//
// restore picks, for each tablet of the snapshot, the node whose copy has the highest sequence
// (the replica that had every acknowledged write when the snapshot was taken: a write
// acknowledged at QUORUM or ALL is on it), checks that the chosen tablets cover the whole
// row space, then:
//   * into the snapshot's own table (no --target): empties it (DropRowRange), then writes;
//   * into --target: creates it with the snapshot's schema and its tablets' boundaries as
//     initial splits (it must not exist), then writes;
// and each chosen node writes its tablets' rows (RestoreSnapshot), in turn.
//
// Exit status: 0; 1 when a node refuses or cannot be reached (each one's message on stderr),
// or the snapshot is missing or incomplete; 2 on bad flags (admin.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cli {

// `table` is a full name; `tag` is checked by the nodes.
int RunSnapshot(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                const std::string& table, const std::string& tag);
// `table`, `tag`: filters ("" = all).
int RunListSnapshots(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                     const std::string& table, const std::string& tag);
int RunClearSnapshot(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
                     const std::string& table, const std::string& tag);
// `addr`: the node whose Bigtable admin API empties or creates the target. `target`: a full
// name, or "" for the snapshot's own table.
int RunRestore(const std::string& addr, const std::vector<std::string>& nodes, int64_t timeout_ms,
               bool json, const std::string& table, const std::string& tag,
               const std::string& target);

}  // namespace tessera::cli
