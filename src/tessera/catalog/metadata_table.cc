#include "tessera/catalog/metadata_table.h"

#include <optional>

#include "absl/strings/escaping.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/model/gc_rule.h"

namespace tessera::catalog {
namespace {

constexpr char kBounded = '\x01';
constexpr char kLast = '\x02';
constexpr std::string_view kIdColumn = "id";
constexpr std::string_view kStartColumn = "start";

std::string Printable(std::string_view key) {
  return absl::CHexEscape(absl::string_view(key.data(), key.size()));
}

}  // namespace

model::TableSchema MetadataSchema() {
  model::TableSchema schema;
  schema.name = std::string(kMetadataTableId);
  schema.families[std::string(kMetadataFamily)].gc_rule = model::GcRule::MaxNumVersions(1);
  return schema;
}

bool LocatedThroughMetadata(const TableInfo& table) {
  return table.tablet_prefix != 0 && !IsMetadataTable(table.full_name) &&
         !table.tablets.empty() && IsClusterTabletId(table.tablets.front().id);
}

std::string MetadataRowKey(std::string_view table, std::string_view end_row) {
  std::string key(table);
  key.push_back('\0');
  if (end_row.empty()) {
    key.push_back(kLast);
  } else {
    key.push_back(kBounded);
    key.append(end_row);
  }
  return key;
}

model::RowRange MetadataRangeOf(std::string_view table) {
  model::RowRange range;
  range.start = std::string(table);
  range.start.push_back('\0');
  range.end = std::string(table);
  range.end.push_back('\x01');
  return range;
}

model::RowMutation MetadataPut(std::string_view table, const TabletRef& tablet,
                               int64_t timestamp_micros) {
  model::RowMutation m(MetadataRowKey(table, tablet.end_row));
  m.DeleteFromRow();
  m.SetCell(kMetadataFamily, kIdColumn, timestamp_micros, TabletIdHex(tablet.id));
  m.SetCell(kMetadataFamily, kStartColumn, timestamp_micros, tablet.start_row);
  return m;
}

StatusOr<MetadataEntry> ParseMetadataRow(const model::Row& row) {
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(
        StrCat("METADATA row \"", Printable(row.key), "\" is malformed: ", what));
  };
  const size_t zero = row.key.find('\0');
  if (zero == std::string::npos || zero + 1 >= row.key.size()) return bad("no end row");
  MetadataEntry entry;
  entry.table = row.key.substr(0, zero);
  const char kind = row.key[zero + 1];
  if (kind == kBounded) {
    entry.tablet.end_row = row.key.substr(zero + 2);
    if (entry.tablet.end_row.empty()) return bad("an empty end row");
  } else if (kind != kLast || zero + 2 != row.key.size()) {
    return bad("an end row of unknown form");
  }
  bool has_id = false, has_start = false;
  for (const model::Cell& cell : row.cells) {
    if (cell.family != kMetadataFamily) continue;
    // Cells come newest first within a column: the first one of each counts.
    if (cell.qualifier == kIdColumn && !has_id) {
      std::optional<uint64_t> id = ParseTabletIdHex(cell.value);
      if (!id.has_value()) return bad(StrCat("tablet id \"", Printable(cell.value), "\" is not 16 hex digits"));
      entry.tablet.id = *id;
      has_id = true;
    } else if (cell.qualifier == kStartColumn && !has_start) {
      entry.tablet.start_row = cell.value;
      has_start = true;
    }
  }
  if (!has_id) return bad("no tablet id");
  if (!has_start) return bad("no start row");
  if (!entry.tablet.end_row.empty() && entry.tablet.start_row >= entry.tablet.end_row) {
    return bad("its start row is not before its end row");
  }
  return entry;
}

std::vector<MetadataEntry> MetadataEntriesOf(const TableInfo& table) {
  std::vector<MetadataEntry> entries;
  entries.reserve(table.tablets.size());
  for (const TabletRef& t : table.tablets) entries.push_back({table.full_name, t});
  return entries;
}

StatusOr<std::vector<TabletRef>> TabletsFromMetadata(std::string_view table,
                                                     uint64_t tablet_prefix,
                                                     const std::vector<model::Row>& rows) {
  std::vector<TabletRef> tablets;
  auto missing = [&](std::string_view what) {
    return absl::UnavailableError(StrCat("the tablets of ", table,
                                         " are not all in METADATA yet (", rows.size(),
                                         " rows): ", what));
  };
  for (const model::Row& row : rows) {
    ASSIGN_OR_RETURN(MetadataEntry entry, ParseMetadataRow(row));
    if (entry.table != table) {
      return absl::DataLossError(StrCat("METADATA row \"", Printable(row.key),
                                        "\" is not one of ", table, "'s"));
    }
    if (TabletIdPrefix(entry.tablet.id) != tablet_prefix) {
      return missing(StrCat(TabletName(entry.tablet.id), " is of an earlier table of that name"));
    }
    const std::string_view expected_start =
        tablets.empty() ? std::string_view() : std::string_view(tablets.back().end_row);
    if (entry.tablet.start_row != expected_start) {
      return missing(StrCat("no tablet starts at \"", Printable(expected_start), "\""));
    }
    tablets.push_back(std::move(entry.tablet));
  }
  if (tablets.empty()) return missing("no rows");
  if (!tablets.back().end_row.empty()) {
    return missing(StrCat("no tablet starts at \"", Printable(tablets.back().end_row), "\""));
  }
  return tablets;
}

}  // namespace tessera::catalog
