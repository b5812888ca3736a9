// What `tessera admin info`, `compactionstats`, `netstats` and `tablestats` print for one node
// (tessera.v1.NodeAdmin, proto/tessera/v1/node_admin.proto), in nodetool's layout: one
// "name : value" line per figure, a block per table. Pure functions of the answers, so the
// layout is tested without a server.
#pragma once

#include <string>

#include "tessera/v1/node_admin.pb.h"

namespace tessera::cli {

std::string FormatNodeInfo(const ::tessera::v1::NodeInfo& info);
std::string FormatCompactionStats(const ::tessera::v1::NodeInfo& info);
// nodetool netstats: the node's streams (replica rebuild copies) and their rate.
std::string FormatNetStats(const ::tessera::v1::NodeInfo& info);
std::string FormatTableStats(const ::tessera::v1::TableStats& stats);

}  // namespace tessera::cli
