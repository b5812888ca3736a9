// `tessera admin` commands that act on one node (tessera.v1.NodeAdmin), as nodetool's do: info,
// compactionstats, netstats, tablestats, flush, compact, drain, set/get compaction and stream
// throughput. admin.cc parses the flags; these ask the node at `addr` and print its answer
// (admin_node_format.h), or one JSON object with --json.
//
// Exit status: 0; 1 when the node cannot be reached or refuses (its message on stderr, e.g. a
// table it does not know).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "grpcpp/grpcpp.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::cli {

// Which figures of the node's NodeInfo `RunNodeInfo` prints: info's, compactionstats' or
// netstats' (the JSON is the whole answer for each).
enum class NodeInfoView { kInfo, kCompactionStats, kNetStats };
int RunNodeInfo(const std::string& addr, int64_t timeout_ms, bool json, NodeInfoView view);
// `table`: a full table name, or "" for every table.
int RunTableStats(const std::string& addr, int64_t timeout_ms, bool json,
                  const std::string& table);
// Flush (or, `compact`, major compaction) of the node's tablets of `table` ("" = all).
int RunFlushOrCompact(const std::string& addr, int64_t timeout_ms, bool json,
                      const std::string& table, bool compact);

// Drains the node: it stops serving for good and flushes its memtables (nodetool drain).
int RunDrain(const std::string& addr, int64_t timeout_ms, bool json);
// NodeAdmin.Decommission: waits until every replica of the node moved. Exit 0, or 1 (the
// node's refusal or the deadline on stderr).
int RunDecommission(const std::string& addr, int64_t timeout_ms, bool json);

// Which of the node's rates `RunThroughput` shows or sets.
enum class ThroughputKind { kCompaction, kStream };

// The node's compaction write rate or rebuild stream rate (nodetool getcompactionthroughput,
// getstreamthroughput), or, with `set_mb_per_second` >= 0, sets it first
// (setcompactionthroughput, setstreamthroughput; 0 = unlimited).
int RunThroughput(ThroughputKind kind, const std::string& addr, int64_t timeout_ms, bool json,
                  int64_t set_mb_per_second);

// One unary call on the node at `addr` (any service's Stub: NodeAdmin, AccessAdmin); when it
// fails, says why on stderr ("tessera admin <command>: <addr>: <message>") and returns the
// status.
template <typename Stub, typename Request, typename Response>
grpc::Status AskNode(const char* command, const std::string& addr, int64_t timeout_ms,
                     grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response) {
  Stub stub(NewChannel(addr));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  grpc::Status rpc = (stub.*method)(&ctx, request, response);
  if (!rpc.ok()) {
    std::fprintf(stderr, "tessera admin %s: %s: %s\n", command, addr.c_str(),
                 rpc.error_message().c_str());
  }
  return rpc;
}

}  // namespace tessera::cli
