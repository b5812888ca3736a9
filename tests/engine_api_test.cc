// Direct tests of the engine's API contract (tablet/engine.h): tablet administration and its
// error codes, argument checks, ReadSpec selections, scan ranges and limits, wide rows, WarmRow,
// schema changes, in-memory families, commit-log segment deletion, concurrent writers, Close.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/row_mutation.h"
#include "tessera/storage/manifest.h"
#include "tessera/tablet/engine.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::Cell;
using model::ColumnSelector;
using model::GcRule;
using model::ReadSpec;
using model::Row;
using model::RowMutation;
using model::RowRange;
using model::TableSchema;
using tablet::Engine;
using tablet::EngineOptions;
using tablet::TabletDescriptor;
using tablet::TabletId;

constexpr int64_t kSecond = 1'000'000;

TabletDescriptor Descriptor(std::string start, std::string end,
                            TableSchema schema = MakeSchema("api", {{"cf", GcRule::None()},
                                                                    {"other", GcRule::None()}})) {
  TabletDescriptor d;
  d.table = "api";
  d.start_row = std::move(start);
  d.end_row = std::move(end);
  d.schema = std::move(schema);
  return d;
}

class EngineApiTest : public EngineTestBase {
 protected:
  EngineApiTest() : EngineTestBase("/api") {}

  std::optional<Row> Read(TabletId id, std::string_view row, const ReadSpec& spec = {}) {
    StatusOr<std::optional<Row>> r = engine_->ReadRow(id, row, spec);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::nullopt;
  }
  // The row's cells; none when the row is absent (or the read failed, which Read reports).
  std::vector<Cell> Cells(TabletId id, std::string_view row, const ReadSpec& spec = {}) {
    std::optional<Row> r = Read(id, row, spec);
    return r.has_value() ? r->cells : std::vector<Cell>();
  }
  std::vector<std::string> ScanKeys(TabletId id, const RowRange& range, uint64_t limit = 0,
                                    const ReadSpec& spec = {}) {
    StatusOr<std::vector<Row>> rows = ScanAll(*engine_, id, range, spec, limit);
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::vector<std::string> keys;
    if (rows.ok()) {
      for (const Row& r : *rows) keys.push_back(r.key);
    }
    return keys;
  }
};

TEST_F(EngineApiTest, CreateListGetDropTablets) {
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_TRUE(engine_->ListTablets().empty());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "m")));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("m", "")));
  ASSERT_NO_FATAL_FAILURE(Create(9, Descriptor("", "", MakeSchema("t9", {{"x", GcRule::None()}}))));
  std::vector<TabletId> ids = engine_->ListTablets();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::vector<TabletId>({1, 2, 9}), ids);

  StatusOr<TabletDescriptor> d = engine_->GetTablet(2);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ("m", d->start_row);
  EXPECT_EQ("", d->end_row);
  EXPECT_TRUE(d->schema == Descriptor("m", "").schema);

  Status s = engine_->CreateTablet(2, Descriptor("x", ""));
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;

  // Unknown tablets: NotFound everywhere.
  EXPECT_TRUE(absl::IsNotFound(engine_->GetTablet(5).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->DropTablet(5)));
  EXPECT_TRUE(absl::IsNotFound(engine_->UpdateSchema(5, Descriptor("", "").schema)));
  EXPECT_TRUE(absl::IsNotFound(engine_->Apply(5, RowMutation("a").SetCell("cf", "q", 1, "v"))));
  EXPECT_TRUE(absl::IsNotFound(engine_->ReadRow(5, "a", {}).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->Scan(5, {}, {}, 0).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->WarmRow(5, "a")));
  EXPECT_TRUE(absl::IsNotFound(engine_->Flush(5)));
  EXPECT_TRUE(absl::IsNotFound(engine_->CompactTablet(5)));

  // Dropping deletes the tablet's data: a tablet created again with the id is empty.
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "cf", "q", 1, "v1"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "cf", "q", 1, "v2"));  // memtable only
  ASSERT_TRUE(engine_->DropTablet(1).ok());
  EXPECT_TRUE(absl::IsNotFound(engine_->GetTablet(1).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->ReadRow(1, "a", {}).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->DropTablet(1)));

  // Everything above survives a reopen (including the drop).
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ids = engine_->ListTablets();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::vector<TabletId>({2, 9}), ids);
  EXPECT_TRUE(absl::IsAlreadyExists(engine_->CreateTablet(9, Descriptor("", ""))));
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "m")));
  EXPECT_FALSE(Read(1, "a").has_value());
  EXPECT_FALSE(Read(1, "b").has_value());
  // The SSTable of the dropped tablet is gone from disk (only tablet 1's new, empty state).
  EXPECT_TRUE(FilesWithSuffix(&fs_, options_.dir, ".sst").empty());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_FALSE(Read(1, "a").has_value());
  EXPECT_FALSE(Read(1, "b").has_value());
}

// A tablet id may be reused after a drop: the new tablet must never see commit-log records of
// the dropped one, whatever the restarts in between.
TEST_F(EngineApiTest, RecreatedTabletDoesNotReplayDroppedTabletsLog) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  ASSERT_NO_FATAL_FAILURE(Put(1, "old", "cf", "q", 1, "from the dropped tablet"));
  ASSERT_TRUE(engine_->DropTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());  // replay skips the record: its tablet is gone
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  EXPECT_FALSE(Read(1, "old").has_value());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_FALSE(Read(1, "old").has_value()) << "the dropped tablet's write came back";
  // New writes get sequence numbers above everything in the log.
  ASSERT_NO_FATAL_FAILURE(Put(1, "new", "cf", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(Read(1, "new").has_value());
  EXPECT_FALSE(Read(1, "old").has_value());
}

// File numbers are never reused: after any run, the manifest's next file number is above every
// live file (else a reopened engine overwrites a live SSTable). Concurrent flushes of two
// tablets race to record their edits, so run a few rounds.
TEST_F(EngineApiTest, ManifestNextFileNumberCoversLiveFiles) {
  options_.memtable_bytes = 4 << 10;
  options_.background_threads = 2;
  options_.size_tier_min_files = 2;
  options_.level0_compaction_files = 2;
  options_.block_size = 1024;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    options_.dir = fmt::format("/filenumbers{}", round);
    ASSERT_NO_FATAL_FAILURE(Open());
    ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "m")));
    ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("m", "")));
    for (int i = 0; i < 300; ++i) {
      ASSERT_NO_FATAL_FAILURE(
          Put(1, fmt::format("a{}", i % 50), "cf", "q", i, std::string(100, 'a')));
      ASSERT_NO_FATAL_FAILURE(
          Put(2, fmt::format("x{}", i % 50), "cf", "q", i, std::string(100, 'x')));
    }
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    StatusOr<std::unique_ptr<storage::Manifest>> manifest =
        storage::Manifest::Open(&fs_, options_.dir, /*create_if_missing=*/false);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    uint64_t max_live = 0;
    for (const auto& [id, tablet] : (*manifest)->state().tablets) {
      for (const auto& [number, meta] : tablet.files) max_live = std::max(max_live, number);
    }
    ASSERT_GT((*manifest)->state().next_file_number, max_live)
        << "a reopened engine would reuse the number of a live SSTable";
  }
}

TEST_F(EngineApiTest, InvalidArguments) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("b", "d")));
  // Rows outside [b, d).
  for (const char* row : {"a", "d", "zzz", ""}) {
    Status s = engine_->Apply(1, RowMutation(row).SetCell("cf", "q", 1, "v"));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << "row '" << row << "': " << s;
  }
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "cf", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Put(1, "c\xff", "cf", "q", 1, "v"));

  // An unknown family fails the whole mutation: nothing of it is applied.
  RowMutation m("c");
  m.SetCell("cf", "q", 1, "good").SetCell("nope", "q", 1, "bad");
  Status s = engine_->Apply(1, m);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(std::string(s.message()).find("nope") != std::string::npos) << s;
  EXPECT_FALSE(Read(1, "c").has_value());
  for (RowMutation bad : {RowMutation("c").DeleteFromFamily("nope"),
                          RowMutation("c").DeleteFromColumn("nope", "q")}) {
    s = engine_->Apply(1, bad);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  }
  // A row outside the tablet is never readable through it.
  StatusOr<std::optional<Row>> outside = engine_->ReadRow(1, "a", {});
  EXPECT_TRUE(absl::IsInvalidArgument(outside.status()) || (outside.ok() && !outside->has_value()))
      << outside.status();
  // Still working.
  EXPECT_TRUE(Read(1, "b").has_value());
}

TEST_F(EngineApiTest, ReadSpecSelections) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  for (int64_t ts : {10, 20, 30, 40}) {
    ASSERT_NO_FATAL_FAILURE(Put(1, "r", "cf", "a", ts, fmt::format("a{}", ts)));
    ASSERT_NO_FATAL_FAILURE(Put(1, "r", "cf", "b", ts, fmt::format("b{}", ts)));
    ASSERT_NO_FATAL_FAILURE(Put(1, "r", "other", "a", ts, fmt::format("o{}", ts)));
  }
  auto check = [&](const ReadSpec& spec, std::vector<Cell> expected) {
    for (int pass = 0; pass < 2; ++pass) {  // memtable, then SSTable
      std::optional<Row> row = Read(1, "r", spec);
      if (expected.empty()) {
        EXPECT_FALSE(row.has_value()) << "pass " << pass;
      } else {
        ASSERT_TRUE(row.has_value()) << "pass " << pass;
        EXPECT_EQ(expected, row->cells) << "pass " << pass;
      }
      StatusOr<std::vector<Row>> rows = ScanAll(*engine_, 1, {}, spec, 0);
      ASSERT_TRUE(rows.ok()) << rows.status();
      if (expected.empty()) {
        EXPECT_TRUE(rows->empty());
      } else {
        ASSERT_EQ(1u, rows->size());
        EXPECT_EQ(expected, rows->front().cells);
      }
      ASSERT_TRUE(engine_->Flush(1).ok());
    }
  };
  ReadSpec spec;
  spec.families = {"other"};
  spec.max_versions = 2;
  check(spec, {{"other", "a", 40, "o40"}, {"other", "a", 30, "o30"}});

  spec = {};
  spec.columns = {{"cf", "b"}, {"other", "a"}};
  spec.time_range = {20, 40};
  check(spec, {{"cf", "b", 30, "b30"},
               {"cf", "b", 20, "b20"},
               {"other", "a", 30, "o30"},
               {"other", "a", 20, "o20"}});

  spec.max_versions = 1;  // the newest version inside the time range
  check(spec, {{"cf", "b", 30, "b30"}, {"other", "a", 30, "o30"}});

  spec = {};
  spec.families = {"cf"};
  spec.columns = {{"other", "a"}};  // both must choose the cell: nothing
  check(spec, {});

  spec = {};
  spec.time_range = {35, 0};
  check(spec, {{"cf", "a", 40, "a40"}, {"cf", "b", 40, "b40"}, {"other", "a", 40, "o40"}});

  spec = {};
  spec.time_range = {41, 0};
  check(spec, {});
  spec.time_range = {0, 10};
  check(spec, {});

  spec = {};
  spec.columns = {{"cf", "missing"}};
  check(spec, {});
}

TEST_F(EngineApiTest, ScanRangesAndLimits) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("k010", "k090")));
  std::vector<std::string> all;
  for (int i = 10; i < 90; ++i) {
    std::string row = fmt::format("k{:03d}", i);
    ASSERT_NO_FATAL_FAILURE(Put(1, row, "cf", "q", 1, row));
    if (i % 3 == 0) {
      ASSERT_NO_FATAL_FAILURE(Put(1, row, "other", "q", 1, row));
    }
    all.push_back(row);
    if (i == 50) {
      ASSERT_TRUE(engine_->Flush(1).ok());  // rows in a file and in the memtable
    }
  }
  auto slice = [&](int from, int to) {
    return std::vector<std::string>(all.begin() + (from - 10), all.begin() + (to - 10));
  };
  EXPECT_EQ(all, ScanKeys(1, {}));
  EXPECT_EQ(all, ScanKeys(1, {"a", "z"}));  // clipped to the tablet
  EXPECT_EQ(slice(20, 30), ScanKeys(1, {"k020", "k030"}));
  EXPECT_EQ(slice(20, 30), ScanKeys(1, {"k019z", "k029z"}));
  EXPECT_EQ(slice(20, 25), ScanKeys(1, {"k020", "k030"}, 5));
  EXPECT_EQ(slice(45, 90), ScanKeys(1, {"k045", ""}));
  EXPECT_EQ(slice(10, 11), ScanKeys(1, {}, 1));
  EXPECT_TRUE(ScanKeys(1, {"k030", "k030"}).empty());
  EXPECT_TRUE(ScanKeys(1, {"k100", ""}).empty());
  // Rows without a selected cell are skipped and do not count against the limit.
  ReadSpec other;
  other.families = {"other"};
  EXPECT_EQ(std::vector<std::string>({"k012", "k015", "k018"}), ScanKeys(1, {}, 3, other));

  // A scan is a snapshot: writes after it started are not seen.
  StatusOr<std::unique_ptr<tablet::RowIterator>> it = engine_->Scan(1, {}, {}, 0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_NO_FATAL_FAILURE(Put(1, "k055x", "cf", "q", 1, "new"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "k056x", "cf", "q", 1, "new"));
  std::vector<std::string> seen;
  for (; (*it)->Valid(); (*it)->Next()) seen.push_back((*it)->row().key);
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  EXPECT_EQ(all, seen);
}

TEST_F(EngineApiTest, WideRowSingleColumnReadIsCheap) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  constexpr int kColumns = 10000;
  for (int batch = 0; batch < kColumns / 500; ++batch) {
    RowMutation m("wide");
    for (int i = batch * 500; i < (batch + 1) * 500; ++i) {
      m.SetCell("cf", fmt::format("col{:05d}", i), 1,
                fmt::format("value{:05d}-{}", i, std::string(80, 'w')));
    }
    ASSERT_TRUE(engine_->Apply(1, m).ok());
  }
  ASSERT_NO_FATAL_FAILURE(Put(1, "narrow", "cf", "q", 1, "n"));
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());  // cold block cache

  ReadSpec spec;
  spec.columns = {{"cf", "col07777"}};
  const tablet::EngineStats before = engine_->GetStats();
  std::optional<Row> row = Read(1, "wide", spec);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>(
                {{"cf", "col07777", 1, fmt::format("value{:05d}-{}", 7777, std::string(80, 'w'))}}),
            row->cells);
  const tablet::EngineStats after = engine_->GetStats();
  // The row spans ~250 blocks of 4 KiB; one column should cost a few.
  EXPECT_LE(after.block_cache_misses - before.block_cache_misses, 6u)
      << "a single-column read of a wide row read too many blocks";

  std::optional<Row> whole = Read(1, "wide");
  ASSERT_TRUE(whole.has_value());
  ASSERT_EQ(static_cast<size_t>(kColumns), whole->cells.size());
  for (int i = 0; i < kColumns; i += 997) {
    EXPECT_EQ(fmt::format("col{:05d}", i), whole->cells[i].qualifier);
  }
  EXPECT_EQ(std::vector<std::string>({"narrow", "wide"}), ScanKeys(1, {}));
}

TEST_F(EngineApiTest, WarmRowLoadsTheRowIntoTheCache) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  for (int i = 0; i < 300; ++i) {
    ASSERT_NO_FATAL_FAILURE(
        Put(1, fmt::format("row{:03d}", i), "cf", "q", 1, std::string(200, 'x')));
  }
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_TRUE(engine_->WarmRow(1, "row123").ok());
  EXPECT_TRUE(engine_->WarmRow(1, "no-such-row").ok());
  const tablet::EngineStats warmed = engine_->GetStats();
  EXPECT_GT(warmed.block_cache_usage, 0u);
  std::optional<Row> row = Read(1, "row123");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::string(200, 'x'), row->cells.at(0).value);
  const tablet::EngineStats read = engine_->GetStats();
  EXPECT_EQ(warmed.block_cache_misses, read.block_cache_misses) << "the warmed row missed";
  EXPECT_GT(read.block_cache_hits, warmed.block_cache_hits);
}

TEST_F(EngineApiTest, UpdateSchemaChangesGcOnReads) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  const int64_t now = clock_.NowMicros();
  for (int i = 0; i < 5; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, "r", "cf", "q", now - i * kSecond, fmt::format("v{}", i)));
  }
  ASSERT_EQ(5u, Cells(1, "r").size());

  TableSchema schema = Descriptor("", "").schema;
  schema.families["cf"].gc_rule = GcRule::MaxNumVersions(2);
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  EXPECT_TRUE(engine_->GetTablet(1)->schema == schema);
  std::optional<Row> row = Read(1, "r");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"cf", "q", now, "v0"}, {"cf", "q", now - kSecond, "v1"}}),
            row->cells);

  schema.families["cf"].gc_rule = GcRule::MaxAge(3 * kSecond / 2);
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  EXPECT_EQ(2u, Cells(1, "r").size());  // v0 and v1 are not older than 1.5 s
  clock_.Advance(kSecond);
  EXPECT_EQ(std::vector<Cell>({{"cf", "q", now, "v0"}}), Cells(1, "r"));

  // A new family can be added and used; the schema survives a reopen.
  schema.families["added"] = model::FamilySchema{};
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "r", "added", "x", 1, "y"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(engine_->GetTablet(1)->schema == schema);
  ReadSpec added;
  added.families = {"added"};
  std::optional<Row> got = Read(1, "r", added);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(std::vector<Cell>({{"added", "x", 1, "y"}}), got->cells);
  EXPECT_EQ(std::vector<Cell>({{"added", "x", 1, "y"}, {"cf", "q", now, "v0"}}), Cells(1, "r"));
  // After a major compaction the collected versions are gone for good.
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  schema.families["cf"].gc_rule = GcRule::None();
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  EXPECT_EQ(std::vector<Cell>({{"added", "x", 1, "y"}, {"cf", "q", now, "v0"}}), Cells(1, "r"));
}

// GC may drop a collected version in any flush or compaction, but an overwritten value must
// never come back: here the newest value of c@139 is collected by a flush (it is the second
// version of its column) while the value it overwrote sits in an older file. When c@141 is
// deleted, c@139 is visible again: with the new value, or gone, never with the old one.
TEST_F(EngineApiTest, GcInFlushDoesNotResurrectOverwrittenValue) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(
      Create(1, Descriptor("", "", MakeSchema("api", {{"mv", GcRule::MaxNumVersions(1)}}))));
  ASSERT_NO_FATAL_FAILURE(Put(1, "r", "mv", "c", 139, "old"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  RowMutation m("r");
  m.SetCell("mv", "c", 141, "x").SetCell("mv", "c", 139, "new");
  ASSERT_TRUE(engine_->Apply(1, m).ok());
  EXPECT_EQ(std::vector<Cell>({{"mv", "c", 141, "x"}}), Cells(1, "r"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  EXPECT_EQ(std::vector<Cell>({{"mv", "c", 141, "x"}}), Cells(1, "r"));
  ASSERT_TRUE(engine_->Apply(1, RowMutation("r").DeleteFromColumn("mv", "c", {141, 142})).ok());
  const std::vector<Cell> cells = Cells(1, "r");
  EXPECT_TRUE(cells.empty() || cells == std::vector<Cell>({{"mv", "c", 139, "new"}}))
      << "got " << ::testing::PrintToString(cells);
}

TEST_F(EngineApiTest, InMemoryFamily) {
  ASSERT_NO_FATAL_FAILURE(Open());
  TableSchema schema = MakeSchema("api", {{"cf", GcRule::None()}, {"hot", GcRule::None()}});
  schema.families["hot"].in_memory = true;
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "", schema)));
  for (int i = 0; i < 200; ++i) {
    const std::string row = fmt::format("r{:03d}", i);
    ASSERT_NO_FATAL_FAILURE(Put(1, row, "hot", "h", 1, "hot-" + row));
    ASSERT_NO_FATAL_FAILURE(Put(1, row, "cf", "c", 1, "cold-" + row));
  }
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(engine_->GetTablet(1)->schema.families.at("hot").in_memory);
  for (int i = 0; i < 200; i += 13) {
    const std::string row = fmt::format("r{:03d}", i);
    std::optional<Row> got = Read(1, row);
    ASSERT_TRUE(got.has_value()) << row;
    EXPECT_EQ(std::vector<Cell>({{"cf", "c", 1, "cold-" + row}, {"hot", "h", 1, "hot-" + row}}),
              got->cells);
  }
  ReadSpec hot;
  hot.families = {"hot"};
  StatusOr<std::vector<Row>> rows = ScanAll(*engine_, 1, {}, hot);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(200u, rows->size());
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  EXPECT_EQ(std::vector<Cell>({{"hot", "h", 1, "hot-r007"}}), Cells(1, "r007", hot));
}

TEST_F(EngineApiTest, CommitLogSegmentsAreDeletedAfterFlush) {
  options_.commit_log_segment_bytes = 4 << 10;
  options_.memtable_bytes = 4 << 20;  // no automatic flush
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "m")));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("m", "")));
  // Both tablets have data in every segment.
  for (int i = 0; i < 200; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("a{:03d}", i), "cf", "q", 1, std::string(200, 'a')));
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("x{:03d}", i), "cf", "q", 1, std::string(200, 'x')));
  }
  const size_t before = CommitLogFiles();
  ASSERT_GE(before, 10u) << ListFilesRecursive(&fs_, options_.dir).size() << " files";
  EXPECT_EQ(before, engine_->GetStats().commit_log_segments);

  // Tablet 2 still needs every segment.
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_GE(CommitLogFiles(), before - 1);

  ASSERT_TRUE(engine_->Flush(2).ok());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  const size_t after = CommitLogFiles();
  EXPECT_LE(after, 2u) << "segments kept after every tablet flushed: " << after;
  EXPECT_EQ(after, engine_->GetStats().commit_log_segments);

  // Nothing was lost by deleting them.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(200u, ScanKeys(1, {}).size());
  EXPECT_EQ(200u, ScanKeys(2, {}).size());
}

TEST_F(EngineApiTest, StatsCountWork) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  const tablet::EngineStats s0 = engine_->GetStats();
  for (int i = 0; i < 100; ++i)
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{}", i), "cf", "q", 1, "v"));
  const tablet::EngineStats s1 = engine_->GetStats();
  EXPECT_GE(s1.last_sequence, s0.last_sequence + 100);
  EXPECT_GT(s1.memtable_bytes, 0u);
  ASSERT_TRUE(engine_->Flush(1).ok());
  const tablet::EngineStats s2 = engine_->GetStats();
  EXPECT_EQ(s1.flushes + 1, s2.flushes);
  EXPECT_EQ(1u, s2.sstable_files);
  EXPECT_GT(s2.sstable_bytes, 0u);
  for (int i = 0; i < 10; ++i) ASSERT_NO_FATAL_FAILURE(Put(1, "again", "cf", "q", i, "v"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  const tablet::EngineStats s3 = engine_->GetStats();
  EXPECT_GE(s3.compactions, s2.compactions + 1);
  EXPECT_GT(s3.compaction_bytes_written, 0u);
  EXPECT_EQ(1u, s3.sstable_files);
  // The sequence survives a reopen: new writes sort after old ones.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_GE(engine_->GetStats().last_sequence, s3.last_sequence);
}

TEST_F(EngineApiTest, ConcurrentWriters) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "t2")));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("t2", "")));
  constexpr int kThreads = 4;
  constexpr int kRows = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRows; ++i) {
        const std::string row = fmt::format("t{}-{:05d}", t, i);
        RowMutation m(row);
        m.SetCell("cf", "q", i, row).SetCell("other", "p", i, fmt::format("{}", t));
        if (!engine_->Apply(row < "t2" ? 1 : 2, m).ok()) failures.fetch_add(1);
      }
    });
  }
  // Readers meanwhile never see half a mutation.
  std::thread reader([&] {
    for (int i = 0; i < 300; ++i) {
      const std::string row = fmt::format("t{}-{:05d}", i % kThreads, i * 5);
      StatusOr<std::optional<Row>> r = engine_->ReadRow(row < "t2" ? 1 : 2, row, {});
      if (!r.ok() || (r->has_value() && (*r)->cells.size() != 2)) failures.fetch_add(1000);
    }
  });
  for (auto& th : threads) th.join();
  reader.join();
  ASSERT_EQ(0, failures.load());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  auto check_all = [&] {
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kRows; ++i) {
        const std::string row = fmt::format("t{}-{:05d}", t, i);
        std::optional<Row> r = Read(row < "t2" ? 1 : 2, row);
        ASSERT_TRUE(r.has_value()) << row;
        ASSERT_EQ(std::vector<Cell>({{"cf", "q", i, row}, {"other", "p", i, fmt::format("{}", t)}}),
                  r->cells);
      }
    }
    EXPECT_EQ(2u * kRows, ScanKeys(1, {}).size());
    EXPECT_EQ(2u * kRows, ScanKeys(2, {}).size());
  };
  ASSERT_NO_FATAL_FAILURE(check_all());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(check_all());
}

TEST_F(EngineApiTest, CallsAfterCloseFail) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "")));
  ASSERT_NO_FATAL_FAILURE(Put(1, "r", "cf", "q", 1, "v"));
  ASSERT_TRUE(engine_->Close().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->Close()));
  EXPECT_TRUE(
      absl::IsFailedPrecondition(engine_->Apply(1, RowMutation("r").SetCell("cf", "q", 2, "w"))));
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->CreateTablet(2, Descriptor("", ""))));
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->Flush(std::nullopt)));
  StatusOr<std::optional<Row>> read = engine_->ReadRow(1, "r", {});
  EXPECT_TRUE(absl::IsFailedPrecondition(read.status())) << read.status();
  StatusOr<std::unique_ptr<tablet::RowIterator>> scan = engine_->Scan(1, {}, {}, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(scan.status())) << scan.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->CompactTablet(1)));
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->UpdateSchema(1, Descriptor("", "").schema)));
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->DropTablet(1)));
  engine_.reset();
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(std::vector<Cell>({{"cf", "q", 1, "v"}}), Cells(1, "r"));
}

// One process per data folder (leveldb's LOCK): a second opener is refused, naming the folder,
// until the first closes; a crash releases the lock.
TEST_F(EngineApiTest, ASecondOpenOfTheFolderIsRefusedUntilTheFirstCloses) {
  ASSERT_NO_FATAL_FAILURE(Open());
  StatusOr<std::unique_ptr<Engine>> second = Engine::Open(options_, env_);
  ASSERT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("data folder /api is in use"), std::string::npos)
      << second.status();
  ASSERT_TRUE(engine_->Close().ok());
  second = Engine::Open(options_, env_);
  ASSERT_TRUE(second.ok()) << second.status();
  fs_.SimulateCrash();  // the holder "died": its lock goes with it
  StatusOr<std::unique_ptr<Engine>> third = Engine::Open(options_, env_);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(EngineLockTest, PosixLockNamesTheFolderAndTheHoldingProcess) {
  TempDir dir("tessera-lock");
  EngineOptions options;
  options.dir = dir.path();
  StatusOr<std::unique_ptr<Engine>> first = Engine::Open(options);
  ASSERT_TRUE(first.ok()) << first.status();
  StatusOr<std::unique_ptr<Engine>> second = Engine::Open(options);
  ASSERT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  const std::string message(second.status().message());
  EXPECT_NE(message.find("data folder " + dir.path() + " is in use"), std::string::npos) << message;
  EXPECT_NE(message.find("by process " + std::to_string(::getpid())), std::string::npos) << message;
  ASSERT_TRUE((*first)->Close().ok());
  second = Engine::Open(options);
  EXPECT_TRUE(second.ok()) << second.status();
}

}  // namespace
}  // namespace tessera::test
