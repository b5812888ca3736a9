// NodeMetrics: what a node shows Prometheus besides its gRPC calls (metrics/rpc_metrics.h),
// read from the node when scraped (docs/metrics.md has the whole list):
//
//   engine   tessera_memtable_bytes, tessera_sstables{level}, tessera_sstable_bytes{level},
//            tessera_flushes_total, tessera_compactions_total, tessera_flush_written_bytes_total,
//            tessera_compaction_written_bytes_total, tessera_background_jobs{state},
//            tessera_write_stalls_total, tessera_block_cache_{hits,misses}_total,
//            tessera_block_cache_bytes, tessera_commit_log_segments,
//            tessera_commit_log_sync_seconds (histogram)
//   cluster  tessera_serving, tessera_is_master, tessera_cluster_nodes{state},
//            tessera_cluster_peer_phi{peer}, tessera_cluster_load_bytes{node}
//   tablets  tessera_tablets{role}, tessera_tablet_replica_lag{tablet,peer} (mutations a
//            replica is behind, seen from the primary), tessera_tablet_replicas_answering{state},
//            tessera_tablets_rebuilding, tessera_hints_pending_bytes, tessera_hints_pending,
//            tessera_replication_retained_bytes
//   tables   per table, the node's tablets (server/table_stats.h): tessera_table_sstable_bytes,
//            tessera_table_memtable_bytes, tessera_table_row_reads_total,
//            tessera_table_row_read_seconds (a sample) and
//            tessera_table_write_seconds (histograms), tessera_table_scans_total,
//            tessera_table_rows_written_total
//
// Thread-safety: Collect runs on the HTTP exporter's threads, concurrently with everything;
// what it reads is thread-safe (NodeCore's accessors). The core must outlive the collector's
// last Collect (the server removes the exporter first).
#pragma once

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "tessera/server/node_core.h"

namespace tessera::server {

class NodeMetrics final : public prometheus::Collectable {
 public:
  explicit NodeMetrics(const NodeCore* core) : core_(core) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void CollectEngine(std::vector<prometheus::MetricFamily>* out) const;
  void CollectCluster(std::vector<prometheus::MetricFamily>* out) const;
  void CollectTablets(std::vector<prometheus::MetricFamily>* out) const;
  void CollectTables(std::vector<prometheus::MetricFamily>* out) const;

  const NodeCore* const core_;
};

}  // namespace tessera::server
