#include "tessera/server/node_admin_service.h"

#include <unistd.h>

#include <fstream>
#include <utility>
#include <vector>

#include "tessera/cluster/node.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/table_stats.h"

namespace tessera::server {

namespace {

namespace v1 = ::tessera::v1;

// The process's resident memory; 0 where /proc cannot say.
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t SstableCount(tablet::Engine* engine, tablet::TabletId id) {
  StatusOr<std::vector<tablet::SstableInfo>> files = engine->ListSstables(id);
  return files.ok() ? files->size() : 0;
}

}  // namespace

NodeAdminService::NodeAdminService(NodeCore* core)
    : core_(core), started_us_(core->env().clock->MonotonicMicros()) {}

std::string NodeAdminService::Endpoint() const {
  cluster::ClusterNode* node = core_->serving_node();
  return node != nullptr ? node->options().endpoint : std::string();
}

void NodeAdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService = v1::NodeAdmin::service_full_name();
  services->Add(kService, "GetNodeInfo", this, &NodeAdminService::GetNodeInfo, executor);
  services->Add(kService, "GetTableStats", this, &NodeAdminService::GetTableStats, executor);
  services->Add(kService, "Flush", this, &NodeAdminService::Flush, executor);
  services->Add(kService, "Compact", this, &NodeAdminService::Compact, executor);
}

rpc::UnaryReactor* NodeAdminService::GetNodeInfo(rpc::ServerContext* context,
                                                 const v1::GetNodeInfoRequest* /*request*/,
                                                 v1::NodeInfo* response) {
  const tablet::EngineStats s = core_->engine()->GetStats();
  response->set_endpoint(Endpoint());
  response->set_data_dir(core_->options().engine.dir);
  response->set_uptime_seconds((core_->env().clock->MonotonicMicros() - started_us_) / 1'000'000);
  response->set_load_bytes(s.sstable_bytes);
  response->set_memtable_bytes(s.memtable_bytes);
  response->set_resident_bytes(ResidentBytes());
  response->set_block_cache_bytes(s.block_cache_usage);
  response->set_block_cache_capacity_bytes(core_->options().engine.block_cache_bytes);
  response->set_block_cache_hits(s.block_cache_hits);
  response->set_block_cache_misses(s.block_cache_misses);
  response->set_commit_log_segments(s.commit_log_segments);
  response->set_tablets(core_->engine()->ListTablets().size());
  response->set_sstables(s.sstable_files);
  response->set_pending_jobs(s.queued_jobs);
  response->set_running_jobs(s.running_jobs());
  response->set_flushes(s.flushes);
  response->set_compactions(s.compactions);
  response->set_flush_bytes_written(s.flush_bytes_written);
  response->set_compaction_bytes_written(s.compaction_bytes_written);
  response->set_write_stalls(s.write_stalls);
  response->set_serving(core_->CheckServing().ok());
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::GetTableStats(rpc::ServerContext* context,
                                                   const v1::GetTableStatsRequest* request,
                                                   v1::TableStats* response) {
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(*core_, request->table_name());
  if (!tablets.ok()) {
    // A well-formed name the node does not know: nothing of it here.
    if (tablets.status().code() != absl::StatusCode::kNotFound) {
      return Reply(context, tablets.status());
    }
    tablets = std::vector<LocalTablet>();
  }
  response->set_endpoint(Endpoint());
  for (const TableTotals& sum : SumByTable(*core_->engine(), *tablets)) {
    v1::TableStat* out = response->add_tables();
    out->set_table_name(sum.table);
    out->set_tablets(sum.tablets);
    out->set_sstables(sum.sstables);
    out->set_sstable_bytes(sum.sstable_bytes);
    out->set_memtable_bytes(sum.memtable_bytes);
    out->set_row_reads(sum.row_reads);
    if (sum.row_read_samples.count > 0) {
      out->set_row_read_mean_seconds(sum.row_read_samples.sum_seconds /
                                     static_cast<double>(sum.row_read_samples.count));
    }
    out->set_scans(sum.scans);
    out->set_writes(sum.writes.count);
    out->set_write_seconds(sum.writes.sum_seconds);
    out->set_rows_written(sum.rows_written);
  }
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::Flush(rpc::ServerContext* context,
                                           const v1::FlushRequest* request,
                                           v1::FlushResponse* response) {
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(*core_, request->table_name());
  if (!tablets.ok()) return Reply(context, tablets.status());
  for (const LocalTablet& t : *tablets) {
    Status s = core_->engine()->Flush(t.id);
    if (absl::IsNotFound(s)) continue;  // dropped since it was listed
    if (!s.ok()) return Reply(context, s);
    response->set_tablets(response->tablets() + 1);
  }
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::Compact(rpc::ServerContext* context,
                                             const v1::CompactRequest* request,
                                             v1::CompactResponse* response) {
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(*core_, request->table_name());
  if (!tablets.ok()) return Reply(context, tablets.status());
  tablet::Engine* engine = core_->engine();
  for (const LocalTablet& t : *tablets) {
    const uint64_t before = SstableCount(engine, t.id);
    Status s = engine->CompactTablet(t.id);
    if (absl::IsNotFound(s)) continue;
    if (!s.ok()) return Reply(context, s);
    response->set_tablets(response->tablets() + 1);
    response->set_sstables_before(response->sstables_before() + before);
    response->set_sstables_after(response->sstables_after() + SstableCount(engine, t.id));
  }
  return Reply(context, Status());
}

}  // namespace tessera::server
