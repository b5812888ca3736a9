#include "tessera/server/row_filter_proto.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::server {
namespace {

namespace v2 = google::bigtable::v2;
using ::testing::HasSubstr;

model::Cell C(std::string family, std::string qualifier, int64_t ts, std::string value,
              std::vector<std::string> labels = {}) {
  return model::Cell{std::move(family), std::move(qualifier), ts, std::move(value),
                     std::move(labels)};
}

v2::RowFilter Parse(const std::string& text) {
  v2::RowFilter f;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &f)) << text;
  return f;
}

FilterOptions Options(bool millis = true) {
  FilterOptions o;
  o.millisecond_granularity = millis;
  o.sample_seed = 42;
  return o;
}

std::vector<model::Cell> Filtered(const v2::RowFilter& proto, model::Row row,
                                  const FilterOptions& options = Options()) {
  auto filter = CompileRowFilter(proto, options);
  EXPECT_TRUE(filter.ok()) << filter.status();
  if (!filter.ok()) return {};
  filter->Apply(&row);
  return row.cells;
}

std::vector<model::Cell> Filtered(const std::string& text, model::Row row) {
  return Filtered(Parse(text), std::move(row));
}

Status CompileStatus(const std::string& text, const FilterOptions& options = Options()) {
  return CompileRowFilter(Parse(text), options).status();
}

// A row used by many tests: two families, several columns and versions.
model::Row SampleRow() {
  return model::Row{"row1",
                    {
                        C("cf1", "", 3000, "empty-q"),
                        C("cf1", "a", 5000, "a5"),
                        C("cf1", "a", 4000, "a4"),
                        C("cf1", "a", 1000, "a1"),
                        C("cf1", "b", 2000, "b2"),
                        C("cf2", "a", 9000, "x9"),
                        C("cf2", "c\n", 8000, "nl"),
                    }};
}

// ---------------------------------------------------------------------------
// Simple filters.

TEST(RowFilterTest, EmptyFilterAndPassAllKeepEverything) {
  EXPECT_EQ(Filtered("", SampleRow()), SampleRow().cells);
  EXPECT_EQ(Filtered("pass_all_filter: true", SampleRow()), SampleRow().cells);
  EXPECT_TRUE(CompileRowFilter(Parse(""), Options())->IsPassAll());
  EXPECT_TRUE(
      CompileRowFilter(Parse("chain { filters { pass_all_filter: true } filters {} }"), Options())
          ->IsPassAll());
  EXPECT_TRUE(CompileRowFilter(Parse("cells_per_row_offset_filter: 0"), Options())->IsPassAll());
  EXPECT_FALSE(CompileRowFilter(Parse("block_all_filter: true"), Options())->IsPassAll());
  EXPECT_FALSE(
      CompileRowFilter(
          Parse(
              "interleave { filters { pass_all_filter: true } filters { pass_all_filter: true } }"),
          Options())
          ->IsPassAll());
  model::Row row = SampleRow();
  model::RowFilter::PassAll().Apply(&row);
  EXPECT_EQ(row, SampleRow());
}

TEST(RowFilterTest, BlockAllDropsEverything) {
  EXPECT_TRUE(Filtered("block_all_filter: true", SampleRow()).empty());
}

TEST(RowFilterTest, RowKeyRegexIsAFullMatchOnRawBytes) {
  EXPECT_EQ(Filtered("row_key_regex_filter: 'row.*'", SampleRow()).size(), 7u);
  EXPECT_TRUE(Filtered("row_key_regex_filter: 'row'", SampleRow()).empty());  // not a prefix match
  EXPECT_TRUE(Filtered("row_key_regex_filter: 'ow1'", SampleRow()).empty());  // not a search

  model::Row binary{std::string("a\nb\xff", 4), {C("f", "q", 0, "v")}};
  // `.` does not match a newline; (?s) and \C do; bytes above 127 are single characters.
  EXPECT_TRUE(Filtered("row_key_regex_filter: 'a.b.'", binary).empty());
  EXPECT_EQ(Filtered("row_key_regex_filter: '(?s)a.b.'", binary).size(), 1u);
  EXPECT_EQ(Filtered("row_key_regex_filter: 'a\\\\Cb\\\\C'", binary).size(), 1u);
  EXPECT_EQ(Filtered("row_key_regex_filter: 'a\\nb\\377'", binary).size(), 1u);
  EXPECT_EQ(Filtered("row_key_regex_filter: 'a\\\\nb\\\\xff'", binary).size(), 1u);
}

TEST(RowFilterTest, FamilyNameRegex) {
  auto out = Filtered("family_name_regex_filter: 'cf2'", SampleRow());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].family, "cf2");
  EXPECT_EQ(Filtered("family_name_regex_filter: 'cf.'", SampleRow()).size(), 7u);
  EXPECT_TRUE(Filtered("family_name_regex_filter: 'cf'", SampleRow()).empty());
  EXPECT_EQ(Filtered("family_name_regex_filter: 'cf1|cf2'", SampleRow()).size(), 7u);
}

TEST(RowFilterTest, ColumnQualifierRegex) {
  EXPECT_EQ(Filtered("column_qualifier_regex_filter: 'a'", SampleRow()).size(), 4u);
  // The empty pattern matches exactly the empty qualifier.
  auto empty_q = Filtered("column_qualifier_regex_filter: ''", SampleRow());
  ASSERT_EQ(empty_q.size(), 1u);
  EXPECT_EQ(empty_q[0].value, "empty-q");
  EXPECT_TRUE(Filtered("column_qualifier_regex_filter: 'c.'", SampleRow()).empty());
  EXPECT_EQ(Filtered("column_qualifier_regex_filter: 'c\\\\C'", SampleRow()).size(), 1u);
}

TEST(RowFilterTest, ColumnRangeBounds) {
  auto values = [](const std::vector<model::Cell>& cells) {
    std::vector<std::string> v;
    for (const auto& c : cells) v.push_back(c.value);
    return v;
  };
  using ::testing::ElementsAre;
  EXPECT_THAT(values(Filtered("column_range_filter { family_name: 'cf1' }", SampleRow())),
              ElementsAre("empty-q", "a5", "a4", "a1", "b2"));
  EXPECT_THAT(values(Filtered("column_range_filter { family_name: 'cf1' start_qualifier_open: '' "
                              "end_qualifier_open: 'b' }",
                              SampleRow())),
              ElementsAre("a5", "a4", "a1"));
  EXPECT_THAT(
      values(Filtered("column_range_filter { family_name: 'cf1' start_qualifier_closed: 'a' "
                      "end_qualifier_closed: 'b' }",
                      SampleRow())),
      ElementsAre("a5", "a4", "a1", "b2"));
  EXPECT_THAT(
      values(Filtered("column_range_filter { family_name: 'cf1' start_qualifier_open: 'a' }",
                      SampleRow())),
      ElementsAre("b2"));
  EXPECT_THAT(values(Filtered("column_range_filter { family_name: 'cf2' end_qualifier_open: 'c' }",
                              SampleRow())),
              ElementsAre("x9"));
  // Equal bounds: closed is one column, half-open is empty (not an error).
  EXPECT_THAT(
      values(Filtered("column_range_filter { family_name: 'cf1' start_qualifier_closed: 'b' "
                      "end_qualifier_closed: 'b' }",
                      SampleRow())),
      ElementsAre("b2"));
  EXPECT_TRUE(Filtered("column_range_filter { family_name: 'cf1' start_qualifier_closed: 'b' "
                       "end_qualifier_open: 'b' }",
                       SampleRow())
                  .empty());
  EXPECT_TRUE(Filtered("column_range_filter { family_name: 'nope' }", SampleRow()).empty());
}

TEST(RowFilterTest, TimestampRangeIsStartInclusiveEndExclusive) {
  auto out = Filtered(
      "timestamp_range_filter { start_timestamp_micros: 2000 "
      "end_timestamp_micros: 5000 }",
      SampleRow());
  std::vector<int64_t> ts;
  for (const auto& c : out) ts.push_back(c.timestamp_micros);
  EXPECT_THAT(ts, ::testing::ElementsAre(3000, 4000, 2000));
  // end 0 = no upper bound.
  EXPECT_EQ(Filtered("timestamp_range_filter { start_timestamp_micros: 8000 }", SampleRow()).size(),
            2u);
  EXPECT_EQ(Filtered("timestamp_range_filter {}", SampleRow()).size(), 7u);
  // Micro-granular tables accept any bound.
  auto micros = Filtered(Parse("timestamp_range_filter { start_timestamp_micros: 8999 }"),
                         SampleRow(), Options(/*millis=*/false));
  EXPECT_EQ(micros.size(), 1u);
}

TEST(RowFilterTest, ValueRegexIsAFullMatch) {
  model::Row row{"r", {C("f", "a", 1, "ts"), C("f", "b", 1, "ts2000"), C("f", "c", 1, "x\ny")}};
  EXPECT_EQ(Filtered("value_regex_filter: 'ts'", row).size(), 1u);
  EXPECT_EQ(Filtered("value_regex_filter: 'ts.*'", row).size(), 2u);
  EXPECT_EQ(Filtered("value_regex_filter: '.*'", row).size(), 2u);  // not "x\ny"
  EXPECT_EQ(Filtered("value_regex_filter: '\\\\C*'", row).size(), 3u);
}

TEST(RowFilterTest, ValueRange) {
  model::Row row{
      "r", {C("f", "a", 1, "a"), C("f", "b", 1, "b"), C("f", "c", 1, "c"), C("f", "d", 1, "")}};
  EXPECT_EQ(Filtered("value_range_filter {}", row).size(), 4u);
  EXPECT_EQ(Filtered("value_range_filter { start_value_closed: 'b' }", row).size(), 2u);
  EXPECT_EQ(Filtered("value_range_filter { start_value_open: 'b' }", row).size(), 1u);
  EXPECT_EQ(Filtered("value_range_filter { end_value_closed: 'b' }", row).size(), 3u);
  EXPECT_EQ(Filtered("value_range_filter { end_value_open: 'b' }", row).size(), 2u);
  EXPECT_EQ(Filtered("value_range_filter { start_value_open: '' end_value_open: 'c' }", row).size(),
            2u);
  // Bytes compare unsigned: \xff sorts after 'z'.
  model::Row high{"r", {C("f", "a", 1, "\xff")}};
  EXPECT_EQ(Filtered("value_range_filter { start_value_closed: 'z' }", high).size(), 1u);
}

TEST(RowFilterTest, ValueBitmask) {
  model::Row row{
      "r",
      {C("f", "a", 1, std::string("\x0f\xf0", 2)), C("f", "b", 1, std::string("\x0e\xff", 2)),
       C("f", "c", 1, std::string("\xff", 1)), C("f", "d", 1, "")}};
  auto out = Filtered("value_bitmask_filter { mask: '\\x03\\x80' }", row);
  ASSERT_EQ(out.size(), 1u);  // length must match exactly; (v & m) == m
  EXPECT_EQ(out[0].qualifier, "a");
  EXPECT_EQ(Filtered("value_bitmask_filter { mask: '\\x80' }", row).size(), 1u);
}

TEST(RowFilterTest, CellsPerRowOffsetAndLimitWalkCellOrder) {
  auto out = Filtered("cells_per_row_offset_filter: 5", SampleRow());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].value, "x9");
  EXPECT_TRUE(Filtered("cells_per_row_offset_filter: 7", SampleRow()).empty());
  EXPECT_TRUE(Filtered("cells_per_row_offset_filter: 1000", SampleRow()).empty());

  out = Filtered("cells_per_row_limit_filter: 2", SampleRow());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].value, "empty-q");
  EXPECT_EQ(out[1].value, "a5");
  EXPECT_EQ(Filtered("cells_per_row_limit_filter: 100", SampleRow()).size(), 7u);
}

TEST(RowFilterTest, CellsPerColumnLimitKeepsTheNewestPerColumn) {
  auto out = Filtered("cells_per_column_limit_filter: 2", SampleRow());
  std::vector<std::string> values;
  for (const auto& c : out) values.push_back(c.value);
  EXPECT_THAT(values, ::testing::ElementsAre("empty-q", "a5", "a4", "b2", "x9", "nl"));
  out = Filtered("cells_per_column_limit_filter: 1", SampleRow());
  EXPECT_EQ(out.size(), 5u);
  // Same qualifier in two families is two columns.
  model::Row row{"r", {C("a", "q", 2, "1"), C("a", "q", 1, "2"), C("b", "q", 2, "3")}};
  EXPECT_EQ(Filtered("cells_per_column_limit_filter: 1", row).size(), 2u);
}

TEST(RowFilterTest, StripValueKeepsLabelsAndApplyLabelAddsOne) {
  auto out = Filtered(
      "chain { filters { apply_label_transformer: 'lab-1' } "
      "filters { strip_value_transformer: true } }",
      SampleRow());
  ASSERT_EQ(out.size(), 7u);
  for (const auto& c : out) {
    EXPECT_EQ(c.value, "");
    EXPECT_EQ(c.labels, std::vector<std::string>{"lab-1"});
  }
}

TEST(RowFilterTest, RowSampleKeepsWholeRowsAtTheGivenRate) {
  auto filter = CompileRowFilter(Parse("row_sample_filter: 0.25"), Options());
  ASSERT_TRUE(filter.ok());
  int kept = 0;
  for (int i = 0; i < 4000; ++i) {
    model::Row row = SampleRow();
    filter->Apply(&row);
    ASSERT_TRUE(row.cells.empty() || row.cells.size() == 7u);
    kept += row.cells.empty() ? 0 : 1;
  }
  EXPECT_GT(kept, 800);
  EXPECT_LT(kept, 1200);
  // The same seed replays the same choices.
  auto a = CompileRowFilter(Parse("row_sample_filter: 0.5"), Options());
  auto b = CompileRowFilter(Parse("row_sample_filter: 0.5"), Options());
  for (int i = 0; i < 100; ++i) {
    model::Row ra = SampleRow(), rb = SampleRow();
    a->Apply(&ra);
    b->Apply(&rb);
    ASSERT_EQ(ra, rb);
  }
}

// ---------------------------------------------------------------------------
// Composition.

TEST(RowFilterTest, ChainIsSequential) {
  // Newest of each column, then value filter  vs  value filter, then newest.
  auto a = Filtered(
      "chain { filters { cells_per_column_limit_filter: 1 } "
      "filters { value_regex_filter: 'a.' } }",
      SampleRow());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].value, "a5");
  auto b = Filtered(
      "chain { filters { value_regex_filter: 'a[14]' } "
      "filters { cells_per_column_limit_filter: 1 } }",
      SampleRow());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].value, "a4");
}

TEST(RowFilterTest, InterleaveKeepsDuplicatesAndLabelsEachBranch) {
  model::Row row{"r", {C("A", "a", 20, "p"), C("A", "a", 10, "q"), C("A", "b", 5, "s")}};
  auto out = Filtered(
      "interleave { "
      "  filters { chain { filters { column_qualifier_regex_filter: 'a' } "
      "                    filters { apply_label_transformer: 'x' } } } "
      "  filters { chain { filters { apply_label_transformer: 'y' } "
      "                    filters { cells_per_column_limit_filter: 1 } } } }",
      row);
  std::vector<model::Cell> want = {C("A", "a", 20, "p", {"x"}), C("A", "a", 20, "p", {"y"}),
                                   C("A", "a", 10, "q", {"x"}), C("A", "b", 5, "s", {"y"})};
  EXPECT_EQ(out, want);
  // Two unlabelled pass-alls: every cell twice, ties in branch order.
  auto twice = Filtered(
      "interleave { filters { pass_all_filter: true } filters { pass_all_filter: true } }", row);
  ASSERT_EQ(twice.size(), 6u);
  EXPECT_EQ(twice[0], twice[1]);
}

TEST(RowFilterTest, InterleaveMergesAcrossFamiliesInCellOrder) {
  // The published example: f0, f1, f2 over foo/far, pooled and sorted.
  model::Row row{"r",
                 {C("far", "bar", 7, "a"), C("far", "blah", 5, "x"), C("foo", "bar", 10, "x"),
                  C("foo", "bar", 10, "z"), C("foo", "blah", 11, "z")}};
  auto out = Filtered(
      "interleave { "
      "  filters { chain { filters { family_name_regex_filter: 'foo' } "
      "                    filters { value_regex_filter: 'x|z' } } } "
      "  filters { value_regex_filter: 'q' } "
      "  filters { family_name_regex_filter: 'far' } }",
      row);
  std::vector<model::Cell> want = {C("far", "bar", 7, "a"), C("far", "blah", 5, "x"),
                                   C("foo", "bar", 10, "x"), C("foo", "bar", 10, "z"),
                                   C("foo", "blah", 11, "z")};
  EXPECT_EQ(out, want);
}

TEST(RowFilterTest, ConditionChoosesABranchFromThePredicate) {
  const std::string cond =
      "condition { predicate_filter { value_regex_filter: '%s' } "
      "true_filter { apply_label_transformer: 'yes' } "
      "false_filter { chain { filters { apply_label_transformer: 'no' } "
      "filters { cells_per_row_limit_filter: 1 } } } }";
  auto with = [&](const std::string& v) {
    std::string text = cond;
    text.replace(text.find("%s"), 2, v);
    return text;
  };
  auto yes = Filtered(with("x9"), SampleRow());
  ASSERT_EQ(yes.size(), 7u);  // the true branch runs on the whole input row
  EXPECT_EQ(yes[3].labels, std::vector<std::string>{"yes"});
  auto no = Filtered(with("nothing"), SampleRow());
  ASSERT_EQ(no.size(), 1u);
  EXPECT_EQ(no[0].labels, std::vector<std::string>{"no"});
  // Absent branches output nothing; an absent predicate passes everything.
  EXPECT_TRUE(
      Filtered("condition { predicate_filter { pass_all_filter: true } }", SampleRow()).empty());
  EXPECT_TRUE(Filtered("condition { predicate_filter { block_all_filter: true } "
                       "true_filter { pass_all_filter: true } }",
                       SampleRow())
                  .empty());
  EXPECT_EQ(Filtered("condition { true_filter { pass_all_filter: true } }", SampleRow()).size(),
            7u);
  // Labels applied inside the predicate do not leak into the output.
  auto out = Filtered(
      "condition { predicate_filter { apply_label_transformer: 'p' } "
      "true_filter { pass_all_filter: true } }",
      SampleRow());
  ASSERT_EQ(out.size(), 7u);
  EXPECT_TRUE(out[0].labels.empty());
  // Inside a chain, the predicate sees the chain's intermediate row.
  EXPECT_TRUE(Filtered("chain { filters { family_name_regex_filter: 'cf1' } filters { condition { "
                       "predicate_filter { value_regex_filter: 'x9' } "
                       "true_filter { pass_all_filter: true } } } }",
                       SampleRow())
                  .empty());
}

TEST(RowFilterTest, SinkSendsItsInputStraightToTheOutput) {
  // The published example: Chain(FamilyRegex(A), Interleave(All, Chain(Label(foo), Sink)),
  // QualifierRegex(B)).
  model::Row row{"r", {C("A", "A", 1, "w"), C("A", "B", 2, "x"), C("B", "B", 4, "z")}};
  auto out = Filtered(
      "chain { filters { family_name_regex_filter: 'A' } "
      "        filters { interleave { filters { pass_all_filter: true } "
      "                               filters { chain { filters { apply_label_transformer: 'foo' }"
      "                                                 filters { sink: true } } } } } "
      "        filters { column_qualifier_regex_filter: 'B' } }",
      row);
  std::vector<model::Cell> want = {C("A", "A", 1, "w", {"foo"}), C("A", "B", 2, "x"),
                                   C("A", "B", 2, "x", {"foo"})};
  EXPECT_EQ(out, want);
  // Whatever follows a sink does not affect what it sank.
  EXPECT_EQ(Filtered("chain { filters { sink: true } filters { block_all_filter: true } }", row),
            row.cells);
  EXPECT_EQ(
      Filtered("chain { filters { sink: true } filters { cells_per_row_limit_filter: 1 } }", row),
      row.cells);
  EXPECT_EQ(Filtered("sink: true", row), row.cells);
  // A parent never sees sunk cells: the label after the interleave reaches only the cells of
  // the other branch; on ties the top filter's cells come before sunk ones.
  auto limited = Filtered(
      "chain { filters { interleave { filters { sink: true } "
      "                               filters { value_regex_filter: 'z' } } } "
      "        filters { apply_label_transformer: 'after' } }",
      row);
  std::vector<model::Cell> want2 = {C("A", "A", 1, "w"), C("A", "B", 2, "x"),
                                    C("B", "B", 4, "z", {"after"}), C("B", "B", 4, "z")};
  EXPECT_EQ(limited, want2);
}

// ---------------------------------------------------------------------------
// Validation.

struct BadFilter {
  std::string text;
  std::string message;  // expected substring
};

TEST(RowFilterTest, EveryInvalidFilterIsRefusedWithItsField) {
  const std::vector<BadFilter> cases = {
      {"chain { filters { pass_all_filter: true } }", "Chain must contain at least two RowFilters"},
      {"chain {}", "Error in field 'chain' : Chain must contain at least two RowFilters"},
      {"interleave { filters {} }", "Interleave must contain at least two RowFilters"},
      {"pass_all_filter: false", "Error in field 'pass_all_filter' : argument must be true"},
      {"block_all_filter: false", "Error in field 'block_all_filter'"},
      {"sink: false", "Error in field 'sink'"},
      {"strip_value_transformer: false", "Error in field 'strip_value_transformer'"},
      {"row_key_regex_filter: ''",
       "Error in field 'row_key_regex_filter' : argument must not be empty"},
      {"row_key_regex_filter: '('", "Error in field 'row_key_regex_filter' : error parsing regexp"},
      {"family_name_regex_filter: 'a:b'", "must not contain the ':' character"},
      {"family_name_regex_filter: '['",
       "Error in field 'family_name_regex_filter' : error parsing"},
      {"column_qualifier_regex_filter: '(abc'",
       "Error in field 'column_qualifier_regex_filter' : error parsing regexp: missing )"},
      {"value_regex_filter: '*'", "Error in field 'value_regex_filter' : error parsing regexp"},
      {"value_regex_filter: 'a{1001}'", "Error in field 'value_regex_filter'"},
      {"cells_per_row_limit_filter: 0",
       "Error in field 'cells_per_row_limit_filter' : argument must be > 0"},
      {"cells_per_row_limit_filter: -3", "Error in field 'cells_per_row_limit_filter'"},
      {"cells_per_column_limit_filter: 0",
       "Error in field 'cells_per_column_limit_filter' : argument must be > 0"},
      {"cells_per_row_offset_filter: -1",
       "Error in field 'cells_per_row_offset_filter' : argument must be >= 0"},
      {"row_sample_filter: 0", "Error in field 'row_sample_filter'"},
      {"row_sample_filter: 1", "Error in field 'row_sample_filter'"},
      {"row_sample_filter: 1.5", "Error in field 'row_sample_filter'"},
      {"row_sample_filter: -0.5", "Error in field 'row_sample_filter'"},
      {"row_sample_filter: nan", "Error in field 'row_sample_filter'"},
      {"apply_label_transformer: ''", "Error in field 'apply_label_transformer'"},
      {"apply_label_transformer: 'BAD_label'", "Error in field 'apply_label_transformer'"},
      {"apply_label_transformer: 'a b'", "Error in field 'apply_label_transformer'"},
      {"apply_label_transformer: 'sixteen-chars-xx'", "at most 15 characters"},
      {"chain { filters { apply_label_transformer: 'a' } "
       "filters { apply_label_transformer: 'b' } }",
       "at most one sub-filter containing an apply_label_transformer"},
      {"chain { filters { chain { filters { apply_label_transformer: 'a' } filters {} } } "
       "filters { interleave { filters { apply_label_transformer: 'b' } filters {} } } }",
       "at most one sub-filter"},
      {"timestamp_range_filter { start_timestamp_micros: 2000 end_timestamp_micros: 1000 }",
       "Error in field 'timestamp_range_filter' : inverted timestamp range"},
      {"timestamp_range_filter { start_timestamp_micros: -1000 }", "must not be negative"},
      {"timestamp_range_filter { end_timestamp_micros: -1000 }", "must not be negative"},
      {"timestamp_range_filter { start_timestamp_micros: 1500 }",
       "Timestamp granularity mismatch. Expected a multiple of 1000 (millisecond granularity), "
       "but got 1500."},
      {"timestamp_range_filter { end_timestamp_micros: 2001 }", "but got 2001."},
      {"column_range_filter { start_qualifier_closed: 'a' }",
       "Error in field 'column_range_filter' : family_name must not be empty"},
      {"column_range_filter { family_name: 'f' start_qualifier_closed: 'b' "
       "end_qualifier_open: 'a' }",
       "Error in field 'column_range_filter' : the start qualifier sorts after the end"},
      {"value_range_filter { start_value_open: 'b' end_value_closed: 'a' }",
       "Error in field 'value_range_filter' : the start value sorts after the end value"},
      {"value_bitmask_filter {}", "Error in field 'value_bitmask_filter' : mask must not be empty"},
      {"condition { predicate_filter { sink: true } }", "Error in field 'sink' : a sink cannot"},
      {"condition { true_filter { sink: true } }", "Error in field 'sink'"},
      {"condition { false_filter { chain { filters { sink: true } filters {} } } }",
       "Error in field 'sink'"},
      {"chain { filters { pass_all_filter: true } filters { value_regex_filter: '(' } }",
       "(at chain.filters[1])"},
      {"interleave { filters {} filters { condition { predicate_filter { "
       "cells_per_row_limit_filter: 0 } } } }",
       "(at interleave.filters[1].condition.predicate_filter)"},
  };
  for (const auto& c : cases) {
    Status s = CompileStatus(c.text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text << " -> " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(RowFilterTest, ValidFiltersAtTheEdgesAreAccepted) {
  const std::vector<std::string> ok = {
      "apply_label_transformer: 'abcdefghij-1234'",  // 15 characters
      "interleave { filters { apply_label_transformer: 'a' } "
      "filters { apply_label_transformer: 'b' } }",
      "condition { predicate_filter { apply_label_transformer: 'a' } "
      "true_filter { apply_label_transformer: 'b' } false_filter { apply_label_transformer: 'c' } "
      "}",
      "timestamp_range_filter { start_timestamp_micros: 5000 end_timestamp_micros: 5000 }",
      "row_sample_filter: 0.000001",
      "cells_per_row_offset_filter: 0",
      "column_qualifier_regex_filter: ''",
      "value_regex_filter: ''",
      "family_name_regex_filter: ''",
      "interleave { filters { sink: true } filters { chain { filters { sink: true } filters {} } } "
      "}",
      "value_regex_filter: '\\\\C{1000}'",
  };
  for (const auto& text : ok) EXPECT_TRUE(CompileStatus(text).ok()) << text << CompileStatus(text);
  // Micro-granular tables take any non-negative bound.
  EXPECT_TRUE(CompileStatus("timestamp_range_filter { start_timestamp_micros: 1500 }",
                            Options(/*millis=*/false))
                  .ok());
}

// Nests `depth` chains: depth 0 is a plain filter.
v2::RowFilter Nested(int depth) {
  v2::RowFilter root;
  v2::RowFilter* cur = &root;
  for (int i = 0; i < depth; ++i) {
    auto* chain = cur->mutable_chain();
    chain->add_filters()->set_pass_all_filter(true);
    cur = chain->add_filters();
  }
  cur->set_cells_per_column_limit_filter(1);
  return root;
}

TEST(RowFilterTest, NestingDeeperThanTwentyIsRefusedWithoutRecursingIntoIt) {
  EXPECT_TRUE(CompileRowFilter(Nested(kMaxRowFilterDepth), Options()).ok());
  Status s = CompileRowFilter(Nested(kMaxRowFilterDepth + 1), Options()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nested more than 20 levels"));
  // A hostile message far deeper than any stack could recurse through unchecked (it cannot
  // arrive over the wire, where protobuf stops at 100 levels, but can be built in-process).
  v2::RowFilter deep = Nested(20000);
  EXPECT_EQ(CompileRowFilter(deep, Options()).status().code(), absl::StatusCode::kInvalidArgument);
  // Release it level by level: protobuf's own destructor recursion is not ours to test.
  v2::RowFilter* cur = &deep;
  std::vector<std::unique_ptr<v2::RowFilter>> levels;
  while (cur->has_chain()) {
    auto next = std::make_unique<v2::RowFilter>();
    next->Swap(cur->mutable_chain()->mutable_filters(1));
    cur->clear_filter();
    levels.push_back(std::move(next));
    cur = levels.back().get();
  }
  while (!levels.empty()) levels.pop_back();
}

TEST(RowFilterTest, OversizedFiltersAreRefused) {
  v2::RowFilter big;
  big.set_value_regex_filter(std::string(kMaxRowFilterBytes, 'a'));
  Status s = CompileRowFilter(big, Options()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bytes when serialized"));
  // Many small filters add up as well.
  v2::RowFilter wide;
  for (int i = 0; i < 5000; ++i)
    wide.mutable_interleave()->add_filters()->set_pass_all_filter(true);
  EXPECT_EQ(CompileRowFilter(wide, Options()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RowFilterTest, RegexesThatBlowUpAreRefusedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  std::string huge;
  while (huge.size() + 11 < kMaxRowFilterBytes - 64) huge += "[a-z]{1000}";
  const std::vector<std::string> patterns = {
      huge,                    // a program of millions of instructions
      "((a{100}){100}){100}",  // nested counted repetition
      "(((\\C{50}){50}){50})",
  };
  for (const auto& p : patterns) {
    v2::RowFilter f;
    f.set_column_qualifier_regex_filter(p);
    Status s = CompileRowFilter(f, Options()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << p.substr(0, 40);
    EXPECT_THAT(std::string(s.message()), HasSubstr("column_qualifier_regex_filter"));
  }
  // The regexes of one filter share the budget: a pattern that fits alone is refused when
  // four of them must split it.
  FilterOptions small = Options();
  small.max_regex_memory_bytes = 64 << 10;
  const std::string pattern = "[a-z]{1000}[0-9]{1000}[a-z]{1000}[0-9]{1000}[a-z]{1000}";
  v2::RowFilter one;
  one.set_value_regex_filter(pattern);
  EXPECT_TRUE(CompileRowFilter(one, small).ok());
  v2::RowFilter four;
  for (int i = 0; i < 4; ++i)
    four.mutable_interleave()->add_filters()->set_value_regex_filter(pattern);
  Status s = CompileRowFilter(four, small).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("Error in field 'value_regex_filter' : regular expression too large"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("16384-byte share"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// ---------------------------------------------------------------------------
// Pushdown.

model::FilterPushdown PushdownOf(const std::string& text) {
  auto f = CompileRowFilter(Parse(text), Options());
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? f->pushdown() : model::FilterPushdown{};
}

TEST(RowFilterTest, PushdownOfCommonShapes) {
  using ::testing::ElementsAre;
  auto p = PushdownOf(
      "chain { filters { family_name_regex_filter: 'cf1' } "
      "filters { cells_per_column_limit_filter: 1 } }");
  EXPECT_THAT(p.families, ElementsAre("cf1"));
  EXPECT_EQ(p.max_versions, 1);
  // cbt lookup/read with columns= and cells-per-column=.
  p = PushdownOf(
      "chain { filters { cells_per_column_limit_filter: 1 } filters { interleave { "
      "filters { chain { filters { family_name_regex_filter: 'cf1' } "
      "filters { column_qualifier_regex_filter: 'a' } } } "
      "filters { family_name_regex_filter: 'cf2' } } } }");
  EXPECT_THAT(p.families, ElementsAre("cf1", "cf2"));
  EXPECT_EQ(p.max_versions, 1);
  p = PushdownOf(
      "chain { filters { timestamp_range_filter { start_timestamp_micros: 1000 "
      "end_timestamp_micros: 5000 } } filters { cells_per_column_limit_filter: 2 } }");
  EXPECT_EQ(p.time_range.start_micros, 1000);
  EXPECT_EQ(p.time_range.end_micros, 5000);
  EXPECT_EQ(p.max_versions, 2);
  EXPECT_TRUE(p.families.empty());
  // The newest N before a time filter is not the newest N within it: no time pushdown.
  p = PushdownOf(
      "chain { filters { cells_per_column_limit_filter: 1 } filters { timestamp_range_filter { "
      "start_timestamp_micros: 1000 } } }");
  EXPECT_EQ(p.max_versions, 1);
  EXPECT_EQ(p.time_range.start_micros, 0);
  // A value filter before the limit: the engine cannot apply it, so no max_versions.
  p = PushdownOf(
      "chain { filters { value_regex_filter: 'x' } filters { cells_per_column_limit_filter: 1 } }");
  EXPECT_EQ(p.max_versions, 0);
  // Row-wide counts see every family: nothing pushed past them.
  p = PushdownOf(
      "chain { filters { cells_per_row_limit_filter: 1 } filters { family_name_regex_filter: 'a' } "
      "}");
  EXPECT_TRUE(p.families.empty());
  p = PushdownOf(
      "chain { filters { family_name_regex_filter: 'a' } filters { cells_per_row_limit_filter: 1 } "
      "}");
  EXPECT_THAT(p.families, ElementsAre("a"));
  EXPECT_TRUE(PushdownOf("chain { filters { family_name_regex_filter: 'a' } "
                         "filters { family_name_regex_filter: 'b' } }")
                  .outputs_nothing);
  EXPECT_TRUE(PushdownOf("block_all_filter: true").outputs_nothing);
  // Regexes that are not plain names, and sinks, push nothing.
  EXPECT_TRUE(PushdownOf("family_name_regex_filter: 'cf.*'").families.empty());
  p = PushdownOf("chain { filters { family_name_regex_filter: 'a' } filters { sink: true } }");
  EXPECT_TRUE(p.families.empty());
  EXPECT_FALSE(p.outputs_nothing);
  // Conditions read what any of their parts need.
  p = PushdownOf(
      "condition { predicate_filter { family_name_regex_filter: 'p' } "
      "true_filter { column_range_filter { family_name: 't' } } }");
  EXPECT_THAT(p.families, ElementsAre("p", "t"));
  EXPECT_EQ(PushdownOf("cells_per_column_limit_filter: 3").max_versions, 3);
}

// ---------------------------------------------------------------------------
// Randomized properties.

class RandomFilters {
 public:
  explicit RandomFilters(uint64_t seed) : rnd_(seed) {}

  model::Row Row() {
    static const char* kFamilies[] = {"a", "b", "c"};
    static const char* kQualifiers[] = {"", "x", "y", "\n", "\xff"};
    std::set<std::tuple<std::string, std::string, int64_t>> seen;
    model::Row row{std::string(1, static_cast<char>('k' + rnd_.Uniform(3))), {}};
    const int n = static_cast<int>(rnd_.Uniform(12));
    for (int i = 0; i < n; ++i) {
      model::Cell c = C(kFamilies[rnd_.Uniform(3)], kQualifiers[rnd_.Uniform(5)],
                        static_cast<int64_t>(rnd_.Uniform(8)) * 1000,
                        std::string(1, static_cast<char>('p' + rnd_.Uniform(4))));
      if (seen.insert({c.family, c.qualifier, c.timestamp_micros}).second) {
        row.cells.push_back(c);
      }
    }
    std::sort(row.cells.begin(), row.cells.end(), model::CellOrderLess);
    return row;
  }

  // A random filter of at most `depth` composite levels. No row_sample: its random draws
  // depend on evaluation order, and these properties compare two evaluations.
  v2::RowFilter Filter(int depth, bool allow_sink = true) {
    v2::RowFilter f;
    const uint64_t pick = rnd_.Uniform(depth > 0 ? 22 : 18);
    switch (pick) {
      case 0:
        f.set_pass_all_filter(true);
        break;
      case 1:
        f.set_block_all_filter(true);
        break;
      case 2:
        f.set_family_name_regex_filter(Pick({"a", "b", "a|c", "[ab]", "c"}));
        break;
      case 3:
        f.set_column_qualifier_regex_filter(Pick({"", "x", "[xy]", "\\C", "."}));
        break;
      case 4: {
        auto* r = f.mutable_column_range_filter();
        r->set_family_name(Pick({"a", "b"}));
        if (rnd_.OneIn(2)) r->set_start_qualifier_open("");
        if (rnd_.OneIn(2)) r->set_end_qualifier_closed("x");
        break;
      }
      case 5: {
        auto* r = f.mutable_timestamp_range_filter();
        int64_t start = static_cast<int64_t>(rnd_.Uniform(5)) * 1000;
        r->set_start_timestamp_micros(start);
        if (rnd_.OneIn(2)) r->set_end_timestamp_micros(start + (1 + rnd_.Uniform(4)) * 1000);
        break;
      }
      case 6:
        f.set_value_regex_filter(Pick({"p", "[pq]", "r|s"}));
        break;
      case 7:
        f.mutable_value_range_filter()->set_start_value_open(Pick({"p", "q"}));
        break;
      case 8:
        f.mutable_value_bitmask_filter()->set_mask("p");
        break;
      case 9:
        f.set_cells_per_row_offset_filter(static_cast<int32_t>(rnd_.Uniform(4)));
        break;
      case 10:
        f.set_cells_per_row_limit_filter(static_cast<int32_t>(1 + rnd_.Uniform(4)));
        break;
      case 11:
      case 12:
        f.set_cells_per_column_limit_filter(static_cast<int32_t>(1 + rnd_.Uniform(3)));
        break;
      case 13:
        f.set_strip_value_transformer(true);
        break;
      case 14:
        f.set_apply_label_transformer(Pick({"l1", "l2"}));
        break;
      case 15:
        f.set_row_key_regex_filter(Pick({"k", "[kl]", "m.*"}));
        break;
      case 16:
        if (allow_sink) {
          f.set_sink(true);
        } else {
          f.set_pass_all_filter(true);
        }
        break;
      case 17:
        break;  // empty filter
      case 18:
      case 19: {
        auto* chain = f.mutable_chain();
        const int n = 2 + static_cast<int>(rnd_.Uniform(3));
        for (int i = 0; i < n; ++i) *chain->add_filters() = Filter(depth - 1, allow_sink);
        break;
      }
      case 20: {
        auto* il = f.mutable_interleave();
        const int n = 2 + static_cast<int>(rnd_.Uniform(2));
        for (int i = 0; i < n; ++i) *il->add_filters() = Filter(depth - 1, allow_sink);
        break;
      }
      default: {
        auto* cond = f.mutable_condition();
        *cond->mutable_predicate_filter() = Filter(depth - 1, false);
        if (!rnd_.OneIn(4)) *cond->mutable_true_filter() = Filter(depth - 1, false);
        if (!rnd_.OneIn(4)) *cond->mutable_false_filter() = Filter(depth - 1, false);
        break;
      }
    }
    return f;
  }

  Random& rnd() { return rnd_; }

 private:
  std::string Pick(std::initializer_list<const char*> options) {
    auto it = options.begin();
    std::advance(it, rnd_.Uniform(options.size()));
    return *it;
  }

  Random rnd_;
};

std::optional<std::vector<model::Cell>> TryRun(const v2::RowFilter& f, const model::Row& row) {
  auto compiled = CompileRowFilter(f, Options());
  if (!compiled.ok()) return std::nullopt;
  model::Row copy = row;
  compiled->Apply(&copy);
  return copy.cells;
}

v2::RowFilter Chain2(const v2::RowFilter& a, const v2::RowFilter& b) {
  v2::RowFilter f;
  *f.mutable_chain()->add_filters() = a;
  *f.mutable_chain()->add_filters() = b;
  return f;
}

v2::RowFilter Interleave2(const v2::RowFilter& a, const v2::RowFilter& b) {
  v2::RowFilter f;
  *f.mutable_interleave()->add_filters() = a;
  *f.mutable_interleave()->add_filters() = b;
  return f;
}

v2::RowFilter Text(const std::string& text) { return Parse(text); }

TEST(RowFilterTest, RandomizedAlgebraicIdentities) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  RandomFilters gen(seed);
  const v2::RowFilter pass = Text("pass_all_filter: true");
  const v2::RowFilter block = Text("block_all_filter: true");
  int checked = 0;
  for (int iter = 0; iter < 600; ++iter) {
    const v2::RowFilter a = gen.Filter(3);
    const v2::RowFilter b = gen.Filter(2, /*allow_sink=*/false);
    const model::Row row = gen.Row();
    auto fa = TryRun(a, row);
    if (!fa) continue;  // e.g. two labels in one chain
    ++checked;
    SCOPED_TRACE(a.ShortDebugString());
    EXPECT_EQ(TryRun(Chain2(a, pass), row), fa);
    EXPECT_EQ(TryRun(Chain2(pass, a), row), fa);
    EXPECT_EQ(TryRun(Interleave2(a, block), row), fa);
    EXPECT_EQ(TryRun(Interleave2(block, a), row), fa);
    EXPECT_TRUE(TryRun(Chain2(block, a), row)->empty());
    // Condition(pass_all, a, b) is a on a non-empty row; Condition(block_all, b, a) is a.
    if (!row.cells.empty() && a.filter_case() != v2::RowFilter::kSink) {
      v2::RowFilter cond;
      *cond.mutable_condition()->mutable_predicate_filter() = pass;
      *cond.mutable_condition()->mutable_true_filter() = a;
      *cond.mutable_condition()->mutable_false_filter() = b;
      auto got = TryRun(cond, row);
      if (got) {
        EXPECT_EQ(got, fa);
      }  // else refused: `a` holds a sink
    }
    // Chain(a, b) is b applied to a's output, when nothing is sunk.
    auto fb = TryRun(b, model::Row{row.key, *fa});
    auto chained = TryRun(Chain2(a, b), row);
    if (fb && chained && a.ShortDebugString().find("sink") == std::string::npos) {
      EXPECT_EQ(*chained, *fb);
    }
    // Interleave(a, b) is the stable merge of a's and b's outputs.
    auto fb_row = TryRun(b, row);
    auto il = TryRun(Interleave2(a, b), row);
    if (fb_row && il && a.ShortDebugString().find("sink") == std::string::npos) {
      std::vector<model::Cell> want = *fa;
      want.insert(want.end(), fb_row->begin(), fb_row->end());
      std::stable_sort(want.begin(), want.end(), model::CellOrderLess);
      EXPECT_EQ(*il, want);
    }
    // Output stays in cell order.
    EXPECT_TRUE(std::is_sorted(fa->begin(), fa->end(), model::CellOrderLess));
  }
  EXPECT_GT(checked, 300);
}

// What the engine returns for a ReadSpec built from a pushdown.
model::Row Restrict(const model::Row& row, const model::FilterPushdown& p) {
  model::Row out{row.key, {}};
  if (p.outputs_nothing) return out;
  int64_t run = 0;
  for (const auto& c : row.cells) {
    if (!p.families.empty() &&
        std::find(p.families.begin(), p.families.end(), c.family) == p.families.end()) {
      continue;
    }
    if (!p.time_range.Contains(c.timestamp_micros)) continue;
    const bool same = !out.cells.empty() && out.cells.back().family == c.family &&
                      out.cells.back().qualifier == c.qualifier;
    run = same ? run + 1 : 1;
    if (p.max_versions > 0 && run > p.max_versions) continue;
    out.cells.push_back(c);
  }
  return out;
}

TEST(RowFilterTest, RandomizedPushdownNeverChangesTheOutput) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  RandomFilters gen(seed);
  int pushed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    v2::RowFilter f = gen.Filter(3);
    if (gen.rnd().OneIn(2)) {
      // Bias towards the shapes pushdown handles: a chain led by exact predicates.
      v2::RowFilter lead;
      if (gen.rnd().OneIn(2)) {
        lead.set_family_name_regex_filter(gen.rnd().OneIn(2) ? "a" : "a|b");
      } else {
        lead.mutable_timestamp_range_filter()->set_start_timestamp_micros(2000);
        lead.mutable_timestamp_range_filter()->set_end_timestamp_micros(6000);
      }
      v2::RowFilter limit;
      limit.set_cells_per_column_limit_filter(1 + static_cast<int32_t>(gen.rnd().Uniform(2)));
      v2::RowFilter flat;
      *flat.mutable_chain()->add_filters() = lead;
      *flat.mutable_chain()->add_filters() = limit;
      *flat.mutable_chain()->add_filters() = gen.Filter(2);
      f = flat;
    }
    auto compiled = CompileRowFilter(f, Options());
    if (!compiled.ok()) continue;
    const model::FilterPushdown p = compiled->pushdown();
    if (!p.families.empty() || p.max_versions > 0 || p.time_range.start_micros != 0 ||
        p.time_range.end_micros != 0 || p.outputs_nothing) {
      ++pushed;
    }
    for (int r = 0; r < 4; ++r) {
      const model::Row row = gen.Row();
      auto full = TryRun(f, row);
      auto restricted = TryRun(f, Restrict(row, p));
      ASSERT_TRUE(full && restricted);
      ASSERT_EQ(*full, *restricted) << f.ShortDebugString();
    }
  }
  EXPECT_GT(pushed, 700);
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// Nested interleaves multiply copies of a cell; a filter that could blow one row up past the
// bound is refused at compile time instead of exhausting memory per row.
TEST(RowFilterCopyBoundTest, RefusesExponentialInterleaves) {
  auto nested = [](int levels) {
    google::bigtable::v2::RowFilter f;
    f.set_pass_all_filter(true);
    for (int i = 0; i < levels; ++i) {
      google::bigtable::v2::RowFilter outer;
      *outer.mutable_interleave()->add_filters() = f;
      *outer.mutable_interleave()->add_filters() = f;
      f = std::move(outer);
    }
    return f;
  };
  FilterOptions options;
  EXPECT_TRUE(CompileRowFilter(nested(8), options).ok());  // 256 copies: at the bound
  auto refused = CompileRowFilter(nested(9), options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("more than 256 times"), std::string::npos)
      << refused.status();
  // Deep chains of plain filters copy nothing.
  google::bigtable::v2::RowFilter chain;
  chain.set_pass_all_filter(true);
  for (int i = 0; i < 19; ++i) {
    google::bigtable::v2::RowFilter outer;
    *outer.mutable_chain()->add_filters() = chain;
    outer.mutable_chain()->add_filters()->set_cells_per_column_limit_filter(3);
    chain = std::move(outer);
  }
  EXPECT_TRUE(CompileRowFilter(chain, options).ok());
  // Sinks count: an interleave of 200 sinks plus 100 pass-alls is 300 copies.
  google::bigtable::v2::RowFilter sinks;
  for (int i = 0; i < 300; ++i) {
    if (i < 200) {
      sinks.mutable_interleave()->add_filters()->set_sink(true);
    } else {
      sinks.mutable_interleave()->add_filters()->set_pass_all_filter(true);
    }
  }
  EXPECT_EQ(CompileRowFilter(sinks, options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::server
