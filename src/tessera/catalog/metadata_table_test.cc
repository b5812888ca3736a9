#include "tessera/catalog/metadata_table.h"

#include <gtest/gtest.h>


#include "tessera/catalog/tablet_config.h"
#include "tessera/catalog/tablet_id.h"

namespace tessera::catalog {
namespace {

constexpr char kTable[] = "projects/p/instances/i/tables/t";

// A row as a read returns what MetadataPut wrote.
model::Row RowOf(const TabletRef& tablet, std::string_view table = kTable) {
  const std::string id = TabletIdHex(tablet.id);
  model::Row row;
  row.key = MetadataRowKey(table, tablet.end_row);
  row.cells.push_back({"t", "id", 1000, id});
  row.cells.push_back({"t", "start", 1000, tablet.start_row});
  return row;
}

TEST(MetadataTableTest, PutWritesTheWholeRow) {
  model::RowMutation m = MetadataPut(kTable, {MakeTabletId(77, 1), "g", "p"}, 1000);
  EXPECT_EQ(m.row(), MetadataRowKey(kTable, "p"));
  EXPECT_EQ(m.size(), 3u);  // the row's deletion, then its two cells
}

std::vector<TabletRef> ThreeTablets(uint64_t prefix) {
  return {{MakeTabletId(prefix, 0), "", "g"},
          {MakeTabletId(prefix, 1), "g", "p"},
          {MakeTabletId(prefix, 2), "p", ""}};
}

TEST(MetadataTableTest, KeysSortByTableThenEndRowWithTheLastTabletLast) {
  std::vector<std::string> keys = {MetadataRowKey(kTable, "g"), MetadataRowKey(kTable, "p"),
                                   MetadataRowKey(kTable, "pa"), MetadataRowKey(kTable, ""),
                                   MetadataRowKey(std::string(kTable) + "2", "a")};
  for (size_t i = 1; i < keys.size(); ++i) EXPECT_LT(keys[i - 1], keys[i]) << i;
  model::RowRange range = MetadataRangeOf(kTable);
  for (size_t i = 0; i + 1 < keys.size(); ++i) EXPECT_TRUE(range.Contains(keys[i])) << i;
  EXPECT_FALSE(range.Contains(keys.back()));
}

TEST(MetadataTableTest, RowsRoundTripIntoTheTablets) {
  const uint64_t prefix = 77;
  std::vector<model::Row> rows;
  for (const TabletRef& t : ThreeTablets(prefix)) rows.push_back(RowOf(t));
  auto entry = ParseMetadataRow(rows[1]);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(entry->table, kTable);
  EXPECT_EQ(entry->tablet.id, MakeTabletId(prefix, 1));
  EXPECT_EQ(entry->tablet.start_row, "g");
  EXPECT_EQ(entry->tablet.end_row, "p");
  auto tablets = TabletsFromMetadata(kTable, prefix, rows);
  ASSERT_TRUE(tablets.ok()) << tablets.status();
  ASSERT_EQ(tablets->size(), 3u);
  EXPECT_EQ((*tablets)[2].id, MakeTabletId(prefix, 2));
  EXPECT_EQ((*tablets)[2].end_row, "");
}

TEST(MetadataTableTest, AGapOrAnEarlierTableIsUnavailableNotATablet) {
  const uint64_t prefix = 77;
  std::vector<model::Row> rows;
  for (const TabletRef& t : ThreeTablets(prefix)) rows.push_back(RowOf(t));
  std::vector<model::Row> gap = {rows[0], rows[2]};
  Status s = TabletsFromMetadata(kTable, prefix, gap).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("no tablet starts at \"g\""), std::string::npos) << s;
  std::vector<model::Row> no_last = {rows[0], rows[1]};
  EXPECT_TRUE(absl::IsUnavailable(TabletsFromMetadata(kTable, prefix, no_last).status()));
  EXPECT_TRUE(absl::IsUnavailable(TabletsFromMetadata(kTable, prefix, {}).status()));
  s = TabletsFromMetadata(kTable, prefix + 1, rows).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("earlier table"), std::string::npos) << s;
}

TEST(MetadataTableTest, MalformedRowsAreDataLossNamingTheRow) {
  model::Row row;
  row.key = "no separator";
  Status s = ParseMetadataRow(row).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("no separator"), std::string::npos) << s;
  row = RowOf({MakeTabletId(5, 0), "", ""});
  row.cells[0].value = "xyz";
  EXPECT_TRUE(absl::IsDataLoss(ParseMetadataRow(row).status()));
  row = RowOf({MakeTabletId(5, 0), "", ""});
  row.cells.pop_back();
  EXPECT_TRUE(absl::IsDataLoss(ParseMetadataRow(row).status()));
  row = RowOf({MakeTabletId(5, 0), "q", "b"});
  EXPECT_TRUE(absl::IsDataLoss(ParseMetadataRow(row).status()));
  row = RowOf({MakeTabletId(5, 0), "", ""}, "projects/p/instances/i/tables/other");
  EXPECT_TRUE(absl::IsDataLoss(TabletsFromMetadata(kTable, 5, {row}).status()));
}

TEST(MetadataTableTest, OnlyClusterTablesOtherThanMetadataGoThroughIt) {
  TableInfo t;
  t.full_name = kTable;
  t.tablet_prefix = 77;
  t.tablets = ThreeTablets(77);
  EXPECT_TRUE(LocatedThroughMetadata(t));
  TableInfo meta = t;
  meta.full_name = std::string(kMetadataTable);
  EXPECT_FALSE(LocatedThroughMetadata(meta));
  TableInfo old = t;
  old.tablet_prefix = 0;
  EXPECT_FALSE(LocatedThroughMetadata(old));
  EXPECT_TRUE(MetadataSchema().Validate().ok());
  EXPECT_TRUE(TableName::Parse(kMetadataTable).ok());
}

}  // namespace
}  // namespace tessera::catalog
