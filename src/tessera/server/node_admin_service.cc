#include "tessera/server/node_admin_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "tessera/catalog/metadata_table.h"
#include "tessera/catalog/table_definition.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/cluster/node.h"
#include "tessera/replication/replicated_store.h"
#include "tessera/server/admin_convert.h"
#include "tessera/server/audit.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/table_snapshots.h"
#include "tessera/server/table_stats.h"
#include "tessera/util/logging.h"

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

void SetTablet(const TabletSnapshotInfo& info, v1::SnapshotTablet* out) {
  out->set_tablet_id(info.tablet_id);
  out->set_start_row(info.descriptor.start_row);
  out->set_end_row(info.descriptor.end_row);
  out->set_sequence(info.sequence);
  out->set_file_bytes(info.file_bytes);
}

// The node's snapshot files of `tag` ("" = all) and `table` ("" = all), after checking both.
StatusOr<std::vector<TabletSnapshotInfo>> SnapshotFiles(const NodeCore& core,
                                                        const std::string& tag,
                                                        const std::string& table) {
  if (!tag.empty()) RETURN_IF_ERROR(ValidateSnapshotTag(tag));
  if (!table.empty()) RETURN_IF_ERROR(catalog::TableName::Parse(table).status());
  ASSIGN_OR_RETURN(std::vector<TabletSnapshotInfo> files,
                   ListTabletSnapshots(*core.env().fs, core.options().engine.dir, tag));
  std::erase_if(files, [&](const TabletSnapshotInfo& f) {
    return !table.empty() && f.descriptor.table != table;
  });
  return files;
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
  services->Add(kService, "Repair", this, &NodeAdminService::Repair, executor);
  services->Add(kService, "Decommission", this, &NodeAdminService::Decommission, executor);
  services->Add(kService, "Compact", this, &NodeAdminService::Compact, executor);
  services->Add(kService, "TakeSnapshot", this, &NodeAdminService::TakeSnapshot, executor);
  services->Add(kService, "ListSnapshots", this, &NodeAdminService::ListSnapshots, executor);
  services->Add(kService, "ClearSnapshot", this, &NodeAdminService::ClearSnapshot, executor);
  services->Add(kService, "RestoreSnapshot", this, &NodeAdminService::RestoreSnapshot, executor);
  services->Add(kService, "Drain", this, &NodeAdminService::Drain, executor);
  services->Add(kService, "SetCompactionThroughput", this,
                &NodeAdminService::SetCompactionThroughput, executor);
  services->Add(kService, "GetCompactionThroughput", this,
                &NodeAdminService::GetCompactionThroughput, executor);
  services->Add(kService, "SetStreamThroughput", this, &NodeAdminService::SetStreamThroughput,
                executor);
  services->Add(kService, "GetStreamThroughput", this, &NodeAdminService::GetStreamThroughput,
                executor);
}

namespace {

constexpr int64_t kMiB = 1 << 20;

// A rate in bytes per second (<= 0: unlimited) as the API gives it: whole MiB/s, 0 unlimited.
int64_t MiBPerSecond(int64_t bytes_per_second) {
  return bytes_per_second <= 0 ? 0 : std::max<int64_t>(1, bytes_per_second / kMiB);
}

Status CheckThroughput(std::string_view what, int64_t mb_per_second) {
  if (mb_per_second >= 0 && mb_per_second <= (int64_t{1} << 40) / kMiB) return Status();
  return absl::InvalidArgumentError(
      StrCat(what, " throughput ", mb_per_second, " MiB/s: give 0 (unlimited) to 1048576"));
}

}  // namespace

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
  response->set_drained(core_->drained());
  const replication::StreamStats streams = core_->Streams();
  response->set_streams_out(streams.sending);
  response->set_streams_in(streams.receiving);
  response->set_streams_out_bytes(streams.sending_bytes);
  response->set_stream_bytes_sent(streams.sent_bytes_total);
  response->set_stream_bytes_received(streams.received_bytes_total);
  response->set_streams_done(streams.copies_done_total);
  response->set_stream_throughput_mb_per_second(MiBPerSecond(core_->stream_bytes_per_second()));
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

StatusOr<v1::FlushResponse> FlushTablets(NodeCore& core, const std::string& table) {
  v1::FlushResponse response;
  ASSIGN_OR_RETURN(std::vector<LocalTablet> tablets, LocalTablets(core, table));
  for (const LocalTablet& t : tablets) {
    Status flushed = core.engine()->Flush(t.id);
    if (absl::IsNotFound(flushed)) continue;  // dropped since it was listed
    RETURN_IF_ERROR(flushed);
    response.set_tablets(response.tablets() + 1);
  }
  return response;
}

StatusOr<v1::CompactResponse> CompactTablets(NodeCore& core, const std::string& table) {
  v1::CompactResponse response;
  ASSIGN_OR_RETURN(std::vector<LocalTablet> tablets, LocalTablets(core, table));
  tablet::Engine* engine = core.engine();
  for (const LocalTablet& t : tablets) {
    const uint64_t before = SstableCount(engine, t.id);
    Status compacted = engine->CompactTablet(t.id);
    if (absl::IsNotFound(compacted)) continue;
    RETURN_IF_ERROR(compacted);
    response.set_tablets(response.tablets() + 1);
    response.set_sstables_before(response.sstables_before() + before);
    response.set_sstables_after(response.sstables_after() + SstableCount(engine, t.id));
  }
  return response;
}

StatusOr<v1::RepairResponse> RepairTablets(NodeCore& core, const std::string& table) {
  // A replica that has not reached the sequence compared at by then is reported behind.
  constexpr int64_t kTabletTimeoutUs = 60'000'000;
  v1::RepairResponse response;
  ASSIGN_OR_RETURN(std::vector<LocalTablet> tablets, LocalTablets(core, table));
  replication::ReplicatedStore* store = core.replicated();
  for (const LocalTablet& t : tablets) {
    StatusOr<tablet::TabletDescriptor> d = core.engine()->GetTablet(t.id);
    if (!d.ok()) continue;  // dropped since it was listed
    const bool replicated = store != nullptr && catalog::IsClusterTabletId(t.id);
    // Each tablet is repaired by its primary; the other replicas' nodes leave it to that one.
    if (replicated && !store->replicas()->CheckPrimary(t.id, 0).ok()) continue;
    v1::TabletRepair* out = response.add_tablets();
    out->set_tablet_id(t.id);
    out->set_table_name(t.table);
    out->set_start_row(d->start_row);
    out->set_end_row(d->end_row);
    if (!replicated) {
      StatusOr<uint64_t> last = core.engine()->LastSequence(t.id);
      out->set_sequence(last.ok() ? *last : 0);
      continue;  // one copy: nothing to compare it with
    }
    absl::Notification finished;
    StatusOr<replication::TabletRepairReport> report = absl::UnknownError("not run");
    store->replicas()->RepairTablet(t.id, kTabletTimeoutUs,
                                    [&](StatusOr<replication::TabletRepairReport> r) {
                                      report = std::move(r);
                                      finished.Notify();
                                    });
    finished.WaitForNotification();
    if (!report.ok()) {
      out->set_error(std::string(report.status().message()));
      continue;
    }
    out->set_sequence(report->sequence);
    out->set_rows(report->primary.rows);
    out->set_cells(report->primary.cells);
    out->set_bytes(report->primary.bytes);
    for (const replication::ReplicaRepair& r : report->replicas) {
      v1::ReplicaRepair* replica = out->add_replicas();
      replica->set_endpoint(r.endpoint);
      replica->set_result(std::string(replication::RepairOutcomeName(r.outcome)));
      replica->set_message(r.message);
      replica->set_rows(r.rows);
      replica->set_cells(r.cells);
    }
  }
  return response;
}

rpc::UnaryReactor* NodeAdminService::Repair(rpc::ServerContext* context,
                                            const v1::RepairRequest* request,
                                            v1::RepairResponse* response) {
  StatusOr<v1::RepairResponse> done = RepairTablets(*core_, request->table_name());
  if (done.ok()) done->set_endpoint(Endpoint());
  AuditAdmin(*context, "repair", request->table_name(), done.status());
  return Reply(context, std::move(done), response);
}

rpc::UnaryReactor* NodeAdminService::Flush(rpc::ServerContext* context,
                                           const v1::FlushRequest* request,
                                           v1::FlushResponse* response) {
  StatusOr<v1::FlushResponse> done = FlushTablets(*core_, request->table_name());
  AuditAdmin(*context, "flush", request->table_name(), done.status());
  return Reply(context, std::move(done), response);
}

rpc::UnaryReactor* NodeAdminService::Compact(rpc::ServerContext* context,
                                             const v1::CompactRequest* request,
                                             v1::CompactResponse* response) {
  StatusOr<v1::CompactResponse> done = CompactTablets(*core_, request->table_name());
  AuditAdmin(*context, "compact", request->table_name(), done.status());
  return Reply(context, std::move(done), response);
}

StatusOr<uint64_t> DecommissionNode(NodeCore& core,
                                    std::chrono::system_clock::time_point deadline) {
  RETURN_IF_ERROR(core.BeginDecommission());
  std::vector<uint64_t> left = core.TabletsHeld();
  const size_t held = left.size();
  while (!left.empty() && std::chrono::system_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    left = core.TabletsHeld();
  }
  if (!left.empty()) {
    std::vector<std::string> names;
    for (uint64_t id : left) names.push_back(catalog::TabletName(id));
    return absl::DeadlineExceededError(
        StrCat(left.size(), " of ", held, " tablets still have a replica here (",
               absl::StrJoin(names, ", "), "); they keep moving: ask again to wait"));
  }
  RETURN_IF_ERROR(core.FinishDecommission());
  return held;
}

rpc::UnaryReactor* NodeAdminService::Decommission(rpc::ServerContext* context,
                                                  const v1::DecommissionRequest* /*request*/,
                                                  v1::DecommissionResponse* response) {
  const auto deadline =
      std::min(context->deadline(), std::chrono::system_clock::now() + std::chrono::hours(1));
  StatusOr<uint64_t> moved = DecommissionNode(*core_, deadline);
  Status s = moved.status();
  if (moved.ok()) response->set_tablets_moved(*moved);
  response->set_endpoint(Endpoint());
  AuditAdmin(*context, "decommission", "", s);
  return Reply(context, s);
}

rpc::UnaryReactor* NodeAdminService::Drain(rpc::ServerContext* context,
                                           const v1::DrainRequest* /*request*/,
                                           v1::DrainResponse* response) {
  TLOG_WARN("admin: drain: this node stops serving and flushes its memtables");
  Status s = core_->Drain();
  const tablet::EngineStats stats = core_->engine()->GetStats();
  response->set_memtable_bytes(stats.memtable_bytes);
  response->set_sstables(stats.sstable_files);
  if (s.ok()) TLOG_WARN("admin: drain: done; the node waits to be stopped");
  AuditAdmin(*context, "drain", "", s);
  return Reply(context, s);
}

rpc::UnaryReactor* NodeAdminService::SetCompactionThroughput(rpc::ServerContext* context,
                                                             const v1::Throughput* request,
                                                             v1::Throughput* response) {
  Status s = CheckThroughput("compaction", request->mb_per_second());
  if (s.ok()) {
    core_->engine()->SetCompactionBytesPerSecond(request->mb_per_second() * kMiB);
    response->set_mb_per_second(MiBPerSecond(core_->engine()->compaction_bytes_per_second()));
  }
  AuditAdmin(*context, "setcompactionthroughput", StrCat(request->mb_per_second(), " MiB/s"), s);
  return Reply(context, s);
}

rpc::UnaryReactor* NodeAdminService::GetCompactionThroughput(
    rpc::ServerContext* context, const v1::GetThroughputRequest* /*request*/,
    v1::Throughput* response) {
  response->set_mb_per_second(MiBPerSecond(core_->engine()->compaction_bytes_per_second()));
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::SetStreamThroughput(rpc::ServerContext* context,
                                                         const v1::Throughput* request,
                                                         v1::Throughput* response) {
  Status s = CheckThroughput("stream", request->mb_per_second());
  if (s.ok()) {
    core_->SetStreamBytesPerSecond(request->mb_per_second() * kMiB);
    response->set_mb_per_second(MiBPerSecond(core_->stream_bytes_per_second()));
  }
  AuditAdmin(*context, "setstreamthroughput", StrCat(request->mb_per_second(), " MiB/s"), s);
  return Reply(context, s);
}

rpc::UnaryReactor* NodeAdminService::GetStreamThroughput(
    rpc::ServerContext* context, const v1::GetThroughputRequest* /*request*/,
    v1::Throughput* response) {
  response->set_mb_per_second(MiBPerSecond(core_->stream_bytes_per_second()));
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::TakeSnapshot(rpc::ServerContext* context,
                                                  const v1::TakeSnapshotRequest* request,
                                                  v1::TakeSnapshotResponse* response) {
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(ValidateSnapshotTag(request->tag()));
    if (request->table_name().empty()) {
      return absl::InvalidArgumentError("a snapshot needs a table (--table)");
    }
    ASSIGN_OR_RETURN(std::vector<LocalTablet> tablets, LocalTablets(*core_, request->table_name()));
    absl::MutexLock lock(&snapshot_mu_);
    ASSIGN_OR_RETURN(std::vector<TabletSnapshotInfo> existing,
                     SnapshotFiles(*core_, request->tag(), request->table_name()));
    if (!existing.empty()) {
      return absl::AlreadyExistsError(StrCat("snapshot \"", request->tag(), "\" of table ",
                                             request->table_name(),
                                             " already exists on this node"));
    }
    FileSystem& fs = *core_->env().fs;
    const std::string dir = SnapshotTagDir(core_->options().engine.dir, request->tag());
    RETURN_IF_ERROR(fs.CreateDirs(dir));
    for (const LocalTablet& t : tablets) {
      StatusOr<TabletSnapshotInfo> info =
          WriteTabletSnapshot(*core_->engine(), fs, t.id, StrCat(dir, "/", t.id, ".tsnap"));
      if (absl::IsNotFound(info.status())) continue;  // dropped since it was listed
      RETURN_IF_ERROR(info.status());
      SetTablet(*info, response->add_tablets());
    }
    return Status();
  }();
  AuditAdmin(*context, "snapshot", StrCat(request->table_name(), " tag=", request->tag()), s);
  return Reply(context, s);
}

rpc::UnaryReactor* NodeAdminService::ListSnapshots(rpc::ServerContext* context,
                                                   const v1::ListSnapshotsRequest* request,
                                                   v1::ListSnapshotsResponse* response) {
  StatusOr<std::vector<TabletSnapshotInfo>> files =
      SnapshotFiles(*core_, request->tag(), request->table_name());
  if (!files.ok()) return Reply(context, files.status());
  response->set_endpoint(Endpoint());
  // By tag, then table; each snapshot's tablets by start row.
  std::map<std::pair<std::string, std::string>, std::vector<const TabletSnapshotInfo*>> grouped;
  for (const TabletSnapshotInfo& f : *files) {
    grouped[{f.tag, f.descriptor.table}].push_back(&f);
  }
  for (auto& [key, tablets] : grouped) {
    std::sort(tablets.begin(), tablets.end(), [](const auto* a, const auto* b) {
      return a->descriptor.start_row < b->descriptor.start_row;
    });
    v1::SnapshotInfo* out = response->add_snapshots();
    out->set_tag(key.first);
    out->set_table_name(key.second);
    for (const TabletSnapshotInfo* t : tablets) SetTablet(*t, out->add_tablets());
    catalog::TableInfo info;
    info.full_name = key.second;
    info.schema = tablets.front()->descriptor.schema;
    *out->mutable_schema() = TableToProto(info, admin::Table::FULL);
    out->mutable_schema()->clear_cluster_states();
  }
  return Reply(context, Status());
}

rpc::UnaryReactor* NodeAdminService::ClearSnapshot(rpc::ServerContext* context,
                                                   const v1::ClearSnapshotRequest* request,
                                                   v1::ClearSnapshotResponse* response) {
  Status s = [&]() -> Status {
    if (request->tag().empty() && !request->table_name().empty()) {
      return absl::InvalidArgumentError("clearing one table's snapshot needs its tag (--tag)");
    }
    absl::MutexLock lock(&snapshot_mu_);
    ASSIGN_OR_RETURN(std::vector<TabletSnapshotInfo> files,
                     SnapshotFiles(*core_, request->tag(), request->table_name()));
    FileSystem& fs = *core_->env().fs;
    const std::string& data_dir = core_->options().engine.dir;
    std::set<std::string> tags;
    for (const TabletSnapshotInfo& f : files) {
      RETURN_IF_ERROR(fs.RemoveFile(f.path));
      response->set_files_removed(response->files_removed() + 1);
      tags.insert(f.tag);
    }
    if (!request->tag().empty()) tags.insert(request->tag());
    // Folders left empty go; so do the scratch folders of restores a crash interrupted.
    const std::string root = SnapshotsDir(data_dir);
    if (request->tag().empty() && fs.FileExists(root)) {
      ASSIGN_OR_RETURN(std::vector<std::string> names, fs.GetChildren(root));
      for (const std::string& name : names) {
        if (name.starts_with(".restore-")) RETURN_IF_ERROR(RemoveTree(fs, root + "/" + name));
      }
    }
    for (const std::string& tag : tags) {
      const std::string dir = SnapshotTagDir(data_dir, tag);
      StatusOr<std::vector<std::string>> left = fs.GetChildren(dir);
      if (left.ok() && std::all_of(left->begin(), left->end(), [](const std::string& n) {
            return n == "." || n == ".." || n.ends_with(".tmp");
          })) {
        RETURN_IF_ERROR(RemoveTree(fs, dir));
      }
    }
    return Status();
  }();
  AuditAdmin(*context, "clearsnapshot", StrCat(request->table_name(), " tag=", request->tag()), s);
  return Reply(context, s);
}

Status NodeAdminService::RestoreFile(const std::string& path, const std::string& target,
                                     v1::RestoreSnapshotResponse* response) {
  constexpr size_t kBatchRows = 512;
  constexpr size_t kBatchBytes = 4 << 20;
  std::vector<model::RowMutation> batch;
  size_t batch_bytes = 0;
  auto write = [&]() -> Status {
    if (batch.empty()) return Status();
    ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> table,
                     core_->catalog()->GetTable(target));
    std::vector<Status> done = core_->access()->MutateRows(*table, batch, {});
    for (const Status& s : done) RETURN_IF_ERROR(s);
    response->set_rows(response->rows() + batch.size());
    batch.clear();
    batch_bytes = 0;
    return Status();
  };
  const Env& env = core_->env();
  const std::string scratch = StrCat(SnapshotsDir(core_->options().engine.dir), "/.restore-",
                                     env.clock->NowMicros(), "-", restores_.fetch_add(1));
  RETURN_IF_ERROR(ForEachSnapshotRow(env, path, scratch, [&](model::Row&& row) -> Status {
    model::RowMutation mutation(row.key);
    for (const model::Cell& cell : row.cells) {
      mutation.SetCell(cell.family, cell.qualifier, cell.timestamp_micros, cell.value);
    }
    response->set_cells(response->cells() + row.cells.size());
    batch_bytes += mutation.encoded().size();
    batch.push_back(std::move(mutation));
    if (batch.size() >= kBatchRows || batch_bytes >= kBatchBytes) return write();
    return Status();
  }));
  return write();
}

rpc::UnaryReactor* NodeAdminService::RestoreSnapshot(rpc::ServerContext* context,
                                                     const v1::RestoreSnapshotRequest* request,
                                                     v1::RestoreSnapshotResponse* response) {
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(ValidateSnapshotTag(request->tag()));
    if (request->table_name().empty()) {
      return absl::InvalidArgumentError("a restore needs the snapshot's table (--table)");
    }
    const std::string& target =
        request->target_table_name().empty() ? request->table_name() : request->target_table_name();
    ASSIGN_OR_RETURN(catalog::TableName target_name, catalog::TableName::Parse(target));
    if (catalog::IsReservedInstance(target_name.instance)) {
      return absl::PermissionDeniedError(
          StrCat("table ", target, " is Tessera's own: a snapshot cannot be restored into it"));
    }
    RETURN_IF_ERROR(core_->CheckServing());
    RETURN_IF_ERROR(core_->catalog()->GetTable(target).status());
    ASSIGN_OR_RETURN(std::vector<TabletSnapshotInfo> files,
                     SnapshotFiles(*core_, request->tag(), request->table_name()));
    if (files.empty()) {
      return absl::NotFoundError(StrCat("this node has no snapshot \"", request->tag(),
                                        "\" of table ", request->table_name()));
    }
    std::vector<const TabletSnapshotInfo*> chosen;
    for (uint64_t id : request->tablet_ids()) {
      auto it = std::find_if(files.begin(), files.end(),
                             [id](const TabletSnapshotInfo& f) { return f.tablet_id == id; });
      if (it == files.end()) {
        return absl::NotFoundError(StrCat("snapshot \"", request->tag(), "\" of table ",
                                          request->table_name(), " has no tablet ", id,
                                          " on this node"));
      }
      chosen.push_back(&*it);
    }
    if (request->tablet_ids().empty()) {
      for (const TabletSnapshotInfo& f : files) chosen.push_back(&f);
    }
    for (const TabletSnapshotInfo* f : chosen) {
      RETURN_IF_ERROR(RestoreFile(f->path, target, response));
    }
    return Status();
  }();
  AuditAdmin(*context, "restore",
             StrCat(request->table_name(), " tag=", request->tag(),
                    " into=", request->target_table_name()),
             s);
  return Reply(context, s);
}

}  // namespace tessera::server
