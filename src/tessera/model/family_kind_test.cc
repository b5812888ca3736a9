#include "tessera/model/family_kind.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/model/cell_key.h"
#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

using std::string_literals::operator""s;

std::string BigEndian(uint64_t v) { return BigEndian64String(v); }

std::string Stored(const FamilyKind& kind, std::string_view presented) {
  std::string stored;
  Status s = kind.ToStored("f", presented, &stored);
  EXPECT_TRUE(s.ok()) << s;
  return stored;
}

std::string Presented(const FamilyKind& kind, std::string_view stored) {
  std::string presented;
  Status s = kind.ToPresented("f", stored, &presented);
  EXPECT_TRUE(s.ok()) << s;
  return presented;
}

TEST(FamilyKindTest, PlainIsIdentity) {
  FamilyKind kind;
  EXPECT_TRUE(kind.plain());
  EXPECT_EQ(kind.Name(), "plain");
  for (std::string q : {""s, "a"s, "a:b"s, "\x00\xff"s}) {
    EXPECT_EQ(Stored(kind, q), q);
    EXPECT_EQ(Presented(kind, q), q);
  }
  std::string prefix;
  EXPECT_EQ(kind.SuperColumnPrefix("f", "s", &prefix).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FamilyKindTest, OfSchema) {
  model::FamilySchema f;
  f.time_sorted = true;
  EXPECT_EQ(FamilyKind::Of(f).Name(), "time_sorted");
  f.super_columns = true;
  EXPECT_EQ(FamilyKind::Of(f).Name(), "super_columns+time_sorted");
  f.time_sorted = false;
  EXPECT_EQ(FamilyKind::Of(f).Name(), "super_columns");
}

TEST(FamilyKindTest, TimeSortedInvertsAndSortsNewestFirst) {
  FamilyKind kind(false, true);
  const std::string t1 = BigEndian(1000), t2 = BigEndian(2000), t3 = BigEndian(~0ull);
  EXPECT_EQ(Stored(kind, t1), BigEndian(~1000ull));
  EXPECT_EQ(Presented(kind, Stored(kind, t1)), t1);
  EXPECT_EQ(Presented(kind, Stored(kind, t3)), t3);
  // Ascending stored order is descending time.
  EXPECT_LT(Stored(kind, t2), Stored(kind, t1));
  EXPECT_LT(Stored(kind, t3), Stored(kind, t2));
}

TEST(FamilyKindTest, TimeSortedRejectsOtherLengths) {
  FamilyKind kind(false, true);
  std::string stored;
  for (std::string q : {""s, "1234567"s, "123456789"s}) {
    Status s = kind.ToStored("events", q, &stored);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << q;
    EXPECT_NE(s.message().find("\"events\""), std::string_view::npos) << s;
    EXPECT_NE(s.message().find("exactly 8 bytes"), std::string_view::npos) << s;
  }
  std::string presented;
  EXPECT_EQ(kind.ToPresented("events", "short", &presented).code(), absl::StatusCode::kDataLoss);
}

TEST(FamilyKindTest, SuperColumnsRoundTrip) {
  FamilyKind kind(true, false);
  EXPECT_EQ(Stored(kind, "s:c"),
            "s\x00"s
            "c");
  EXPECT_EQ(Stored(kind, "s:"), "s\x00"s);
  // Split at the first ':'; the column may hold ':' and 0x00.
  EXPECT_EQ(Stored(kind, "s:c:d\x00"s),
            "s\x00"s
            "c:d\x00"s);
  for (std::string q : {"s:c"s, "s:"s, "s:c:d\x00"s, "\xff:\x01"s}) {
    EXPECT_EQ(Presented(kind, Stored(kind, q)), q);
  }
  std::string prefix;
  ASSERT_TRUE(kind.SuperColumnPrefix("f", "inbox", &prefix).ok());
  EXPECT_EQ(prefix, "inbox\x00"s);
  EXPECT_EQ(Stored(kind, "inbox:x").substr(0, prefix.size()), prefix);
}

TEST(FamilyKindTest, SuperColumnsRejectBadQualifiers) {
  FamilyKind kind(true, false);
  std::string stored;
  for (std::string q : {""s, "nocolon"s, ":c"s, "s\x00x:c"s}) {
    Status s = kind.ToStored("sc", q, &stored);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << DisplayBytes(q);
    EXPECT_NE(s.message().find("\"sc\""), std::string_view::npos) << s;
  }
  std::string prefix;
  EXPECT_FALSE(kind.SuperColumnPrefix("sc", "", &prefix).ok());
  EXPECT_FALSE(kind.SuperColumnPrefix("sc", "a:b", &prefix).ok());
  EXPECT_FALSE(kind.SuperColumnPrefix("sc", "a\x00"s, &prefix).ok());
  std::string presented;
  EXPECT_EQ(kind.ToPresented("sc", "no-separator", &presented).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(kind.ToPresented("sc", "\x00x"s, &presented).code(), absl::StatusCode::kDataLoss);
}

TEST(FamilyKindTest, SuperTimeSorted) {
  FamilyKind kind(true, true);
  const std::string t1 = BigEndian(5), t2 = BigEndian(6);
  EXPECT_EQ(Stored(kind, "s:" + t1), "s\x00"s + BigEndian(~5ull));
  EXPECT_EQ(Presented(kind, Stored(kind, "s:" + t1)), "s:" + t1);
  EXPECT_LT(Stored(kind, "s:" + t2), Stored(kind, "s:" + t1));
  std::string stored;
  EXPECT_EQ(kind.ToStored("f", "s:1234", &stored).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kind.ToStored("f", t1, &stored).code(), absl::StatusCode::kInvalidArgument);
}

// Super columns are contiguous and ordered by their names' bytes; every column of a super
// column starts with its prefix and no other's.
TEST(FamilyKindTest, SuperColumnsContiguousInStoredOrder) {
  FamilyKind kind(true, false);
  Random rnd(7);
  std::vector<std::pair<std::string, std::string>> cells;  // (stored, super)
  const std::vector<std::string> supers = {"a", "a-", "ab", "b", "\x01", "a\xff"};
  for (int i = 0; i < 300; ++i) {
    const std::string& super = supers[rnd.Uniform(supers.size())];
    std::string column = rnd.Bytes(rnd.Uniform(5));
    cells.push_back({Stored(kind, super + ":" + column), super});
  }
  std::sort(cells.begin(), cells.end());
  std::vector<std::string> order;
  for (const auto& [stored, super] : cells) {
    if (order.empty() || order.back() != super) order.push_back(super);
    std::string prefix;
    ASSERT_TRUE(kind.SuperColumnPrefix("f", super, &prefix).ok());
    EXPECT_EQ(stored.compare(0, prefix.size(), prefix), 0);
  }
  std::vector<std::string> sorted_supers = order;
  std::sort(sorted_supers.begin(), sorted_supers.end());
  EXPECT_EQ(order, sorted_supers);  // each super appears once, in byte order
}

TEST(FamilyKindTest, RandomRoundTrip) {
  Random rnd(11);
  for (int i = 0; i < 2000; ++i) {
    FamilyKind kind(rnd.OneIn(2), rnd.OneIn(2));
    std::string q;
    if (kind.super_columns()) q = "s" + std::to_string(rnd.Uniform(10)) + ":";
    q += rnd.Bytes(kind.time_sorted() ? 8 : rnd.Uniform(10));
    std::string stored, presented;
    ASSERT_TRUE(kind.ToStored("f", q, &stored).ok());
    ASSERT_TRUE(kind.ToPresented("f", stored, &presented).ok());
    EXPECT_EQ(presented, q);
  }
}

// A schema of one plain, one time-sorted and one super-column family.
TableSchema KindsSchema() {
  TableSchema schema;
  schema.families["plain"];
  schema.families["ts"].time_sorted = true;
  schema.families["sc"].super_columns = true;
  return schema;
}

TEST(FamilyKindsTest, UnknownFamiliesArePlain) {
  const FamilyKinds kinds(KindsSchema());
  EXPECT_FALSE(kinds.all_plain());
  EXPECT_TRUE(kinds.Get("plain").plain());
  EXPECT_TRUE(kinds.Get("created-later").plain());
  EXPECT_TRUE(kinds.Get("ts").time_sorted());
  EXPECT_TRUE(FamilyKinds(TableSchema()).all_plain());
}

TEST(FamilyKindsTest, RowsToPresentedFormAndBackToStoredOrder) {
  const FamilyKinds kinds(KindsSchema());
  const FamilyKind ts(false, true), sc(true, false);
  // A row as storage returns it: stored qualifiers, in stored order.
  Row row{"r",
          {Cell{"plain", "q", 1, "v", {}}, Cell{"sc", Stored(sc, "a:x"), 1, "v", {}},
           Cell{"sc", Stored(sc, "a-:y"), 1, "v", {}},
           Cell{"ts", Stored(ts, BigEndian(2000)), 1, "new", {}},
           Cell{"ts", Stored(ts, BigEndian(1000)), 1, "old", {}}}};
  ASSERT_TRUE(kinds.ToPresented(&row).ok());
  const std::vector<std::string> presented = {"q", "a:x", "a-:y", BigEndian(2000), BigEndian(1000)};
  for (size_t i = 0; i < row.cells.size(); ++i) EXPECT_EQ(row.cells[i].qualifier, presented[i]);
  // A filter's merge sorts by presented bytes; RestoreStoredOrder undoes that.
  Row shuffled = row;
  std::sort(shuffled.cells.begin(), shuffled.cells.end(), CellOrderLess);
  EXPECT_NE(shuffled, row);
  kinds.RestoreStoredOrder(&shuffled);
  EXPECT_EQ(shuffled, row);
}

TEST(FamilyKindsTest, DamagedStoredQualifiersAreDataLoss) {
  const FamilyKinds kinds(KindsSchema());
  Row row{"r", {Cell{"ts", "not 8 bytes", 1, "v", {}}}};
  EXPECT_EQ(kinds.ToPresented(&row).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tessera::model
