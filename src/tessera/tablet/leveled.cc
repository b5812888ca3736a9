#include "tessera/tablet/leveled.h"

#include <algorithm>

#include "tessera/model/cell_key.h"
#include "tessera/storage/dbformat.h"

namespace tessera::tablet {
FileRows RowsOf(const storage::FileMeta& meta) {
  return {model::RowPrefix(storage::ExtractUserKey(meta.smallest)),
          model::RowPrefix(storage::ExtractUserKey(meta.largest))};
}

bool RowsOverlap(const FileRows& a, const FileRows& b) {
  return !(a.last < b.first || b.last < a.first);
}

FileRows RowsUnion(const FileRows& a, const FileRows& b) {
  return {std::min(a.first, b.first), std::max(a.last, b.last)};
}

int Level0Files(const std::vector<const storage::FileMeta*>& files) {
  return static_cast<int>(
      std::count_if(files.begin(), files.end(), [](const auto* f) { return f->level == 0; }));
}

uint32_t MajorCompactionLevel(const std::vector<const storage::FileMeta*>& files) {
  uint32_t level = 1;
  for (const auto* f : files) level = std::max(level, std::min(f->level, kMaxLevel));
  return level;
}

std::optional<LeveledCompaction> PickLeveledCompaction(
    const std::vector<const storage::FileMeta*>& files, const LevelOptions& options,
    const std::vector<std::string>& cursors, std::optional<size_t> read_exhausted) {
  std::vector<std::vector<size_t>> levels(kMaxLevel + 1);
  std::vector<uint64_t> bytes(kMaxLevel + 1, 0);
  for (size_t i = 0; i < files.size(); ++i) {
    const uint32_t level = std::min(files[i]->level, kMaxLevel);
    levels[level].push_back(i);
    bytes[level] += files[i]->size;
  }
  auto by_first_row = [&](size_t a, size_t b) {
    return RowsOf(*files[a]).first < RowsOf(*files[b]).first;
  };
  for (auto& level : levels) std::sort(level.begin(), level.end(), by_first_row);

  // The level with the highest score >= 1.
  int best = -1;
  double best_score = 0;
  const double score0 = static_cast<double>(levels[0].size()) /
                        static_cast<double>(std::max(1, options.level0_compaction_files));
  if (score0 >= 1) {
    best = 0;
    best_score = score0;
  }
  double target = static_cast<double>(std::max<uint64_t>(1, options.level1_bytes));
  for (uint32_t level = 1; level < kMaxLevel; ++level) {
    const double score = static_cast<double>(bytes[level]) / target;
    if (score >= 1 && score > best_score) {
      best = static_cast<int>(level);
      best_score = score;
    }
    target *= std::max(2, options.level_size_multiplier);
  }
  std::optional<size_t> chosen;  // the one file of level >= 1 to take, if not by cursor
  if (best < 0 && read_exhausted.has_value() && *read_exhausted < files.size() &&
      files[*read_exhausted]->level < kMaxLevel) {
    best = static_cast<int>(files[*read_exhausted]->level);
    chosen = read_exhausted;
  }
  if (best < 0) return std::nullopt;

  LeveledCompaction c;
  c.input_level = static_cast<uint32_t>(best);
  c.output_level = c.input_level + 1;
  std::vector<size_t> from;  // the inputs taken from input_level
  if (c.input_level == 0) {
    from = levels[0];  // every file: the age invariant of docs/compaction.md
  } else {
    const std::vector<size_t>& level = levels[c.input_level];
    const std::string_view cursor =
        c.input_level < cursors.size() ? std::string_view(cursors[c.input_level]) : "";
    size_t pick = level.front();
    if (chosen.has_value()) {
      pick = *chosen;
    } else {
      for (size_t i : level) {
        if (RowsOf(*files[i]).first > cursor) {
          pick = i;
          break;
        }
      }
    }
    from.push_back(pick);
    c.cursor = std::string(RowsOf(*files[pick]).last);
  }
  FileRows span = RowsOf(*files[from.front()]);
  for (size_t i : from) span = RowsUnion(span, RowsOf(*files[i]));

  std::vector<size_t> next;  // the files of output_level the inputs overlap
  for (size_t i : levels[c.output_level]) {
    if (RowsOverlap(RowsOf(*files[i]), span)) next.push_back(i);
  }
  if (next.empty()) {
    // Files of level 0 move only when they do not overlap each other either (sorted by first
    // row, each must end before the next begins).
    bool disjoint = true;
    for (size_t k = 1; k < from.size(); ++k) {
      disjoint &= RowsOf(*files[from[k - 1]]).last < RowsOf(*files[from[k]]).first;
    }
    c.trivial_move = disjoint;
  }
  for (size_t i : next) span = RowsUnion(span, RowsOf(*files[i]));

  c.can_purge_tombstones = true;
  for (uint32_t level = c.output_level + 1; level <= kMaxLevel; ++level) {
    for (size_t i : levels[level]) {
      if (RowsOverlap(RowsOf(*files[i]), span)) c.can_purge_tombstones = false;
    }
  }
  c.inputs = std::move(from);
  c.inputs.insert(c.inputs.end(), next.begin(), next.end());
  std::sort(c.inputs.begin(), c.inputs.end());
  return c;
}

}  // namespace tessera::tablet
