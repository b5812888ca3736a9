// Sequence numbers belong to the tablet (docs/sequence_numbers.md): each tablet numbers its own
// entries densely, continues its numbers after a restart, keeps its drop marks in the manifest;
// and a data folder written with one node-wide counter (tests/fixtures/engine_v1, made by
// tests/fixtures/make_engine_v1_fixture.cc) opens with every row, takes more writes that win
// over the old ones, and reopens.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/storage/manifest.h"
#include "tessera/tablet/tablet_manager.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::ReadSpec;
using model::RowMutation;
using tablet::DropMarks;
using tablet::Engine;
using tablet::TabletDescriptor;
using tablet::TabletId;
using tablet::TabletManager;

TabletDescriptor Descriptor(std::string table = "t",
                            std::vector<std::string> families = {"f", "g"}) {
  TabletDescriptor d;
  d.table = table;
  std::vector<std::pair<std::string, GcRule>> f;
  for (const std::string& name : families) f.emplace_back(name, GcRule::None());
  d.schema = MakeSchema(std::move(table), f);
  return d;
}

// The sequences of a tablet's raw entries, sorted.
std::vector<uint64_t> Sequences(TabletManager* manager, TabletId id) {
  std::vector<uint64_t> out;
  StatusOr<std::shared_ptr<tablet::Tablet>> t = manager->tablet(id);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return out;
  StatusOr<std::unique_ptr<tablet::EntryIterator>> it = (*t)->NewEntryIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  for (; (*it)->Valid(); (*it)->Next()) out.push_back((*it)->sequence());
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

// Every visible cell of every tablet, one line each: "tablet row family:qualifier@ts=value".
std::vector<std::string> Lines(const Engine& engine) {
  std::vector<std::string> out;
  for (TabletId id : engine.ListTablets()) {
    StatusOr<std::vector<model::Row>> rows = ScanAll(engine, id, {});
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok()) continue;
    for (const model::Row& row : *rows) {
      for (const model::Cell& c : row.cells) {
        out.push_back(fmt::format("{} {} {}:{}@{}={}", id, row.key, c.family, c.qualifier,
                                  c.timestamp_micros, c.value));
      }
    }
  }
  return out;
}

class EngineSequenceTest : public EngineTestBase {
 protected:
  EngineSequenceTest() : EngineTestBase("/seq") {}
  TabletManager* manager() { return static_cast<TabletManager*>(engine_.get()); }
  uint64_t Last(TabletId id) { return (*manager()->tablet(id))->last_sequence(); }
};

TEST_F(EngineSequenceTest, TabletsNumberTheirEntriesDenselyAndIndependently) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  // Interleaved: tablet 1 gets mutations of 2 entries, tablet 2 of 1.
  for (int i = 0; i < 10; ++i) {
    RowMutation two(fmt::format("r{}", i));
    two.SetCell("f", "q", 1, "a").SetCell("g", "q", 1, "b");
    ASSERT_TRUE(engine_->Apply(1, two).ok());
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("r{}", i), "f", "q", 1, "c"));
  }
  EXPECT_EQ(Range(1, 20), Sequences(manager(), 1));
  EXPECT_EQ(Range(1, 10), Sequences(manager(), 2));
  EXPECT_EQ(20u, Last(1));
  EXPECT_EQ(10u, Last(2));
  EXPECT_EQ(20u, engine_->GetStats().last_sequence);  // the largest of the tablets'
  // Schema changes, truncation and memtable switches take no numbers.
  ASSERT_TRUE(engine_->UpdateSchema(2, Descriptor("t", {"f"}).schema).ok());
  ASSERT_TRUE(engine_->Flush(2).ok());
  ASSERT_NO_FATAL_FAILURE(Put(2, "s", "f", "q", 1, "d"));
  EXPECT_EQ(Range(1, 11), Sequences(manager(), 2));
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "s", "f", "q", 1, "e"));
  EXPECT_EQ(std::vector<uint64_t>{21}, Sequences(manager(), 1));
}

TEST_F(EngineSequenceTest, ConcurrentWritersToManyTabletsKeepEachTabletDense) {
  ASSERT_NO_FATAL_FAILURE(Open());
  constexpr int kTablets = 3, kThreads = 4, kWrites = 200;
  for (TabletId id = 1; id <= kTablets; ++id) ASSERT_NO_FATAL_FAILURE(Create(id, Descriptor()));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const TabletId id = 1 + (t + i) % kTablets;
        RowMutation m(fmt::format("t{}-{}", t, i));
        m.SetCell("f", "q", 1, "v");
        if (i % 2 == 0) m.SetCell("g", "q", 1, "w");  // 2 entries
        EXPECT_TRUE(engine_->Apply(id, m).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  uint64_t total = 0;
  for (TabletId id = 1; id <= kTablets; ++id) {
    const std::vector<uint64_t> seqs = Sequences(manager(), id);
    EXPECT_EQ(Range(1, seqs.size()), seqs) << "tablet " << id;
    EXPECT_EQ(seqs.size(), Last(id));
    total += seqs.size();
  }
  EXPECT_EQ(uint64_t{kThreads} * kWrites * 3 / 2, total);
}

// Each tablet publishes its own sequence: a reader of one tablet sees each mutation whole while
// groups hold writes of many tablets.
TEST_F(EngineSequenceTest, ReadersSeeWholeMutationsWhileGroupsSpanTablets) {
  ASSERT_NO_FATAL_FAILURE(Open());
  constexpr int kTablets = 3, kWrites = 300;
  for (TabletId id = 1; id <= kTablets; ++id) ASSERT_NO_FATAL_FAILURE(Create(id, Descriptor()));
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string v = fmt::format("{}-{}", w, i);
        RowMutation m("row");
        m.SetCell("f", "q", 1, v).SetCell("g", "q", 1, v);
        EXPECT_TRUE(engine_->Apply(1 + (w + i) % kTablets, m).ok());
      }
    });
  }
  std::thread reader([&] {
    while (!done.load()) {
      for (TabletId id = 1; id <= kTablets; ++id) {
        StatusOr<std::optional<model::Row>> row = engine_->ReadRow(id, "row", {});
        ASSERT_TRUE(row.ok()) << row.status();
        if (!row->has_value()) continue;
        ASSERT_EQ(2u, (*row)->cells.size());
        EXPECT_EQ((*row)->cells[0].value, (*row)->cells[1].value) << "tablet " << id;
      }
    }
  });
  for (auto& th : writers) th.join();
  done = true;
  reader.join();
  for (TabletId id = 1; id <= kTablets; ++id)
    EXPECT_EQ(Range(1, Last(id)), Sequences(manager(), id));
}

TEST_F(EngineSequenceTest, ARestartContinuesEachTabletsNumbers) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  for (int i = 0; i < 5; ++i)
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("a{}", i), "f", "q", 1, "v"));
  for (int i = 0; i < 3; ++i)
    ASSERT_NO_FATAL_FAILURE(Put(2, fmt::format("a{}", i), "f", "q", 1, "v"));
  ASSERT_TRUE(engine_->Flush(2).ok());  // tablet 2 from its files, tablet 1 from the log
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(5u, Last(1));
  EXPECT_EQ(3u, Last(2));
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Put(2, "b", "f", "q", 1, "v"));
  EXPECT_EQ(Range(1, 6), Sequences(manager(), 1));
  EXPECT_EQ(Range(1, 4), Sequences(manager(), 2));
  // Everything flushed and the log recycled: the flushed marks carry the numbers.
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(6u, Last(1));
  EXPECT_EQ(4u, Last(2));
  // A delete after the restart hides what came before it, a write after it survives.
  ASSERT_TRUE(engine_->Apply(1, RowMutation("a0").DeleteFromRow()).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "a0", "f", "q", 0, "after"));
  StatusOr<std::optional<model::Row>> row = engine_->ReadRow(1, "a0", {});
  ASSERT_TRUE(row.ok() && row->has_value());
  ASSERT_EQ(1u, (*row)->cells.size());
  EXPECT_EQ("after", (*row)->cells[0].value);
  EXPECT_EQ(8u, Last(1));
}

TEST_F(EngineSequenceTest, DropMarksSurviveRestartFlushAndCompactionInTheManifest) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "g", "q", 1, "old-g"));
  ASSERT_NO_FATAL_FAILURE(Put(2, "a", "g", "q", 1, "other-tablet"));
  ASSERT_NO_FATAL_FAILURE(Put(1, "b", "g", "q", 1, "old-g"));
  ASSERT_TRUE(engine_->UpdateSchema(1, Descriptor("t", {"f"}).schema).ok());
  ASSERT_TRUE(engine_->UpdateSchema(1, Descriptor("t", {"f", "g"}).schema).ok());
  const DropMarks expected = {{"g", 2}};  // tablet 1's own number: its second entry
  EXPECT_EQ(expected, DropMarksOf(*engine_, 1));
  EXPECT_TRUE(DropMarksOf(*engine_, 2).empty());
  ASSERT_NO_FATAL_FAILURE(Put(1, "c", "g", "q", 1, "new-g"));
  const std::vector<std::string> lines = {"1 c g:q@1=new-g", "2 a g:q@1=other-tablet"};
  EXPECT_EQ(lines, Lines(*engine_));
  // The schema carries no marks: the descriptor the manager keeps decodes without any.
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  {
    StatusOr<std::unique_ptr<storage::Manifest>> m =
        storage::Manifest::Open(&fs_, options_.dir, /*create_if_missing=*/false);
    ASSERT_TRUE(m.ok()) << m.status();
    const storage::TabletState& ts = (*m)->state().tablets.at(1);
    EXPECT_EQ(expected, DropMarks(ts.drop_marks.begin(), ts.drop_marks.end()));
    DropMarks legacy = {{"x", 1}};
    ASSERT_TRUE(TabletDescriptor::Decode(ts.descriptor, &legacy).ok());
    EXPECT_TRUE(legacy.empty());
    EXPECT_TRUE((*m)->state().tablet_sequences);
  }
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(expected, DropMarksOf(*engine_, 1));
  EXPECT_EQ(lines, Lines(*engine_));
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(expected, DropMarksOf(*engine_, 1));
  EXPECT_EQ(lines, Lines(*engine_));
  EXPECT_EQ(3u, Last(1));
}

TEST_F(EngineSequenceTest, ATabletCreatedAgainSkipsTheOldOnesRecords) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  for (int i = 0; i < 5; ++i)
    ASSERT_NO_FATAL_FAILURE(Put(1, fmt::format("old{}", i), "f", "q", 1, "v"));
  ASSERT_TRUE(engine_->DropTablet(1).ok());  // its records stay in the log segment
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  EXPECT_EQ(5u, Last(1));  // above the old records, which replay must not take for its own
  ASSERT_NO_FATAL_FAILURE(Put(1, "new", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>{"1 new f:q@1=v"}, Lines(*engine_));
  EXPECT_EQ(std::vector<uint64_t>{6}, Sequences(manager(), 1));
  // Dropped with a record in the live segment, then created again after a restart: recovery
  // found the old record again.
  ASSERT_NO_FATAL_FAILURE(Put(1, "more", "f", "q", 1, "v"));
  ASSERT_TRUE(engine_->DropTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  EXPECT_EQ(7u, Last(1));
  ASSERT_NO_FATAL_FAILURE(Put(1, "newer", "f", "q", 1, "v"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(std::vector<std::string>{"1 newer f:q@1=v"}, Lines(*engine_));
}

// ------------------------------------------------------------------------------------------
// The data folder of the node-wide counter

std::vector<std::string> ReadExpectedRows(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

class LegacyFolderTest : public ::testing::Test {
 protected:
  LegacyFolderTest() {
    std::filesystem::copy(std::string(TESSERA_FIXTURES_DIR) + "/engine_v1", dir_.path(),
                          std::filesystem::copy_options::recursive);
    options_.dir = dir_.path();
  }

  void Open() {
    StatusOr<std::unique_ptr<TabletManager>> m = TabletManager::Open(options_);
    ASSERT_TRUE(m.ok()) << m.status();
    engine_ = *std::move(m);
  }
  void Reopen() {
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    ASSERT_NO_FATAL_FAILURE(Open());
  }
  void Put(TabletId id, std::string_view row, std::string_view family, int64_t ts,
           std::string_view value) {
    Status s = engine_->Apply(id, RowMutation(row).SetCell(family, "q", ts, value));
    ASSERT_TRUE(s.ok()) << s;
  }
  uint64_t Last(TabletId id) { return (*engine_->tablet(id))->last_sequence(); }

  TempDir dir_{"engine-v1"};
  tablet::EngineOptions options_;
  std::unique_ptr<TabletManager> engine_;
};

// The node-wide last sequence L the fixture's manifest holds: the counter at its last edit
// (the re-creation of family g). Later writes are only in the log, up to 20, the counter at
// close (engine_v1_expected_rows.txt).
constexpr uint64_t kL = 17;

TEST_F(LegacyFolderTest, OpensWithEveryRowThenTakesWritesThatWinAndReopens) {
  const std::vector<std::string> legacy =
      ReadExpectedRows(std::string(TESSERA_FIXTURES_DIR) + "/engine_v1_expected_rows.txt");
  ASSERT_EQ(12u, legacy.size());
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ((std::vector<TabletId>{1, 2, 3, 4}), engine_->ListTablets());
  EXPECT_EQ(legacy, Lines(*engine_));
  // Tablet 1's family g was dropped at a node-wide number and created again: the mark moved to
  // the tablet with that number; the old g cells (in a file and in the log) stay hidden.
  const DropMarks marks = DropMarksOf(*engine_, 1);
  ASSERT_EQ(1u, marks.size());
  EXPECT_EQ(16u, tablet::DroppedBefore(marks, "g"));  // the counter at the drop
  EXPECT_TRUE(engine_->GetTablet(1)->schema.families.contains("g"));
  ReadSpec just_g;
  just_g.families = {"g"};
  StatusOr<std::optional<model::Row>> a = engine_->ReadRow(1, "a", just_g);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  // Every tablet starts at the largest of L and what its log records and files hold.
  EXPECT_EQ(20u, Last(1));
  EXPECT_EQ(kL, Last(2));
  EXPECT_EQ(kL, Last(3));  // its last write was 16
  EXPECT_EQ(19u, Last(4));

  // New writes win over old ones by order, not timestamp: a delete hides the old cells of its
  // row, a write after it with an older timestamp survives, a write at an old cell's timestamp
  // replaces it.
  ASSERT_TRUE(engine_->Apply(2, RowMutation("m1").DeleteFromRow()).ok());
  ASSERT_NO_FATAL_FAILURE(Put(2, "m1", "f", 1, "m1-after-delete"));
  ASSERT_NO_FATAL_FAILURE(Put(3, "b2", "c", 1000, "b2-replaced"));  // was c:x@1000, here c:q
  ASSERT_TRUE(engine_->Apply(3, RowMutation("b2").SetCell("c", "x", 1000, "b2-x-replaced")).ok());
  ASSERT_TRUE(engine_->Apply(1, RowMutation("d").DeleteFromFamily("g")).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "d", "g", 1, "d-g-after-delete"));
  ASSERT_NO_FATAL_FAILURE(Put(4, "k9", "c", 1, "k9-new"));
  // Dense above the floor, per tablet.
  EXPECT_EQ(kL + 2, Last(2));
  EXPECT_EQ(kL + 2, Last(3));
  EXPECT_EQ(22u, Last(1));
  EXPECT_EQ(20u, Last(4));

  std::vector<std::string> expected = {
      "1 a f:q@2000=a-f-2",
      "1 a f:q@1000=a-f-1",
      "1 b f:q@500=b-f-after-delete",
      "1 d g:q@1=d-g-after-delete",
      "2 m1 f:q@1=m1-after-delete",
      "2 m2 g:q@2000=m2-g-1",
      "2 m3 f:q@1000=m3-f-1",
      "3 b1 c:y@1000=b1-c-y",
      "3 b2 c:q@1000=b2-replaced",
      "3 b2 c:x@1000=b2-x-replaced",
      "4 k2 c:x@1000=k2-c-after-truncate",
      "4 k3 c:x@1000=k3-c-1",
      "4 k9 c:q@1=k9-new",
  };
  EXPECT_EQ(expected, Lines(*engine_));
  // The upgrade is recorded: sequences are per tablet, the marks are the tablet's, the schema
  // no longer carries them.
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  {
    StatusOr<std::unique_ptr<storage::Manifest>> m =
        storage::Manifest::Open(PosixFileSystem(), options_.dir, /*create_if_missing=*/false);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE((*m)->state().tablet_sequences);
    const storage::TabletState& ts = (*m)->state().tablets.at(1);
    EXPECT_EQ(marks, DropMarks(ts.drop_marks.begin(), ts.drop_marks.end()));
    DropMarks in_schema;
    ASSERT_TRUE(TabletDescriptor::Decode(ts.descriptor, &in_schema).ok());
    EXPECT_TRUE(in_schema.empty());
  }
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(expected, Lines(*engine_));
  EXPECT_EQ(marks, DropMarksOf(*engine_, 1));
  EXPECT_EQ(kL + 2, Last(2));
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Put(2, "m4", "f", 1, "m4-after-flush"));
  EXPECT_EQ(kL + 3, Last(2));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  expected.insert(expected.begin() + 7, "2 m4 f:q@1=m4-after-flush");
  EXPECT_EQ(expected, Lines(*engine_));
  EXPECT_EQ(marks, DropMarksOf(*engine_, 1));
  // Numbers continue after the upgrade without the node-wide floor.
  EXPECT_EQ(kL + 3, Last(2));
  EXPECT_EQ(22u, Last(1));
}

}  // namespace
}  // namespace tessera::test
