#include "tessera/model/row.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

TEST(CellOrderTest, FamilyThenQualifierThenNewestFirst) {
  const Cell a{"a", "z", 1, "v", {}};
  const Cell b{"b", "a", 9, "v", {}};
  const Cell b_new{"b", "b", 9, "v", {}};
  const Cell b_old{"b", "b", 3, "v", {}};
  EXPECT_TRUE(CellOrderLess(a, b));
  EXPECT_TRUE(CellOrderLess(b, b_new));
  EXPECT_TRUE(CellOrderLess(b_new, b_old));
  EXPECT_FALSE(CellOrderLess(b_old, b_new));
  EXPECT_FALSE(CellOrderLess(b_new, Cell{"b", "b", 9, "other value", {}}));
}

TEST(RowRangeTest, SingleKey) {
  const RowRange r = RowRange::SingleKey("k");
  EXPECT_EQ(r.start, "k");
  EXPECT_EQ(r.end, std::string("k\0", 2));
  EXPECT_TRUE(r.IsSingleKey());
  EXPECT_TRUE(r.Contains("k"));
  EXPECT_FALSE(r.Contains(std::string("k\0", 2)));
  EXPECT_FALSE((RowRange{"k", "l"}).IsSingleKey());
  EXPECT_FALSE((RowRange{"", std::string("\0", 1)}).IsSingleKey());
}

TEST(RowRangeTest, WithPrefix) {
  EXPECT_EQ(RowRange::WithPrefix("ab"), (RowRange{"ab", "ac"}));
  EXPECT_EQ(RowRange::WithPrefix("a\xff\xff"), (RowRange{"a\xff\xff", "b"}));
  EXPECT_EQ(RowRange::WithPrefix("\xff"), (RowRange{"\xff", ""}));
  const RowRange r = RowRange::WithPrefix("k\xff");
  EXPECT_TRUE(r.Contains("k\xff"));
  EXPECT_TRUE(r.Contains("k\xff\xff\xff"));
  EXPECT_FALSE(r.Contains("l"));
  EXPECT_FALSE(r.Contains("k"));
}

TEST(RowSetTest, AllAndEmpty) {
  EXPECT_EQ(RowSet::All().ranges(), (std::vector<RowRange>{{"", ""}}));
  EXPECT_TRUE(RowSet::Of({}, {}).empty());
  EXPECT_TRUE(RowSet().empty());
  EXPECT_TRUE(RowSet::All().Contains("anything"));
}

TEST(RowSetTest, DropsEmptyKeysAndEmptyRanges) {
  const RowSet set = RowSet::Of({""}, {{"b", "b"}, {"c", "a"}});
  EXPECT_TRUE(set.empty());
}

TEST(RowSetTest, MergesOverlappingAndAdjacentInOrder) {
  const RowSet set = RowSet::Of({"m", "a"}, {{"c", "f"}, {"e", "h"}, {"h", "j"}, {"x", ""}});
  EXPECT_EQ(set.ranges(),
            (std::vector<RowRange>{
                RowRange::SingleKey("a"), {"c", "j"}, RowRange::SingleKey("m"), {"x", ""}}));
}

TEST(RowSetTest, UnboundedRangeSwallowsLaterOnes) {
  const RowSet set = RowSet::Of({"z"}, {{"b", ""}, {"d", "e"}});
  EXPECT_EQ(set.ranges(), (std::vector<RowRange>{{"b", ""}}));
}

TEST(RowSetTest, DuplicateKeysCollapse) {
  const RowSet set = RowSet::Of({"k", "k", "k"}, {});
  EXPECT_EQ(set.ranges(), (std::vector<RowRange>{RowRange::SingleKey("k")}));
}

// Model test: Contains() agrees with the union of the inputs, and the ranges are disjoint,
// non-adjacent and increasing.
TEST(RowSetTest, RandomSetsMatchUnionOfInputs) {
  Random random(301);
  const std::vector<std::string> alphabet = {"", "a", "b", "ba", "c", "d", "e"};
  auto pick = [&] { return alphabet[random.Uniform(alphabet.size())]; };
  for (int round = 0; round < 500; ++round) {
    std::vector<std::string> keys;
    std::vector<RowRange> ranges;
    for (int i = random.Uniform(4); i > 0; --i) keys.push_back(pick());
    for (int i = random.Uniform(4); i > 0; --i) ranges.push_back({pick(), pick()});
    const RowSet set = RowSet::Of(keys, ranges);
    for (size_t i = 1; i < set.ranges().size(); ++i) {
      ASSERT_FALSE(set.ranges()[i - 1].end.empty());
      ASSERT_LT(set.ranges()[i - 1].end, set.ranges()[i].start);
    }
    for (const char* row : {"a", "aa", "b", "ba", "bb", "c", "d", "dz", "e", "f"}) {
      bool expected = std::find(keys.begin(), keys.end(), row) != keys.end();
      for (const RowRange& r : ranges) expected = expected || r.Contains(row);
      EXPECT_EQ(set.Contains(row), expected) << "round " << round << " row " << row;
    }
  }
}

}  // namespace
}  // namespace tessera::model
