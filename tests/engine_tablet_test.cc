// The TabletManager's tablet-level API (docs/tablet.md): handles, checkpoints that pin files,
// ingesting a checkpoint copied into another engine's folder, raw entries checked against the
// reference model, and the persisted tablet data state.
//
// Replay a failure of the random test with TESSERA_SEED=<the printed seed>.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/cell_key.h"
#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/storage/manifest.h"
#include "tessera/storage/memtable.h"
#include "tessera/tablet/row_reader.h"
#include "tessera/tablet/tablet_manager.h"
#include "tessera/util/random.h"
#include "tests/engine_test_util.h"
#include "tests/reference_model.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::Row;
using model::RowMutation;
using tablet::TabletCheckpoint;
using tablet::TabletDataState;
using tablet::TabletDescriptor;
using tablet::TabletManager;

TabletDescriptor Descriptor() {
  TabletDescriptor d;
  d.table = "t";
  d.schema = MakeSchema("t", {{"cf", GcRule::None()}, {"cg", GcRule::None()}});
  return d;
}

std::string Row3(int i) { return fmt::format("r{:03d}", i); }

class EngineTabletTest : public EngineTestBase {
 protected:
  EngineTabletTest() : EngineTestBase("/db") {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Open());
    ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  }

  TabletManager* manager() { return static_cast<TabletManager*>(engine_.get()); }

  // Rows r000..r<n-1> with `cells` versions each, then a deleted row and a deleted column.
  void Fill(int n, int versions) {
    for (int v = 0; v < versions; ++v) {
      for (int i = 0; i < n; ++i) Put(1, Row3(i), "cf", "q", 1000 + v, fmt::format("v{}-{}", i, v));
    }
    ASSERT_TRUE(engine_->Apply(1, RowMutation(Row3(3)).DeleteFromRow()).ok());
    ASSERT_TRUE(engine_->Apply(1, RowMutation(Row3(4)).DeleteFromColumn("cf", "q")).ok());
  }

  std::vector<Row> All(tablet::Engine* engine, tablet::TabletId id) {
    StatusOr<std::vector<Row>> rows = ScanAll(*engine, id, {});
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::vector<Row>{};
  }
};

TEST_F(EngineTabletTest, HandleReadsLikeTheManagerAndOutlivesADrop) {
  ASSERT_NO_FATAL_FAILURE(Fill(20, 1));
  StatusOr<std::shared_ptr<tablet::Tablet>> t = manager()->tablet(1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->id(), 1u);
  StatusOr<std::optional<Row>> by_handle = (*t)->ReadRow(Row3(7), {});
  ASSERT_TRUE(by_handle.ok());
  EXPECT_EQ(*by_handle, *engine_->ReadRow(1, Row3(7), {}));
  EXPECT_TRUE(absl::IsNotFound(manager()->tablet(2).status()));

  ASSERT_TRUE(engine_->DropTablet(1).ok());
  // The handle still reads what it held; writes through the manager fail.
  by_handle = (*t)->ReadRow(Row3(7), {});
  ASSERT_TRUE(by_handle.ok());
  EXPECT_TRUE(by_handle->has_value());
  EXPECT_TRUE(absl::IsNotFound(engine_->Apply(1, RowMutation("a").SetCell("cf", "q", 1, "x"))));
}

TEST_F(EngineTabletTest, CheckpointPinsFilesUntilDestroyed) {
  ASSERT_NO_FATAL_FAILURE(Fill(200, 1));
  StatusOr<TabletCheckpoint> c = manager()->Checkpoint(1);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_FALSE(c->files.empty());
  EXPECT_EQ(c->descriptor.table, "t");
  EXPECT_EQ(c->flushed_sequence, engine_->GetStats().last_sequence);  // flushed just now
  std::vector<std::string> pinned;
  for (const auto& f : c->files) {
    pinned.push_back(f.path);
    EXPECT_EQ(*fs_.GetFileSize(f.path), f.meta.size);
  }
  // Replace every file: the pinned ones stay on disk while the checkpoint lives.
  Put(1, Row3(500), "cf", "q", 1, "new");
  ASSERT_TRUE(engine_->CompactTablet(1).ok());
  for (const auto& path : pinned) EXPECT_TRUE(fs_.FileExists(path)) << path;
  c = absl::UnavailableError("gone");  // destroys the checkpoint
  for (const auto& path : pinned) EXPECT_FALSE(fs_.FileExists(path)) << path;
}

// Copies every file of `c` into `dir` (as a copy tool would) and names the copies.
std::vector<TabletCheckpoint::File> CopyInto(FileSystem* fs, const TabletCheckpoint& c,
                                             const std::string& dir) {
  EXPECT_TRUE(fs->CreateDirs(dir).ok());
  std::vector<TabletCheckpoint::File> copies;
  for (const auto& f : c.files) {
    StatusOr<std::string> data = ReadFileToString(fs, f.path);
    EXPECT_TRUE(data.ok()) << data.status();
    std::string to = JoinPath(dir, "copy-" + std::string(Basename(f.path)));
    EXPECT_TRUE(WriteStringToFile(fs, to, *data, /*sync=*/true).ok());
    copies.push_back({f.meta, to});
  }
  return copies;
}

TEST_F(EngineTabletTest, IngestOfACopiedCheckpointServesTheSameRowsAndSurvivesReopen) {
  ASSERT_NO_FATAL_FAILURE(Fill(300, 3));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_NO_FATAL_FAILURE(Fill(300, 1));  // several files, memtable data flushed by Checkpoint
  const std::vector<Row> expected = All(engine_.get(), 1);
  ASSERT_EQ(expected.size(), 298u);  // r003 and r004's only column are deleted
  StatusOr<TabletCheckpoint> c = manager()->Checkpoint(1);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_GE(c->files.size(), 2u);

  // Another engine with data of its own (so file numbers and sequences overlap), same FS.
  tablet::EngineOptions other = options_;
  other.dir = "/other";
  StatusOr<std::unique_ptr<tablet::Engine>> b = tablet::Engine::Open(other, env_);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE((*b)->CreateTablet(5, Descriptor()).ok());
  ASSERT_TRUE((*b)->Apply(5, RowMutation("x").SetCell("cf", "q", 1, "b")).ok());
  ASSERT_TRUE((*b)->Flush(5).ok());
  auto* mb = static_cast<TabletManager*>(b->get());

  std::vector<TabletCheckpoint::File> copies = CopyInto(&fs_, *c, "/other/incoming");
  Status s = mb->Ingest(7, c->descriptor, c->drop_marks, copies);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(absl::IsAlreadyExists(mb->Ingest(7, c->descriptor, c->drop_marks, {})));
  EXPECT_EQ(All(b->get(), 7), expected);
  EXPECT_EQ(All(b->get(), 5).size(), 1u);
  // A write after the ingest wins over the ingested cell with the same coordinates.
  ASSERT_TRUE((*b)->Apply(7, RowMutation(Row3(9)).SetCell("cf", "q", 1002, "after")).ok());
  StatusOr<std::optional<Row>> r9 = (*b)->ReadRow(7, Row3(9), {});
  ASSERT_TRUE(r9.ok() && r9->has_value());
  EXPECT_EQ((*r9)->cells[0].value, "after");

  ASSERT_TRUE((*b)->Close().ok());
  b->reset();
  b = tablet::Engine::Open(other, env_);
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<Row> after_reopen = All(b->get(), 7);
  ASSERT_EQ(after_reopen.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].key == Row3(9)) continue;  // overwritten above
    EXPECT_EQ(after_reopen[i], expected[i]);
  }
  // The source is untouched.
  c = absl::UnavailableError("gone");
  EXPECT_EQ(All(engine_.get(), 1), expected);
}

TEST_F(EngineTabletTest, IngestOfAFileThatDoesNotMatchItsMetaFails) {
  ASSERT_NO_FATAL_FAILURE(Fill(50, 1));
  StatusOr<TabletCheckpoint> c = manager()->Checkpoint(1);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<TabletCheckpoint::File> copies = CopyInto(&fs_, *c, "/db/incoming");
  copies[0].meta.size += 1;
  EXPECT_TRUE(absl::IsDataLoss(manager()->Ingest(2, c->descriptor, c->drop_marks, copies)));
  EXPECT_TRUE(absl::IsNotFound(engine_->GetTablet(2).status()));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(engine_->ListTablets(), std::vector<tablet::TabletId>{1});
}

TEST_F(EngineTabletTest, IngestKeepsTheCheckpointsDropMarksAndNumbersAboveTheFiles) {
  // Family cg written, dropped, created again and written: the old cg cells stay in the files.
  for (int i = 0; i < 20; ++i) Put(1, Row3(i), "cg", "q", 1, "old-cg");
  ASSERT_TRUE(engine_->Flush(1).ok());
  TabletDescriptor without = Descriptor();
  without.schema.families.erase("cg");
  ASSERT_TRUE(engine_->UpdateSchema(1, without.schema).ok());
  ASSERT_TRUE(engine_->UpdateSchema(1, Descriptor().schema).ok());
  Put(1, Row3(0), "cg", "q", 1, "new-cg");
  StatusOr<TabletCheckpoint> c = manager()->Checkpoint(1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((tablet::DropMarks{{"cg", 20}}), c->drop_marks);
  const std::vector<Row> expected = All(engine_.get(), 1);
  ASSERT_EQ(1u, expected.size());

  tablet::EngineOptions other = options_;
  other.dir = "/other";
  StatusOr<std::unique_ptr<TabletManager>> b = TabletManager::Open(other, env_);
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<TabletCheckpoint::File> copies = CopyInto(&fs_, *c, "/other/incoming");
  Status s = (*b)->Ingest(7, c->descriptor, c->drop_marks, copies);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c->drop_marks, DropMarksOf(**b, 7));
  EXPECT_EQ(expected, All(b->get(), 7));
  // The tablet's numbers continue above the files: 20 old cells and one new one.
  EXPECT_EQ(21u, (*(*b)->tablet(7))->last_sequence());
  ASSERT_TRUE((*b)->Apply(7, RowMutation(Row3(0)).DeleteFromRow()).ok());
  ASSERT_TRUE((*b)->Apply(7, RowMutation(Row3(1)).SetCell("cf", "q", 1, "after")).ok());
  EXPECT_EQ(23u, (*(*b)->tablet(7))->last_sequence());
  ASSERT_TRUE((*b)->Close().ok());
  b->reset();
  b = TabletManager::Open(other, env_);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(c->drop_marks, DropMarksOf(**b, 7));
  std::vector<Row> rows = All(b->get(), 7);
  ASSERT_EQ(1u, rows.size());
  EXPECT_EQ(Row3(1), rows[0].key);
  EXPECT_EQ(23u, (*(*b)->tablet(7))->last_sequence());
}

// The entries of `t` turned back into rows by the engine's own read path over one memtable
// holding exactly those entries.
std::vector<Row> VisibleProjection(const tablet::Tablet& t, int64_t now_micros,
                                   std::vector<std::pair<std::string, uint64_t>>* keys) {
  StatusOr<std::unique_ptr<tablet::EntryIterator>> it = t.NewEntryIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  auto mem = std::make_shared<storage::MemTable>(storage::MemTableOptions());
  uint64_t max_sequence = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    keys->emplace_back((*it)->cell_key(), (*it)->sequence());
    mem->Add((*it)->sequence(), storage::ValueType::kValue, (*it)->cell_key(), (*it)->value());
    max_sequence = std::max(max_sequence, (*it)->sequence());
  }
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  tablet::TabletSnapshot snap;
  snap.descriptor = t.descriptor();
  snap.memtables.push_back(mem);
  snap.files = std::make_shared<tablet::FileSet>();
  snap.sequence = max_sequence;
  snap.now_micros = now_micros;
  std::unique_ptr<tablet::RowIterator> rows =
      tablet::NewSnapshotScan(std::move(snap), {}, {}, tablet::ScanOptions());
  std::vector<Row> out;
  for (; rows->Valid(); rows->Next()) out.push_back(rows->row());
  EXPECT_TRUE(rows->status().ok()) << rows->status();
  return out;
}

TEST_F(EngineTabletTest, RawEntriesProjectToTheReferenceModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(fmt::format("TESSERA_SEED={}", seed));
  Random rnd(seed);
  ReferenceModel model(&clock_);
  model.SetFamily("cf", GcRule::None());
  model.SetFamily("cg", GcRule::None());
  const std::vector<std::string> families = {"cf", "cg"};
  // Each tombstone written since the last flush, with the sequence the engine gave it. (A flush
  // may purge or drop older ones: the first has no file below it, and a newer tombstone of the
  // same scope shadows an older one.)
  std::vector<std::pair<std::string, uint64_t>> tombstones;
  for (int op = 0; op < 1600; ++op) {
    // No random flush in the last 100 operations, which must stay in the memtable with their
    // tombstones (one there emptied the list now and then: TESSERA_SEED=50).
    if (op == 1500 || (op < 1500 && rnd.OneIn(300))) {
      ASSERT_TRUE(engine_->Flush(1).ok());
      tombstones.clear();
    }
    const std::string row = Row3(static_cast<int>(rnd.Uniform(40)));
    const std::string& family = families[rnd.Uniform(2)];
    const std::string qualifier = fmt::format("q{}", rnd.Uniform(4));
    RowMutation m(row);
    std::string tombstone;
    switch (rnd.Uniform(10)) {
      case 0:
        m.DeleteFromRow();
        tombstone = model::CellKey::RowTombstone(row).Encode();
        break;
      case 1:
        m.DeleteFromFamily(family);
        tombstone = model::CellKey::FamilyTombstone(row, family).Encode();
        break;
      case 2:
        m.DeleteFromColumn(family, qualifier);
        tombstone = model::CellKey::ColumnTombstone(row, family, qualifier).Encode();
        break;
      default:
        m.SetCell(family, qualifier, 1 + static_cast<int64_t>(rnd.Uniform(5)),
                  fmt::format("v{}", op));
    }
    ASSERT_TRUE(engine_->Apply(1, m).ok());
    model.Apply(m);
    if (!tombstone.empty()) tombstones.emplace_back(tombstone, engine_->GetStats().last_sequence);
  }
  ASSERT_FALSE(tombstones.empty());
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  std::shared_ptr<tablet::Tablet> t = *manager()->tablet(1);
  std::vector<std::pair<std::string, uint64_t>> keys;
  EXPECT_EQ(VisibleProjection(*t, clock_.NowMicros(), &keys), model.Scan({}, {}, 0));
  // Internal-key order: cell key ascending, sequence descending.
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  }));
  // The last 100 operations are still in the memtable (64 KiB), raw: every tombstone is there.
  for (const auto& tomb : tombstones) {
    model::CellKey key;
    ASSERT_TRUE(model::CellKey::Decode(tomb.first, &key));
    EXPECT_TRUE(std::find(keys.begin(), keys.end(), tomb) != keys.end())
        << key.DebugString() << " at " << tomb.second;
  }
}

TEST_F(EngineTabletTest, CopyingTabletRefusesReadsAndWritesUntilServing) {
  ASSERT_NO_FATAL_FAILURE(Fill(20, 1));
  ASSERT_TRUE(manager()->SetTabletState(1, TabletDataState::kCopying).ok());
  auto expect_refused = [&](const Status& s) {
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_NE(s.message().find("tablet 1 is copying"), std::string_view::npos) << s;
  };
  expect_refused(engine_->ReadRow(1, Row3(1), {}).status());
  expect_refused(engine_->Scan(1, {}, {}, 0).status());
  expect_refused(engine_->SampleRowKeys(1, 100).status());
  expect_refused(engine_->WarmRow(1, Row3(1)));
  expect_refused(engine_->Apply(1, RowMutation(Row3(1)).SetCell("cf", "q", 5, "x")));
  expect_refused(manager()->Checkpoint(1).status());
  EXPECT_TRUE(engine_->GetTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ((*manager()->tablet(1))->state(), TabletDataState::kCopying);
  expect_refused(engine_->ReadRow(1, Row3(1), {}).status());
  ASSERT_TRUE(manager()->SetTabletState(1, TabletDataState::kServing).ok());
  EXPECT_EQ(All(engine_.get(), 1).size(), 18u);  // the data was kept
}

TEST_F(EngineTabletTest, TombstonedTabletDropsItsDataAndKeepsItsDescriptor) {
  ASSERT_NO_FATAL_FAILURE(Fill(200, 1));
  ASSERT_TRUE(engine_->Flush(1).ok());
  Put(1, Row3(900), "cf", "q", 1, "in the memtable");
  ASSERT_TRUE(manager()->SetTabletState(1, TabletDataState::kTombstoned).ok());
  Status s = engine_->ReadRow(1, Row3(1), {}).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("tablet 1 is tombstoned"), std::string_view::npos) << s;
  EXPECT_TRUE(absl::IsUnavailable(engine_->Apply(1, RowMutation("a").SetCell("cf", "q", 1, "x"))));
  EXPECT_EQ(engine_->GetTablet(1)->table, "t");
  EXPECT_EQ(*engine_->ApproximateTabletBytes(1), (*manager()->tablet(1))->MemtableBytes());
  EXPECT_TRUE(FilesWithSuffix(&fs_, "/db", ".sst").empty());
  ASSERT_NO_FATAL_FAILURE(Reopen());  // the log's records stay deleted
  EXPECT_EQ((*manager()->tablet(1))->state(), TabletDataState::kTombstoned);
  ASSERT_TRUE(manager()->SetTabletState(1, TabletDataState::kServing).ok());
  EXPECT_TRUE(All(engine_.get(), 1).empty());
}

// A data folder as engines wrote it before tablets had a data state: no edit names one.
TEST(EngineTabletStateCompatibility, FolderWithoutStatesOpensServing) {
  MemFileSystem fs;
  ManualClock clock;
  ASSERT_TRUE(fs.CreateDirs("/old").ok());
  {
    StatusOr<std::unique_ptr<storage::Manifest>> m = storage::Manifest::Open(&fs, "/old", true);
    ASSERT_TRUE(m.ok()) << m.status();
    storage::VersionEdit edit;
    edit.AddTablet(3, Descriptor().Encode());
    edit.SetFlushed(3, 0);
    edit.last_sequence = 0;
    edit.comparator = storage::InternalKeyComparator()->Name();
    edit.next_file_number = 1;
    ASSERT_TRUE(edit.data_states.empty());
    ASSERT_TRUE((*m)->LogAndApply(edit).ok());
  }
  tablet::EngineOptions options;
  options.dir = "/old";
  StatusOr<std::unique_ptr<TabletManager>> e =
      TabletManager::Open(options, Env{.fs = &fs, .clock = &clock});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*(*e)->tablet(3))->state(), TabletDataState::kServing);
  ASSERT_TRUE((*e)->Apply(3, RowMutation("a").SetCell("cf", "q", 1, "x")).ok());
  EXPECT_TRUE((*e)->ReadRow(3, "a", {})->has_value());
}

}  // namespace
}  // namespace tessera::test
