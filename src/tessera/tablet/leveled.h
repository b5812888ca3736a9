// Leveled compaction's choices (docs/compaction.md), as pure functions over the files of one
// locality group of one tablet: which files to merge, into which level, whether they may simply
// move, and whether tombstones may go.
//
// Level 0 holds the flushes' outputs, which overlap. Every level i >= 1 is a sorted run: files
// whose row ranges do not overlap. Overlap is always judged on rows (RowsOf), never on cell
// keys, so that a tombstone and every older cell it may hide meet in the same compaction.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/storage/version_edit.h"

namespace tessera::tablet {

// The deepest level a file may reach.
inline constexpr uint32_t kMaxLevel = 6;

struct LevelOptions {
  // Level 0 is compacted into level 1 once it holds this many files.
  int level0_compaction_files = 4;
  // Flushes wait while level 0 holds this many files (and a compaction can reduce them).
  int level0_stop_files = 12;
  // Target size of level 1; each deeper level may hold `level_size_multiplier` times more.
  uint64_t level1_bytes = 256ull << 20;
  int level_size_multiplier = 10;
  // Outputs into levels >= 1 are cut at the first row boundary past this size.
  uint64_t file_bytes = 32ull << 20;
};

// The rows a file holds: the row prefixes (model::RowPrefix) of its smallest and largest cell
// keys, which order like the rows. Views into `meta`.
struct FileRows {
  std::string_view first;
  std::string_view last;
};
FileRows RowsOf(const storage::FileMeta& meta);
bool RowsOverlap(const FileRows& a, const FileRows& b);
// The smallest range of rows holding both.
FileRows RowsUnion(const FileRows& a, const FileRows& b);

struct LeveledCompaction {
  uint32_t input_level = 0;
  uint32_t output_level = 1;
  std::vector<size_t> inputs;  // indexes into the files given, ascending
  // The inputs overlap nothing they would be merged with: they move to output_level unchanged
  // (a manifest edit, no bytes rewritten).
  bool trivial_move = false;
  // No file deeper than output_level overlaps the inputs' rows: nothing older exists for them.
  bool can_purge_tombstones = false;
  // For input_level >= 1: the last row of the input taken from it, where that level's next
  // compaction starts (LevelDB's compaction pointer).
  std::string cursor;
};

// Picks the compaction of the level with the highest score >= 1 (docs/compaction.md); when no
// level scores 1, the compaction of files[*read_exhausted], a file whose read budget ran out
// ("Compaction by reads": all of level 0 when it is in level 0, else that file and what it
// overlaps below); else nullopt. `files`: one locality group's files, any order. `cursors[i]`:
// where level i's next compaction starts (missing or empty = at its first file).
std::optional<LeveledCompaction> PickLeveledCompaction(
    const std::vector<const storage::FileMeta*>& files, const LevelOptions& options,
    const std::vector<std::string>& cursors, std::optional<size_t> read_exhausted = std::nullopt);

// How many of `files` are in level 0.
int Level0Files(const std::vector<const storage::FileMeta*>& files);

// Where a major compaction of all of `files` writes: the deepest level present, at least 1.
uint32_t MajorCompactionLevel(const std::vector<const storage::FileMeta*>& files);

}  // namespace tessera::tablet
