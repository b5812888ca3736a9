#include "tessera/cli/admin_node.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "tessera/cli/admin_node_format.h"
#include "tessera/cli/proto_json.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;

template <typename Request, typename Response>
bool Ask(const char* command, const std::string& addr, int64_t timeout_ms,
         grpc::Status (v1::NodeAdmin::Stub::*method)(grpc::ClientContext*, const Request&,
                                                      Response*),
         const Request& request, Response* response) {
  return AskNode(command, addr, timeout_ms, method, request, response).ok();
}

}  // namespace

int RunNodeInfo(const std::string& addr, int64_t timeout_ms, bool json, NodeInfoView view) {
  static constexpr const char* kCommand[] = {"info", "compactionstats", "netstats"};
  static constexpr std::string (*kFormat[])(const v1::NodeInfo&) = {
      FormatNodeInfo, FormatCompactionStats, FormatNetStats};
  const auto i = static_cast<size_t>(view);
  v1::NodeInfo info;
  if (!Ask(kCommand[i], addr, timeout_ms, &v1::NodeAdmin::Stub::GetNodeInfo,
           v1::GetNodeInfoRequest(), &info)) {
    return 1;
  }
  if (json) {
    std::printf("%s\n", ProtoToJson(info).dump().c_str());
  } else {
    std::fputs(kFormat[i](info).c_str(), stdout);
  }
  return 0;
}

int RunTableStats(const std::string& addr, int64_t timeout_ms, bool json,
                  const std::string& table) {
  v1::GetTableStatsRequest request;
  request.set_table_name(table);
  v1::TableStats stats;
  if (!Ask("tablestats", addr, timeout_ms, &v1::NodeAdmin::Stub::GetTableStats, request,
           &stats)) {
    return 1;
  }
  if (json) {
    std::printf("%s\n", ProtoToJson(stats).dump().c_str());
  } else {
    std::fputs(FormatTableStats(stats).c_str(), stdout);
  }
  return 0;
}

int RunFlushOrCompact(const std::string& addr, int64_t timeout_ms, bool json,
                      const std::string& table, bool compact) {
  const std::string what = table.empty() ? "every table" : table;
  if (compact) {
    v1::CompactRequest request;
    request.set_table_name(table);
    v1::CompactResponse response;
    if (!Ask("compact", addr, timeout_ms, &v1::NodeAdmin::Stub::Compact, request, &response)) {
      return 1;
    }
    if (json) {
      std::printf("%s\n", ProtoToJson(response).dump().c_str());
    } else {
      fmt::print("compacted {} tablet{} of {} on {}: {} SSTables before, {} after\n",
                 response.tablets(), response.tablets() == 1 ? "" : "s", what, addr,
                 response.sstables_before(), response.sstables_after());
    }
    return 0;
  }
  v1::FlushRequest request;
  request.set_table_name(table);
  v1::FlushResponse response;
  if (!Ask("flush", addr, timeout_ms, &v1::NodeAdmin::Stub::Flush, request, &response)) return 1;
  if (json) {
    std::printf("%s\n", ProtoToJson(response).dump().c_str());
  } else {
    fmt::print("flushed {} tablet{} of {} on {}\n", response.tablets(),
               response.tablets() == 1 ? "" : "s", what, addr);
  }
  return 0;
}

int RunDrain(const std::string& addr, int64_t timeout_ms, bool json) {
  v1::DrainResponse response;
  if (!Ask("drain", addr, timeout_ms, &v1::NodeAdmin::Stub::Drain, v1::DrainRequest(), &response)) {
    return 1;
  }
  if (json) {
    std::printf("%s\n", ProtoToJson(response).dump().c_str());
  } else {
    fmt::print(
        "drained {}: it serves no more requests, its memtables are flushed ({} SSTables); "
        "stop it when ready\n",
        addr, response.sstables());
  }
  return 0;
}

int RunDecommission(const std::string& addr, int64_t timeout_ms, bool json) {
  v1::DecommissionResponse response;
  if (!Ask("decommission", addr, timeout_ms, &v1::NodeAdmin::Stub::Decommission,
           v1::DecommissionRequest(), &response)) {
    return 1;
  }
  if (json) {
    std::printf("%s\n", ProtoToJson(response).dump().c_str());
  } else {
    fmt::print(
        "decommissioned {}: {} tablet replicas moved to other nodes; it has left the ring and "
        "serves no more requests: stop it, then `tessera admin removenode {}` forgets it\n",
        addr, response.tablets_moved(), addr);
  }
  return 0;
}

int RunThroughput(ThroughputKind kind, const std::string& addr, int64_t timeout_ms, bool json,
                  int64_t set_mb_per_second) {
  const bool compaction = kind == ThroughputKind::kCompaction;
  const char* what = compaction ? "compaction" : "stream";
  const std::string command =
      fmt::format("{}{}throughput", set_mb_per_second < 0 ? "get" : "set", what);
  v1::Throughput response;
  bool ok = false;
  if (set_mb_per_second < 0) {
    ok = Ask(command.c_str(), addr, timeout_ms,
             compaction ? &v1::NodeAdmin::Stub::GetCompactionThroughput
                        : &v1::NodeAdmin::Stub::GetStreamThroughput,
             v1::GetThroughputRequest(), &response);
  } else {
    v1::Throughput request;
    request.set_mb_per_second(set_mb_per_second);
    ok = Ask(command.c_str(), addr, timeout_ms,
             compaction ? &v1::NodeAdmin::Stub::SetCompactionThroughput
                        : &v1::NodeAdmin::Stub::SetStreamThroughput,
             request, &response);
  }
  if (!ok) return 1;
  if (json) {
    std::printf("%s\n", ProtoToJson(response).dump().c_str());
  } else if (response.mb_per_second() == 0) {
    fmt::print("{} throughput of {}: unlimited\n", what, addr);
  } else {
    fmt::print("{} throughput of {}: {} MiB/s\n", what, addr, response.mb_per_second());
  }
  return 0;
}

}  // namespace tessera::cli
