#include "tessera/cli/admin_node_format.h"

#include <cstdint>
#include <string_view>

#include "fmt/format.h"
#include "tessera/cli/admin_tablets_format.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;

std::string Bytes(uint64_t bytes) { return HumanBytes(static_cast<int64_t>(bytes)); }

// "name   : value", names padded to one width.
void Line(std::string* out, std::string_view name, std::string_view value,
          std::string_view indent = "") {
  *out += fmt::format("{}{:<24}: {}\n", indent, name, value);
}

// Mean milliseconds, "NaN" without calls (as nodetool prints).
std::string MeanMs(double seconds, uint64_t count) {
  if (count == 0) return "NaN ms";
  return fmt::format("{:.3f} ms", seconds * 1000 / static_cast<double>(count));
}

}  // namespace

std::string FormatNodeInfo(const v1::NodeInfo& info) {
  std::string out;
  Line(&out, "Endpoint", info.endpoint().empty() ? "?" : info.endpoint());
  Line(&out, "Serving",
       info.serving()   ? "yes"
       : info.drained() ? "NO (drained: restart it to serve again)"
                        : "NO (no lock-service session)");
  Line(&out, "Data folder", info.data_dir());
  Line(&out, "Uptime (seconds)", std::to_string(info.uptime_seconds()));
  Line(&out, "Load", Bytes(info.load_bytes()));
  Line(&out, "Memtables", Bytes(info.memtable_bytes()));
  Line(&out, "Resident memory", Bytes(info.resident_bytes()));
  Line(&out, "Tablets", fmt::format("{} ({} SSTables)", info.tablets(), info.sstables()));
  const uint64_t lookups = info.block_cache_hits() + info.block_cache_misses();
  Line(&out, "Block cache",
       fmt::format("size {}, capacity {}, {} hits, {} lookups, {} hit rate",
                   Bytes(info.block_cache_bytes()), Bytes(info.block_cache_capacity_bytes()),
                   info.block_cache_hits(), lookups,
                   lookups == 0 ? std::string("NaN")
                                : fmt::format("{:.3f}", static_cast<double>(info.block_cache_hits()) /
                                                            static_cast<double>(lookups))));
  Line(&out, "Commit log", fmt::format("{} segments", info.commit_log_segments()));
  Line(&out, "Background jobs",
       fmt::format("{} pending, {} running", info.pending_jobs(), info.running_jobs()));
  return out;
}

std::string FormatCompactionStats(const v1::NodeInfo& info) {
  std::string out;
  Line(&out, "pending tasks", std::to_string(info.pending_jobs()));
  Line(&out, "running tasks", std::to_string(info.running_jobs()));
  Line(&out, "flushes done",
       fmt::format("{} ({} written)", info.flushes(), Bytes(info.flush_bytes_written())));
  Line(&out, "compactions done",
       fmt::format("{} ({} written)", info.compactions(), Bytes(info.compaction_bytes_written())));
  Line(&out, "write stalls", std::to_string(info.write_stalls()));
  return out;
}

std::string FormatNetStats(const v1::NodeInfo& info) {
  std::string out;
  Line(&out, "Mode", info.serving() ? "serving" : info.drained() ? "drained" : "not serving");
  Line(&out, "Streams out",
       info.streams_out() == 0 ? std::string("none")
                               : fmt::format("{} under way ({} sent so far)", info.streams_out(),
                                             Bytes(info.streams_out_bytes())));
  Line(&out, "Streams in",
       info.streams_in() == 0 ? std::string("none")
                              : fmt::format("{} under way", info.streams_in()));
  Line(&out, "Streamed since start",
       fmt::format("{} sent, {} received, {} copies sent whole", Bytes(info.stream_bytes_sent()),
                   Bytes(info.stream_bytes_received()), info.streams_done()));
  Line(&out, "Stream throughput",
       info.stream_throughput_mb_per_second() == 0
           ? std::string("unlimited")
           : fmt::format("{} MiB/s", info.stream_throughput_mb_per_second()));
  return out;
}

std::string FormatTableStats(const v1::TableStats& stats) {
  std::string out = fmt::format("Node: {}\n", stats.endpoint().empty() ? "?" : stats.endpoint());
  if (stats.tables_size() == 0) out += "(no tablets of any table asked for on this node)\n";
  for (const v1::TableStat& t : stats.tables()) {
    out += fmt::format("Table: {}\n",
                       t.table_name().empty() ? "(tablets being dropped)" : t.table_name());
    constexpr std::string_view kIn = "\t";
    Line(&out, "Tablets", std::to_string(t.tablets()), kIn);
    Line(&out, "SSTable count", std::to_string(t.sstables()), kIn);
    Line(&out, "Space used", Bytes(t.sstable_bytes()), kIn);
    Line(&out, "Memtable data size", Bytes(t.memtable_bytes()), kIn);
    Line(&out, "Local read count", std::to_string(t.row_reads()), kIn);
    Line(&out, "Local read latency",
         t.row_reads() == 0 ? MeanMs(0, 0) : MeanMs(t.row_read_mean_seconds(), 1), kIn);
    Line(&out, "Local scan count", std::to_string(t.scans()), kIn);
    Line(&out, "Local write count",
         fmt::format("{} ({} rows)", t.writes(), t.rows_written()), kIn);
    Line(&out, "Local write latency", MeanMs(t.write_seconds(), t.writes()), kIn);
  }
  return out;
}

}  // namespace tessera::cli
