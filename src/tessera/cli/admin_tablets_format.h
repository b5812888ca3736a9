// What `tessera admin tablets` and `tessera admin status` make of the nodes' GetTablets answers
// (tessera.v1.TabletAdmin): the answers merged into one line per tablet, printed as a table or
// as one JSON object. No RPCs here; admin.cc asks the nodes.
//
// Merging: a tablet's configuration (epoch, replicas, primary, rebuild marks) is the newest any
// answer holds; its primary's last sequence comes from the primary's own answer, when that node
// acts as primary; each replica's applied sequence from that replica's own answer; "answering",
// "copying" (a rebuild from a copy under way) and the hints pending (retained bytes) from the
// primary's view of its peers. A lag is the primary's last sequence minus the replica's:
// unknown ("?") when either node did not answer.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tessera/v1/tablet_admin.pb.h"

namespace tessera::cli {

// One node's answer to GetTablets, or why there is none.
struct NodeAnswer {
  std::string endpoint;
  std::optional<::tessera::v1::NodeTablets> tablets;  // absent: the node could not be asked
  std::string error;                                  // why not
};

struct ReplicaLine {
  std::string endpoint;
  bool primary = false;                   // the configuration's primary
  std::optional<uint64_t> last_sequence;  // from its own answer
  std::optional<int64_t> lag;             // behind the acting primary
  bool answering = true;                  // as the acting primary sees it
  bool needs_rebuild = false;
  bool copying = false;  // the acting primary is rebuilding it from a copy
};

struct TabletLine {
  std::string table_name;  // "" when no answering node's catalog holds the tablet's table
  std::string start_row;
  std::string end_row;  // "" = unbounded
  uint64_t tablet_id = 0;
  uint64_t epoch = 0;  // the newest configuration's; 0: none known
  std::string state;
  std::string primary;          // the configuration's primary ("" if none known)
  bool primary_acting = false;  // its node answered and acts as primary
  std::optional<uint64_t> primary_last;
  uint64_t hints_bytes = 0;  // kept for peers by the acting primary: in memory and hint log
  uint64_t hint_log_bytes = 0;    // of which in its hint log
  uint64_t hint_log_records = 0;
  std::vector<ReplicaLine> replicas;  // in placement order
};

struct TabletsView {
  std::vector<NodeAnswer> nodes;
  std::vector<TabletLine> tablets;  // by table name, then start row
  bool complete() const;            // every node answered
};

TabletsView MergeTablets(std::vector<NodeAnswer> answers);

// A header line (tablets, tables, nodes asked), the nodes' notes, one aligned line per tablet
// (TABLE, START..END, TABLET ID, EPOCH ("-" without a configuration: a single node), PRIMARY,
// REBUILD, HINTS, and REPLICAS last, the widest), then a line per node that could not be asked.
// Rows print escaped (shell::EscapeBytes) and quoted; an empty end row (unbounded) prints as
// nothing after "..". Tables show by their id when all lie in one instance (named in the header).
std::string FormatTablets(const TabletsView& view);

// The merged view as one object: {"nodes": [{endpoint, answered, error, replicated, note,
// tablets, primaries}], "tablets": [{table, start_row, end_row, tablet_id (16 hex digits),
// epoch, state, primary, primary_acting, primary_last_sequence, hints_bytes, replicas:
// [{endpoint, primary, last_sequence, lag, answering, needs_rebuild, copying}]}]}. Rows are escaped
// as in the table; unknown numbers are null.
nlohmann::json TabletsToJson(const TabletsView& view);

// How many tablets a node holds and how many of them it leads, for `admin status`.
struct TabletCounts {
  size_t tablets = 0;
  size_t primaries = 0;
};
TabletCounts CountTablets(const ::tessera::v1::NodeTablets& answer);

// "512 B", "1.5 KiB", ...; "?" for a negative count.
std::string HumanBytes(int64_t bytes);

// Rows as aligned columns, two spaces apart, one line each; the last column is not padded.
// Shared by the admin commands' tables.
std::string Columns(const std::vector<std::vector<std::string>>& rows);

}  // namespace tessera::cli
