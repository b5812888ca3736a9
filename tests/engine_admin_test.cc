// The engine's table-administration paths: dropped families (dead up to the drop, also after the
// family is created again, through flush, compaction, reopen and racing writers), TruncateTablet
// (memtables and files, reopen, open scans, racing writers), and the size estimates behind
// Bigtable's SampleRowKeys (ApproximateTabletBytes, SampleRowKeys).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/row_mutation.h"
#include "tessera/storage/manifest.h"
#include "tessera/storage/version_edit.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::Cell;
using model::GcRule;
using model::ReadSpec;
using model::Row;
using model::RowMutation;
using model::RowRange;
using model::TableSchema;
using tablet::Engine;
using tablet::EngineOptions;
using tablet::ScanOptions;
using tablet::TabletDescriptor;
using tablet::TabletId;

TableSchema SchemaWith(const std::vector<std::string>& families) {
  std::vector<std::pair<std::string, GcRule>> f;
  for (const std::string& name : families) f.emplace_back(name, GcRule::None());
  return MakeSchema("admin", f);
}

TabletDescriptor Descriptor(std::string start = "", std::string end = "",
                            const std::vector<std::string>& families = {"f", "g"}) {
  TabletDescriptor d;
  d.table = "admin";
  d.start_row = std::move(start);
  d.end_row = std::move(end);
  d.schema = SchemaWith(families);
  return d;
}

class EngineAdminTest : public EngineTestBase {
 protected:
  EngineAdminTest() : EngineTestBase("/admin") { options_.commit_log_segment_bytes = 16 << 10; }

  void SetFamilies(TabletId id, const std::vector<std::string>& families) {
    Status s = engine_->UpdateSchema(id, SchemaWith(families));
    ASSERT_TRUE(s.ok()) << s;
  }
  uint64_t DroppedBefore(TabletId id, std::string_view family) {
    return tablet::DroppedBefore(DropMarksOf(*engine_, id), family);
  }
  TableSchema SchemaOf(TabletId id) {
    StatusOr<TabletDescriptor> d = engine_->GetTablet(id);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? d->schema : TableSchema();
  }
  std::vector<Row> ScanRows(TabletId id, bool reversed = false, const ReadSpec& spec = {}) {
    StatusOr<std::vector<Row>> rows =
        ScanAll(*engine_, id, RowRange{}, spec, ScanOptions{.limit = 0, .reversed = reversed});
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::vector<Row>();
  }
  // Every cell of the tablet as "row/family:qualifier@ts=value", by a forward scan; checks that a
  // reversed scan and point reads agree.
  std::vector<std::string> Contents(TabletId id) {
    std::vector<Row> rows = ScanRows(id);
    std::vector<Row> back = ScanRows(id, /*reversed=*/true);
    std::reverse(back.begin(), back.end());
    EXPECT_EQ(rows, back) << "reversed scan disagrees";
    std::vector<std::string> out;
    for (const Row& r : rows) {
      StatusOr<std::optional<Row>> one = engine_->ReadRow(id, r.key, {});
      EXPECT_TRUE(one.ok() && one->has_value() && **one == r) << "ReadRow disagrees on " << r.key;
      for (const Cell& c : r.cells) {
        out.push_back(fmt::format("{}/{}:{}@{}={}", r.key, c.family, c.qualifier,
                                  c.timestamp_micros, c.value));
      }
    }
    return out;
  }
};

// ------------------------------------------------------------------------------------------
// Dropped families

TEST_F(EngineAdminTest, DroppedFamilyStaysDeadAfterItIsCreatedAgain) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "g", "q", 1, "flushed-g"));
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "f", "q", 1, "flushed-f"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "g", "q", 2, "memtable-g"));
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "g", "q", 1, "only-g"));
  RowMutation tomb("a");
  tomb.DeleteFromFamily("g");
  tomb.SetCell("g", "r", 3, "after-delete");
  ASSERT_TRUE(engine_->Apply(1, tomb).ok());
  const uint64_t before_drop = engine_->GetStats().last_sequence;

  ASSERT_NO_FATAL_FAILURE(SetFamilies(1, {"f"}));
  TableSchema schema = SchemaOf(1);
  EXPECT_FALSE(schema.families.contains("g"));
  EXPECT_EQ(before_drop, DroppedBefore(1, "g"));
  const std::vector<std::string> only_f = {"a/f:q@1=flushed-f"};
  EXPECT_EQ(only_f, Contents(1));
  ReadSpec just_g;
  just_g.families = {"g"};
  EXPECT_TRUE(ScanRows(1, false, just_g).empty());
  // Writes to the dropped family are refused.
  Status s = engine_->Apply(1, RowMutation("a").SetCell("g", "q", 9, "x"));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;

  // Created again: it starts empty; new writes show.
  ASSERT_NO_FATAL_FAILURE(SetFamilies(1, {"f", "g"}));
  EXPECT_EQ(before_drop, DroppedBefore(1, "g"));
  EXPECT_EQ(only_f, Contents(1));
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "g", "q", 1, "new-g"));
  const std::vector<std::string> expected = {"a/f:q@1=flushed-f", "a/g:q@1=new-g"};
  EXPECT_EQ(expected, Contents(1));

  // Through reopen (memtable replayed from the log), flush and major compaction.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(expected, Contents(1));
  EXPECT_EQ(before_drop, DroppedBefore(1, "g"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  EXPECT_EQ(expected, Contents(1));
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  EXPECT_EQ(expected, Contents(1));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(expected, Contents(1));
}

TEST_F(EngineAdminTest, FlushAndCompactionRemoveTheDroppedFamilysData) {
  options_.compression = tablet::Compression::kNone;
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  const std::string big(4000, 'x');
  for (int i = 0; i < 100; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:03d}", i), "g", "q", 1, big));
  }
  ASSERT_TRUE(engine_->Flush(1).ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:03d}", i), "g", "q", 2, big));  // memtable
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:03d}", i), "f", "q", 1, "small"));
  }
  StatusOr<uint64_t> with_g = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(with_g.ok()) << with_g.status();
  EXPECT_GT(*with_g, 400'000u);

  ASSERT_NO_FATAL_FAILURE(SetFamilies(1, {"f"}));
  ASSERT_TRUE(engine_->Flush(1).ok());  // the flush drops the memtable's g cells
  const uint64_t flushed_bytes = engine_->GetStats().sstable_bytes;
  ASSERT_TRUE(engine_->CompactTablet(1).ok());  // the compaction drops the file's
  StatusOr<uint64_t> after = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_LT(*after, 20'000u) << "before the compaction: " << flushed_bytes;
  EXPECT_EQ(10u, Contents(1).size());
}

// Drop marks are the tablet's, not the schema's: a caller has no way to pass one (the schema has
// no such field), and only a drop makes one.
TEST_F(EngineAdminTest, CallerCannotSetDropMarks) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  EXPECT_TRUE(DropMarksOf(*engine_, 1).empty());
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "f", "q", 1, "v"));

  TableSchema schema = SchemaWith({"f", "g", "h"});
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  EXPECT_TRUE(DropMarksOf(*engine_, 1).empty());
  EXPECT_EQ(std::vector<std::string>({"a/f:q@1=v"}), Contents(1));

  // A real drop is recorded; later updates keep it whatever they pass.
  ASSERT_NO_FATAL_FAILURE(SetFamilies(1, {"f", "g"}));
  const uint64_t h_dropped = DroppedBefore(1, "h");
  EXPECT_GT(h_dropped, 0u);
  schema = SchemaWith({"f", "g", "h"});
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  EXPECT_EQ(h_dropped, DroppedBefore(1, "h"));
  EXPECT_EQ(1u, DropMarksOf(*engine_, 1).size());
}

// Writers hammer family g while it is dropped and created again: once the drop returns, no g
// cell written before it may show, and writes that raced it either failed or are dead too.
TEST_F(EngineAdminTest, DropRacingWritersLeavesNoSurvivor) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  for (int round = 0; round < 5; ++round) {
    std::atomic<bool> stop{false};
    std::atomic<int> ok_writes{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t) {
      writers.emplace_back([&, t] {
        for (int i = 0; i < 100000 && !stop.load(); ++i) {
          RowMutation m(fmt::format("w{}", t));
          m.SetCell("g", fmt::format("q{}", i % 50), i, "racing");
          if (engine_->Apply(1, m).ok()) ok_writes.fetch_add(1);
        }
      });
    }
    for (int spin = 0; ok_writes.load() < 200 && spin < 10'000; ++spin) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(ok_writes.load(), 200) << "writers made no progress";
    Status s = engine_->UpdateSchema(1, SchemaWith({"f"}));
    stop.store(true);
    for (auto& w : writers) w.join();
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(Contents(1).empty()) << "round " << round << ": " << Contents(1).front();
    ASSERT_NO_FATAL_FAILURE(SetFamilies(1, {"f", "g"}));
    ASSERT_TRUE(Contents(1).empty()) << "round " << round;
    if (round % 2 == 1) {
      ASSERT_TRUE(engine_->Flush(1).ok());
    }
  }
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(Contents(1).empty());
}

// ------------------------------------------------------------------------------------------
// TruncateTablet

TEST_F(EngineAdminTest, TruncateDeletesMemtablesAndFilesAndKeepsLaterWrites) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("", "m")));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("m", "")));
  for (int i = 0; i < 200; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("a{:03d}", i), "f", "q", 1, std::string(500, 'x')));
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("x{:03d}", i), "f", "q", 1, "other tablet"));
  }
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "g", "q", 1, "in the memtable"));
  const uint64_t files_before = engine_->GetStats().sstable_files;
  ASSERT_GE(files_before, 2u);

  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  EXPECT_TRUE(Contents(1).empty());
  EXPECT_EQ(200u, Contents(2).size());
  StatusOr<uint64_t> bytes = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_LT(*bytes, 10'000u);
  EXPECT_LT(engine_->GetStats().sstable_files, files_before);
  StatusOr<TabletDescriptor> d = engine_->GetTablet(1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ("m", d->end_row);

  ASSERT_NO_FATAL_FAILURE(Put(1, "c", "f", "q", 1, "after"));
  const std::vector<std::string> after = {"c/f:q@1=after"};
  EXPECT_EQ(after, Contents(1));
  // Replay must not bring the truncated records back.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(after, Contents(1));
  EXPECT_EQ(200u, Contents(2).size());
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "d", "f", "q", 1, "later"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"c/f:q@1=after", "d/f:q@1=later"}), Contents(1));

  // An empty tablet truncates too; unknown tablets are NotFound.
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  EXPECT_TRUE(Contents(1).empty());
  EXPECT_TRUE(absl::IsNotFound(engine_->TruncateTablet(7)));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_TRUE(Contents(1).empty());
  EXPECT_EQ(200u, Contents(2).size());
}

TEST_F(EngineAdminTest, ScanOpenedBeforeTruncateKeepsItsSnapshot) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  for (int i = 0; i < 50; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:02d}", i), "f", "q", 1, "v"));
  }
  ASSERT_TRUE(engine_->Flush(1).ok());
  for (int i = 50; i < 60; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:02d}", i), "f", "q", 1, "v"));
  }
  StatusOr<std::unique_ptr<tablet::RowIterator>> it = engine_->Scan(1, {}, {}, 0);
  ASSERT_TRUE(it.ok()) << it.status();
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  int rows = 0;
  for (; (*it)->Valid() && rows < 1000; (*it)->Next()) ++rows;
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  EXPECT_EQ(60, rows);
  it->reset();
  EXPECT_TRUE(Contents(1).empty());
  // The truncated tablet's files are gone from disk once the scan let go.
  EXPECT_TRUE(FilesWithSuffix(&fs_, options_.dir, ".sst").empty());
}

// Each writer writes an increasing counter to its own row; a truncate in the middle deletes a
// prefix of each writer's writes: what is left of a row is a suffix of its writes.
TEST_F(EngineAdminTest, TruncateRacingWritersCutsEachWriterOnce) {
  options_.memtable_bytes = 16 << 10;  // flushes during the race
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  constexpr int kWriters = 3;
  constexpr int kWrites = 600;
  std::vector<std::thread> writers;
  std::atomic<int> started{0};
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        RowMutation m(fmt::format("w{}", t));
        m.SetCell("f", fmt::format("{:04d}", i), 1, std::string(100, 'v'));
        ASSERT_TRUE(engine_->Apply(1, m).ok());
        started.fetch_add(1);
      }
    });
  }
  for (int spin = 0; started.load() < kWriters * kWrites / 3 && spin < 10'000; ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  for (auto& w : writers) w.join();
  auto check = [&] {
    for (const Row& row : ScanRows(1)) {
      ASSERT_FALSE(row.cells.empty());
      const int first = std::stoi(row.cells.front().qualifier);
      EXPECT_EQ(static_cast<size_t>(kWrites - first), row.cells.size()) << row.key;
      EXPECT_EQ(fmt::format("{:04d}", kWrites - 1), row.cells.back().qualifier);
    }
  };
  ASSERT_NO_FATAL_FAILURE(check());
  EXPECT_LT(Contents(1).size(), static_cast<size_t>(kWriters * kWrites));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(check());
}

// A truncate right after a restart deletes every log segment (all records are truncated, and
// the log writes to a new segment). Restarts must still number new writes above the truncation
// point, or replay would skip them as truncated.
TEST_F(EngineAdminTest, WritesAfterTruncateSurviveRestarts) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  for (int i = 0; i < 300; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("r{:03d}", i), "f", "q", 1, std::string(200, 'x')));
  }
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_TRUE(engine_->TruncateTablet(2).ok());
  EXPECT_EQ(0u, CommitLogFiles());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Put(2, "kept", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Put(1, "kept", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v"}), Contents(2));
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v"}), Contents(1));
}

// The same for a tablet created when the log holds no record of the sequences before it.
TEST_F(EngineAdminTest, WritesToANewTabletSurviveRestartsAfterTheLogWasRecycled) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  for (int i = 0; i < 300; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:03d}", i), "f", "q", 1, "x"));
  }
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_TRUE(engine_->DropTablet(1).ok());
  EXPECT_EQ(0u, CommitLogFiles());
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Put(2, "kept", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v"}), Contents(2));
}

// A manifest whose marks lie above its last sequence, with no log record to raise it: what an
// engine that did not record the last sequence with a tablet's marks left behind after the log
// was recycled (the test above, on such an engine). Opening must number new writes above every
// mark, or replay skips them (flushed mark) or reads hide them (drop mark).
class EngineAdminMarksTest : public EngineAdminTest {
 protected:
  static constexpr storage::SequenceNumber kMark = 500;

  // Writes the manifest an older engine would have left: the tablets, their marks, no records.
  void WriteOldManifest(const storage::VersionEdit& edit) {
    ASSERT_TRUE(fs_.CreateDirs(options_.dir).ok());
    StatusOr<std::unique_ptr<storage::Manifest>> manifest =
        storage::Manifest::Open(&fs_, options_.dir, /*create_if_missing=*/true);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    Status s = (*manifest)->LogAndApply(edit);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_LT((*manifest)->state().last_sequence, kMark);
  }
};

TEST_F(EngineAdminMarksTest, WritesAreNumberedAboveAFlushedMarkTheLastSequenceMisses) {
  storage::VersionEdit edit;
  edit.AddTablet(2, Descriptor().Encode());
  edit.SetFlushed(2, kMark);
  ASSERT_NO_FATAL_FAILURE(WriteOldManifest(edit));
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(0u, CommitLogFiles());
  EXPECT_GE(engine_->GetStats().last_sequence, kMark);
  ASSERT_NO_FATAL_FAILURE(Put(2, "kept", "f", "q", 1, "v"));
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v"}), Contents(2));
  // Replayed from the log (not flushed): skipped if numbered at or below the mark.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v"}), Contents(2));
  ASSERT_NO_FATAL_FAILURE(Put(2, "more", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"kept/f:q@1=v", "more/f:q@1=v"}), Contents(2));
}

TEST_F(EngineAdminMarksTest, WritesAreNumberedAboveADropMarkTheLastSequenceMisses) {
  // Family "g" was dropped at kMark and created again; the new "g" starts empty.
  storage::VersionEdit edit;
  edit.AddTablet(3, LegacyDescriptor(Descriptor(), {{"g", kMark}}));
  ASSERT_NO_FATAL_FAILURE(WriteOldManifest(edit));
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Put(3, "kept", "g", "q", 1, "v"));
  EXPECT_EQ(std::vector<std::string>({"kept/g:q@1=v"}), Contents(3));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>({"kept/g:q@1=v"}), Contents(3));
}

// ------------------------------------------------------------------------------------------
// ApproximateTabletBytes and SampleRowKeys

TEST_F(EngineAdminTest, ApproximateBytesCountsMemtablesAndFiles) {
  options_.compression = tablet::Compression::kNone;
  options_.memtable_bytes = 1 << 20;
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  StatusOr<uint64_t> empty = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(empty.ok()) << empty.status();
  for (int i = 0; i < 100; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("r{:03d}", i), "f", "q", 1, std::string(1000, 'v')));
  }
  StatusOr<uint64_t> in_memory = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(in_memory.ok());
  // Memtables count their arena blocks (memtable_bytes / 16 each here).
  EXPECT_GT(*in_memory, *empty);
  EXPECT_GE(*in_memory, 100'000u);
  ASSERT_TRUE(engine_->Flush(1).ok());
  StatusOr<uint64_t> on_disk = engine_->ApproximateTabletBytes(1);
  ASSERT_TRUE(on_disk.ok());
  EXPECT_GT(*on_disk, 100'000u);
  // The files, plus the new (empty) memtable.
  const uint64_t files = engine_->GetStats().sstable_bytes;
  EXPECT_GE(*on_disk, files);
  EXPECT_LE(*on_disk, files + *empty);
  EXPECT_TRUE(absl::IsNotFound(engine_->ApproximateTabletBytes(9).status()));
}

TEST_F(EngineAdminTest, SampleRowKeysSplitsTheDataEvenly) {
  options_.compression = tablet::Compression::kNone;
  options_.memtable_bytes = 1 << 20;
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor("k", "")));
  // 2,000 rows of about 1 KB: two files and a memtable.
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(fmt::format("k{:05d}", i));
    ASSERT_NO_FATAL_FAILURE(Put(1, keys.back(), "f", "q", 1, std::string(1000, 'a' + i % 26)));
    if (i == 800 || i == 1500) {
      ASSERT_TRUE(engine_->Flush(1).ok());
    }
  }
  EXPECT_TRUE(absl::IsInvalidArgument(engine_->SampleRowKeys(1, 0).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->SampleRowKeys(9, 1000).status()));
  StatusOr<std::vector<std::string>> none = engine_->SampleRowKeys(1, 1ull << 40);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  StatusOr<std::vector<std::string>> samples = engine_->SampleRowKeys(1, 100'000);
  ASSERT_TRUE(samples.ok()) << samples.status();
  // About 2 MB of data in 100 KB steps: about 20 keys, each an existing row, increasing, about
  // 100 rows apart.
  EXPECT_GE(samples->size(), 15u);
  EXPECT_LE(samples->size(), 25u);
  EXPECT_TRUE(std::is_sorted(samples->begin(), samples->end()));
  EXPECT_TRUE(std::adjacent_find(samples->begin(), samples->end()) == samples->end());
  size_t previous = 0;
  for (const std::string& key : *samples) {
    auto it = std::lower_bound(keys.begin(), keys.end(), key);
    ASSERT_TRUE(it != keys.end() && *it == key) << key << " is not a row";
    const size_t index = it - keys.begin();
    EXPECT_GT(index - previous, 60u) << key;
    EXPECT_LT(index - previous, 140u) << key;
    previous = index;
  }

  // Memtable only: sampled too; and the tablet's start row is never a sample, even when the
  // first piece of data (row "", 5 KB) is past every_bytes.
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor("", "k")));
  ASSERT_NO_FATAL_FAILURE(Put(2, "", "f", "q", 1, std::string(5000, 'v')));
  for (int i = 0; i < 100; ++i) {
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("b{:03d}", i), "f", "q", 1, std::string(1000, 'v')));
  }
  StatusOr<std::vector<std::string>> memtable = engine_->SampleRowKeys(2, 10'000);
  ASSERT_TRUE(memtable.ok()) << memtable.status();
  EXPECT_GE(memtable->size(), 7u);
  EXPECT_LE(memtable->size(), 12u);
  EXPECT_TRUE(std::is_sorted(memtable->begin(), memtable->end()));
  StatusOr<std::vector<std::string>> fine = engine_->SampleRowKeys(2, 4'000);
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_GE(fine->size(), 20u);
  for (const std::string& key : *fine) EXPECT_FALSE(key.empty());

  // After a reopen (index samples read again from the files) the answer is the same.
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());  // a compaction would change the blocks
  StatusOr<std::vector<std::string>> flushed = engine_->SampleRowKeys(1, 100'000);
  ASSERT_TRUE(flushed.ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  StatusOr<std::vector<std::string>> reopened = engine_->SampleRowKeys(1, 100'000);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(*flushed, *reopened);
}

}  // namespace
}  // namespace tessera::test
