#include "tessera/client/row_merger.h"

#include <google/protobuf/text_format.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::client {
namespace {

namespace v2 = google::bigtable::v2;
using ::testing::HasSubstr;

// One cell of the merged output, flattened with its row key (as the conformance files do).
struct Flat {
  std::string key, family, qualifier;
  int64_t ts = 0;
  std::string value;
  std::string labels;  // comma-joined
  bool operator==(const Flat&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Flat& f) {
  return os << "{" << f.key << " " << f.family << ":" << f.qualifier << "@" << f.ts << "="
            << f.value << " [" << f.labels << "]}";
}

struct Case {
  Case(std::string name, std::vector<std::string> chunks, std::vector<Flat> rows,
       std::string error = "", bool reversed = false)
      : name(std::move(name)),
        chunks(std::move(chunks)),
        rows(std::move(rows)),
        error(std::move(error)),
        reversed(reversed) {}

  std::string name;
  std::vector<std::string> chunks;  // text-format CellChunks
  std::vector<Flat> rows;           // cells of the rows committed, in order
  std::string error;                // expected error substring; empty = the stream is valid
  bool reversed;
};

v2::ReadRowsResponse::CellChunk ParseChunk(const std::string& text) {
  v2::ReadRowsResponse::CellChunk c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

void Drain(RowMerger* m, std::vector<Flat>* out) {
  while (m->HasRow()) {
    model::Row row = m->TakeRow();
    for (const auto& c : row.cells) {
      std::string labels;
      for (const auto& l : c.labels) labels += (labels.empty() ? "" : ",") + l;
      out->push_back({row.key, c.family, c.qualifier, c.timestamp_micros, c.value, labels});
    }
  }
}

// Feeds the chunks one response each (or all in one response) and returns the status of the
// whole stream, Finish() included; committed cells go to *out.
Status Feed(const Case& c, bool one_response, std::vector<Flat>* out) {
  RowMerger m(c.reversed);
  v2::ReadRowsResponse all;
  for (const auto& text : c.chunks) {
    if (one_response) {
      *all.add_chunks() = ParseChunk(text);
      continue;
    }
    v2::ReadRowsResponse r;
    *r.add_chunks() = ParseChunk(text);
    Status s = m.Add(r);
    Drain(&m, out);
    if (!s.ok()) return s;
  }
  if (one_response) {
    Status s = m.Add(all);
    Drain(&m, out);
    if (!s.ok()) return s;
  }
  return m.Finish();
}

// Chunk snippets.
const char* kRK = "row_key: 'RK' ";
const char* kFA = "family_name { value: 'A' } ";
const char* kQC = "qualifier { value: 'C' } ";
std::string S(std::initializer_list<const char*> parts) {
  std::string s;
  for (const char* p : parts) s += p;
  return s;
}

std::vector<Case> Cases() {
  const std::string first = S({kRK, kFA, kQC});
  return {
      // --- valid streams ---
      {"simple row with timestamp",
       {first + "timestamp_micros: 100 value: 'value-VAL' commit_row: true"},
       {{"RK", "A", "C", 100, "value-VAL", ""}}},
      {"missing timestamp means 0",
       {first + "value: 'v' commit_row: true"},
       {{"RK", "A", "C", 0, "v", ""}}},
      {"empty value", {first + "commit_row: true"}, {{"RK", "A", "C", 0, "", ""}}},
      {"empty qualifier is present and empty",
       {"row_key: 'RK' family_name { value: 'A' } qualifier {} value: 'v' commit_row: true"},
       {{"RK", "A", "", 0, "v", ""}}},
      {"two cells in one column",
       {first + "timestamp_micros: 99 value: 'v1'",
        "timestamp_micros: 98 value: 'v2' commit_row: true"},
       {{"RK", "A", "C", 99, "v1", ""}, {"RK", "A", "C", 98, "v2", ""}}},
      {"two qualifiers",
       {first + "timestamp_micros: 99 value: 'v1'",
        "qualifier { value: 'D' } timestamp_micros: 98 value: 'v2' commit_row: true"},
       {{"RK", "A", "C", 99, "v1", ""}, {"RK", "A", "D", 98, "v2", ""}}},
      {"two families, same qualifier",
       {first + "timestamp_micros: 99 value: 'v1'",
        "family_name { value: 'B' } qualifier { value: 'C' } value: 'v2' commit_row: true"},
       {{"RK", "A", "C", 99, "v1", ""}, {"RK", "B", "C", 0, "v2", ""}}},
      {"labels on each cell",
       {first + "timestamp_micros: 99 labels: 'L_1' value: 'v1'",
        "timestamp_micros: 98 labels: 'L_2' labels: 'L_3' value: 'v2' commit_row: true"},
       {{"RK", "A", "C", 99, "v1", "L_1"}, {"RK", "A", "C", 98, "v2", "L_2,L_3"}}},
      {"row key repeated inside its row",
       {first + "value: 'v1'", "row_key: 'RK' value: 'v2' commit_row: true"},
       {{"RK", "A", "C", 0, "v1", ""}, {"RK", "A", "C", 0, "v2", ""}}},
      {"split value",
       {first + "timestamp_micros: 100 value: 'v' value_size: 9",
        "value: 'alue-VAL' commit_row: true"},
       {{"RK", "A", "C", 100, "value-VAL", ""}}},
      {"split four ways with a label",
       {first + "timestamp_micros: 100 labels: 'L' value: 'v' value_size: 9",
        "value: 'a' value_size: 9", "value: 'l' value_size: 9", "value: 'ue-VAL' commit_row: true"},
       {{"RK", "A", "C", 100, "value-VAL", "L"}}},
      {"split value then bare commit makes a second, empty cell",
       {first + "timestamp_micros: 100 value: 'v' value_size: 9", "value: 'alue-VAL'",
        "commit_row: true"},
       {{"RK", "A", "C", 100, "value-VAL", ""}, {"RK", "A", "C", 0, "", ""}}},
      {"bare chunks are cells of the current column",
       {first + "timestamp_micros: 100 value: 'v'", "commit_row: false", "commit_row: true"},
       {{"RK", "A", "C", 100, "v", ""}, {"RK", "A", "C", 0, "", ""}, {"RK", "A", "C", 0, "", ""}}},
      {"two split cells across qualifiers and families",
       {first + "timestamp_micros: 99 value: 'v' value_size: 3", "value: 'a1'",
        "qualifier { value: 'D' } timestamp_micros: 98 value: 'v' value_size: 3", "value: 'a2'",
        "family_name { value: 'B' } qualifier { value: 'E' } value: 'x' value_size: 2",
        "value: 'y' commit_row: true"},
       {{"RK", "A", "C", 99, "va1", ""},
        {"RK", "A", "D", 98, "va2", ""},
        {"RK", "B", "E", 0, "xy", ""}}},
      {"two rows",
       {"row_key: 'RK_1' family_name { value: 'A' } qualifier { value: 'C' } value: 'v1' "
        "commit_row: true",
        "row_key: 'RK_2' family_name { value: 'B' } qualifier { value: 'D' } value: 'v2' "
        "commit_row: true"},
       {{"RK_1", "A", "C", 0, "v1", ""}, {"RK_2", "B", "D", 0, "v2", ""}}},
      {"two rows with splits at the same timestamp",
       {"row_key: 'RK_1' family_name { value: 'A' } qualifier { value: 'C' } "
        "timestamp_micros: 100 value: 'v' value_size: 2",
        "value: '1' commit_row: true",
        "row_key: 'RK_2' family_name { value: 'A' } qualifier { value: 'C' } "
        "timestamp_micros: 100 value: 'v' value_size: 2",
        "value: '2' commit_row: true"},
       {{"RK_1", "A", "C", 100, "v1", ""}, {"RK_2", "A", "C", 100, "v2", ""}}},
      {"reset then the same row again",
       {first + "value: 'old'", "reset_row: true", first + "value: 'new' commit_row: true"},
       {{"RK", "A", "C", 0, "new", ""}}},
      {"reset then another row",
       {"row_key: 'RK_1' family_name { value: 'A' } qualifier { value: 'C' } value: 'x'",
        "reset_row: true",
        "row_key: 'RK_0' family_name { value: 'A' } qualifier { value: 'C' } value: 'y' "
        "commit_row: true"},
       {{"RK_0", "A", "C", 0, "y", ""}}},
      {"reset in the middle of a split value",
       {first + "labels: 'L' value: 'v' value_size: 10", "value: 'a' value_size: 10",
        "reset_row: true", first + "value: 'fresh' commit_row: true"},
       {{"RK", "A", "C", 0, "fresh", ""}}},
      {"two resets",
       {first + "value: '1'", "reset_row: true", first + "value: '2'", "reset_row: true",
        first + "value: '3' commit_row: true"},
       {{"RK", "A", "C", 0, "3", ""}}},
      {"reset at the end of the stream", {first + "value: '1'", "reset_row: true"}, {}},
      {"reversed keys decrease",
       {"row_key: 'b' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true",
        "row_key: 'a' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true"},
       {{"b", "A", "C", 0, "", ""}, {"a", "A", "C", 0, "", ""}},
       "",
       /*reversed=*/true},

      // --- invalid streams ---
      {"no commit", {first + "value: 'v'"}, {}, "ended inside uncommitted row"},
      {"commit with no cell key", {"commit_row: true"}, {}, "must set row_key"},
      {"value with no cell key", {"timestamp_micros: 100 value: 'v'"}, {}, "must set row_key"},
      {"first chunk without family",
       {"row_key: 'RK' qualifier { value: 'C' } commit_row: true"},
       {},
       "must set family_name"},
      {"first chunk without qualifier",
       {"row_key: 'RK' family_name { value: 'A' } commit_row: true"},
       {},
       "must set qualifier"},
      {"new family without qualifier",
       {first + "value: 'v1'", "family_name { value: 'B' } value: 'v2' commit_row: true"},
       {},
       "without a qualifier"},
      {"no commit between rows",
       {"row_key: 'RK_1' family_name { value: 'A' } qualifier { value: 'C' } value: 'v'",
        "row_key: 'RK_2' family_name { value: 'A' } qualifier { value: 'C' } value: 'v' "
        "commit_row: true"},
       {},
       "a commit is required between row keys"},
      {"last row missing commit",
       {"row_key: 'RK_1' family_name { value: 'A' } qualifier { value: 'C' } value: 'v' "
        "commit_row: true",
        "row_key: 'RK_2' family_name { value: 'A' } qualifier { value: 'C' } value: 'v'"},
       {{"RK_1", "A", "C", 0, "v", ""}},
       "ended inside uncommitted row \"RK_2\""},
      {"duplicate row key",
       {first + "value: 'v' commit_row: true",
        "row_key: 'RK' family_name { value: 'B' } qualifier { value: 'D' } commit_row: true"},
       {{"RK", "A", "C", 0, "v", ""}},
       "came again"},
      {"decreasing row key",
       {"row_key: 'b' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true",
        "row_key: 'a' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true"},
       {{"b", "A", "C", 0, "", ""}},
       "strictly increasing"},
      {"increasing row key in a reversed scan",
       {"row_key: 'a' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true",
        "row_key: 'b' family_name { value: 'A' } qualifier { value: 'C' } commit_row: true"},
       {{"a", "A", "C", 0, "", ""}},
       "strictly decreasing",
       /*reversed=*/true},
      {"new row without a key after a commit",
       {first + "value: 'v' commit_row: true", "timestamp_micros: 100 value: 'v' commit_row: true"},
       {{"RK", "A", "C", 0, "v", ""}},
       "must set row_key"},
      {"bare reset", {"reset_row: true"}, {}, "reset_row with no row in progress"},
      {"reset with no row, then a row",
       {"reset_row: true", first + "commit_row: true"},
       {},
       "reset_row with no row in progress"},
      {"missing key after reset",
       {first + "value: 'v'", "reset_row: true",
        "timestamp_micros: 100 value: 'v' commit_row: true"},
       {},
       "must set row_key"},
      {"reset carrying a value",
       {first + "value: 'v' value_size: 10", "value: 'a' value_size: 10 reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"reset carrying a row key",
       {first + "value: 'v'", "row_key: 'RK' reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"reset carrying only a value",
       {first + "value: 'v'", "value: 'x' reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"reset carrying a timestamp",
       {first + "value: 'v'", "timestamp_micros: 5 reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"reset carrying a family and qualifier",
       {first + "value: 'v'", "family_name { value: 'A' } qualifier {} reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"reset carrying labels",
       {first + "value: 'v'", "labels: 'L' reset_row: true"},
       {},
       "a reset_row chunk must carry no"},
      {"commit on a chunk with value_size",
       {first + "value: 'v' value_size: 10", "value: 'a' value_size: 10 commit_row: true"},
       {},
       "commit_row on a chunk with value_size > 0"},
      {"commit on the first chunk of a split value",
       {first + "value: 'v' value_size: 2 commit_row: true"},
       {},
       "commit_row on a chunk with value_size > 0"},
      {"negative value_size",
       {first + "value: 'v' value_size: -1 commit_row: true"},
       {},
       "value_size must not be negative"},
      {"qualifier inside a split value",
       {first + "value: 'v' value_size: 2", "qualifier { value: 'D' } value: 'x' commit_row: true"},
       {},
       "continuing a split value"},
      {"timestamp inside a split value",
       {first + "value: 'v' value_size: 2", "timestamp_micros: 5 value: 'x' commit_row: true"},
       {},
       "continuing a split value"},
      {"labels inside a split value",
       {first + "value: 'v' value_size: 2", "labels: 'L' value: 'x' commit_row: true"},
       {},
       "continuing a split value"},
      {"row key inside a split value",
       {first + "value: 'v' value_size: 2", "row_key: 'RK' value: 'x' commit_row: true"},
       {},
       "continuing a split value"},
      {"value_size changes",
       {first + "value: 'v' value_size: 3", "value: 'x' value_size: 4",
        "value: 'y' commit_row: true"},
       {},
       "value_size changed from 3 to 4"},
      {"split value longer than value_size",
       {first + "value: 'v' value_size: 2", "value: 'xyz' commit_row: true"},
       {},
       "past its value_size"},
      {"split value shorter than value_size",
       {first + "value: 'v' value_size: 5", "value: 'x' commit_row: true"},
       {},
       "ended with 2 bytes, but value_size said 5"},
      {"stream ends inside a split value",
       {first + "value: 'v' value_size: 5"},
       {},
       "ended inside uncommitted row"},
  };
}

TEST(RowMergerTest, AcceptanceTable) {
  for (const Case& c : Cases()) {
    for (bool one_response : {false, true}) {
      SCOPED_TRACE(c.name + (one_response ? " (one response)" : " (a response per chunk)"));
      std::vector<Flat> got;
      Status s = Feed(c, one_response, &got);
      if (c.error.empty()) {
        EXPECT_TRUE(s.ok()) << s;
      } else {
        EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
        EXPECT_THAT(std::string(s.message()), HasSubstr(c.error));
      }
      EXPECT_EQ(got, c.rows);
    }
  }
}

TEST(RowMergerTest, FailureIsSticky) {
  RowMerger m;
  v2::ReadRowsResponse bad;
  *bad.add_chunks() = ParseChunk("commit_row: true");
  Status first = m.Add(bad);
  ASSERT_FALSE(first.ok());
  v2::ReadRowsResponse good;
  *good.add_chunks() = ParseChunk(
      "row_key: 'a' family_name { value: 'f' } qualifier {} "
      "commit_row: true");
  EXPECT_EQ(m.Add(good), first);
  EXPECT_EQ(m.Finish(), first);
  EXPECT_FALSE(m.HasRow());
}

TEST(RowMergerTest, LastScannedRowKeyAdvancesAndOrdersKeys) {
  RowMerger m;
  v2::ReadRowsResponse r1;
  *r1.add_chunks() = ParseChunk(
      "row_key: 'b' family_name { value: 'f' } qualifier {} "
      "commit_row: true");
  r1.set_last_scanned_row_key("b");  // the last returned row may be the last scanned one
  ASSERT_TRUE(m.Add(r1).ok());
  EXPECT_EQ(m.last_key(), "b");
  v2::ReadRowsResponse scanned;
  scanned.set_last_scanned_row_key("m");
  ASSERT_TRUE(m.Add(scanned).ok());
  EXPECT_EQ(m.last_key(), "m");
  // A row at or before the scanned key is out of order.
  v2::ReadRowsResponse late;
  *late.add_chunks() = ParseChunk(
      "row_key: 'k' family_name { value: 'f' } qualifier {} "
      "commit_row: true");
  Status s = m.Add(late);
  EXPECT_THAT(std::string(s.message()), HasSubstr("strictly increasing"));

  RowMerger backwards;
  scanned.set_last_scanned_row_key("m");
  ASSERT_TRUE(backwards.Add(scanned).ok());
  scanned.set_last_scanned_row_key("c");
  EXPECT_FALSE(backwards.Add(scanned).ok());

  RowMerger mid_row;
  v2::ReadRowsResponse partial;
  *partial.add_chunks() = ParseChunk("row_key: 'b' family_name { value: 'f' } qualifier {}");
  partial.set_last_scanned_row_key("c");
  EXPECT_THAT(std::string(mid_row.Add(partial).message()), HasSubstr("inside uncommitted row"));
}

TEST(RowMergerTest, HugeValueSizeDoesNotReserveHugeMemory) {
  // value_size is the peer's claim; a lie must not allocate 2 GiB before failing.
  RowMerger m;
  v2::ReadRowsResponse r;
  *r.add_chunks() = ParseChunk(
      "row_key: 'a' family_name { value: 'f' } qualifier {} "
      "value: 'x' value_size: 2147483647");
  *r.add_chunks() = ParseChunk("value: 'y' commit_row: false");
  Status s = m.Add(r);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ended with 2 bytes"));
}

TEST(RowMergerTest, BinaryKeysAreEscapedInMessages) {
  RowMerger m;
  v2::ReadRowsResponse r;
  *r.add_chunks() = ParseChunk("row_key: '\\001\\377' family_name { value: 'f' } qualifier {}");
  ASSERT_TRUE(m.Add(r).ok());
  EXPECT_THAT(std::string(m.Finish().message()), HasSubstr("\"\\x01\\xff\""));
}

}  // namespace
}  // namespace tessera::client
