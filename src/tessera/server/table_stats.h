// The node's tablets summed per table, from its engine (Engine::GetTabletStats): what
// `tessera admin tablestats` (node_admin_service.h) and the per-table metrics
// (node_metrics.h) show. On a cluster node these are the replicas the node holds.
//
// Thread-safety: reads only thread-safe parts of the core.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/server/node_core.h"
#include "tessera/util/latency_histogram.h"
#include "tessera/util/status.h"

namespace tessera::server {

struct LocalTablet {
  tablet::TabletId id = 0;
  std::string table;  // full name; "" when the catalog no longer places the tablet
};

// The engine's tablets with their tables; only those of `only` (a full name) when it is set.
// INVALID_ARGUMENT for a malformed name, NOT_FOUND for a table the catalog does not hold.
StatusOr<std::vector<LocalTablet>> LocalTablets(const NodeCore& core, const std::string& only);

struct TableTotals {
  std::string table;  // as LocalTablet::table
  uint64_t tablets = 0;
  uint64_t sstables = 0;
  uint64_t sstable_bytes = 0;
  uint64_t memtable_bytes = 0;
  uint64_t row_reads = 0;
  LatencyHistogram::Snapshot row_read_samples;  // a sample of them (Engine::TabletStats)
  uint64_t scans = 0;
  LatencyHistogram::Snapshot writes;
  uint64_t rows_written = 0;
};

// `tablets` summed per table, by table name. A tablet dropped since it was listed is left out.
std::vector<TableTotals> SumByTable(const tablet::Engine& engine,
                                    const std::vector<LocalTablet>& tablets);

}  // namespace tessera::server
