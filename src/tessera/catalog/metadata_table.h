// The METADATA table (docs/replication.md, "Where the tablet map lives"): Bigtable's second
// level of tablet location. The lock service holds the root (the configuration of METADATA's
// own tablet, under `tablets/` like every configuration); METADATA, an ordinary replicated
// Tessera table, holds one row per user tablet; the user tablets hold the data.
//
// METADATA is `projects/__tessera/instances/__tessera/tables/METADATA` (an instance of its own,
// so that no user's ListTables shows it). Its rows:
//
//   key     := table full name 0x00 end
//   end     := 0x01 end row          a tablet with an upper bound
//            | 0x02                  the table's last tablet (no upper bound)
//   family "t": "id" = the tablet id as 16 hex digits, "start" = the tablet's first row
//
// So a table's rows are contiguous (full names hold no 0x00), in row order, the last tablet
// last, and the tablet holding row r is the first row whose key is past `name 0x00 0x01 r`
// (Bigtable's key: the table and the tablet's end row). The elected master writes the rows
// (replication/metadata_sync.h); coordinators read and cache them
// (replication/tablet_locator.h).
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/catalog/table_catalog.h"
#include "tessera/model/row.h"
#include "tessera/model/row_mutation.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

inline constexpr std::string_view kMetadataInstance = "projects/__tessera/instances/__tessera";
inline constexpr std::string_view kMetadataTableId = "METADATA";
inline constexpr std::string_view kMetadataTable =
    "projects/__tessera/instances/__tessera/tables/METADATA";
inline constexpr std::string_view kMetadataFamily = "t";

inline bool IsMetadataTable(std::string_view full_name) { return full_name == kMetadataTable; }
// True for the instance that holds Tessera's own tables, which clients may read but not change.
inline bool IsReservedInstance(std::string_view instance) { return instance == kMetadataInstance; }

// METADATA's schema: family "t", one version kept.
model::TableSchema MetadataSchema();

// Whether `table`'s tablets are located through METADATA: a table the cluster made (its
// tablets have a cluster-wide prefix), other than METADATA itself (located by its root).
bool LocatedThroughMetadata(const TableInfo& table);

// The key of the row of the tablet of `table` ending at `end_row` ("" = unbounded).
std::string MetadataRowKey(std::string_view table, std::string_view end_row);
// The rows of `table`: [name 0x00, name 0x01).
model::RowRange MetadataRangeOf(std::string_view table);

// The mutation that makes `tablet`'s row of `table` say what `tablet` says, at `timestamp`
// (micros, a multiple of 1000: METADATA has Bigtable's millisecond granularity).
model::RowMutation MetadataPut(std::string_view table, const TabletRef& tablet,
                               int64_t timestamp_micros);

// One METADATA row, decoded.
struct MetadataEntry {
  std::string table;  // full name
  TabletRef tablet;
  bool operator==(const MetadataEntry& o) const {
    return table == o.table && tablet.id == o.tablet.id && tablet.start_row == o.tablet.start_row &&
           tablet.end_row == o.tablet.end_row;
  }
};
// DataLoss naming the row for a key or cells not in the form above.
StatusOr<MetadataEntry> ParseMetadataRow(const model::Row& row);
// The entries of every tablet of `table` as METADATA should hold them.
std::vector<MetadataEntry> MetadataEntriesOf(const TableInfo& table);

// `table`'s tablets from its METADATA rows `rows` (in key order, all of `table`'s range): they
// must tile the row space ["", "") and carry `tablet_prefix` (the table's, so that rows of a
// deleted table of the same name are not taken for the new one's). Unavailable naming the
// table and what is missing when they do not (the master has not written them yet, or is
// rewriting them); DataLoss for a row that does not parse.
StatusOr<std::vector<TabletRef>> TabletsFromMetadata(std::string_view table,
                                                     uint64_t tablet_prefix,
                                                     const std::vector<model::Row>& rows);

}  // namespace tessera::catalog
