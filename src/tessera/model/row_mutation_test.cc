#include "tessera/model/row_mutation.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

using std::string_literals::operator""s;

struct Entry {
  std::string key;
  std::string value;
  bool operator==(const Entry&) const = default;
};

std::vector<Entry> Entries(std::string_view encoded, Status* status = nullptr) {
  std::vector<Entry> out;
  Status s = ForEachCellEntry(encoded, [&](std::string_view key, std::string_view value) {
    out.push_back({std::string(key), std::string(value)});
  });
  if (status != nullptr) *status = s;
  return out;
}

RowMutation Sample() {
  RowMutation m("row\x00key"s);
  m.SetCell("cf", "q1", 1000, "v1")
      .DeleteFromColumn("cf", "q\x00 2"s, TimeRange{10, 20})
      .DeleteFromFamily("other")
      .DeleteFromRow()
      .SetCell("cf", "", -5, "")
      .DeleteFromColumn("cf", "q3");
  return m;
}

TEST(RowMutationTest, BuildAndRead) {
  RowMutation m = Sample();
  EXPECT_EQ(m.row(), "row\x00key"s);
  EXPECT_EQ(m.size(), 6u);
  EXPECT_FALSE(m.empty());

  RowMutationReader reader(m.encoded());
  EXPECT_EQ(reader.row(), "row\x00key"s);
  EXPECT_EQ(reader.count(), 6u);
  std::vector<MutationView> got;
  MutationView v;
  while (reader.Next(&v)) got.push_back(v);
  ASSERT_TRUE(reader.status().ok()) << reader.status();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].type, MutationType::kSetCell);
  EXPECT_EQ(got[0].family, "cf");
  EXPECT_EQ(got[0].qualifier, "q1");
  EXPECT_EQ(got[0].timestamp_micros, 1000);
  EXPECT_EQ(got[0].value, "v1");
  EXPECT_EQ(got[1].type, MutationType::kDeleteFromColumn);
  EXPECT_EQ(got[1].qualifier, "q\x00 2"s);
  EXPECT_EQ(got[1].range, (TimeRange{10, 20}));
  EXPECT_EQ(got[2].type, MutationType::kDeleteFromFamily);
  EXPECT_EQ(got[2].family, "other");
  EXPECT_EQ(got[3].type, MutationType::kDeleteFromRow);
  EXPECT_EQ(got[4].timestamp_micros, -5);
  EXPECT_EQ(got[4].value, "");
  EXPECT_EQ(got[5].range, TimeRange{});
  // Views point into the encoded bytes.
  const std::string& enc = m.encoded();
  EXPECT_GE(got[0].value.data(), enc.data());
  EXPECT_LE(got[0].value.data() + got[0].value.size(), enc.data() + enc.size());
}

TEST(RowMutationTest, CellEntries) {
  RowMutation m = Sample();
  std::string range_10_20;
  TimeRange{10, 20}.AppendTo(&range_10_20);
  std::string range_all;
  TimeRange{}.AppendTo(&range_all);
  const std::string row = "row\x00key"s;
  std::vector<Entry> expected = {
      {CellKey::Cell(row, "cf", "q1", 1000).Encode(), "v1"},
      {CellKey::ColumnTombstone(row, "cf", "q\x00 2"s).Encode(), range_10_20},
      {CellKey::FamilyTombstone(row, "other").Encode(), ""},
      {CellKey::RowTombstone(row).Encode(), ""},
      {CellKey::Cell(row, "cf", "", -5).Encode(), ""},
      {CellKey::ColumnTombstone(row, "cf", "q3").Encode(), range_all},
  };
  Status s;
  EXPECT_EQ(Entries(m.encoded(), &s), expected);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(RowMutationTest, ExactBytes) {
  RowMutation m("r");
  m.DeleteFromFamily("f").DeleteFromRow();
  EXPECT_EQ(m.encoded(),
            "\x01\x01r\x02\x00\x00\x00\x03\x01"
            "f\x04"s);
}

TEST(RowMutationTest, EmptyAndClear) {
  RowMutation m("r");
  EXPECT_TRUE(m.empty());
  EXPECT_TRUE(ValidateRowMutation(m.encoded()).ok());
  EXPECT_TRUE(Entries(m.encoded()).empty());
  m.SetCell("f", "q", 1, "v");
  EXPECT_EQ(m.size(), 1u);
  m.Clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.row(), "r");
  EXPECT_EQ(m.encoded(), RowMutation("r").encoded());
}

TEST(RowMutationTest, FromEncoded) {
  RowMutation m = Sample();
  StatusOr<RowMutation> copy = RowMutation::FromEncoded(m.encoded());
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->encoded(), m.encoded());
  EXPECT_EQ(copy->row(), m.row());
  EXPECT_EQ(copy->size(), m.size());
  copy->SetCell("cf", "more", 1, "x");  // still appendable
  EXPECT_EQ(copy->size(), 7u);
  EXPECT_TRUE(ValidateRowMutation(copy->encoded()).ok());
  EXPECT_FALSE(RowMutation::FromEncoded("junk").ok());
}

TEST(RowMutationTest, VisitorCanStop) {
  RowMutation m = Sample();
  int calls = 0;
  Status s = ForEachMutation(m.encoded(), [&](const MutationView& v) -> Status {
    ++calls;
    if (v.type == MutationType::kDeleteFromFamily) return absl::AbortedError("stop");
    return Status();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(calls, 3);
}

TEST(RowMutationTest, EveryTruncationFailsWithoutPartialEffect) {
  const std::string enc = Sample().encoded();
  for (size_t len = 0; len < enc.size(); ++len) {
    Status s;
    std::vector<Entry> got = Entries(std::string_view(enc).substr(0, len), &s);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << len << ": " << s;
    EXPECT_TRUE(got.empty()) << len;
  }
}

TEST(RowMutationTest, MalformedCases) {
  const std::string good = Sample().encoded();
  {
    std::string bad = good;
    bad[0] = 0x02;  // unknown format
    EXPECT_EQ(ValidateRowMutation(bad).code(), absl::StatusCode::kDataLoss);
  }
  {
    std::string bad = good + "x";  // trailing bytes
    Status s = ValidateRowMutation(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("trailing"), std::string::npos) << s;
  }
  {
    RowMutation m("r");
    m.SetCell("f", "q", 1, "v");
    std::string bad = m.encoded();
    bad[3] = 5;  // count says 5, only one present
    EXPECT_EQ(ValidateRowMutation(bad).code(), absl::StatusCode::kDataLoss);
    bad[3] = 0;  // count says 0, one present
    EXPECT_EQ(ValidateRowMutation(bad).code(), absl::StatusCode::kDataLoss);
    bad[3] = 1;
    bad[7] = 9;  // unknown mutation type
    Status s = ValidateRowMutation(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("offset 7"), std::string::npos) << s;
  }
  {
    RowMutation m("r");
    m.DeleteFromFamily("f\x00g"s);  // would break the cell-key encoding
    EXPECT_EQ(ValidateRowMutation(m.encoded()).code(), absl::StatusCode::kInvalidArgument);
  }
  {
    std::string huge_count = "\x01\x01r\xff\xff\xff\xff"s;
    EXPECT_EQ(ValidateRowMutation(huge_count).code(), absl::StatusCode::kDataLoss);
  }
}

TEST(RowMutationTest, RandomCorruptionNeverCrashes) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  const std::string good = Sample().encoded();
  for (int i = 0; i < 3000; ++i) {
    std::string bad = good;
    int edits = 1 + rnd.Uniform(4);
    for (int e = 0; e < edits && !bad.empty(); ++e) {
      bad[rnd.Uniform(bad.size())] = static_cast<char>(rnd.Uniform(256));
    }
    Status s;
    std::vector<Entry> got = Entries(bad, &s);
    if (!s.ok()) {
      EXPECT_TRUE(got.empty());
      EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                  s.code() == absl::StatusCode::kInvalidArgument)
          << s;
    } else {
      // Whatever decodes produces well-formed cell keys.
      for (const Entry& entry : got) {
        CellKeyLayout layout;
        EXPECT_TRUE(ParseCellKeyLayout(entry.key, &layout));
      }
    }
  }
}

TEST(TimeRangeTest, ContainsAndCovers) {
  TimeRange all;
  EXPECT_TRUE(all.Contains(0));
  EXPECT_TRUE(all.Contains(std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(all.Contains(-1));
  TimeRange r{10, 20};
  EXPECT_FALSE(r.Contains(9));
  EXPECT_TRUE(r.Contains(10));
  EXPECT_TRUE(r.Contains(19));
  EXPECT_FALSE(r.Contains(20));
  EXPECT_TRUE((TimeRange{5, 5}).IsEmpty());
  EXPECT_TRUE((TimeRange{6, 5}).IsEmpty());
  EXPECT_FALSE((TimeRange{5, 0}).IsEmpty());
  EXPECT_TRUE(all.Covers(r));
  EXPECT_FALSE(r.Covers(all));
  EXPECT_TRUE(r.Covers(TimeRange{12, 20}));
  EXPECT_FALSE(r.Covers(TimeRange{12, 21}));
  EXPECT_FALSE(r.Covers(TimeRange{9, 15}));
  EXPECT_TRUE(r.Covers(TimeRange{30, 30}));  // empty
  EXPECT_TRUE((TimeRange{5, 0}).Covers(TimeRange{7, 0}));
  EXPECT_FALSE((TimeRange{5, 100}).Covers(TimeRange{7, 0}));
  TimeRange decoded;
  std::string enc;
  TimeRange{-3, 77}.AppendTo(&enc);
  ASSERT_TRUE(TimeRange::Decode(enc, &decoded));
  EXPECT_EQ(decoded, (TimeRange{-3, 77}));
  EXPECT_FALSE(TimeRange::Decode(enc.substr(1), &decoded));
}

}  // namespace
}  // namespace tessera::model
