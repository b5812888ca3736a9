#include "tessera/model/row_merge.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

Cell C(std::string family, std::string qualifier, int64_t ts, std::string value) {
  return Cell{std::move(family), std::move(qualifier), ts, std::move(value), {}};
}

TEST(RowMergeTest, NoInputIsAnEmptyRow) { EXPECT_EQ(MergeRows({}), Row{}); }

TEST(RowMergeTest, OneInputComesBackUnchanged) {
  const Row row{"k", {C("a", "q", 2, "x"), C("a", "q", 1, "y"), C("b", "", 5, "z")}};
  EXPECT_EQ(MergeRows({row}), row);
}

TEST(RowMergeTest, CellsOfAllInputsInCellOrder) {
  const Row a{"k", {C("a", "q", 3, "a3"), C("b", "q", 1, "b1")}};
  const Row b{"k", {C("a", "q", 5, "a5"), C("a", "r", 1, "r1")}};
  const Row c{"k", {}};
  EXPECT_EQ(MergeRows({a, b, c}), (Row{"k",
                                       {C("a", "q", 5, "a5"), C("a", "q", 3, "a3"),
                                        C("a", "r", 1, "r1"), C("b", "q", 1, "b1")}}));
}

TEST(RowMergeTest, ExactDuplicatesCollapse) {
  const Row a{"k", {C("a", "q", 3, "v"), C("a", "q", 1, "w")}};
  EXPECT_EQ(MergeRows({a, a, a}), a);
}

TEST(RowMergeTest, GreatestValueWinsATieWhateverTheInputOrder) {
  const Row a{"k", {C("a", "q", 3, "apple")}};
  const Row b{"k", {C("a", "q", 3, "banana")}};
  const Row c{"k", {C("a", "q", 3, "\xff")}};
  const Row expected{"k", {C("a", "q", 3, "\xff")}};
  EXPECT_EQ(MergeRows({a, b, c}), expected);
  EXPECT_EQ(MergeRows({c, b, a}), expected);
  EXPECT_EQ(MergeRows({b, c, a}), expected);
  EXPECT_EQ(MergeRows({b, a}), (Row{"k", {C("a", "q", 3, "banana")}}));
}

TEST(RowMergeTest, LabelsBreakTiesOfEqualValues) {
  Cell plain = C("a", "q", 3, "v");
  Cell labelled = plain;
  labelled.labels = {"x"};
  EXPECT_EQ(MergeRows({Row{"k", {labelled}}, Row{"k", {plain}}}), (Row{"k", {labelled}}));
  EXPECT_EQ(MergeRows({Row{"k", {plain}}, Row{"k", {labelled}}}), (Row{"k", {labelled}}));
}

// Model test: random replicas of one row against a std::map keyed by (family, qualifier,
// timestamp) that keeps the greatest value.
TEST(RowMergeTest, RandomReplicasMatchAMapOfGreatestValues) {
  Random random(17);
  using Key = std::tuple<std::string, std::string, int64_t>;
  for (int round = 0; round < 300; ++round) {
    std::map<Key, std::string> expected;
    std::vector<Row> replicas(1 + random.Uniform(4));
    for (Row& replica : replicas) {
      replica.key = "row";
      std::map<Key, std::string> cells;
      for (int i = static_cast<int>(random.Uniform(8)); i > 0; --i) {
        const Key key{std::string(1, static_cast<char>('a' + random.Uniform(2))),
                      std::string(1, static_cast<char>('p' + random.Uniform(3))),
                      static_cast<int64_t>(random.Uniform(4))};
        cells[key] = std::string(1, static_cast<char>('0' + random.Uniform(3)));
      }
      for (const auto& [key, value] : cells) {
        replica.cells.push_back(C(std::get<0>(key), std::get<1>(key), std::get<2>(key), value));
        std::string& best = expected[key];
        best = std::max(best, value);
      }
      std::sort(replica.cells.begin(), replica.cells.end(), CellOrderLess);
    }
    const Row merged = MergeRows(replicas);
    EXPECT_EQ(merged.key, "row");
    ASSERT_EQ(merged.cells.size(), expected.size()) << "round " << round;
    EXPECT_TRUE(std::is_sorted(merged.cells.begin(), merged.cells.end(), CellOrderLess));
    for (const Cell& c : merged.cells) {
      EXPECT_EQ(c.value, expected.at(Key{c.family, c.qualifier, c.timestamp_micros}));
    }
  }
}

}  // namespace
}  // namespace tessera::model
