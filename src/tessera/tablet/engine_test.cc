// Smoke tests of the engine's main paths; the randomized model, crash and corruption suites
// live in tests/.
#include "tessera/tablet/engine.h"

#include <gtest/gtest.h>

#include "tessera/util/mem_file_system.h"

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
  void Open() {
    EngineOptions o;
    o.dir = "/db";
    o.memtable_bytes = 64 * 1024;
    o.block_size = 1024;
    o.size_tier_min_files = 3;
    auto e = Engine::Open(o, EngineEnv{&fs_, &clock_});
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
    ReadSpec spec;
    spec.columns.push_back({std::string(family), std::string(qualifier)});
    spec.max_versions = 1;
    auto r = engine_->ReadRow(1, row, spec);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) return "<none>";
    return (*r)->cells[0].value;
  }

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

  auto scan = engine_->Scan(1, RowRange{"row1", "row2"}, ReadSpec{}, 0);
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

TEST_F(EngineTest, ErrorsNameTheProblem) {
  Open();
  ASSERT_TRUE(engine_->CreateTablet(1, TabletDescriptor{"t", "a", "m", Schema()}).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(engine_->CreateTablet(1, TabletDescriptor{"t", "", "", Schema()})));
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

}  // namespace
}  // namespace tessera::tablet
