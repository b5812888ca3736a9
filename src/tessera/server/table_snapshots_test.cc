#include "tessera/server/table_snapshots.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

model::TableSchema Schema() {
  model::TableSchema s;
  s.name = "t";
  s.families["cf"] = model::FamilySchema{};
  s.families["old"] = model::FamilySchema{};
  return s;
}

constexpr const char* kTable = "projects/p/instances/i/tables/t";

class TableSnapshotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tablet::EngineOptions o;
    o.dir = "/data";
    o.memtable_bytes = 16 << 10;
    o.block_size = 1024;
    StatusOr<std::unique_ptr<tablet::Engine>> e = tablet::Engine::Open(o, env());
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = *std::move(e);
    ASSERT_TRUE(
        engine_->CreateTablet(7, tablet::TabletDescriptor{kTable, "b", "m", Schema()}).ok());
  }
  void TearDown() override { ASSERT_TRUE(engine_->Close().ok()); }

  Env env() { return Env{&fs_, &clock_}; }
  void Put(const std::string& row, const std::string& family, int64_t ts,
           const std::string& value) {
    model::RowMutation m(row);
    m.SetCell(family, "q", ts, value);
    ASSERT_TRUE(engine_->Apply(7, m).ok());
  }
  std::vector<model::Row> RowsOf(const std::string& path) {
    std::vector<model::Row> rows;
    Status s = ForEachSnapshotRow(env(), path, "/data/snapshots/.restore-1", [&](model::Row&& row) {
      rows.push_back(std::move(row));
      return Status();
    });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_FALSE(fs_.FileExists("/data/snapshots/.restore-1"));
    return rows;
  }

  MemFileSystem fs_;
  ManualClock clock_{1'000'000};
  std::unique_ptr<tablet::Engine> engine_;
};

TEST_F(TableSnapshotsTest, TagsAreCheckedWithAMessageThatNamesTheProblem) {
  EXPECT_TRUE(ValidateSnapshotTag("nightly-2026.12_06").ok());
  EXPECT_NE(ValidateSnapshotTag("").message().find("needs a tag"), std::string::npos);
  EXPECT_NE(ValidateSnapshotTag(".hidden").message().find("starts with '.'"), std::string::npos);
  EXPECT_NE(ValidateSnapshotTag("a/b").message().find("only letters"), std::string::npos);
  EXPECT_NE(ValidateSnapshotTag(std::string(65, 'a')).message().find("longer than 64"),
            std::string::npos);
}

// The file holds the tablet at one sequence: writes after it are not in it; deletes, flushed
// and unflushed data, several versions and a dropped family come back as reads showed them.
TEST_F(TableSnapshotsTest, RoundTripGivesTheTabletAsReadsShowedItAtTheSnapshot) {
  Put("c", "cf", 1000, "c1");
  Put("c", "cf", 2000, "c2");
  Put("d", "old", 1000, "gone with its family");
  Put("e", "cf", 1000, "deleted");
  model::RowMutation del("e");
  del.DeleteFromRow();
  ASSERT_TRUE(engine_->Apply(7, del).ok());
  ASSERT_TRUE(engine_->Flush(7).ok());
  for (int i = 0; i < 300; ++i)
    Put("f" + std::to_string(1000 + i), "cf", 1000, std::string(64, 'v'));
  model::TableSchema without_old = Schema();
  without_old.families.erase("old");
  ASSERT_TRUE(engine_->UpdateSchema(7, without_old).ok());
  Put("g", "cf", 1000, "unflushed");

  ASSERT_TRUE(fs_.CreateDirs(SnapshotTagDir("/data", "s1")).ok());
  const std::string path = SnapshotTagDir("/data", "s1") + "/7.tsnap";
  StatusOr<TabletSnapshotInfo> taken = WriteTabletSnapshot(*engine_, fs_, 7, path);
  ASSERT_TRUE(taken.ok()) << taken.status();
  Put("h", "cf", 1000, "after the snapshot");

  EXPECT_EQ(taken->sequence, *engine_->LastSequence(7) - 1);
  EXPECT_EQ(taken->descriptor.table, kTable);
  EXPECT_EQ(taken->descriptor.start_row, "b");
  EXPECT_EQ(taken->descriptor.end_row, "m");
  EXPECT_EQ(taken->drop_marks.count("old"), 1u);
  EXPECT_FALSE(fs_.FileExists(path + ".tmp"));

  StatusOr<std::vector<TabletSnapshotInfo>> listed = ListTabletSnapshots(fs_, "/data", "");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].tag, "s1");
  EXPECT_EQ((*listed)[0].tablet_id, 7u);
  EXPECT_EQ((*listed)[0].sequence, taken->sequence);
  EXPECT_EQ((*listed)[0].file_bytes, taken->file_bytes);

  std::vector<model::Row> rows = RowsOf(path);
  ASSERT_EQ(rows.size(), 302u);  // c, the 300 f rows, g
  EXPECT_EQ(rows[0].key, "c");
  ASSERT_EQ(rows[0].cells.size(), 2u);
  EXPECT_EQ(rows[0].cells[0].value, "c2");
  EXPECT_EQ(rows[0].cells[1].value, "c1");
  EXPECT_EQ(rows[0].cells[1].timestamp_micros, 1000);
  EXPECT_EQ(rows[1].key, "f1000");
  EXPECT_EQ(rows.back().key, "g");
  EXPECT_EQ(rows.back().cells[0].value, "unflushed");
}

TEST_F(TableSnapshotsTest, ADamagedFileIsDataLossNamingIt) {
  Put("c", "cf", 1000, "c1");
  ASSERT_TRUE(fs_.CreateDirs(SnapshotTagDir("/data", "s1")).ok());
  const std::string path = SnapshotTagDir("/data", "s1") + "/7.tsnap";
  ASSERT_TRUE(WriteTabletSnapshot(*engine_, fs_, 7, path).ok());
  StatusOr<uint64_t> size = fs_.GetFileSize(path);
  ASSERT_TRUE(size.ok());

  // Cut short: the end record is missing.
  ASSERT_TRUE(fs_.Truncate(path, *size - 3).ok());
  Status s = ForEachSnapshotRow(env(), path, "/data/snapshots/.restore-2",
                                [](model::Row&&) { return Status(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
  EXPECT_FALSE(fs_.FileExists("/data/snapshots/.restore-2"));

  // Not a snapshot at all.
  {
    auto f = fs_.NewWritableFile(SnapshotTagDir("/data", "s1") + "/8.tsnap");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("hello, world").ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  StatusOr<std::vector<TabletSnapshotInfo>> listed = ListTabletSnapshots(fs_, "/data", "s1");
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(listed.status().message().find("8.tsnap"), std::string::npos);
}

TEST_F(TableSnapshotsTest, ARowCallbackErrorStopsTheReadAndCleansUp) {
  Put("c", "cf", 1000, "c1");
  Put("d", "cf", 1000, "d1");
  ASSERT_TRUE(fs_.CreateDirs(SnapshotTagDir("/data", "s1")).ok());
  const std::string path = SnapshotTagDir("/data", "s1") + "/7.tsnap";
  ASSERT_TRUE(WriteTabletSnapshot(*engine_, fs_, 7, path).ok());
  int calls = 0;
  Status s = ForEachSnapshotRow(env(), path, "/data/snapshots/.restore-3", [&](model::Row&&) {
    ++calls;
    return absl::UnavailableError("target went away");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(fs_.FileExists("/data/snapshots/.restore-3"));
}

}  // namespace
}  // namespace tessera::server
