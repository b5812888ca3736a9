// The filter tree's meaning and pushdown, over trees built directly (no protobuf). The wire
// form's validation, and the whole language through it, are tested in
// server/row_filter_proto_test.cc.
#include "tessera/model/row_filter.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "re2/re2.h"
#include "tessera/model/filter_pushdown.h"

namespace tessera::model {
namespace {

using Kind = FilterNode::Kind;
using NodePtr = std::unique_ptr<FilterNode>;

NodePtr Leaf(Kind kind) { return std::make_unique<FilterNode>(kind); }

NodePtr Limit(Kind kind, int64_t count) {
  NodePtr n = Leaf(kind);
  n->count = count;
  return n;
}

NodePtr Label(std::string label) {
  NodePtr n = Leaf(Kind::kApplyLabel);
  n->text = std::move(label);
  return n;
}

NodePtr Columns(std::string family) {
  NodePtr n = Leaf(Kind::kColumnRange);
  n->family = std::move(family);
  return n;
}

NodePtr Times(int64_t start, int64_t end) {
  NodePtr n = Leaf(Kind::kTimestampRange);
  n->time_range = TimeRange{start, end};
  return n;
}

NodePtr FamilyRegex(const std::string& pattern) {
  NodePtr n = Leaf(Kind::kFamilyRegex);
  RE2::Options o;
  o.set_encoding(RE2::Options::EncodingLatin1);
  n->regex = std::make_unique<RE2>(pattern, o);
  n->literal_families = LiteralFamilies(pattern);
  return n;
}

NodePtr Parent(Kind kind, std::vector<NodePtr> children) {
  NodePtr n = Leaf(kind);
  n->children = std::move(children);
  return n;
}

template <typename... Nodes>
std::vector<NodePtr> List(Nodes... nodes) {
  std::vector<NodePtr> v;
  (v.push_back(std::move(nodes)), ...);
  return v;
}

NodePtr Condition(NodePtr predicate, NodePtr on_true, NodePtr on_false) {
  NodePtr n = Leaf(Kind::kCondition);
  n->predicate = std::move(predicate);
  n->true_branch = std::move(on_true);
  n->false_branch = std::move(on_false);
  return n;
}

Cell C(std::string family, std::string qualifier, int64_t ts, std::string value,
       std::vector<std::string> labels = {}) {
  return Cell{std::move(family), std::move(qualifier), ts, std::move(value), std::move(labels)};
}

Row SampleRow() {
  return Row{"row",
             {C("a", "q", 3000, "a-q-3"), C("a", "q", 1000, "a-q-1"), C("a", "r", 2000, "a-r-2"),
              C("b", "q", 2000, "b-q-2")}};
}

std::vector<Cell> Filtered(NodePtr root, Row row = SampleRow()) {
  RowFilter filter(std::move(root), /*sample_seed=*/1);
  filter.Apply(&row);
  return row.cells;
}

TEST(ModelRowFilterTest, PassAllAndChainsOfItChangeNothing) {
  EXPECT_TRUE(RowFilter::PassAll().IsPassAll());
  RowFilter chain(Parent(Kind::kChain, List(Leaf(Kind::kPassAll), Leaf(Kind::kPassAll))), 0);
  EXPECT_TRUE(chain.IsPassAll());
  Row row = SampleRow();
  chain.Apply(&row);
  EXPECT_EQ(row, SampleRow());
  EXPECT_FALSE(RowFilter(Leaf(Kind::kBlockAll), 0).IsPassAll());
  EXPECT_TRUE(Filtered(Leaf(Kind::kBlockAll)).empty());
}

TEST(ModelRowFilterTest, ChainRunsEachStageOnThePreviousOutput) {
  EXPECT_EQ(
      Filtered(Parent(Kind::kChain, List(Columns("a"), Limit(Kind::kCellsPerColumnLimit, 1)))),
      (std::vector<Cell>{C("a", "q", 3000, "a-q-3"), C("a", "r", 2000, "a-r-2")}));
  EXPECT_EQ(Filtered(Parent(Kind::kChain, List(Limit(Kind::kCellsPerRowOffset, 1),
                                               Limit(Kind::kCellsPerRowLimit, 2)))),
            (std::vector<Cell>{C("a", "q", 1000, "a-q-1"), C("a", "r", 2000, "a-r-2")}));
}

TEST(ModelRowFilterTest, InterleaveKeepsDuplicatesEarlierChildFirst) {
  const std::vector<Cell> out = Filtered(
      Parent(Kind::kInterleave, List(Parent(Kind::kChain, List(Columns("b"), Label("one"))),
                                     Parent(Kind::kChain, List(Times(2000, 3000), Label("two"))))));
  EXPECT_EQ(out, (std::vector<Cell>{C("a", "r", 2000, "a-r-2", {"two"}),
                                    C("b", "q", 2000, "b-q-2", {"one"}),
                                    C("b", "q", 2000, "b-q-2", {"two"})}));
}

TEST(ModelRowFilterTest, ConditionChoosesABranchAndAnAbsentOneOutputsNothing) {
  EXPECT_EQ(Filtered(Condition(Columns("b"), Leaf(Kind::kStripValue), nullptr)).size(), 4u);
  for (const Cell& c : Filtered(Condition(Columns("b"), Leaf(Kind::kStripValue), nullptr))) {
    EXPECT_TRUE(c.value.empty());
  }
  EXPECT_TRUE(Filtered(Condition(Columns("zz"), Leaf(Kind::kPassAll), nullptr)).empty());
  EXPECT_EQ(Filtered(Condition(Columns("zz"), nullptr, Columns("b"))),
            (std::vector<Cell>{C("b", "q", 2000, "b-q-2")}));
}

TEST(ModelRowFilterTest, SinkedCellsJoinTheOutputInCellOrder) {
  // chain(interleave(sink-of-b, pass), column a): b reaches the output only through the sink.
  const std::vector<Cell> out = Filtered(Parent(
      Kind::kChain,
      List(Parent(Kind::kInterleave,
                  List(Parent(Kind::kChain, List(Columns("b"), Label("s"), Leaf(Kind::kSink))),
                       Leaf(Kind::kPassAll))),
           Columns("a"))));
  EXPECT_EQ(out,
            (std::vector<Cell>{C("a", "q", 3000, "a-q-3"), C("a", "q", 1000, "a-q-1"),
                               C("a", "r", 2000, "a-r-2"), C("b", "q", 2000, "b-q-2", {"s"})}));
}

TEST(ModelRowFilterTest, RegexLeavesMatchTheWholeString) {
  EXPECT_EQ(Filtered(FamilyRegex("b")).size(), 1u);
  EXPECT_TRUE(Filtered(FamilyRegex("")).empty());
  EXPECT_EQ(Filtered(FamilyRegex("a|b")).size(), 4u);
}

TEST(ModelRowFilterTest, MaxCopiesPerCellAddsBranchesAndMultipliesChains) {
  auto two = [] {
    return Parent(Kind::kInterleave, List(Leaf(Kind::kPassAll), Leaf(Kind::kPassAll)));
  };
  EXPECT_EQ(MaxCopiesPerCell(*Leaf(Kind::kPassAll), 256), 1u);
  EXPECT_EQ(MaxCopiesPerCell(*two(), 256), 2u);
  EXPECT_EQ(MaxCopiesPerCell(*Parent(Kind::kChain, List(two(), two(), two())), 256), 8u);
  EXPECT_EQ(MaxCopiesPerCell(*Parent(Kind::kChain, List(Leaf(Kind::kSink), two())), 256), 3u);
  // Saturates just above the cap.
  EXPECT_EQ(MaxCopiesPerCell(*Parent(Kind::kChain, List(two(), two(), two())), 5), 6u);
}

TEST(ModelRowFilterTest, PushdownOfAFamilyTimeAndVersionChain) {
  const RowFilter f(Parent(Kind::kChain, List(FamilyRegex("b|a"), Times(1000, 5000),
                                              Limit(Kind::kCellsPerColumnLimit, 2))),
                    0);
  const FilterPushdown& p = f.pushdown();
  EXPECT_FALSE(p.outputs_nothing);
  EXPECT_EQ(p.families, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.time_range.start_micros, 1000);
  EXPECT_EQ(p.time_range.end_micros, 5000);
  EXPECT_EQ(p.max_versions, 2);
  const ReadSpec spec = p.ToReadSpec();
  EXPECT_EQ(spec.families, p.families);
  EXPECT_EQ(spec.time_range.start_micros, 1000);
  EXPECT_EQ(spec.time_range.end_micros, 5000);
  EXPECT_EQ(spec.max_versions, 2);
  EXPECT_TRUE(spec.columns.empty());
  EXPECT_TRUE(spec.hide_collectable);
}

TEST(ModelRowFilterTest, PushdownStopsAtWhatDoesNotCommute) {
  // A row-level limit first: the later family restriction is not safe to push.
  const RowFilter limited(
      Parent(Kind::kChain, List(Limit(Kind::kCellsPerRowLimit, 1), Columns("a"))), 0);
  EXPECT_TRUE(limited.pushdown().families.empty());
  // A sink anywhere: read everything.
  const RowFilter sunk(Parent(Kind::kChain, List(Columns("a"), Leaf(Kind::kSink))), 0);
  EXPECT_TRUE(sunk.pushdown().families.empty());
  EXPECT_FALSE(sunk.pushdown().outputs_nothing);
  EXPECT_TRUE(RowFilter(Leaf(Kind::kBlockAll), 0).pushdown().outputs_nothing);
  EXPECT_TRUE(RowFilter(Times(5, 5), 0).pushdown().outputs_nothing);
}

TEST(LiteralFamiliesTest, OnlyPlainAlternatives) {
  EXPECT_EQ(LiteralFamilies("cf"), (std::vector<std::string>{"cf"}));
  EXPECT_EQ(LiteralFamilies("b|a|b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(LiteralFamilies("a.*").empty());
  EXPECT_TRUE(LiteralFamilies("a||b").empty());
  EXPECT_TRUE(LiteralFamilies("").empty());
}

}  // namespace
}  // namespace tessera::model
