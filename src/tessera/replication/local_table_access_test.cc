// LocalTableAccess over a real engine on the in-memory file system. The services' tests
// (server/data_service_test.cc, admin_service_test.cc) run every RPC through it as well.
#include "tessera/replication/local_table_access.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/testing/mem_tables.h"
#include "tessera/util/clock.h"
#include "tessera/util/coding.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::replication {
namespace {

constexpr char kInstance[] = "projects/p/instances/i";

class LocalTableAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status opened = testing::OpenMemTables(&fs_, &clock_, &engine_, &catalog_);
    ASSERT_TRUE(opened.ok()) << opened;
    access_ = std::make_unique<LocalTableAccess>(engine_.get());
    model::TableSchema schema;
    schema.name = "t";
    schema.granularity = model::TimestampGranularity::kMicros;
    schema.families["cf"];
    schema.families["ts"].time_sorted = true;
    // Three tablets: ["", "g"), ["g", "p"), ["p", "").
    auto table = catalog_->CreateTable(kInstance, schema, {"g", "p"});
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
  }
  void TearDown() override {
    access_.reset();
    catalog_.reset();
    (void)engine_->Close();
  }

  void Put(const std::string& row, const std::string& qualifier, int64_t ts,
           const std::string& value) {
    model::RowMutation m(row);
    m.SetCell("cf", qualifier, ts, value);
    ASSERT_TRUE(access_->Mutate(*table_, m, AccessOptions()).ok());
  }

  // Every row key a read returns, and the stream's progress.
  std::vector<std::string> Keys(ReadRequest request, ReadProgress* progress = nullptr) {
    auto stream = access_->Read(table_, std::move(request), AccessOptions());
    EXPECT_TRUE(stream.ok()) << stream.status();
    std::vector<std::string> keys;
    model::Row row;
    while (true) {
      StatusOr<ReadStep> step = (*stream)->Step(&row);
      EXPECT_TRUE(step.ok()) << step.status();
      if (!step.ok() || *step == ReadStep::kEnd) break;
      if (*step == ReadStep::kRow) keys.push_back(row.key);
      if ((*stream)->done()) break;
    }
    if (progress != nullptr) *progress = (*stream)->progress();
    return keys;
  }

  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<LocalTableAccess> access_;
  std::shared_ptr<const catalog::TableInfo> table_;
};

TEST_F(LocalTableAccessTest, ReadsRowSetsAcrossTabletsForwardReversedAndLimited) {
  for (const char* row : {"a", "h", "m", "q", "z"}) Put(row, "c", 1, "v");
  EXPECT_EQ(Keys(ReadRequest{}), (std::vector<std::string>{}));  // the empty set
  ReadRequest all;
  all.rows = model::RowSet::All();
  EXPECT_EQ(Keys(std::move(all)), (std::vector<std::string>{"a", "h", "m", "q", "z"}));

  ReadRequest some;
  some.rows = model::RowSet::Of({"z", "nope"}, {{"b", "n"}});
  some.reversed = true;
  EXPECT_EQ(Keys(std::move(some)), (std::vector<std::string>{"z", "m", "h"}));

  ReadRequest limited;
  limited.rows = model::RowSet::All();
  limited.rows_limit = 2;
  ReadProgress progress;
  EXPECT_EQ(Keys(std::move(limited), &progress), (std::vector<std::string>{"a", "h"}));
  EXPECT_EQ(progress.rows_returned, 2);
  EXPECT_EQ(progress.last_scanned_key, "h");
}

TEST_F(LocalTableAccessTest, ReadFiltersAndCountsWhatItSaw) {
  Put("a", "c", 1, "v");
  Put("b", "d", 1, "v");
  auto node = std::make_unique<model::FilterNode>(model::FilterNode::Kind::kColumnRange);
  node->family = "cf";
  node->range.has_start = true;
  node->range.start = "d";
  ReadRequest request;
  request.rows = model::RowSet::All();
  request.filter = model::RowFilter(std::move(node), 0);
  ReadProgress progress;
  EXPECT_EQ(Keys(std::move(request), &progress), (std::vector<std::string>{"b"}));
  EXPECT_EQ(progress.rows_seen, 2);
  EXPECT_EQ(progress.rows_returned, 1);
  EXPECT_EQ(progress.last_scanned_key, "b");
}

TEST_F(LocalTableAccessTest, CheckAndMutateAppliesOneBranch) {
  model::RowMutation on_true("r"), on_false("r");
  on_true.SetCell("cf", "t", 5, "yes");
  on_false.SetCell("cf", "f", 5, "no");
  auto matched = access_->CheckAndMutate(*table_, "r", nullptr, on_true, on_false, AccessOptions());
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_FALSE(*matched);  // no row yet: on_false
  matched = access_->CheckAndMutate(*table_, "r", nullptr, on_true, on_false, AccessOptions());
  ASSERT_TRUE(matched.ok()) << matched.status();
  EXPECT_TRUE(*matched);
  ReadRequest request;
  request.rows = model::RowSet::Of({"r"}, {});
  auto stream = access_->Read(table_, std::move(request), AccessOptions());
  ASSERT_TRUE(stream.ok());
  model::Row row;
  StatusOr<ReadStep> step;
  do {
    step = (*stream)->Step(&row);
    ASSERT_TRUE(step.ok()) << step.status();
    ASSERT_NE(*step, ReadStep::kEnd);
  } while (*step != ReadStep::kRow);
  ASSERT_EQ(row.cells.size(), 2u);
  EXPECT_EQ(row.cells[0].qualifier, "f");
  EXPECT_EQ(row.cells[1].qualifier, "t");
}

TEST_F(LocalTableAccessTest, ReadModifyWriteAppendsIncrementsAndRefusesBadValues) {
  Put("r", "n", 100, BigEndian64String(41));
  std::vector<ReadModifyWriteRule> rules(2);
  rules[0] = {"cf", "n", "n", ReadModifyWriteRule::Kind::kIncrement, "", 1};
  rules[1] = {"cf", "s", "s", ReadModifyWriteRule::Kind::kAppend, "ab", 0};
  auto row = access_->ReadModifyWrite(*table_, "r", rules, /*now_micros=*/50, 1 << 20, AccessOptions());
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_EQ(row->cells.size(), 2u);
  EXPECT_EQ(row->cells[0].value, BigEndian64String(42));
  EXPECT_EQ(row->cells[0].timestamp_micros, 100);  // not below the existing cell
  EXPECT_EQ(row->cells[1].value, "ab");
  EXPECT_EQ(row->cells[1].timestamp_micros, 50);

  auto refused = access_->ReadModifyWrite(*table_, "r", {rules[1], rules[1]}, 60, 3, AccessOptions());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<ReadModifyWriteRule> bad = {
      {"cf", "s", "s", ReadModifyWriteRule::Kind::kIncrement, "", 1}};
  EXPECT_EQ(access_->ReadModifyWrite(*table_, "r", bad, 60, 1 << 20, AccessOptions()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(LocalTableAccessTest, SampleRowKeysEndsWithTheTableSize) {
  auto empty = access_->SampleRowKeys(*table_, 1 << 20);
  ASSERT_TRUE(empty.ok()) << empty.status();
  ASSERT_EQ(empty->size(), 1u);  // an empty table: only the end
  EXPECT_EQ(empty->back().row_key, "");
  EXPECT_EQ(empty->back().offset_bytes, 0);
  Put("a", "c", 1, std::string(1000, 'x'));
  auto samples = access_->SampleRowKeys(*table_, 1 << 20);
  ASSERT_TRUE(samples.ok()) << samples.status();
  // The tablet boundaries, then the end.
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].row_key, "g");
  EXPECT_EQ((*samples)[1].row_key, "p");
  EXPECT_EQ((*samples)[2].row_key, "");
  EXPECT_GT((*samples)[2].offset_bytes, 0);
  EXPECT_LE((*samples)[0].offset_bytes, (*samples)[2].offset_bytes);
}

TEST_F(LocalTableAccessTest, DropRowRangeDeletesThePrefixAcrossTablets) {
  for (const char* row : {"f1", "f2", "g", "g1", "h"}) Put(row, "c", 1, "v");
  auto deleted = access_->DropRowRange(*table_, "g", AccessOptions());
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2u);
  ReadRequest all;
  all.rows = model::RowSet::All();
  EXPECT_EQ(Keys(std::move(all)), (std::vector<std::string>{"f1", "f2", "h"}));
}

TEST_F(LocalTableAccessTest, ADroppedTableIsNotFound) {
  ASSERT_TRUE(catalog_->DeleteTable(table_->full_name).ok());
  model::RowMutation m("r");
  m.SetCell("cf", "c", 1, "v");
  EXPECT_EQ(access_->Mutate(*table_, m, AccessOptions()).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::replication
