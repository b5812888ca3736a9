#include "tessera/model/cell_key.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

using std::string_literals::operator""s;

constexpr int64_t kMinTs = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxTs = std::numeric_limits<int64_t>::max();

// Strings over a small alphabet full of the bytes the escaping cares about.
std::string RandomBytes(Random* rnd, int max_len) {
  static const char kAlphabet[] = {'\x00', '\x01', '\x02', '\xff', 'a', 'b'};
  std::string s(rnd->Uniform(max_len + 1), '\0');
  for (char& c : s) c = kAlphabet[rnd->Uniform(sizeof(kAlphabet))];
  return s;
}

CellKey RandomCellKey(Random* rnd) {
  static const char* kFamilies[] = {"a", "b", "ab", "a-b", "a.b", "B", "cf1"};
  static const int64_t kTimestamps[] = {kMinTs, -1000, -1, 0, 1, 255, 256, 1000, kMaxTs};
  std::string row = RandomBytes(rnd, 4);
  std::string family = kFamilies[rnd->Uniform(7)];
  std::string qualifier = RandomBytes(rnd, 3);
  int64_t ts = rnd->OneIn(2) ? kTimestamps[rnd->Uniform(9)] : static_cast<int64_t>(rnd->Next64());
  switch (rnd->Uniform(4)) {
    case 0:
      return CellKey::RowTombstone(row);
    case 1:
      return CellKey::FamilyTombstone(row, family);
    case 2:
      return CellKey::ColumnTombstone(row, family, qualifier);
    default:
      return CellKey::Cell(row, family, qualifier, ts);
  }
}

std::vector<CellKey> Examples() {
  return {
      CellKey::RowTombstone(""),
      CellKey::RowTombstone("row"),
      CellKey::RowTombstone("\x00"s),
      CellKey::RowTombstone("\xff\x00\x00\x01"s),
      CellKey::FamilyTombstone("", "cf"),
      CellKey::FamilyTombstone("r\x00w"s, "cf"),
      CellKey::ColumnTombstone("", "cf", ""),
      CellKey::ColumnTombstone("r", "cf", "\x00\x01"s),
      CellKey::Cell("", "cf", "", 0),
      CellKey::Cell("row", "cf", "qual", 1234567),
      CellKey::Cell("r\x00"s, "f", "\x00"s, -1),
      CellKey::Cell("r", "f", "q", kMinTs),
      CellKey::Cell("r", "f", "q", kMaxTs),
  };
}

TEST(CellKeyTest, RoundTrip) {
  for (const CellKey& key : Examples()) {
    SCOPED_TRACE(key.DebugString());
    std::string encoded = key.Encode();
    CellKey decoded;
    ASSERT_TRUE(CellKey::Decode(encoded, &decoded));
    EXPECT_EQ(decoded.kind, key.kind);
    EXPECT_EQ(decoded.row, key.row);
    EXPECT_EQ(decoded.family, key.family);
    EXPECT_EQ(decoded.qualifier, key.qualifier);
    EXPECT_EQ(decoded.timestamp_micros, key.timestamp_micros);
    EXPECT_EQ(RowPrefix(encoded), EncodeRowPrefix(key.row));
  }
}

TEST(CellKeyTest, ExactBytes) {
  std::string k;
  AppendRowTombstoneKey(&k, "a\x00"s);
  EXPECT_EQ(k, "a\x00\xff\x00\x01\x01"s);
  k.clear();
  AppendFamilyTombstoneKey(&k, "r", "cf");
  EXPECT_EQ(k,
            "r\x00\x01\x02"
            "cf\x00\x01"s);
  k.clear();
  AppendColumnTombstoneKey(&k, "r", "cf", "q");
  EXPECT_EQ(k,
            "r\x00\x01\x02"
            "cf\x00\x02q\x00\x01\x01"s);
  k.clear();
  AppendCellKey(&k, "r", "cf", "q", 0);
  // ~(0 ^ 2^63) = 0x7fffffffffffffff, big-endian.
  EXPECT_EQ(k,
            "r\x00\x01\x02"
            "cf\x00\x02q\x00\x01\x02\x7f\xff\xff\xff\xff\xff\xff\xff"s);
}

TEST(CellKeyTest, TimestampsSortNewestFirst) {
  std::vector<int64_t> ts = {kMinTs, kMinTs + 1, -1000000, -256,    -255,       -1,    0,
                             1,      255,        256,      1000000, kMaxTs - 1, kMaxTs};
  for (size_t i = 0; i + 1 < ts.size(); ++i) {
    std::string older = CellKey::Cell("r", "f", "q", ts[i]).Encode();
    std::string newer = CellKey::Cell("r", "f", "q", ts[i + 1]).Encode();
    EXPECT_LT(newer, older) << ts[i + 1] << " should sort before " << ts[i];
    EXPECT_EQ(DecodeTimestamp(EncodeTimestamp(ts[i])), ts[i]);
  }
}

TEST(CellKeyTest, KindOrderWithinRow) {
  std::vector<CellKey> in_order = {
      CellKey::RowTombstone("r"),
      CellKey::FamilyTombstone("r", "a"),
      CellKey::ColumnTombstone("r", "a", ""),
      CellKey::Cell("r", "a", "", 5),
      CellKey::Cell("r", "a", "", -5),
      CellKey::ColumnTombstone("r", "a", "\x00"s),
      CellKey::Cell("r", "a", "\x00"s, 1),
      CellKey::ColumnTombstone("r", "a", "q"),
      CellKey::Cell("r", "a", "q", 7),
      CellKey::FamilyTombstone("r", "a-"),
      CellKey::FamilyTombstone("r", "b"),
      CellKey::Cell("r", "b", "", 1),
      CellKey::RowTombstone("r\x00"s),
      CellKey::RowTombstone("r\x01"s),
      CellKey::Cell("ra", "a", "", 1),
  };
  for (size_t i = 0; i + 1 < in_order.size(); ++i) {
    SCOPED_TRACE(in_order[i].DebugString() + " < " + in_order[i + 1].DebugString());
    EXPECT_LT(in_order[i].Encode(), in_order[i + 1].Encode());
    EXPECT_LT(in_order[i], in_order[i + 1]);
  }
}

TEST(CellKeyTest, RandomOrderMatchesModelOrder) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::pair<std::string, CellKey>> keys;
    for (int i = 0; i < 200; ++i) {
      CellKey k = RandomCellKey(&rnd);
      keys.emplace_back(k.Encode(), k);
    }
    for (size_t i = 0; i + 1 < keys.size(); ++i) {
      const auto& [ea, a] = keys[i];
      const auto& [eb, b] = keys[i + 1];
      ASSERT_EQ(ea.compare(eb) < 0, a < b) << a.DebugString() << " vs " << b.DebugString();
      ASSERT_EQ(ea == eb, a == b) << a.DebugString() << " vs " << b.DebugString();
    }
    auto by_encoding = keys;
    std::sort(by_encoding.begin(), by_encoding.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    auto by_model = keys;
    std::stable_sort(by_model.begin(), by_model.end(),
                     [](const auto& x, const auto& y) { return x.second < y.second; });
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(by_encoding[i].first, by_model[i].first) << i;
    }
  }
}

TEST(CellKeyTest, ZeroCopyDecodeWithoutEscapes) {
  std::string key = CellKey::Cell("row", "cf", "qual", 42).Encode();
  std::string row_scratch = "untouched", qual_scratch = "untouched";
  CellKeyView view;
  ASSERT_TRUE(DecodeCellKey(key, &view, &row_scratch, &qual_scratch));
  EXPECT_EQ(view.kind, CellKind::kCell);
  EXPECT_EQ(view.row, "row");
  EXPECT_EQ(view.family, "cf");
  EXPECT_EQ(view.qualifier, "qual");
  EXPECT_EQ(view.timestamp_micros, 42);
  EXPECT_EQ(view.row.data(), key.data());
  EXPECT_GE(view.qualifier.data(), key.data());
  EXPECT_LT(view.qualifier.data(), key.data() + key.size());
  EXPECT_EQ(row_scratch, "untouched");
  EXPECT_EQ(qual_scratch, "untouched");

  std::string escaped = CellKey::Cell("r\x00w"s, "cf", "q\x00"s, 42).Encode();
  ASSERT_TRUE(DecodeCellKey(escaped, &view, &row_scratch, &qual_scratch));
  EXPECT_EQ(view.row, "r\x00w"s);
  EXPECT_EQ(view.qualifier, "q\x00"s);
  EXPECT_EQ(view.row.data(), row_scratch.data());
  EXPECT_EQ(view.qualifier.data(), qual_scratch.data());
}

TEST(CellKeyTest, Layout) {
  std::string key = CellKey::Cell("r\x00"s, "fam", "q", 1).Encode();
  CellKeyLayout layout;
  ASSERT_TRUE(ParseCellKeyLayout(key, &layout));
  EXPECT_EQ(layout.kind, CellKind::kCell);
  EXPECT_TRUE(layout.row_escaped);
  EXPECT_FALSE(layout.qualifier_escaped);
  EXPECT_EQ(key.substr(0, layout.row_end), EncodeRowPrefix("r\x00"s));
  EXPECT_EQ(key.substr(0, layout.family_end), EncodeFamilyPrefix("r\x00"s, "fam"));
  EXPECT_EQ(key.substr(0, layout.column_end), EncodeColumnPrefix("r\x00"s, "fam", "q"));
  EXPECT_EQ(layout.family(key), "fam");
  EXPECT_EQ(layout.timestamp_micros, 1);
}

TEST(CellKeyTest, EveryTruncationIsRejected) {
  for (const CellKey& key : Examples()) {
    std::string encoded = key.Encode();
    for (size_t len = 0; len < encoded.size(); ++len) {
      CellKeyView view;
      std::string a, b;
      EXPECT_FALSE(DecodeCellKey(encoded.substr(0, len), &view, &a, &b))
          << key.DebugString() << " cut at " << len;
    }
    // And an extra byte.
    CellKeyView view;
    std::string a, b;
    EXPECT_FALSE(DecodeCellKey(encoded + "x", &view, &a, &b)) << key.DebugString();
  }
}

TEST(CellKeyTest, MalformedInputs) {
  const std::string bad[] = {
      "",
      "\x00"s,            // lone escape
      "r\x00\x02\x01"s,   // bad escape
      "r\x00\x01"s,       // row part only
      "r\x00\x01\x03"s,   // unknown tag
      "r\x00\x01\x01x"s,  // row tombstone with trailing byte
      "r\x00\x01\x02"
      "cf"s,  // family without terminator
      "r\x00\x01\x02"
      "cf\x00\x03"s,  // unknown family tag
      "r\x00\x01\x02"
      "cf\x00\x02q"s,  // qualifier without terminator
      "r\x00\x01\x02"
      "cf\x00\x02q\x00\x01\x02\x01\x02"s,  // short timestamp
      "r\x00\x01\x02"
      "cf\x00\x02q\x00\x01\x03"s,  // unknown column tag
  };
  for (const std::string& key : bad) {
    CellKeyView view;
    std::string a, b;
    EXPECT_FALSE(DecodeCellKey(key, &view, &a, &b)) << testing::PrintToString(key);
    CellKeyLayout layout;
    EXPECT_FALSE(ParseCellKeyLayout(key, &layout)) << testing::PrintToString(key);
  }
}

TEST(CellKeyTest, MutatedKeysDecodeCanonicallyOrFail) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 5000; ++i) {
    std::string key = RandomCellKey(&rnd).Encode();
    int edits = 1 + rnd.Uniform(3);
    for (int e = 0; e < edits && !key.empty(); ++e) {
      size_t pos = rnd.Uniform(key.size());
      switch (rnd.Uniform(3)) {
        case 0:
          key[pos] = static_cast<char>(rnd.Uniform(256));
          break;
        case 1:
          key.erase(pos, 1);
          break;
        default:
          key.insert(pos, 1, static_cast<char>(rnd.Uniform(4)));
          break;
      }
    }
    CellKey decoded;
    if (CellKey::Decode(key, &decoded)) {
      // The encoding is canonical: whatever decodes re-encodes to the same bytes.
      ASSERT_EQ(decoded.Encode(), key) << testing::PrintToString(key);
      ASSERT_EQ(RowPrefix(key), EncodeRowPrefix(decoded.row));
    }
  }
}

TEST(CellKeyTest, RowPrefixOfGarbage) {
  EXPECT_EQ(RowPrefix(""), "");
  EXPECT_EQ(RowPrefix("abc"), "abc");
  EXPECT_EQ(RowPrefix("ab\x00"s), "ab\x00"s);
  EXPECT_EQ(RowPrefix("a\x00\x05\x00\x01zz"s), "a\x00\x05\x00\x01"s);
}

TEST(CellKeyTest, ScopesAreContiguousRanges) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  std::vector<CellKey> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(RandomCellKey(&rnd));
  for (int i = 0; i < 50; ++i) {
    const CellKey& scope = keys[rnd.Uniform(keys.size())];
    std::string row_prefix = EncodeRowPrefix(scope.row);
    std::string family_prefix = EncodeFamilyPrefix(scope.row, scope.family);
    std::string column_prefix = EncodeColumnPrefix(scope.row, scope.family, scope.qualifier);
    for (const CellKey& k : keys) {
      std::string e = k.Encode();
      bool in_row = k.row == scope.row;
      bool in_family = in_row && k.kind != CellKind::kRowTombstone && k.family == scope.family;
      bool in_column =
          in_family && k.kind != CellKind::kFamilyTombstone && k.qualifier == scope.qualifier;
      EXPECT_EQ(in_row, e >= row_prefix && e < ScopeLimit(row_prefix)) << k.DebugString();
      EXPECT_EQ(in_family, e >= family_prefix && e < ScopeLimit(family_prefix)) << k.DebugString();
      EXPECT_EQ(in_column, e >= column_prefix && e < ScopeLimit(column_prefix)) << k.DebugString();
      // Row ranges: a key is in [prefix(a), prefix(b)) iff a <= its row < b.
      EXPECT_EQ(k.row >= scope.row, e >= row_prefix) << k.DebugString();
    }
  }
}

}  // namespace
}  // namespace tessera::model
