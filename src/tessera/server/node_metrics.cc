#include "tessera/server/node_metrics.h"

#include <algorithm>
#include <map>
#include <string>

#include "tessera/metrics/samples.h"
#include "tessera/replication/replicated_store.h"
#include "tessera/server/table_stats.h"

namespace tessera::server {

using metrics::AddValue;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

MetricFamily Gauge(std::string name, std::string help) {
  return metrics::Family(std::move(name), std::move(help), MetricType::Gauge);
}
MetricFamily Counter(std::string name, std::string help) {
  return metrics::Family(std::move(name), std::move(help), MetricType::Counter);
}
MetricFamily Histogram(std::string name, std::string help) {
  return metrics::Family(std::move(name), std::move(help), MetricType::Histogram);
}
// A family with one unlabelled sample.
MetricFamily One(MetricFamily f, double value) {
  AddValue(&f, value);
  return f;
}

}  // namespace

std::vector<MetricFamily> NodeMetrics::Collect() const {
  std::vector<MetricFamily> out;
  CollectEngine(&out);
  CollectCluster(&out);
  CollectTablets(&out);
  CollectTables(&out);
  return out;
}

void NodeMetrics::CollectEngine(std::vector<MetricFamily>* out) const {
  const tablet::Engine* engine = core_->engine();
  if (engine == nullptr) return;
  const tablet::EngineStats s = engine->GetStats();
  out->push_back(One(Gauge("tessera_memtable_bytes", "Bytes in memtables, active and sealed"),
                     static_cast<double>(s.memtable_bytes)));
  MetricFamily files = Gauge("tessera_sstables", "SSTables, by compaction level (0: flushed "
                                                 "or size-tiered)");
  MetricFamily bytes = Gauge("tessera_sstable_bytes", "Bytes of SSTables, by compaction level");
  for (const auto& [level, l] : s.levels) {
    AddValue(&files, static_cast<double>(l.files), {{"level", std::to_string(level)}});
    AddValue(&bytes, static_cast<double>(l.bytes), {{"level", std::to_string(level)}});
  }
  out->push_back(std::move(files));
  out->push_back(std::move(bytes));
  out->push_back(One(Counter("tessera_flushes_total", "Memtables flushed to SSTables"),
                     static_cast<double>(s.flushes)));
  out->push_back(One(Counter("tessera_compactions_total", "Compactions done"),
                     static_cast<double>(s.compactions)));
  out->push_back(One(Counter("tessera_flush_written_bytes_total", "SSTable bytes flushes wrote"),
                     static_cast<double>(s.flush_bytes_written)));
  out->push_back(One(
      Counter("tessera_compaction_written_bytes_total", "SSTable bytes compactions wrote"),
      static_cast<double>(s.compaction_bytes_written)));
  MetricFamily jobs = Gauge("tessera_background_jobs",
                            "Flushes and compactions: queued (not started) and running");
  AddValue(&jobs, static_cast<double>(s.queued_jobs), {{"state", "queued"}});
  AddValue(&jobs, static_cast<double>(s.running_jobs()), {{"state", "running"}});
  out->push_back(std::move(jobs));
  out->push_back(One(Counter("tessera_write_stalls_total",
                             "Writes that waited for a flush to free memtable memory"),
                     static_cast<double>(s.write_stalls)));
  out->push_back(One(Counter("tessera_block_cache_hits_total", "Block cache lookups that hit"),
                     static_cast<double>(s.block_cache_hits)));
  out->push_back(One(Counter("tessera_block_cache_misses_total", "Block cache lookups that missed"),
                     static_cast<double>(s.block_cache_misses)));
  out->push_back(One(Gauge("tessera_block_cache_bytes", "Bytes of blocks in the block cache"),
                     static_cast<double>(s.block_cache_usage)));
  out->push_back(One(Gauge("tessera_commit_log_segments", "Commit-log segments kept on disk"),
                     static_cast<double>(s.commit_log_segments)));
  MetricFamily sync =
      Histogram("tessera_commit_log_sync_seconds", "Time of the commit log's fdatasyncs");
  metrics::AddHistogram(&sync, s.commit_log_sync);
  out->push_back(std::move(sync));
}

void NodeMetrics::CollectCluster(std::vector<MetricFamily>* out) const {
  out->push_back(One(Gauge("tessera_serving", "1 while the node answers requests"),
                     core_->CheckServing().ok() ? 1 : 0));
  const cluster::ClusterNode* node = core_->serving_node();
  if (node == nullptr) return;
  const ::tessera::v1::ClusterStatus status = node->GetStatus();
  out->push_back(One(Gauge("tessera_is_master", "1 while this node is the cluster's master"),
                     status.master() == status.self() ? 1 : 0));
  std::map<std::string, int> states = {{"up", 0}, {"suspect", 0}, {"down", 0}};
  MetricFamily phi = Gauge("tessera_cluster_peer_phi",
                           "Phi of the accrual failure detector, per peer as this node sees it");
  MetricFamily load = Gauge("tessera_cluster_load_bytes", "Data on disk, per node, as gossiped");
  for (const auto& n : status.nodes()) {
    ++states[n.liveness()];
    if (!n.is_self()) AddValue(&phi, n.phi(), {{"peer", n.endpoint()}});
    AddValue(&load, static_cast<double>(n.load_bytes()), {{"node", n.endpoint()}});
  }
  MetricFamily nodes = Gauge("tessera_cluster_nodes",
                             "Nodes of the cluster by liveness, as this node sees them");
  for (const auto& [state, count] : states) AddValue(&nodes, count, {{"state", state}});
  out->push_back(std::move(nodes));
  out->push_back(std::move(phi));
  out->push_back(std::move(load));
}

void NodeMetrics::CollectTablets(std::vector<MetricFamily>* out) const {
  const replication::ReplicatedStore* store = core_->replicated();
  if (store == nullptr || store->replicas() == nullptr) return;
  const std::vector<replication::TabletReplicaState> states = store->replicas()->States();
  double primaries = 0, hint_bytes = 0, hints = 0, retained = 0, rebuilding = 0;
  double answering = 0, silent = 0;
  MetricFamily lag = Gauge("tessera_tablet_replica_lag",
                           "Mutations a replica has not acknowledged, per tablet this node is "
                           "primary of and peer");
  for (const auto& t : states) {
    if (t.primary) ++primaries;
    hint_bytes += static_cast<double>(t.hint_bytes);
    hints += static_cast<double>(t.hint_records);
    retained += static_cast<double>(t.retained_bytes);
    for (const auto& p : t.peers) {
      const double behind =
          t.last_sequence > p.acknowledged ? static_cast<double>(t.last_sequence - p.acknowledged) : 0;
      AddValue(&lag, behind, {{"tablet", std::to_string(t.tablet_id)}, {"peer", p.endpoint}});
      if (p.needs_rebuild || p.copying) ++rebuilding;
      (p.answering ? answering : silent) += 1;
    }
  }
  MetricFamily tablets = Gauge("tessera_tablets", "Tablet replicas this node holds, by role");
  AddValue(&tablets, primaries, {{"role", "primary"}});
  AddValue(&tablets, static_cast<double>(states.size()) - primaries, {{"role", "replica"}});
  out->push_back(std::move(tablets));
  out->push_back(std::move(lag));
  MetricFamily peers = Gauge("tessera_tablet_replicas_answering",
                             "Replicas of this node's primary tablets whose last call succeeded "
                             "(answering) or failed (silent)");
  AddValue(&peers, answering, {{"state", "answering"}});
  AddValue(&peers, silent, {{"state", "silent"}});
  out->push_back(std::move(peers));
  out->push_back(One(Gauge("tessera_tablets_rebuilding",
                           "Replicas of this node's primary tablets that need or are being given "
                           "a rebuild (streamed whole)"),
                     rebuilding));
  out->push_back(One(Gauge("tessera_hints_pending_bytes",
                           "Bytes of hints in the hint log for replicas that were away"),
                     hint_bytes));
  out->push_back(One(Gauge("tessera_hints_pending", "Hints in the hint log"), hints));
  out->push_back(One(Gauge("tessera_replication_retained_bytes",
                           "Mutations kept in memory for replicas that have not acknowledged "
                           "them"),
                     retained));
  const replication::StreamStats streams = core_->Streams();
  MetricFamily under_way =
      Gauge("tessera_streams_in_progress",
            "Rebuild copies (streams) under way: out, sent by this node as a tablet's primary; in, "
            "received by it as a replica");
  AddValue(&under_way, static_cast<double>(streams.sending), {{"direction", "out"}});
  AddValue(&under_way, static_cast<double>(streams.receiving), {{"direction", "in"}});
  out->push_back(std::move(under_way));
  out->push_back(One(Gauge("tessera_streams_in_progress_sent_bytes",
                           "Bytes the rebuild copies under way from this node have sent so far"),
                     static_cast<double>(streams.sending_bytes)));
  MetricFamily streamed = Counter("tessera_stream_bytes_total",
                                  "Bytes of rebuild copies this node sent (out) and received (in)");
  AddValue(&streamed, static_cast<double>(streams.sent_bytes_total), {{"direction", "out"}});
  AddValue(&streamed, static_cast<double>(streams.received_bytes_total), {{"direction", "in"}});
  out->push_back(std::move(streamed));
  out->push_back(
      One(Counter("tessera_streams_completed_total", "Rebuild copies this node sent whole"),
          static_cast<double>(streams.copies_done_total)));
  const replication::RepairStats repairs = core_->Repairs();
  out->push_back(One(Gauge("tessera_repairs_in_progress",
                           "Tablet repairs this node runs now as the tablets' primary"),
                     static_cast<double>(repairs.in_progress)));
  out->push_back(One(Counter("tessera_repair_bytes_total",
                             "Bytes of cells this node hashed for repairs, as primary or replica"),
                     static_cast<double>(repairs.hashed_bytes_total)));
  out->push_back(One(Gauge("tessera_stream_throughput_bytes_per_second",
                           "The rebuild stream rate limit of this node; 0: unlimited"),
                     static_cast<double>(std::max<int64_t>(0, core_->stream_bytes_per_second()))));
}

void NodeMetrics::CollectTables(std::vector<MetricFamily>* out) const {
  StatusOr<std::vector<LocalTablet>> tablets = LocalTablets(*core_, "");
  if (!tablets.ok()) return;
  MetricFamily bytes = Gauge("tessera_table_sstable_bytes",
                             "Bytes of SSTables of the table's tablets on this node");
  MetricFamily memtable = Gauge("tessera_table_memtable_bytes",
                                "Bytes of memtables of the table's tablets on this node");
  MetricFamily reads = Histogram(
      "tessera_table_row_read_seconds",
      "One-row reads of the table's tablets on this node: a sample, one in 16 of each thread's");
  MetricFamily read_count = Counter("tessera_table_row_reads_total",
                                    "One-row reads of the table's tablets on this node");
  MetricFamily writes =
      Histogram("tessera_table_write_seconds",
                "Write batches applied to the table's tablets on this node, until durable");
  MetricFamily scans = Counter("tessera_table_scans_total",
                               "Scans of the table's tablets on this node");
  MetricFamily rows = Counter("tessera_table_rows_written_total",
                              "Rows written to the table's tablets on this node");
  for (const TableTotals& t : SumByTable(*core_->engine(), *tablets)) {
    if (t.table.empty()) continue;  // being dropped
    const std::vector<metrics::Label> label = {{"table", t.table}};
    AddValue(&bytes, static_cast<double>(t.sstable_bytes), label);
    AddValue(&memtable, static_cast<double>(t.memtable_bytes), label);
    metrics::AddHistogram(&reads, t.row_read_samples, label);
    AddValue(&read_count, static_cast<double>(t.row_reads), label);
    metrics::AddHistogram(&writes, t.writes, label);
    AddValue(&scans, static_cast<double>(t.scans), label);
    AddValue(&rows, static_cast<double>(t.rows_written), label);
  }
  for (MetricFamily* f : {&bytes, &memtable, &reads, &read_count, &writes, &scans, &rows}) {
    out->push_back(std::move(*f));
  }
}

}  // namespace tessera::server
