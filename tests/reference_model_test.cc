// Tests of the test oracle itself: the model's semantics and what its checks accept and refuse.
#include "tests/reference_model.h"

#include <gtest/gtest.h>

#include "tessera/util/clock.h"

namespace tessera::test {
namespace {

using model::Cell;
using model::GcRule;
using model::ReadSpec;
using model::Row;
using model::RowMutation;
using model::RowRange;

constexpr int64_t kSecond = 1'000'000;

class ReferenceModelTest : public ::testing::Test {
 protected:
  ReferenceModelTest() : model_(&clock_) {
    model_.SetFamily("cf", GcRule::None());
    model_.SetFamily("mv", GcRule::MaxNumVersions(2));
    model_.SetFamily("age", GcRule::MaxAge(10 * kSecond));
  }
  int64_t Now() const { return clock_.NowMicros(); }

  ManualClock clock_;
  ReferenceModel model_;
};

TEST_F(ReferenceModelTest, SetOverwritesAndOrders) {
  model_.Apply(RowMutation("r").SetCell("cf", "b", 5, "x").SetCell("cf", "a", 5, "y"));
  model_.Apply(RowMutation("r").SetCell("cf", "a", 7, "z").SetCell("cf", "a", 5, "w"));
  std::optional<Row> row = model_.ReadRow("r", {});
  ASSERT_TRUE(row.has_value());
  const std::vector<Cell> expected = {
      {"cf", "a", 7, "z"}, {"cf", "a", 5, "w"}, {"cf", "b", 5, "x"}};
  EXPECT_EQ(expected, row->cells);
  EXPECT_FALSE(model_.ReadRow("other", {}).has_value());
}

TEST_F(ReferenceModelTest, DeletesActOnWhatExists) {
  model_.Apply(RowMutation("r")
                   .SetCell("cf", "a", 1, "1")
                   .SetCell("cf", "a", 2, "2")
                   .SetCell("cf", "a", 3, "3"));
  model_.Apply(RowMutation("r").DeleteFromColumn("cf", "a", {2, 3}));
  EXPECT_EQ(2u, model_.CellCount());
  // A later write with an old timestamp is visible.
  model_.Apply(RowMutation("r").DeleteFromRow().SetCell("cf", "a", 1, "again"));
  std::optional<Row> row = model_.ReadRow("r", {});
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"cf", "a", 1, "again"}}), row->cells);
  model_.Apply(RowMutation("r").SetCell("mv", "q", 1, "m").DeleteFromFamily("cf"));
  row = model_.ReadRow("r", {});
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"mv", "q", 1, "m"}}), row->cells);
  // Open-ended range.
  model_.Apply(RowMutation("r").DeleteFromColumn("mv", "q", {0, 0}));
  EXPECT_FALSE(model_.ReadRow("r", {}).has_value());
}

TEST_F(ReferenceModelTest, SpecSelection) {
  model_.Apply(RowMutation("r")
                   .SetCell("cf", "a", 10, "a10")
                   .SetCell("cf", "a", 20, "a20")
                   .SetCell("cf", "a", 30, "a30")
                   .SetCell("cf", "b", 20, "b20")
                   .SetCell("mv", "a", 20, "m20"));
  ReadSpec spec;
  spec.families = {"cf"};
  spec.time_range = {15, 30};
  std::optional<Row> row = model_.ReadRow("r", spec);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"cf", "a", 20, "a20"}, {"cf", "b", 20, "b20"}}), row->cells);
  spec = {};
  spec.columns = {{"cf", "a"}, {"mv", "a"}};
  spec.max_versions = 1;
  row = model_.ReadRow("r", spec);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"cf", "a", 30, "a30"}, {"mv", "a", 20, "m20"}}), row->cells);
  spec.families = {"mv"};  // combines with columns: only mv:a
  row = model_.ReadRow("r", spec);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(std::vector<Cell>({{"mv", "a", 20, "m20"}}), row->cells);
}

TEST_F(ReferenceModelTest, GcAtReadTime) {
  const int64_t now = Now();
  model_.Apply(RowMutation("r")
                   .SetCell("age", "a", now - 20 * kSecond, "old")
                   .SetCell("age", "a", now - 5 * kSecond, "young")
                   .SetCell("mv", "a", 1, "1")
                   .SetCell("mv", "a", 2, "2")
                   .SetCell("mv", "a", 3, "3"));
  std::optional<Row> row = model_.ReadRow("r", {});
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(
      std::vector<Cell>(
          {{"age", "a", now - 5 * kSecond, "young"}, {"mv", "a", 3, "3"}, {"mv", "a", 2, "2"}}),
      row->cells);
  clock_.Advance(6 * kSecond);
  row = model_.ReadRow("r", {});
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(2u, row->cells.size());  // "young" expired too
  // An expired cell must not be accepted, even though it is eligible.
  Row with_expired = *row;
  with_expired.cells.insert(with_expired.cells.begin(),
                            Cell{"age", "a", now - 5 * kSecond, "young"});
  EXPECT_FALSE(model_.CheckRow("r", {}, with_expired));
  EXPECT_TRUE(model_.CheckRow("r", {}, row));
}

TEST_F(ReferenceModelTest, LazyMaxVersionsCheck) {
  model_.Apply(RowMutation("r").SetCell("mv", "a", 1, "1").SetCell("mv", "a", 2, "2"));
  model_.Apply(RowMutation("r").SetCell("mv", "a", 3, "3"));  // 1 is now eligible
  model_.Apply(RowMutation("r").DeleteFromColumn("mv", "a", {3, 4}));
  // The model shows 2 and 1 again; an engine that compacted in between shows only 2.
  const Row full{"r", {{"mv", "a", 2, "2"}, {"mv", "a", 1, "1"}}};
  const Row compacted{"r", {{"mv", "a", 2, "2"}}};
  EXPECT_TRUE(model_.CheckRow("r", {}, full));
  EXPECT_TRUE(model_.CheckRow("r", {}, compacted));
  EXPECT_FALSE(model_.CheckRow("r", {}, Row{"r", {{"mv", "a", 1, "1"}}}));  // 2 never eligible
  EXPECT_FALSE(model_.CheckRow("r", {}, std::nullopt));
  EXPECT_FALSE(model_.CheckRow("r", {}, Row{"r", {{"mv", "a", 2, "2"}, {"mv", "a", 1, "x"}}}));
  EXPECT_FALSE(model_.CheckRow("r", {}, Row{"r", {{"mv", "a", 1, "1"}, {"mv", "a", 2, "2"}}}));
  EXPECT_FALSE(model_.CheckRow("r", {}, Row{"r", {{"mv", "a", 2, "2"}, {"mv", "a", 3, "3"}}}));

  // max_versions = 1 over an eligible newest cell: either answer, but only one cell.
  model_.Apply(RowMutation("s").SetCell("mv", "a", 5, "5"));
  model_.Apply(RowMutation("s").SetCell("mv", "a", 6, "6").SetCell("mv", "a", 7, "7"));
  model_.Apply(RowMutation("s").DeleteFromColumn("mv", "a", {6, 0}));  // 5 back, eligible
  model_.Apply(RowMutation("s").SetCell("mv", "a", 4, "4"));           // never eligible
  ReadSpec one;
  one.max_versions = 1;
  EXPECT_TRUE(model_.CheckRow("s", one, Row{"s", {{"mv", "a", 5, "5"}}}));
  EXPECT_TRUE(model_.CheckRow("s", one, Row{"s", {{"mv", "a", 4, "4"}}}));
  EXPECT_FALSE(model_.CheckRow("s", one, Row{"s", {{"mv", "a", 5, "5"}, {"mv", "a", 4, "4"}}}));
  EXPECT_FALSE(model_.CheckRow("s", one, std::nullopt));
}

TEST_F(ReferenceModelTest, ScanCheck) {
  for (const char* key : {"a", "b", "c", "d"}) {
    model_.Apply(RowMutation(key).SetCell("cf", "q", 1, key));
  }
  auto row = [](const char* key) { return Row{key, {{"cf", "q", 1, key}}}; };
  EXPECT_TRUE(model_.CheckScan({"b", "d"}, {}, 0, {row("b"), row("c")}));
  EXPECT_FALSE(model_.CheckScan({"b", "d"}, {}, 0, {row("b")}));
  EXPECT_FALSE(model_.CheckScan({"b", "d"}, {}, 0, {row("b"), row("c"), row("d")}));
  EXPECT_TRUE(model_.CheckScan({"", ""}, {}, 2, {row("a"), row("b")}));
  EXPECT_FALSE(model_.CheckScan({"", ""}, {}, 2, {row("a"), row("c")}));
  EXPECT_FALSE(model_.CheckScan({"", ""}, {}, 2, {row("b"), row("a")}));
  EXPECT_EQ(2u, model_.Scan({"", ""}, {}, 2).size());
  EXPECT_EQ(1u, model_.Scan({"c", "d"}, {}, 0).size());
  ReadSpec other;
  other.families = {"mv"};
  EXPECT_TRUE(model_.CheckScan({"", ""}, other, 0, {}));
}

TEST_F(ReferenceModelTest, ReversedScanCheck) {
  for (const char* key : {"a", "b", "c", "d"}) {
    model_.Apply(RowMutation(key).SetCell("cf", "q", 1, key));
  }
  auto row = [](const char* key) { return Row{key, {{"cf", "q", 1, key}}}; };
  const bool kReversed = true;
  EXPECT_TRUE(model_.CheckScan({"b", "d"}, {}, 0, {row("c"), row("b")}, kReversed));
  EXPECT_FALSE(model_.CheckScan({"b", "d"}, {}, 0, {row("b"), row("c")}, kReversed));
  EXPECT_FALSE(model_.CheckScan({"b", "d"}, {}, 0, {row("c")}, kReversed));
  // With a limit the last rows of the range are kept.
  EXPECT_TRUE(model_.CheckScan({"", ""}, {}, 2, {row("d"), row("c")}, kReversed));
  EXPECT_FALSE(model_.CheckScan({"", ""}, {}, 2, {row("d"), row("b")}, kReversed));
  EXPECT_FALSE(model_.CheckScan({"", ""}, {}, 2, {row("a"), row("b")}, kReversed));
  std::vector<Row> back = model_.Scan({"", "d"}, {}, 2, kReversed);
  EXPECT_EQ(std::vector<Row>({row("c"), row("b")}), back);
}

TEST_F(ReferenceModelTest, DroppedFamilyLosesItsCells) {
  model_.Apply(RowMutation("r").SetCell("cf", "q", 1, "x").SetCell("mv", "q", 1, "y"));
  model_.Apply(RowMutation("only-mv").SetCell("mv", "q", 1, "z"));
  model_.DropFamily("mv");
  EXPECT_FALSE(model_.HasFamily("mv"));
  EXPECT_EQ(std::vector<std::string>({"r"}), model_.RowKeys());
  EXPECT_EQ(1u, model_.CellCount());
  // Created again: empty.
  model_.SetFamily("mv", GcRule::None());
  EXPECT_EQ(std::vector<Cell>({{"cf", "q", 1, "x"}}), model_.ReadRow("r", {})->cells);
}

TEST(ModelCollectsTest, Rules) {
  const int64_t now = 100 * kSecond;
  EXPECT_FALSE(ModelCollects(GcRule::None(), 100, 0, now));
  EXPECT_TRUE(ModelCollects(GcRule::MaxNumVersions(2), 2, now, now));
  EXPECT_FALSE(ModelCollects(GcRule::MaxNumVersions(2), 1, now, now));
  EXPECT_TRUE(ModelCollects(GcRule::MaxAge(kSecond), 0, now - kSecond - 1, now));
  EXPECT_FALSE(ModelCollects(GcRule::MaxAge(kSecond), 0, now - kSecond, now));
  const GcRule both = GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(kSecond)});
  EXPECT_FALSE(ModelCollects(both, 1, now, now));
  EXPECT_TRUE(ModelCollects(both, 1, 0, now));
  const GcRule any = GcRule::Union({GcRule::MaxNumVersions(1), GcRule::MaxAge(kSecond)});
  EXPECT_TRUE(ModelCollects(any, 1, now, now));
  EXPECT_TRUE(ModelCollects(any, 0, 0, now));
  EXPECT_FALSE(ModelCollects(GcRule::Union({}), 5, 0, now));
  EXPECT_FALSE(ModelCollects(GcRule::Intersection({}), 5, 0, now));
}

}  // namespace
}  // namespace tessera::test
