#include "tessera/server/table_stats.h"

#include <map>
#include <utility>

#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/table_definition.h"

namespace tessera::server {

StatusOr<std::vector<LocalTablet>> LocalTablets(const NodeCore& core, const std::string& only) {
  if (!only.empty()) {
    if (StatusOr<catalog::TableName> name = catalog::TableName::Parse(only); !name.ok()) {
      return name.status();
    }
  }
  std::map<tablet::TabletId, std::string> tables;
  bool known = only.empty();
  for (const auto& table : core.catalog()->ListAllTables()) {
    if (table->full_name == only) known = true;
    for (const catalog::TabletRef& ref : table->tablets) tables[ref.id] = table->full_name;
  }
  if (!known) return absl::NotFoundError(StrCat("table ", only, " not found"));
  std::vector<LocalTablet> out;
  for (tablet::TabletId id : core.engine()->ListTablets()) {
    auto it = tables.find(id);
    LocalTablet t{id, it == tables.end() ? std::string() : it->second};
    if (only.empty() || t.table == only) out.push_back(std::move(t));
  }
  return out;
}

std::vector<TableTotals> SumByTable(const tablet::Engine& engine,
                                    const std::vector<LocalTablet>& tablets) {
  std::map<std::string, TableTotals> by_table;
  for (const LocalTablet& t : tablets) {
    StatusOr<tablet::TabletStats> s = engine.GetTabletStats(t.id);
    if (!s.ok()) continue;
    TableTotals& sum = by_table[t.table];
    sum.table = t.table;
    ++sum.tablets;
    sum.sstables += s->sstable_files;
    sum.sstable_bytes += s->sstable_bytes;
    sum.memtable_bytes += s->memtable_bytes;
    sum.row_reads += s->row_reads;
    sum.row_read_samples.Add(s->row_read_samples);
    sum.scans += s->scans;
    sum.writes.Add(s->writes);
    sum.rows_written += s->rows_written;
  }
  std::vector<TableTotals> out;
  for (auto& [name, sum] : by_table) out.push_back(std::move(sum));
  return out;
}

}  // namespace tessera::server
