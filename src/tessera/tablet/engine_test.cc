// Smoke tests of the engine's main paths; the randomized model, crash and corruption suites
// live in tests/.
#include "tessera/tablet/engine.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "absl/strings/str_format.h"
#include "tessera/util/arena.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::tablet {
namespace {

model::TableSchema Schema() {
  model::TableSchema s;
  s.name = "t";
  s.families["cf"] = model::FamilySchema{};
  model::FamilySchema hot;
  hot.in_memory = true;
  s.families["hot"] = hot;
  return s;
}

class EngineTest : public ::testing::Test {
 protected:
  // `min_files`: how many files a size-tiered run or level 0 needs to be compacted.
  void Open(size_t memtable_bytes = 64 * 1024, int min_files = 3,
            CompactionStyle style = CompactionStyle::kLeveled) {
    EngineOptions o;
    o.dir = dir_;
    o.memtable_bytes = memtable_bytes;
    o.block_size = 1024;
    o.compaction_style = style;
    o.size_tier_min_files = min_files;
    o.level0_compaction_files = min_files;
    OpenWith(o);
  }
  // Writes rows row(0) .. row(rows - 1) of tablet 1, each one cell cf:q of `value_bytes`
  // random letters (which compress little), then compacts the tablet.
  static std::string ScanRow(int i) { return absl::StrFormat("row%05d", i); }
  void PutIncompressibleRowsAndCompact(int rows, size_t value_bytes, uint32_t seed) {
    Random rnd(seed);
    for (int i = 0; i < rows; ++i) {
      model::RowMutation m(ScanRow(i));
      std::string value(value_bytes, ' ');
      for (char& c : value) c = static_cast<char>('a' + rnd.Uniform(26));
      m.SetCell("cf", "q", 1000, value);
      ASSERT_TRUE(engine_->Apply(1, m).ok());
    }
    ASSERT_TRUE(engine_->CompactTablet(1).ok());
  }
  // 32 KiB memtables, 1 KiB blocks, compaction not throttled.
  EngineOptions SmallUnthrottled() const {
    EngineOptions o;
    o.dir = dir_;
    o.memtable_bytes = 32 << 10;
    o.block_size = 1024;
    o.compaction_bytes_per_second = 0;
    return o;
  }
  void OpenWith(const EngineOptions& o) {
    auto e = Engine::Open(o, Env{&fs_, &clock_});
    ASSERT_TRUE(e.ok()) << e.status();
    engine_ = std::move(e).value();
  }
  void Reopen() {
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    Open();
  }
  std::string Get(std::string_view row, std::string_view family = "cf",
                  std::string_view qualifier = "q") {
    model::ReadSpec spec;
    spec.columns.push_back({std::string(family), std::string(qualifier)});
    spec.max_versions = 1;
    auto r = engine_->ReadRow(1, row, spec);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) return "<none>";
    return (*r)->cells[0].value;
  }

  std::string dir_ = "/db";
  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, WriteReadFlushCompactReopen) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  for (int i = 0; i < 3000; ++i) {
    model::RowMutation m("row" + std::to_string(i % 500));
    m.SetCell("cf", "q", 1000 + i, "v" + std::to_string(i));
    ASSERT_TRUE(engine_->Apply(1, m).ok());
  }
  EXPECT_EQ("v2999", Get("row499"));
  ASSERT_TRUE(engine_->Flush(std::nullopt).ok());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_GT(engine_->GetStats().flushes, 0u);
  EXPECT_EQ("v2500", Get("row0"));
  model::RowMutation del("row7");
  del.DeleteFromRow();
  ASSERT_TRUE(engine_->Apply(1, del).ok());
  EXPECT_EQ("<none>", Get("row7"));
  Reopen();
  EXPECT_EQ("<none>", Get("row7"));
  EXPECT_EQ("v2999", Get("row499"));
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  EXPECT_EQ(1u, engine_->GetStats().sstable_files);
  EXPECT_EQ("v2500", Get("row0"));
  EXPECT_EQ("<none>", Get("row7"));
  Reopen();
  EXPECT_EQ("v2501", Get("row1"));

  auto scan = engine_->Scan(1, model::RowRange{"row1", "row2"}, model::ReadSpec{}, 0);
  ASSERT_TRUE(scan.ok());
  int rows = 0;
  for (auto& it = *scan; it->Valid(); it->Next()) {
    EXPECT_GE(it->row().key, "row1");
    EXPECT_LT(it->row().key, "row2");
    ++rows;
  }
  EXPECT_TRUE((*scan)->status().ok());
  EXPECT_EQ(111, rows);  // row1, row10-19, row100-199
}

// `tessera admin tablestats` reads these: what a tablet holds, and the reads and writes it
// served (a failed read or write is not counted).
TEST_F(EngineTest, TabletStatsCountWhatTheTabletHoldsAndServed) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  EXPECT_EQ(engine_->GetTabletStats(99).status().code(), absl::StatusCode::kNotFound);
  model::RowMutation a("a"), b("b");
  a.SetCell("cf", "q", 1000, "x");
  b.SetCell("cf", "q", 1000, "y");
  ASSERT_TRUE(engine_->ApplyBatch(1, std::vector<model::RowMutation>{a, b}).ok());
  ASSERT_TRUE(engine_->Apply(1, a).ok());
  model::RowMutation bad("c");
  bad.SetCell("no_such_family", "q", 1000, "z");
  EXPECT_FALSE(engine_->Apply(1, bad).ok());
  // On a thread of their own, which times its first read (this one may have read before, in
  // the binary's other tests).
  std::thread reader([&] {
    EXPECT_EQ("x", Get("a"));
    EXPECT_EQ("<none>", Get("zz"));
  });
  reader.join();
  ASSERT_TRUE(engine_->Scan(1, model::RowRange{"a", "b"}, model::ReadSpec{}, 0).ok());

  StatusOr<TabletStats> s = engine_->GetTabletStats(1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->writes.count, 2u);
  EXPECT_EQ(s->rows_written, 3u);
  EXPECT_EQ(s->row_reads, 2u);
  EXPECT_GE(s->row_read_samples.count, 1u);  // the reader's first read was timed
  EXPECT_LE(s->row_read_samples.count, 2u);
  EXPECT_EQ(s->scans, 1u);
  EXPECT_EQ(s->last_sequence, 3u);
  const uint64_t memtable_before = s->memtable_bytes;
  EXPECT_GT(memtable_before, 0u);
  EXPECT_EQ(s->sstable_files, 0u);

  ASSERT_TRUE(engine_->Flush(1).ok());
  s = engine_->GetTabletStats(1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sstable_files, 1u);
  EXPECT_EQ(s->sstable_bytes, engine_->GetStats().sstable_bytes);
  EXPECT_LT(s->memtable_bytes, memtable_before);
}

TEST_F(EngineTest, InMemoryFamilyGetsItsOwnFiles) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  model::RowMutation m("r");
  m.SetCell("cf", "q", 1000, "cold").SetCell("hot", "q", 1000, "warm");
  ASSERT_TRUE(engine_->Apply(1, m).ok());
  ASSERT_TRUE(engine_->Flush(1).ok());
  EXPECT_EQ(2u, engine_->GetStats().sstable_files);
  EXPECT_EQ("cold", Get("r"));
  EXPECT_EQ("warm", Get("r", "hot"));
  model::RowMutation del("r");
  del.DeleteFromRow();
  ASSERT_TRUE(engine_->Apply(1, del).ok());
  ASSERT_TRUE(engine_->Flush(1).ok());
  Reopen();
  EXPECT_EQ("<none>", Get("r"));
  EXPECT_EQ("<none>", Get("r", "hot"));
}

TEST_F(EngineTest, FamilyDeleteSurvivesAMoveToTheInMemoryGroup) {
  Open();
  model::TableSchema schema = Schema();
  schema.families["hot"].in_memory = false;
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", schema}).ok());
  model::RowMutation m("r");
  m.SetCell("hot", "q", 1000, "old");
  ASSERT_TRUE(engine_->Apply(1, m).ok());
  ASSERT_TRUE(engine_->Flush(1).ok());  // the cell lands in the default group
  schema.families["hot"].in_memory = true;
  ASSERT_TRUE(engine_->UpdateSchema(1, schema).ok());
  model::RowMutation del("r");
  del.DeleteFromFamily("hot");
  ASSERT_TRUE(engine_->Apply(1, del).ok());
  ASSERT_TRUE(engine_->Flush(1).ok());
  EXPECT_EQ("<none>", Get("r", "hot"));
  // Each group purges its own tombstones; the default group's copy must still hide the cell.
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  EXPECT_EQ("<none>", Get("r", "hot"));
  Reopen();
  EXPECT_EQ("<none>", Get("r", "hot"));
}

// A repair reads two replicas with max-age GC applied as of one time (docs/repair.md).
TEST_F(EngineTest, AScanAppliesMaxAgeAsOfTheTimeItIsGiven) {
  Open();
  model::TableSchema schema;
  schema.name = "t";
  schema.families["cf"].gc_rule = model::GcRule::MaxAge(1'000'000);
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", schema}).ok());
  constexpr int64_t kWritten = 5'000'000'000;  // a cell written at this time (micros)
  model::RowMutation m("r");
  m.SetCell("cf", "q", kWritten, "v");
  ASSERT_TRUE(engine_->Apply(1, m).ok());
  auto rows_as_of = [&](int64_t micros) {
    ScanOptions o;
    o.gc_as_of_micros = micros;
    auto it = engine_->Scan(1, model::RowRange{}, model::ReadSpec{}, o);
    EXPECT_TRUE(it.ok()) << it.status();
    int n = 0;
    for (; (*it)->Valid(); (*it)->Next()) ++n;
    return n;
  };
  EXPECT_EQ(1, rows_as_of(kWritten + 500'000));    // half a second old: kept
  EXPECT_EQ(0, rows_as_of(kWritten + 2'000'000));  // two seconds old: collectable
  EXPECT_EQ(0, rows_as_of(0));                     // now (long after 1970 + 5000 s): collectable
}

// Issue 9: GC by versions in a flush or compaction counts only the versions in its inputs. A
// time-ranged column delete in newer data can remove the newer versions, and the older one is
// then the column's newest live cell: not collectable (bigtable-api.md §5.6: max_num_versions
// keeps the newest N). Dropping it there lost a cell for good.
model::TableSchema OneVersionSchema() {
  model::TableSchema s;
  s.name = "t";
  s.families["_u"].gc_rule = model::GcRule::MaxNumVersions(1);
  return s;
}

// Writes "old"@1000 and "new"@2000 to _u:ab of row k\n (in one mutation, or in two with a flush
// after each), then deletes [2000, 3000) of the column: "old" is the newest live version.
void WriteOldNewDeleteNew(Engine* engine, bool flush_between) {
  model::RowMutation old_cell("k\n");
  old_cell.SetCell("_u", "ab", 1000, "old");
  model::RowMutation new_cell("k\n");
  new_cell.SetCell("_u", "ab", 2000, "new");
  if (flush_between) {
    ASSERT_TRUE(engine->Apply(1, old_cell).ok());
    ASSERT_TRUE(engine->Flush(1).ok());
    ASSERT_TRUE(engine->Apply(1, new_cell).ok());
    ASSERT_TRUE(engine->Flush(1).ok());
  } else {
    old_cell.SetCell("_u", "ab", 2000, "new");
    ASSERT_TRUE(engine->Apply(1, old_cell).ok());
  }
  model::RowMutation del("k\n");
  del.DeleteFromColumn("_u", "ab", model::TimeRange{2000, 3000});
  ASSERT_TRUE(engine->Apply(1, del).ok());
}

TEST_F(EngineTest, Issue9FlushKeepsAVersionThatANewerRangedDeleteMadeNewest) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", OneVersionSchema()}).ok());
  WriteOldNewDeleteNew(engine_.get(), /*flush_between=*/false);
  EXPECT_EQ("old", Get("k\n", "_u", "ab"));
  // Replay with tiny memtables: the two cells fill one memtable, the delete the next one, and
  // the first is flushed (with GC: the tablet has no files) while the delete is in memory.
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  Open(/*memtable_bytes=*/1);
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_GT(engine_->GetStats().flushes, 0u);
  EXPECT_EQ("old", Get("k\n", "_u", "ab"));
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  EXPECT_EQ("old", Get("k\n", "_u", "ab"));
}

TEST_F(EngineTest, Issue9CompactionKeepsAVersionThatANewerRangedDeleteMadeNewest) {
  for (CompactionStyle style : {CompactionStyle::kLeveled, CompactionStyle::kSizeTiered}) {
    SCOPED_TRACE(style == CompactionStyle::kLeveled ? "leveled" : "size-tiered");
    dir_ = style == CompactionStyle::kLeveled ? "/leveled" : "/size-tiered";
    Open(64 * 1024, 3, style);
    ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", OneVersionSchema()}).ok());
    // One file per cell; the delete stays in the memtable (and the commit log).
    WriteOldNewDeleteNew(engine_.get(), /*flush_between=*/true);
    EXPECT_EQ("old", Get("k\n", "_u", "ab"));
    // Reopen compacting two files: they are compacted (with GC: they hold the oldest data)
    // while the delete is in the memtable.
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
    Open(64 * 1024, /*min_files=*/2, style);
    ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
    EXPECT_GT(engine_->GetStats().compactions, 0u);
    EXPECT_EQ("old", Get("k\n", "_u", "ab"));
    ASSERT_TRUE(engine_->CompactTablet(1).ok());
    EXPECT_EQ("old", Get("k\n", "_u", "ab"));
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
  }
}

TEST_F(EngineTest, ErrorsNameTheProblem) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "a", "m", Schema()}).ok());
  EXPECT_TRUE(
      absl::IsAlreadyExists(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()})));
  model::RowMutation outside("z");
  outside.SetCell("cf", "q", 0, "v");
  EXPECT_TRUE(absl::IsInvalidArgument(engine_->Apply(1, outside)));
  model::RowMutation nofamily("b");
  nofamily.SetCell("nope", "q", 0, "v");
  Status s = engine_->Apply(1, nofamily);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(std::string::npos, std::string(s.message()).find("nope"));
  EXPECT_TRUE(absl::IsNotFound(engine_->Apply(2, nofamily)));
}

// A node holds a copy of many tablets, most of them idle: they must cost a write nothing.
TEST_F(EngineTest, IdleTabletsNeitherStallNorFlushTheBusyOne) {
  EngineOptions o;
  o.dir = "/db";
  o.memtable_bytes = 64 << 20;  // arena blocks of 1 MiB
  o.memory_hard_limit_bytes = 32 << 20;
  OpenWith(o);
  constexpr int kTablets = 300;
  for (int id = 1; id <= kTablets; ++id) {
    ASSERT_TRUE(engine_->CreateTablet(id, TabletDescriptor{"t", "", "", Schema()}).ok());
  }
  // Empty memtables reserve a small first block, not a whole one each.
  EXPECT_LT(engine_->GetStats().memtable_bytes, kTablets * 2 * Arena::kFirstBlockSize);
  const std::string value(1000, 'v');
  for (int i = 0; i < 5000; ++i) {
    model::RowMutation m("row" + std::to_string(i));
    m.SetCell("cf", "q", 1000, value);
    ASSERT_TRUE(engine_->Apply(1, m).ok());
  }
  EngineStats stats = engine_->GetStats();
  EXPECT_EQ(0u, stats.write_stalls);
  EXPECT_EQ(0u, stats.flushes);
  EXPECT_EQ("v", Get("row4999").substr(0, 1));
}

// The bound still holds when the memory is spread over many tablets, each below memtable_bytes.
TEST_F(EngineTest, MemtablesOfManyTabletsStayWithinTheHardLimit) {
  EngineOptions o;
  o.dir = "/db";
  o.memtable_bytes = 4 << 20;
  o.memory_hard_limit_bytes = 4 << 20;
  OpenWith(o);
  constexpr int kTablets = 8;
  for (int id = 1; id <= kTablets; ++id) {
    ASSERT_TRUE(engine_->CreateTablet(id, TabletDescriptor{"t", "", "", Schema()}).ok());
  }
  const std::string value(1000, 'v');
  size_t peak = 0;
  for (int i = 0; i < 12000; ++i) {
    model::RowMutation m("row" + std::to_string(i));
    m.SetCell("cf", "q", 1000, value);
    ASSERT_TRUE(engine_->Apply(1 + i % kTablets, m).ok());
    if (i % 100 == 0) peak = std::max<size_t>(peak, engine_->GetStats().memtable_bytes);
  }
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EngineStats stats = engine_->GetStats();
  EXPECT_GT(stats.flushes, 0u);
  // The limit is checked before each write group: one group and one block per tablet may pass it.
  EXPECT_LT(peak, o.memory_hard_limit_bytes + kTablets * (256 << 10) + (1 << 20));
  for (int id = 1; id <= kTablets; ++id) {
    auto r = engine_->ReadRow(id, "row" + std::to_string(11992 + id - 1), model::ReadSpec());
    ASSERT_TRUE(r.ok() && r->has_value()) << id;
  }
}

// Leveled compaction's bound (docs/compaction.md): however long a tablet is overwritten, a row
// is in at most level0_stop_files files of level 0 and one file of each deeper level.
TEST_F(EngineTest, OverwritesKeepTheFilesAReadTouchesBounded) {
  EngineOptions o = SmallUnthrottled();
  o.compaction_style = CompactionStyle::kLeveled;
  o.level0_compaction_files = 3;
  o.level0_stop_files = 6;
  o.level1_bytes = 96 << 10;
  o.level_size_multiplier = 3;
  o.level_file_bytes = 16 << 10;
  OpenWith(o);
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  constexpr int kRows = 1500;
  auto row = [](int i) { return absl::StrFormat("row%05d", i); };
  Random rnd(42);
  uint32_t deepest = 0;
  size_t most_touched = 0;
  for (int i = 0; i < 40 * kRows; ++i) {
    model::RowMutation m(row(rnd.Uniform(kRows)));
    std::string value(60, ' ');
    for (char& c : value) c = static_cast<char>('a' + rnd.Uniform(26));  // compresses little
    m.SetCell("cf", "q", 1000, value);
    ASSERT_TRUE(engine_->Apply(1, m).ok());
    if (i % 1000 != 999) continue;
    StatusOr<std::vector<SstableInfo>> files = engine_->ListSstables(1);
    ASSERT_TRUE(files.ok()) << files.status();
    int level0 = 0;
    std::set<uint32_t> levels;
    for (const auto& f : *files) {
      level0 += f.level == 0;
      if (f.level > 0) levels.insert(f.level);
      deepest = std::max(deepest, f.level);
    }
    ASSERT_LE(level0, o.level0_stop_files) << "after " << i + 1 << " writes";
    for (int r = 0; r < kRows; r += 7) {
      size_t touched = 0;
      std::set<uint32_t> levels_touched;
      for (const auto& f : *files) {
        if (f.first_row <= row(r) && row(r) <= f.last_row) {
          ++touched;
          if (f.level > 0) {
            ASSERT_TRUE(levels_touched.insert(f.level).second)
                << row(r) << " is in two files of level " << f.level;
          }
        }
      }
      ASSERT_LE(touched, o.level0_stop_files + levels.size()) << row(r);
      most_touched = std::max(most_touched, touched);
    }
  }
  EXPECT_GE(deepest, 2u);
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  // Shadowed versions are gone from the deeper levels: the files hold little more than the live
  // rows (each about 80 bytes of key and value).
  EXPECT_LT(engine_->GetStats().sstable_bytes, 4u * kRows * 100);
  RecordProperty("most_files_touched", static_cast<int>(most_touched));
}

// A read of a column's newest version stops at the newest file that holds one once the older
// files can hold nothing newer (docs/compaction.md, "Reads that stop early"); a whole-row read
// merges every file, and an older file with a newer timestamp is still read.
TEST_F(EngineTest, ANewestVersionReadStopsAtTheNewestFileThatHoldsIt) {
  Open(64 * 1024, /*min_files=*/10);
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  auto put = [&](std::string_view row, int64_t ts, std::string_view value) {
    model::RowMutation m(row);
    m.SetCell("cf", "q", ts, value);
    ASSERT_TRUE(engine_->Apply(1, m).ok());
    ASSERT_TRUE(engine_->Flush(1).ok());
  };
  put("a", 1000, "old");
  put("a", 1000, "new");  // the same cell again, in a second file
  put("b", 2000, "newer timestamp, older write");
  put("b", 1000, "older timestamp, newer write");
  auto lookups = [&] {
    EngineStats s = engine_->GetStats();
    return s.block_cache_hits + s.block_cache_misses;
  };
  uint64_t before = lookups();
  EXPECT_EQ("new", Get("a"));
  EXPECT_EQ(1u, lookups() - before) << "only the newer file of row a is read";

  before = lookups();
  auto whole = engine_->ReadRow(1, "a", model::ReadSpec());
  ASSERT_TRUE(whole.ok() && whole->has_value());
  ASSERT_EQ(1u, (*whole)->cells.size());
  EXPECT_EQ("new", (*whole)->cells[0].value);
  EXPECT_EQ(2u, lookups() - before) << "a whole-row read merges both files";

  before = lookups();
  EXPECT_EQ("newer timestamp, older write", Get("b"));
  // Both files (the newer one's block is looked up again when the two are merged).
  EXPECT_LE(2u, lookups() - before) << "the older file may hold a newer version";

  model::ReadSpec two;
  two.columns.push_back({"cf", "q"});
  two.max_versions = 2;
  auto both = engine_->ReadRow(1, "b", two);
  ASSERT_TRUE(both.ok() && both->has_value());
  ASSERT_EQ(2u, (*both)->cells.size());
  EXPECT_EQ(2000, (*both)->cells[0].timestamp_micros);
  EXPECT_EQ(1000, (*both)->cells[1].timestamp_micros);
}

// A scan opens one file per level >= 1 (a level iterator), not every file right of its start:
// a short scan of a tablet whose rows are spread over many files of one level reads a block or
// two, forward and reversed.
TEST_F(EngineTest, AShortScanReadsOneFileOfALevel) {
  EngineOptions o = SmallUnthrottled();
  o.level_file_bytes = 8 << 10;
  OpenWith(o);
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  auto row = ScanRow;
  PutIncompressibleRowsAndCompact(3000, 40, 7);
  StatusOr<std::vector<SstableInfo>> files = engine_->ListSstables(1);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_GE(files->size(), 10u) << "one level of many files";
  for (const auto& f : *files) ASSERT_EQ(files->front().level, f.level);
  auto lookups = [&] {
    EngineStats s = engine_->GetStats();
    return s.block_cache_hits + s.block_cache_misses;
  };
  for (bool reversed : {false, true}) {
    const uint64_t before = lookups();
    auto it = engine_->Scan(1, model::RowRange{row(100), row(2000)}, model::ReadSpec{},
                            ScanOptions{.limit = 2, .reversed = reversed});
    ASSERT_TRUE(it.ok()) << it.status();
    std::vector<std::string> rows;
    for (; (*it)->Valid(); (*it)->Next()) rows.push_back((*it)->row().key);
    ASSERT_TRUE((*it)->status().ok());
    const std::vector<std::string> want = reversed ? std::vector<std::string>{row(1999), row(1998)}
                                                   : std::vector<std::string>{row(100), row(101)};
    EXPECT_EQ(want, rows);
    EXPECT_LE(lookups() - before, 3u) << (reversed ? "reversed" : "forward");
  }
}

// A scan caches the first blocks it reads of a file and no more (row_reader.cc's
// kScanCachedBlocks, 256): a long scan leaves the cache to the working set, a short one is
// served from the cache when read again.
TEST_F(EngineTest, ALongScanCachesOnlyItsFirstBlocksOfAFile) {
  OpenWith(SmallUnthrottled());  // 1 KiB blocks
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  auto row = ScanRow;
  const int rows = 6000;
  PutIncompressibleRowsAndCompact(rows, 100, 11);
  StatusOr<std::vector<SstableInfo>> files = engine_->ListSstables(1);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(1u, files->size());
  auto scan = [&](std::string_view start, uint64_t limit) {
    const EngineStats before = engine_->GetStats();
    auto it = engine_->Scan(1, model::RowRange{std::string(start), ""}, model::ReadSpec{},
                            ScanOptions{.limit = limit});
    EXPECT_TRUE(it.ok()) << it.status();
    uint64_t n = 0;
    for (; (*it)->Valid(); (*it)->Next()) ++n;
    EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
    const EngineStats after = engine_->GetStats();
    return std::tuple(n, after.block_cache_hits - before.block_cache_hits,
                      after.block_cache_misses - before.block_cache_misses);
  };
  const auto [n1, hits1, misses1] = scan("", 0);
  EXPECT_EQ(static_cast<uint64_t>(rows), n1);
  ASSERT_GT(misses1, 600u) << "the file should span well over 256 blocks";
  const auto [n2, hits2, misses2] = scan("", 0);
  EXPECT_EQ(static_cast<uint64_t>(rows), n2);
  EXPECT_EQ(256u, hits2) << "the first 256 blocks were cached, the rest not";
  EXPECT_EQ(misses1 - 256, misses2);
  // A short scan deeper in the file is cached whole, and read again from the cache.
  const auto [n3, hits3, misses3] = scan(row(5000), 30);
  EXPECT_EQ(30u, n3);
  EXPECT_GT(misses3, 0u);
  const auto [n4, hits4, misses4] = scan(row(5000), 30);
  EXPECT_EQ(0u, misses4);
  EXPECT_EQ(misses3 + hits3, hits4);
}

// Compaction by reads (docs/compaction.md): level-0 files below the trigger, which every read
// of a deeper row must consult, go into level 1 once reads exhausted their budget -- by gets,
// or by scans sampling what they pass. Size-tiered tables keep theirs.
TEST_F(EngineTest, ReadsThatPassLevelZeroFilesCompactThem) {
  auto row = [](int i) { return absl::StrFormat("row%04d", i); };
  for (const bool by_scans : {false, true}) {
    for (const CompactionStyle style : {CompactionStyle::kLeveled, CompactionStyle::kSizeTiered}) {
      SCOPED_TRACE(::testing::Message()
                   << (by_scans ? "scans" : "gets") << " "
                   << (style == CompactionStyle::kLeveled ? "leveled" : "size-tiered"));
      EngineOptions o = SmallUnthrottled();
      o.dir = absl::StrCat(dir_, "/", by_scans, static_cast<int>(style));
      o.compaction_style = style;
      o.memtable_bytes = 1 << 20;  // flushed by hand only
      OpenWith(o);
      ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
      const int rows = 400;
      const std::string value(by_scans ? 2000 : 20, 'v');
      for (int i = 0; i < rows; ++i) {
        model::RowMutation m(row(i));
        m.SetCell("cf", "q", 1000, value);
        ASSERT_TRUE(engine_->Apply(1, m).ok());
      }
      ASSERT_TRUE(engine_->CompactTablet(1).ok());
      // Two level-0 files spanning every row, each holding only the first and the last.
      for (int version : {2000, 3000}) {
        for (int i : {0, rows - 1}) {
          model::RowMutation m(row(i));
          m.SetCell("cf", "q", version, "new");
          ASSERT_TRUE(engine_->Apply(1, m).ok());
        }
        ASSERT_TRUE(engine_->Flush(1).ok());
      }
      auto level0 = [&] {
        StatusOr<std::vector<SstableInfo>> files = engine_->ListSstables(1);
        EXPECT_TRUE(files.ok()) << files.status();
        int n = 0;
        for (const auto& f : files.value_or(std::vector<SstableInfo>{})) n += f.level == 0;
        return n;
      };
      ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
      const int deep = style == CompactionStyle::kLeveled ? 0 : 1;  // the major compaction's
      ASSERT_EQ(2 + deep, level0()) << "nothing compacts them without reads";

      model::ReadSpec get;
      get.columns = {{"cf", "q"}};
      get.max_versions = 1;
      // Budgets are 100 reads for these small files; a get charges the newest level-0 file, a
      // scan of 400 rows of 2 KB samples about once per 1 MiB.
      for (int n = 0; n < (by_scans ? 200 : 600); ++n) {
        if (by_scans) {
          auto it = engine_->Scan(1, model::RowRange{}, model::ReadSpec{}, ScanOptions{});
          ASSERT_TRUE(it.ok()) << it.status();
          int seen = 0;
          for (; (*it)->Valid(); (*it)->Next()) ++seen;
          ASSERT_TRUE((*it)->status().ok());
          ASSERT_EQ(rows, seen);
        } else {
          auto r = engine_->ReadRow(1, row(1 + n % (rows - 2)), get);
          ASSERT_TRUE(r.ok() && r->has_value()) << r.status();
          ASSERT_EQ(value, (*r)->cells.at(0).value);
        }
      }
      ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
      if (style == CompactionStyle::kLeveled) {
        EXPECT_EQ(0, level0());
      } else {
        EXPECT_EQ(2 + deep, level0());
      }
      // The newest versions survived the compaction.
      for (int i : {0, rows - 1}) {
        auto r = engine_->ReadRow(1, row(i), get);
        ASSERT_TRUE(r.ok() && r->has_value()) << r.status();
        EXPECT_EQ("new", (*r)->cells.at(0).value);
        EXPECT_EQ(3000, (*r)->cells.at(0).timestamp_micros);
      }
      ASSERT_TRUE(engine_->Close().ok());
      engine_.reset();
    }
  }
}

// A table's own choice (TableOptions::compaction) wins over the engine's.
TEST_F(EngineTest, ATableChoosesItsCompaction) {
  EngineOptions o;
  o.dir = "/db";
  o.memtable_bytes = 16 << 10;
  o.compaction_bytes_per_second = 0;
  o.compaction_style = CompactionStyle::kLeveled;
  o.level0_compaction_files = 2;
  o.size_tier_min_files = 2;
  OpenWith(o);
  model::TableSchema tiered = Schema();
  tiered.options.compaction = "size_tiered";
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()}).ok());
  ASSERT_TRUE(engine_->CreateTablet(2, TabletDescriptor{"t2", "", "", tiered}).ok());
  for (int i = 0; i < 3000; ++i) {
    for (TabletId id : {1, 2}) {
      model::RowMutation m(absl::StrFormat("row%04d", i));
      m.SetCell("cf", "q", 1000, std::string(50, 'a' + i % 26));
      ASSERT_TRUE(engine_->Apply(id, m).ok());
    }
  }
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  auto deepest = [&](TabletId id) {
    uint32_t level = 0;
    StatusOr<std::vector<SstableInfo>> files = engine_->ListSstables(id);
    EXPECT_TRUE(files.ok()) << files.status();
    for (const auto& f : files.value_or(std::vector<SstableInfo>())) {
      level = std::max(level, f.level);
    }
    return level;
  };
  EXPECT_GE(deepest(1), 1u);
  EXPECT_EQ(deepest(2), 0u);
  EXPECT_GT(engine_->GetStats().compactions, 0u);
  EXPECT_TRUE(absl::IsNotFound(engine_->ListSstables(3).status()));
}

}  // namespace
}  // namespace tessera::tablet
