#include "tessera/server/node_admin_service.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/table_definition.h"
#include "tessera/cluster/node.h"
#include "tessera/server/grpc_status.h"

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

struct LocalTablet {
  tablet::TabletId id = 0;
  std::string table;  // full name; "" when the catalog no longer places the tablet
};

// The engine's tablets with their tables, only those of `only` when it is set. INVALID_ARGUMENT
// for a malformed name, NOT_FOUND for a table the catalog does not hold.
StatusOr<std::vector<LocalTablet>> LocalTablets(NodeCore* core, const std::string& only) {
  if (!only.empty()) {
    if (StatusOr<catalog::TableName> name = catalog::TableName::Parse(only); !name.ok()) {
      return name.status();
    }
  }
  std::map<tablet::TabletId, std::string> tables;
  bool known = only.empty();
  for (const auto& table : core->catalog()->ListAllTables()) {
    if (table->full_name == only) known = true;
    for (const catalog::TabletRef& ref : table->tablets) tables[ref.id] = table->full_name;
  }
  if (!known) return absl::NotFoundError(StrCat("table ", only, " not found"));
  std::vector<LocalTablet> out;
  for (tablet::TabletId id : core->engine()->ListTablets()) {
    auto it = tables.find(id);
    LocalTablet t{id, it == tables.end() ? std::string() : it->second};
    if (only.empty() || t.table == only) out.push_back(std::move(t));
  }
  return out;
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
  response->set_running_jobs(s.background_jobs - std::min(s.background_jobs, s.queued_jobs));
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
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(core_, request->table_name());
  if (!tablets.ok()) {
    // A well-formed name the node does not know: nothing of it here.
    if (tablets.status().code() != absl::StatusCode::kNotFound) {
      return Reply(context, tablets.status());
    }
    tablets = std::vector<LocalTablet>();
  }
  std::map<std::string, v1::TableStat> by_table;
  for (const LocalTablet& t : *tablets) {
    StatusOr<tablet::TabletStats> s = core_->engine()->GetTabletStats(t.id);
    if (!s.ok()) continue;  // dropped since it was listed
    v1::TableStat& out = by_table[t.table];
    out.set_table_name(t.table);
    out.set_tablets(out.tablets() + 1);
    out.set_sstables(out.sstables() + s->sstable_files);
    out.set_sstable_bytes(out.sstable_bytes() + s->sstable_bytes);
    out.set_memtable_bytes(out.memtable_bytes() + s->memtable_bytes);
    out.set_row_reads(out.row_reads() + s->row_reads.count);
    out.set_row_read_seconds(out.row_read_seconds() + s->row_reads.sum_seconds);
    out.set_scans(out.scans() + s->scans);
    out.set_writes(out.writes() + s->writes.count);
    out.set_write_seconds(out.write_seconds() + s->writes.sum_seconds);
    out.set_rows_written(out.rows_written() + s->rows_written);
  }
  response->set_endpoint(Endpoint());
  for (auto& [name, stat] : by_table) *response->add_tables() = std::move(stat);
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::Flush(rpc::ServerContext* context,
                                           const v1::FlushRequest* request,
                                           v1::FlushResponse* response) {
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(core_, request->table_name());
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
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(core_, request->table_name());
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
