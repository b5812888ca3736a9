#include "tessera/tablet/leveled.h"

#include <gtest/gtest.h>

#include "tessera/model/cell_key.h"
#include "tessera/storage/dbformat.h"

namespace tessera::tablet {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// A file of `level` holding rows [first, last], `size` bytes.
storage::FileMeta File(uint32_t level, std::string_view first, std::string_view last,
                       uint64_t size = kMiB) {
  storage::FileMeta m;
  m.level = level;
  m.size = size;
  m.smallest = storage::MakeInternalKey(model::EncodeRowPrefix(first) + "\x01", 9,
                                        storage::ValueType::kValue);
  m.largest = storage::MakeInternalKey(model::EncodeFamilyPrefix(last, "cf") + "\x02zz", 1,
                                       storage::ValueType::kValue);
  return m;
}

std::vector<const storage::FileMeta*> Pointers(const std::vector<storage::FileMeta>& files) {
  std::vector<const storage::FileMeta*> p;
  for (const auto& f : files) p.push_back(&f);
  return p;
}

LevelOptions Options() {
  LevelOptions o;
  o.level0_compaction_files = 4;
  o.level1_bytes = 10 * kMiB;
  o.level_size_multiplier = 10;
  return o;
}

TEST(LeveledTest, RowsNotCellKeysDecideOverlap) {
  // A file ending in a column tombstone of row "r" and one starting at a cell of the same
  // column: their cell keys do not overlap, their rows do.
  storage::FileMeta a = File(1, "a", "r");
  storage::FileMeta b = File(2, "r", "z");
  b.smallest = storage::MakeInternalKey(model::EncodeColumnPrefix("r", "cf", "q") + "\x02", 5,
                                        storage::ValueType::kValue);
  a.largest = storage::MakeInternalKey(model::EncodeColumnPrefix("r", "cf", "q") + "\x01", 8,
                                       storage::ValueType::kValue);
  ASSERT_LT(storage::ExtractUserKey(a.largest), storage::ExtractUserKey(b.smallest));
  EXPECT_TRUE(RowsOverlap(RowsOf(a), RowsOf(b)));
  EXPECT_FALSE(RowsOverlap(RowsOf(File(1, "a", "c")), RowsOf(File(1, "d", "f"))));
  // A row that is a proper prefix of another is a different row.
  EXPECT_FALSE(RowsOverlap(RowsOf(File(1, "a", "ab")), RowsOf(File(1, "abc", "b"))));
}

TEST(LeveledTest, NothingToDoBelowEveryTarget) {
  std::vector<storage::FileMeta> files = {File(0, "a", "z"), File(0, "a", "z"),
                                          File(1, "a", "m", 4 * kMiB), File(1, "n", "z", 5 * kMiB)};
  EXPECT_FALSE(PickLeveledCompaction(Pointers(files), Options(), {}).has_value());
}

// Compaction by reads: with no level at its target, a file whose read budget ran out is
// compacted -- level 0 whole (the age invariant), a deeper file with what it overlaps below.
TEST(LeveledTest, AFileReadsExhaustedIsCompactedWhenNoLevelScores) {
  std::vector<storage::FileMeta> files = {File(0, "a", "z"), File(1, "a", "f", 3 * kMiB),
                                          File(0, "b", "y"), File(1, "g", "m", 3 * kMiB),
                                          File(2, "a", "h"), File(2, "i", "z")};
  ASSERT_FALSE(PickLeveledCompaction(Pointers(files), Options(), {}).has_value());
  auto c = PickLeveledCompaction(Pointers(files), Options(), {}, /*read_exhausted=*/2);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(0u, c->input_level);
  EXPECT_EQ(1u, c->output_level);
  EXPECT_EQ((std::vector<size_t>{0, 1, 2, 3}), c->inputs);  // both level-0 files, not just #2
  EXPECT_FALSE(c->can_purge_tombstones);

  c = PickLeveledCompaction(Pointers(files), Options(), {}, /*read_exhausted=*/3);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(1u, c->input_level);
  EXPECT_EQ(2u, c->output_level);
  EXPECT_EQ((std::vector<size_t>{3, 4, 5}), c->inputs);  // g..m meets a..h and i..z
  EXPECT_EQ(model::EncodeRowPrefix("m"), c->cursor);

  // A level over its target goes first.
  files.push_back(File(1, "n", "z", 6 * kMiB));
  c = PickLeveledCompaction(Pointers(files), Options(), {}, /*read_exhausted=*/2);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(1u, c->input_level);
  // A file of the deepest level has nowhere to go.
  std::vector<storage::FileMeta> deepest = {File(kMaxLevel, "a", "z")};
  EXPECT_FALSE(PickLeveledCompaction(Pointers(deepest), Options(), {}, 0).has_value());
}

TEST(LeveledTest, LevelZeroGoesWholeIntoLevelOneWithWhatItOverlaps) {
  std::vector<storage::FileMeta> files = {File(0, "c", "k"), File(0, "d", "e"), File(1, "a", "b"),
                                          File(1, "c", "f"), File(0, "e", "j"), File(1, "g", "m"),
                                          File(0, "f", "h"), File(1, "x", "z"), File(2, "a", "d")};
  auto c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(0u, c->input_level);
  EXPECT_EQ(1u, c->output_level);
  EXPECT_EQ((std::vector<size_t>{0, 1, 3, 4, 5, 6}), c->inputs);
  EXPECT_FALSE(c->trivial_move);
  EXPECT_FALSE(c->can_purge_tombstones);  // level 2 holds rows c..d
  files[8] = File(2, "n", "z");
  c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->can_purge_tombstones);
}

TEST(LeveledTest, DisjointFilesMoveInsteadOfMerging) {
  // Sequential inserts: level-0 files that overlap nothing.
  std::vector<storage::FileMeta> files = {File(0, "e", "f"), File(0, "g", "h"), File(0, "c", "d"),
                                          File(0, "i", "j"), File(1, "a", "b")};
  auto c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->trivial_move);
  EXPECT_EQ((std::vector<size_t>{0, 1, 2, 3}), c->inputs);
  files[3] = File(0, "h", "j");  // overlaps "g".."h"
  c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->trivial_move);
}

TEST(LeveledTest, AFullLevelCompactsOneFileInTurn) {
  // Level 1 over its 10 MiB target; level 2 under its 100 MiB.
  std::vector<storage::FileMeta> files = {
      File(1, "a", "c", 4 * kMiB),  File(1, "d", "f", 4 * kMiB),  File(1, "g", "i", 4 * kMiB),
      File(2, "a", "b", 20 * kMiB), File(2, "c", "e", 20 * kMiB), File(2, "j", "k", 20 * kMiB)};
  auto c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(1u, c->input_level);
  EXPECT_EQ((std::vector<size_t>{0, 3, 4}), c->inputs);
  EXPECT_TRUE(c->can_purge_tombstones);
  // The next compaction of level 1 starts after the rows of this one.
  std::vector<std::string> cursors(2);
  cursors[1] = c->cursor;
  c = PickLeveledCompaction(Pointers(files), Options(), cursors);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((std::vector<size_t>{1, 4}), c->inputs);
  cursors[1] = c->cursor;
  c = PickLeveledCompaction(Pointers(files), Options(), cursors);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((std::vector<size_t>{2}), c->inputs);
  EXPECT_TRUE(c->trivial_move);
  cursors[1] = c->cursor;
  c = PickLeveledCompaction(Pointers(files), Options(), cursors);  // wraps around
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((std::vector<size_t>{0, 3, 4}), c->inputs);
}

TEST(LeveledTest, TheMostOverfullLevelGoesFirst) {
  std::vector<storage::FileMeta> files = {File(0, "a", "z"), File(0, "a", "z"), File(0, "a", "z"),
                                          File(0, "a", "z"),              // score 1
                                          File(1, "a", "z", 30 * kMiB)};  // score 3
  auto c = PickLeveledCompaction(Pointers(files), Options(), {});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(1u, c->input_level);
  EXPECT_EQ(2u, c->output_level);
}

TEST(LeveledTest, CountsAndMajorLevel) {
  std::vector<storage::FileMeta> files = {File(0, "a", "z"), File(3, "a", "z"), File(0, "b", "c")};
  EXPECT_EQ(2, Level0Files(Pointers(files)));
  EXPECT_EQ(3u, MajorCompactionLevel(Pointers(files)));
  EXPECT_EQ(1u, MajorCompactionLevel(Pointers({File(0, "a", "b")})));
}

}  // namespace
}  // namespace tessera::tablet
