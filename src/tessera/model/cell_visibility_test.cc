#include "tessera/model/cell_visibility.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/model/row_mutation.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

using std::string_literals::operator""s;
using Verdict = CellVisibility::Verdict;

struct TestEntry {
  CellKey key;
  uint64_t seq = 0;
  TimeRange range;    // column tombstones
  std::string value;  // cells

  std::string Encoded() const { return key.Encode(); }
  std::string StoredValue() const {
    if (key.kind != CellKind::kColumnTombstone) return value;
    std::string v;
    range.AppendTo(&v);
    return v;
  }
  std::string DebugString() const {
    std::string s = key.DebugString() + " seq=" + std::to_string(seq);
    if (key.kind == CellKind::kColumnTombstone) {
      s += " [" + std::to_string(range.start_micros) + "," + std::to_string(range.end_micros) + ")";
    }
    return s;
  }
};

TestEntry Cell(std::string row, std::string family, std::string qualifier, int64_t ts, uint64_t seq,
               std::string value = "v") {
  return {CellKey::Cell(row, family, qualifier, ts), seq, {}, std::move(value)};
}
TestEntry DelColumn(std::string row, std::string family, std::string qualifier, TimeRange r,
                    uint64_t seq) {
  return {CellKey::ColumnTombstone(row, family, qualifier), seq, r, ""};
}
TestEntry DelFamily(std::string row, std::string family, uint64_t seq) {
  return {CellKey::FamilyTombstone(row, family), seq, {}, ""};
}
TestEntry DelRow(std::string row, uint64_t seq) {
  return {CellKey::RowTombstone(row), seq, {}, ""};
}

struct GcSetup {
  std::map<std::string, GcRule, std::less<>> rules;
  int64_t now_micros = 0;
  bool apply_gc = false;
  bool gc_by_versions = true;
  // Dropped families: entries with a sequence <= the value are dead.
  std::map<std::string, uint64_t, std::less<>> dropped;
};

// Sorts `entries` into storage order (key ascending, sequence descending).
void SortForStorage(std::vector<TestEntry>* entries) {
  std::sort(entries->begin(), entries->end(), [](const TestEntry& a, const TestEntry& b) {
    std::string ka = a.Encoded(), kb = b.Encoded();
    if (ka != kb) return ka < kb;
    return a.seq > b.seq;
  });
}

// Runs CellVisibility over the entries (sorted first); returns verdicts in sorted order.
std::vector<Verdict> RunVisibility(std::vector<TestEntry>* entries, const GcSetup& setup) {
  SortForStorage(entries);
  CellVisibility::Options options;
  options.gc_rule_for = [&setup](std::string_view family) -> const GcRule* {
    auto it = setup.rules.find(family);
    return it == setup.rules.end() ? nullptr : &it->second;
  };
  options.now_micros = setup.now_micros;
  options.apply_gc = setup.apply_gc;
  options.gc_by_versions = setup.gc_by_versions;
  if (!setup.dropped.empty()) {
    options.dropped_before = [&setup](std::string_view family) -> uint64_t {
      auto it = setup.dropped.find(family);
      return it == setup.dropped.end() ? 0 : it->second;
    };
  }
  CellVisibility vis(options);
  std::vector<Verdict> out;
  for (const TestEntry& e : *entries) out.push_back(vis.Add(e.Encoded(), e.seq, e.StoredValue()));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reference model: brute force, every entry against every other.

bool SameColumn(const CellKey& a, const CellKey& b) {
  return a.row == b.row && a.family == b.family && a.qualifier == b.qualifier;
}

// Whether entry `e` (a cell) is deleted or shadowed, ignoring GC.
bool CellDeleted(const std::vector<TestEntry>& all, const TestEntry& e) {
  for (const TestEntry& t : all) {
    if (t.seq <= e.seq || t.key.row != e.key.row) continue;
    switch (t.key.kind) {
      case CellKind::kRowTombstone:
        return true;
      case CellKind::kFamilyTombstone:
        if (t.key.family == e.key.family) return true;
        break;
      case CellKind::kColumnTombstone:
        if (SameColumn(t.key, e.key) && t.range.Contains(e.key.timestamp_micros)) return true;
        break;
      case CellKind::kCell:
        if (t.key == e.key) return true;  // a newer write of the same cell
        break;
    }
  }
  return false;
}

// Whether `e` belongs to a family that was dropped after it was written.
bool Dead(const TestEntry& e, const GcSetup& setup) {
  if (e.key.kind == CellKind::kRowTombstone) return false;
  auto it = setup.dropped.find(e.key.family);
  return it != setup.dropped.end() && e.seq <= it->second;
}

Verdict Reference(const std::vector<TestEntry>& all, const TestEntry& e, const GcSetup& setup) {
  if (Dead(e, setup)) return Verdict::kHidden;
  auto newer_in_scope = [&](CellKind kind, auto&& match) {
    for (const TestEntry& t : all) {
      if (t.key.kind == kind && t.seq > e.seq && t.key.row == e.key.row && match(t)) return true;
    }
    return false;
  };
  auto any = [](const TestEntry&) { return true; };
  auto same_family = [&](const TestEntry& t) { return t.key.family == e.key.family; };
  switch (e.key.kind) {
    case CellKind::kRowTombstone:
      return newer_in_scope(CellKind::kRowTombstone, any) ? Verdict::kHidden : Verdict::kTombstone;
    case CellKind::kFamilyTombstone:
      return newer_in_scope(CellKind::kRowTombstone, any) ||
                     newer_in_scope(CellKind::kFamilyTombstone, same_family)
                 ? Verdict::kHidden
                 : Verdict::kTombstone;
    case CellKind::kColumnTombstone: {
      if (e.range.IsEmpty()) return Verdict::kHidden;
      bool covered = newer_in_scope(CellKind::kRowTombstone, any) ||
                     newer_in_scope(CellKind::kFamilyTombstone, same_family) ||
                     newer_in_scope(CellKind::kColumnTombstone, [&](const TestEntry& t) {
                       return SameColumn(t.key, e.key) && t.range.Covers(e.range);
                     });
      return covered ? Verdict::kHidden : Verdict::kTombstone;
    }
    case CellKind::kCell: {
      if (CellDeleted(all, e)) return Verdict::kHidden;
      int64_t rank = 0;
      for (const TestEntry& c : all) {
        if (c.key.kind == CellKind::kCell && SameColumn(c.key, e.key) &&
            c.key.timestamp_micros > e.key.timestamp_micros && !CellDeleted(all, c) &&
            !Dead(c, setup)) {
          ++rank;
        }
      }
      if (setup.apply_gc) {
        auto it = setup.rules.find(e.key.family);
        if (it != setup.rules.end() &&
            it->second.ShouldCollect(rank, e.key.timestamp_micros, setup.now_micros)) {
          return Verdict::kHidden;
        }
      }
      return Verdict::kVisible;
    }
  }
  return Verdict::kMalformed;
}

void ExpectMatchesReference(std::vector<TestEntry> entries, const GcSetup& setup) {
  std::vector<Verdict> got = RunVisibility(&entries, setup);
  for (size_t i = 0; i < entries.size(); ++i) {
    Verdict want = Reference(entries, entries[i], setup);
    if (got[i] != want) {
      std::string dump;
      for (size_t j = 0; j < entries.size(); ++j) {
        dump += (j == i ? "> " : "  ") + entries[j].DebugString() + " -> " +
                std::string(VerdictName(got[j])) + "\n";
      }
      FAIL() << "entry " << i << " " << entries[i].DebugString() << ": got " << VerdictName(got[i])
             << ", want " << VerdictName(want) << "\n"
             << dump;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases.

Verdict VerdictOf(const std::vector<TestEntry>& sorted, const std::vector<Verdict>& verdicts,
                  const CellKey& key, uint64_t seq) {
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i].key == key && sorted[i].seq == seq) return verdicts[i];
  }
  ADD_FAILURE() << "no entry " << key.DebugString() << " seq " << seq;
  return Verdict::kMalformed;
}

TEST(CellVisibilityTest, WriteAfterRowDeleteIsVisibleEvenWithOlderTimestamp) {
  std::vector<TestEntry> e = {Cell("r", "f", "q", 100, 1), DelRow("r", 2),
                              Cell("r", "f", "q", 50, 3), Cell("r2", "f", "q", 1, 1)};
  std::vector<Verdict> v = RunVisibility(&e, {});
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 100), 1), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::RowTombstone("r"), 2), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 50), 3), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r2", "f", "q", 1), 1), Verdict::kVisible);
}

TEST(CellVisibilityTest, DeleteFromColumnRangeBoundaries) {
  std::vector<TestEntry> e = {Cell("r", "f", "q", 9, 1),   Cell("r", "f", "q", 10, 2),
                              Cell("r", "f", "q", 19, 3),  Cell("r", "f", "q", 20, 4),
                              Cell("r", "f", "q2", 15, 5), DelColumn("r", "f", "q", {10, 20}, 10)};
  std::vector<Verdict> v = RunVisibility(&e, {});
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 9), 1), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 10), 2), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 19), 3), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 20), 4), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q2", 15), 5), Verdict::kVisible);

  // end == 0: no upper bound.
  std::vector<TestEntry> open = {Cell("r", "f", "q", 9, 1), Cell("r", "f", "q", 10, 2),
                                 Cell("r", "f", "q", 1 << 30, 3),
                                 DelColumn("r", "f", "q", {10, 0}, 10)};
  v = RunVisibility(&open, {});
  EXPECT_EQ(VerdictOf(open, v, CellKey::Cell("r", "f", "q", 9), 1), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(open, v, CellKey::Cell("r", "f", "q", 10), 2), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(open, v, CellKey::Cell("r", "f", "q", 1 << 30), 3), Verdict::kHidden);
}

TEST(CellVisibilityTest, FamilyTombstoneOnlyAffectsItsFamily) {
  std::vector<TestEntry> e = {Cell("r", "f", "q", 1, 1),  Cell("r", "g", "q", 1, 2),
                              Cell("r", "f-", "q", 1, 3), Cell("s", "f", "q", 1, 4),
                              DelFamily("r", "f", 10),    Cell("r", "f", "q", 0, 11)};
  std::vector<Verdict> v = RunVisibility(&e, {});
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 1), 1), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "g", "q", 1), 2), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f-", "q", 1), 3), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("s", "f", "q", 1), 4), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::FamilyTombstone("r", "f"), 10), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 0), 11), Verdict::kVisible);
}

TEST(CellVisibilityTest, NewestWriteOfACellWins) {
  std::vector<TestEntry> e = {Cell("r", "f", "q", 5, 1, "old"), Cell("r", "f", "q", 5, 7, "new"),
                              Cell("r", "f", "q", 5, 3, "mid")};
  std::vector<Verdict> v = RunVisibility(&e, {});
  EXPECT_EQ(e[0].value, "new");
  EXPECT_EQ(v, (std::vector<Verdict>{Verdict::kVisible, Verdict::kHidden, Verdict::kHidden}));
}

TEST(CellVisibilityTest, RedundantTombstonesAreHidden) {
  std::vector<TestEntry> e = {DelRow("r", 5),
                              DelRow("r", 3),
                              DelFamily("r", "f", 4),
                              DelFamily("r", "g", 6),
                              DelFamily("r", "g", 5),
                              DelColumn("r", "g", "q", {0, 0}, 7),
                              DelColumn("r", "g", "q", {3, 9}, 4),  // older than family del
                              DelColumn("r", "h", "q", {3, 9}, 8),
                              DelColumn("r", "h", "q", {4, 8}, 7),     // covered by the newer
                              DelColumn("r", "h", "q", {2, 8}, 6),     // not covered
                              DelColumn("r", "h", "q", {20, 20}, 9)};  // empty
  std::vector<Verdict> v = RunVisibility(&e, {});
  EXPECT_EQ(VerdictOf(e, v, CellKey::RowTombstone("r"), 5), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::RowTombstone("r"), 3), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::FamilyTombstone("r", "f"), 4), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::FamilyTombstone("r", "g"), 6), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::FamilyTombstone("r", "g"), 5), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "g", "q"), 7), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "g", "q"), 4), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "h", "q"), 8), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "h", "q"), 7), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "h", "q"), 6), Verdict::kTombstone);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "h", "q"), 9), Verdict::kHidden);
  ExpectMatchesReference(e, {});
}

TEST(CellVisibilityTest, MaxVersionsTwo) {
  GcSetup setup;
  setup.rules["f"] = GcRule::MaxNumVersions(2);
  setup.apply_gc = true;
  std::vector<TestEntry> e = {Cell("r", "f", "q", 1, 1), Cell("r", "f", "q", 2, 2),
                              Cell("r", "f", "q", 3, 3), Cell("r", "f", "q", 4, 4),
                              Cell("r", "f", "p", 1, 5), Cell("r", "g", "q", 1, 6),
                              Cell("r", "g", "q", 2, 7), Cell("r", "g", "q", 3, 8)};
  std::vector<Verdict> v = RunVisibility(&e, setup);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 4), 4), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 3), 3), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 2), 2), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 1), 1), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "p", 1), 5), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "g", "q", 1), 6), Verdict::kVisible);  // no rule

  // A deleted version does not count; duplicates count once.
  std::vector<TestEntry> d = {Cell("r", "f", "q", 4, 1), Cell("r", "f", "q", 3, 2),
                              Cell("r", "f", "q", 3, 3), Cell("r", "f", "q", 2, 4),
                              Cell("r", "f", "q", 1, 5), DelColumn("r", "f", "q", {4, 5}, 9)};
  v = RunVisibility(&d, setup);
  EXPECT_EQ(VerdictOf(d, v, CellKey::Cell("r", "f", "q", 4), 1), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(d, v, CellKey::Cell("r", "f", "q", 3), 3), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(d, v, CellKey::Cell("r", "f", "q", 3), 2), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(d, v, CellKey::Cell("r", "f", "q", 2), 4), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(d, v, CellKey::Cell("r", "f", "q", 1), 5), Verdict::kHidden);

  // Without apply_gc nothing is collected.
  setup.apply_gc = false;
  v = RunVisibility(&e, setup);
  EXPECT_EQ(std::count(v.begin(), v.end(), Verdict::kVisible), 8);
}

TEST(CellVisibilityTest, MaxAgeUsesNow) {
  constexpr int64_t kDay = 86400LL * 1000000;
  GcSetup setup;
  setup.rules["f"] = GcRule::MaxAge(kDay);
  setup.apply_gc = true;
  setup.now_micros = 10 * kDay;
  std::vector<TestEntry> e = {Cell("r", "f", "q", 10 * kDay, 1),
                              Cell("r", "f", "q", 9 * kDay, 2),      // exactly 1 day: kept
                              Cell("r", "f", "q", 9 * kDay - 1, 3),  // expired
                              Cell("r", "f", "q", -5, 4)};
  std::vector<Verdict> v = RunVisibility(&e, setup);
  EXPECT_EQ(v, (std::vector<Verdict>{Verdict::kVisible, Verdict::kVisible, Verdict::kHidden,
                                     Verdict::kHidden}));
  setup.now_micros = 20 * kDay;
  v = RunVisibility(&e, setup);
  EXPECT_EQ(std::count(v.begin(), v.end(), Verdict::kHidden), 4);
}

TEST(CellVisibilityTest, UnionAndIntersection) {
  constexpr int64_t kDay = 86400LL * 1000000;
  const int64_t now = 100 * kDay;
  // Versions (newest first): young, young, old, old.
  std::vector<TestEntry> e = {Cell("r", "f", "q", now, 1), Cell("r", "f", "q", now - 1, 2),
                              Cell("r", "f", "q", now - 5 * kDay, 3),
                              Cell("r", "f", "q", now - 6 * kDay, 4)};
  GcSetup setup;
  setup.apply_gc = true;
  setup.now_micros = now;
  // Collect beyond 1 version OR older than 2 days: keep only the newest.
  setup.rules["f"] = GcRule::Union({GcRule::MaxNumVersions(1), GcRule::MaxAge(2 * kDay)});
  EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kVisible, Verdict::kHidden,
                                                            Verdict::kHidden, Verdict::kHidden}));
  // Collect beyond 1 version AND older than 2 days: the young second version survives.
  setup.rules["f"] = GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(2 * kDay)});
  EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kVisible, Verdict::kVisible,
                                                            Verdict::kHidden, Verdict::kHidden}));
  // Beyond 3 versions AND old: only the last.
  setup.rules["f"] = GcRule::Intersection({GcRule::MaxNumVersions(3), GcRule::MaxAge(2 * kDay)});
  EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kVisible, Verdict::kVisible,
                                                            Verdict::kVisible, Verdict::kHidden}));
}

// Issue 9: a flush or compaction sees part of the data. Here its inputs hold two versions,
// and a newer delete of [2000, 3000) outside them will make "old" the column's newest; with
// gc_by_versions = false it counts no versions, so only age can collect.
TEST(CellVisibilityTest, Issue9WithoutVersionCountsOnlyAgeCollects) {
  constexpr int64_t kDay = 86400LL * 1000000;
  GcSetup setup;
  setup.apply_gc = true;
  setup.now_micros = 10 * kDay;
  setup.gc_by_versions = false;
  std::vector<TestEntry> e = {Cell("k\n", "_u", "ab", 2000, 2, "new"),
                              Cell("k\n", "_u", "ab", 1000, 1, "old")};
  for (const GcRule& rule :
       {GcRule::MaxNumVersions(1), GcRule::Union({GcRule::MaxNumVersions(1)}),
        GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(kDay)})}) {
    setup.rules["_u"] = rule;
    EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kVisible, Verdict::kVisible}))
        << rule.ToString();
  }
  setup.rules["_u"] = GcRule::Union({GcRule::MaxNumVersions(1), GcRule::MaxAge(kDay)});
  EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kHidden, Verdict::kHidden}));
  // With the whole column in view, versions count (and the delete makes "old" the newest).
  setup.gc_by_versions = true;
  setup.rules["_u"] = GcRule::MaxNumVersions(1);
  EXPECT_EQ(RunVisibility(&e, setup), (std::vector<Verdict>{Verdict::kVisible, Verdict::kHidden}));
  e.push_back(DelColumn("k\n", "_u", "ab", {2000, 3000}, 3));
  std::vector<Verdict> v = RunVisibility(&e, setup);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("k\n", "_u", "ab", 2000), 2), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("k\n", "_u", "ab", 1000), 1), Verdict::kVisible);
}

TEST(CellVisibilityTest, DeletesSomeVersions) {
  auto range = [](TimeRange r) {
    std::string v;
    r.AppendTo(&v);
    return v;
  };
  const std::string column = CellKey::ColumnTombstone("r", "f", "q").Encode();
  EXPECT_FALSE(DeletesSomeVersions(column, range({0, 0})));  // the whole column
  EXPECT_TRUE(DeletesSomeVersions(column, range({2000, 3000})));
  EXPECT_TRUE(DeletesSomeVersions(column, range({2000, 0})));  // the newer ones
  EXPECT_TRUE(DeletesSomeVersions(column, range({0, 3000})));  // the older ones
  // A cell whose value happens to look like a range, other tombstones, malformed input.
  EXPECT_FALSE(DeletesSomeVersions(CellKey::Cell("r", "f", "q", 5).Encode(), range({1, 2})));
  EXPECT_FALSE(DeletesSomeVersions(CellKey::FamilyTombstone("r", "f").Encode(), ""));
  EXPECT_FALSE(DeletesSomeVersions(CellKey::RowTombstone("r").Encode(), range({1, 2})));
  EXPECT_FALSE(DeletesSomeVersions("junk", range({1, 2})));
}

TEST(CellVisibilityTest, MalformedEntries) {
  CellVisibility vis({});
  EXPECT_EQ(vis.Add("garbage", 1, ""), Verdict::kMalformed);
  std::string col = CellKey::ColumnTombstone("r", "f", "q").Encode();
  EXPECT_EQ(vis.Add(col, 5, "short"), Verdict::kMalformed);
  // A malformed tombstone hides nothing.
  EXPECT_EQ(vis.Add(CellKey::Cell("r", "f", "q", 1).Encode(), 1, "v"), Verdict::kVisible);
  EXPECT_TRUE(KeepInCompaction(Verdict::kMalformed, true));
}

TEST(CellVisibilityTest, DroppedFamilyEntriesAreDeadUpToTheDrop) {
  // Family f dropped at sequence 10 and created again; g never dropped.
  std::vector<TestEntry> e = {Cell("r", "f", "q", 100, 5),  Cell("r", "f", "q", 90, 12),
                              DelFamily("r", "f", 8),       DelColumn("r", "f", "p", {}, 9),
                              Cell("r", "f", "p", 1, 11),   Cell("r", "f", "p", 2, 7),
                              Cell("r", "g", "q", 100, 3),  DelRow("r", 2),
                              Cell("r", "f", "q", 80, 10),  Cell("r", "f", "q", 70, 11)};
  GcSetup setup;
  setup.dropped["f"] = 10;
  setup.apply_gc = true;
  setup.rules["f"] = GcRule::MaxNumVersions(2);
  std::vector<Verdict> v = RunVisibility(&e, setup);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 100), 5), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 80), 10), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::FamilyTombstone("r", "f"), 8), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::ColumnTombstone("r", "f", "p"), 9), Verdict::kHidden);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "p", 2), 7), Verdict::kHidden);
  // Written after the drop: visible, and the dead versions do not count for max-versions GC.
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "p", 1), 11), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 90), 12), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "f", "q", 70), 11), Verdict::kVisible);
  // Other families and row tombstones are not affected.
  EXPECT_EQ(VerdictOf(e, v, CellKey::Cell("r", "g", "q", 100), 3), Verdict::kVisible);
  EXPECT_EQ(VerdictOf(e, v, CellKey::RowTombstone("r"), 2), Verdict::kTombstone);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference(e, setup));
}

TEST(CellVisibilityTest, KeepInCompaction) {
  EXPECT_TRUE(KeepInCompaction(Verdict::kVisible, false));
  EXPECT_TRUE(KeepInCompaction(Verdict::kVisible, true));
  EXPECT_FALSE(KeepInCompaction(Verdict::kHidden, false));
  EXPECT_FALSE(KeepInCompaction(Verdict::kHidden, true));
  EXPECT_TRUE(KeepInCompaction(Verdict::kTombstone, false));
  EXPECT_FALSE(KeepInCompaction(Verdict::kTombstone, true));
}

TEST(CellVisibilityTest, ResetForgetsTheRow) {
  CellVisibility vis({});
  EXPECT_EQ(vis.Add(CellKey::RowTombstone("r").Encode(), 10, ""), Verdict::kTombstone);
  EXPECT_EQ(vis.Add(CellKey::Cell("r", "f", "q", 1).Encode(), 5, "v"), Verdict::kHidden);
  vis.Reset();
  EXPECT_EQ(vis.Add(CellKey::Cell("r", "f", "q", 1).Encode(), 5, "v"), Verdict::kVisible);
}

// Mutations of one batch take effect in order when each entry gets the next sequence.
TEST(CellVisibilityTest, BatchOrderMatters) {
  auto run = [](const RowMutation& m) {
    std::vector<TestEntry> entries;
    uint64_t seq = 100;
    Status s = ForEachCellEntry(m.encoded(), [&](std::string_view key, std::string_view value) {
      TestEntry e;
      EXPECT_TRUE(CellKey::Decode(key, &e.key));
      e.seq = seq++;
      if (e.key.kind == CellKind::kColumnTombstone) {
        EXPECT_TRUE(TimeRange::Decode(value, &e.range));
      } else {
        e.value = std::string(value);
      }
      entries.push_back(e);
    });
    EXPECT_TRUE(s.ok()) << s;
    std::vector<Verdict> v = RunVisibility(&entries, {});
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].key.kind == CellKind::kCell) return v[i];
    }
    ADD_FAILURE() << "no cell";
    return Verdict::kMalformed;
  };
  RowMutation delete_then_set("r");
  delete_then_set.DeleteFromRow().SetCell("f", "q", 7, "v");
  EXPECT_EQ(run(delete_then_set), Verdict::kVisible);
  RowMutation set_then_delete("r");
  set_then_delete.SetCell("f", "q", 7, "v").DeleteFromRow();
  EXPECT_EQ(run(set_then_delete), Verdict::kHidden);
}

// ---------------------------------------------------------------------------------------------
// Random entry sets against the reference model.

GcRule RandomRule(Random* rnd) {
  switch (rnd->Uniform(6)) {
    case 0:
      return GcRule::None();
    case 1:
      return GcRule::MaxNumVersions(1 + rnd->Uniform(3));
    case 2:
      return GcRule::MaxAge(1 + rnd->Uniform(8));
    case 3:
      return GcRule::Union(
          {GcRule::MaxNumVersions(1 + rnd->Uniform(3)), GcRule::MaxAge(1 + rnd->Uniform(8))});
    case 4:
      return GcRule::Intersection(
          {GcRule::MaxNumVersions(1 + rnd->Uniform(3)), GcRule::MaxAge(1 + rnd->Uniform(8))});
    default:
      return GcRule::Union(
          {GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(1 + rnd->Uniform(4))}),
           GcRule::MaxNumVersions(2 + rnd->Uniform(3))});
  }
}

TEST(CellVisibilityTest, RandomAgainstReferenceModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  const std::string rows[] = {"", "a", "a\x00"s, "b"};
  const std::string families[] = {"f", "g", "f-"};
  const std::string qualifiers[] = {"", "p", "q", "q\x00"s};
  const int64_t timestamps[] = {-2, 0, 1, 2, 3, 5, 8};
  const int64_t bounds[] = {-3, 0, 1, 2, 3, 4, 6, 9};
  for (int round = 0; round < 300; ++round) {
    GcSetup setup;
    setup.apply_gc = rnd.OneIn(2);
    setup.now_micros = rnd.Uniform(12);
    for (const std::string& f : families) {
      if (!rnd.OneIn(3)) setup.rules[f] = RandomRule(&rnd);
    }
    const int n = 1 + rnd.Uniform(60);
    if (rnd.OneIn(3)) {
      for (const std::string& f : families) {
        if (rnd.OneIn(2)) setup.dropped[f] = rnd.Uniform(n + 1);
      }
    }
    // Few rows and columns so that scopes collide often.
    std::vector<uint64_t> seqs(n);
    for (int i = 0; i < n; ++i) seqs[i] = i + 1;
    for (int i = n - 1; i > 0; --i) std::swap(seqs[i], seqs[rnd.Uniform(i + 1)]);
    std::vector<TestEntry> entries;
    for (int i = 0; i < n; ++i) {
      const std::string& row = rows[rnd.Uniform(round % 2 == 0 ? 2 : 4)];
      const std::string& family = families[rnd.Uniform(3)];
      const std::string& qualifier = qualifiers[rnd.Uniform(4)];
      int kind = rnd.Uniform(20);
      if (kind < 12) {
        entries.push_back(Cell(row, family, qualifier, timestamps[rnd.Uniform(7)], seqs[i]));
      } else if (kind < 17) {
        TimeRange r{bounds[rnd.Uniform(8)], bounds[rnd.Uniform(8)]};
        if (rnd.OneIn(3)) r.start_micros = 0;
        entries.push_back(DelColumn(row, family, qualifier, r, seqs[i]));
      } else if (kind < 19) {
        entries.push_back(DelFamily(row, family, seqs[i]));
      } else {
        entries.push_back(DelRow(row, seqs[i]));
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesReference(entries, setup)) << "round " << round;
  }
}

}  // namespace
}  // namespace tessera::model
