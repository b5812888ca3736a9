// Tablet ids: the prefix and ordinal layout, the two sources of prefixes, and recognising a
// table's common prefix.
#include "tessera/catalog/tablet_id.h"

#include <set>

#include "gtest/gtest.h"

namespace tessera::catalog {
namespace {

TEST(TabletIdTest, PrefixAndOrdinal) {
  const uint64_t id = MakeTabletId(0x123456789abc, 7);
  EXPECT_EQ(TabletIdPrefix(id), 0x123456789abcu);
  EXPECT_EQ(TabletIdOrdinal(id), 7u);
  EXPECT_EQ(MakeTabletId(5, 0), 5u << 16);
  // Ids of the previous version (a counter) have prefix 0.
  EXPECT_EQ(TabletIdPrefix(3), 0u);
}

TEST(TabletIdTest, RevisionPrefixes) {
  ASSERT_TRUE(TabletPrefixFromRevision(1).ok());
  EXPECT_EQ(*TabletPrefixFromRevision(42), 42u);
  EXPECT_EQ(*TabletPrefixFromRevision(int64_t{1} << 46), uint64_t{1} << 46);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{1} << 47}) {
    auto p = TabletPrefixFromRevision(bad);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TabletIdTest, LocalPrefixesNeverMeetRevisions) {
  Random random(7);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t p = NewLocalTabletPrefix(&random);
    EXPECT_GE(p, kLocalPrefixBit);
    EXPECT_LT(p, kLocalPrefixBit << 1);
    EXPECT_EQ(TabletIdPrefix(MakeTabletId(p, kMaxInitialTablets - 1)), p);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 1000u);
  // The same seed draws the same prefixes (simulations replay).
  Random a(9), b(9);
  EXPECT_EQ(NewLocalTabletPrefix(&a), NewLocalTabletPrefix(&b));
}

TEST(TabletIdTest, CommonPrefix) {
  EXPECT_EQ(CommonTabletPrefix({MakeTabletId(9, 0), MakeTabletId(9, 1), MakeTabletId(9, 2)}),
            std::optional<uint64_t>(9));
  EXPECT_EQ(CommonTabletPrefix({}), std::nullopt);
  EXPECT_EQ(CommonTabletPrefix({1, 2, 3}), std::nullopt);  // the previous version's counter
  EXPECT_EQ(CommonTabletPrefix({MakeTabletId(9, 1), MakeTabletId(9, 0)}), std::nullopt);
  EXPECT_EQ(CommonTabletPrefix({MakeTabletId(9, 0), MakeTabletId(8, 1)}), std::nullopt);
  EXPECT_EQ(CommonTabletPrefix({MakeTabletId(9, 0), MakeTabletId(9, 2)}), std::nullopt);
}

}  // namespace
}  // namespace tessera::catalog
