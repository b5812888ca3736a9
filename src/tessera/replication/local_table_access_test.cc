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

// The cells of `row` as "qualifier=value@ts", in returned order; empty when it has none.
std::vector<std::string> CellsOf(LocalTableAccess* access, TableSnapshot table,
                                 const std::string& row) {
  ReadRequest request;
  request.rows = model::RowSet::Of({row}, {});
  auto stream = access->Read(std::move(table), std::move(request), AccessOptions());
  EXPECT_TRUE(stream.ok()) << stream.status();
  std::vector<std::string> cells;
  model::Row r;
  for (int steps = 0; stream.ok() && steps < 100; ++steps) {
    StatusOr<ReadStep> step = (*stream)->Step(&r);
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok() || *step == ReadStep::kEnd) break;
    if (*step == ReadStep::kRow) {
      for (const model::Cell& c : r.cells) {
        cells.push_back(StrCat(c.qualifier, "=", c.value, "@", c.timestamp_micros));
      }
    }
    if ((*stream)->done()) break;
  }
  return cells;
}

TEST_F(LocalTableAccessTest, MutateRowsAnswersEachEntryAndABadOneFailsAlone) {
  // Rows in all three tablets, two cells each; "h2" names a family the table does not have.
  std::vector<model::RowMutation> batch;
  for (const char* row : {"a", "h", "h2", "q", "b"}) {
    model::RowMutation m(row);
    m.SetCell(std::string(row) == "h2" ? "nope" : "cf", "x", 1, StrCat(row, "-x"));
    m.SetCell("cf", "y", 1, StrCat(row, "-y"));
    batch.push_back(std::move(m));
  }
  std::vector<Status> statuses = access_->MutateRows(*table_, batch, AccessOptions());
  ASSERT_EQ(statuses.size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].row() == "h2") {
      EXPECT_EQ(statuses[i].code(), absl::StatusCode::kInvalidArgument) << statuses[i];
    } else {
      EXPECT_TRUE(statuses[i].ok()) << batch[i].row() << ": " << statuses[i];
    }
  }
  // Each applied row whole, the refused one not at all (not even its valid cell).
  for (const char* row : {"a", "h", "q", "b"}) {
    EXPECT_EQ(CellsOf(access_.get(), table_, row),
              (std::vector<std::string>{StrCat("x=", row, "-x@1"), StrCat("y=", row, "-y@1")}))
        << row;
  }
  EXPECT_TRUE(CellsOf(access_.get(), table_, "h2").empty());
}

TEST_F(LocalTableAccessTest, MutateRowsAppliesARepeatedRowInOrder) {
  model::RowMutation set("r"), drop("r"), again("r");
  set.SetCell("cf", "c", 1, "first");
  drop.DeleteFromRow();
  again.SetCell("cf", "d", 2, "second");
  std::vector<model::RowMutation> batch = {set, drop, again};
  for (const Status& s : access_->MutateRows(*table_, batch, AccessOptions())) {
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(CellsOf(access_.get(), table_, "r"), (std::vector<std::string>{"d=second@2"}));
}

TEST_F(LocalTableAccessTest, MutateRowsWritesATabletsEntriesInOneCommit) {
  // One tablet's 50 rows: one log append and one sync, where 50 Mutate calls make 50 of each.
  auto batch_of = [](const std::string& prefix) {
    std::vector<model::RowMutation> batch;
    for (int i = 0; i < 50; ++i) {
      model::RowMutation m(StrCat(prefix, i));
      m.SetCell("cf", "c", 1, "v");
      batch.push_back(std::move(m));
    }
    return batch;
  };
  std::vector<model::RowMutation> one_by_one = batch_of("h");
  const int64_t before_singles = fs_.MutatingOpsForTesting();
  for (const model::RowMutation& m : one_by_one) {
    ASSERT_TRUE(access_->Mutate(*table_, m, AccessOptions()).ok());
  }
  const int64_t singles = fs_.MutatingOpsForTesting() - before_singles;
  std::vector<model::RowMutation> batch = batch_of("i");
  const int64_t before_batch = fs_.MutatingOpsForTesting();
  for (const Status& s : access_->MutateRows(*table_, batch, AccessOptions())) {
    ASSERT_TRUE(s.ok()) << s;
  }
  const int64_t batched = fs_.MutatingOpsForTesting() - before_batch;
  EXPECT_GE(singles, 50);
  EXPECT_LE(batched, singles / 50 + 1) << "singles: " << singles;
  EXPECT_EQ(CellsOf(access_.get(), table_, "i49"), (std::vector<std::string>{"c=v@1"}));
}

TEST_F(LocalTableAccessTest, ADroppedTableIsNotFound) {
  ASSERT_TRUE(catalog_->DeleteTable(table_->full_name).ok());
  model::RowMutation m("r");
  m.SetCell("cf", "c", 1, "v");
  EXPECT_EQ(access_->Mutate(*table_, m, AccessOptions()).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::replication
