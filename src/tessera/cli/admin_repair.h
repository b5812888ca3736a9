// `tessera admin repair [--table T]` (docs/repair.md): nodetool repair -pr on every node at
// once. Each node `nodes` names (admin.cc: the nodes `status` lists as registered) compares the
// replicas of the tablets it is the primary of with its own copy at one sequence; a replica
// that differs is rebuilt from a copy. One line per replica of each tablet, then a summary.
//
// Exit status: 0 when every node answered and every replica was consistent or is being
// rebuilt; 1 when a node could not be asked, a tablet could not be checked, or a replica was
// behind, busy or failed (each says why); 2 on bad flags (admin.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/v1/node_admin.pb.h"

namespace tessera::cli {

// The answers as a table (no RPCs): Table, Rows (the tablet's), Primary, Sequence, Replica,
// Result (with the replica's message). `ok` (may be null) says whether every replica was
// consistent or rebuilding and every tablet checked.
std::string FormatRepair(const std::vector<::tessera::v1::RepairResponse>& answers, bool* ok);

// `table`: a full name, or "" for every table.
int RunRepair(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
              const std::string& table);

}  // namespace tessera::cli
