// `tessera admin` commands that act on one node (tessera.v1.NodeAdmin), as nodetool's do: info,
// compactionstats, tablestats, flush, compact. admin.cc parses the flags; these ask the node at
// `addr` and print its answer (admin_node_format.h), or one JSON object with --json.
//
// Exit status: 0; 1 when the node cannot be reached or refuses (its message on stderr, e.g. a
// table it does not know).
#pragma once

#include <cstdint>
#include <string>

namespace tessera::cli {

// `compaction`: only the figures of compactionstats.
int RunNodeInfo(const std::string& addr, int64_t timeout_ms, bool json, bool compaction);
// `table`: a full table name, or "" for every table.
int RunTableStats(const std::string& addr, int64_t timeout_ms, bool json,
                  const std::string& table);
// Flush (or, `compact`, major compaction) of the node's tablets of `table` ("" = all).
int RunFlushOrCompact(const std::string& addr, int64_t timeout_ms, bool json,
                      const std::string& table, bool compact);

}  // namespace tessera::cli
