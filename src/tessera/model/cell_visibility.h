// CellVisibility decides which stored entries are visible: the one piece of logic shared by the
// read path and by compaction, so that both always agree (docs/data_model.md).
//
// Input: entries in storage order, i.e. by encoded cell key ascending and, for an equal key, by
// sequence number descending. Each entry is (cell key, sequence, value). Semantics (Bigtable's):
//
//   * A tombstone with sequence s hides entries of its scope with a smaller sequence:
//       row tombstone     -> everything in the row;
//       family tombstone  -> everything in that family of the row;
//       column tombstone  -> cells of that column whose timestamp is in its TimeRange (the
//                            entry's value, EncodeTimeRange).
//     Entries with a larger sequence are not hidden: a write after a delete is visible even with
//     an older timestamp. A tombstone that hides nothing a kept one does not (an older row or
//     family tombstone of the same scope, a column tombstone covered by a newer one or by a row
//     or family tombstone, an empty time range) is redundant and reported as kHidden.
//   * For an equal cell key only the newest sequence is the cell; older duplicates are kHidden.
//   * Dropped families (Options::dropped_before): a family tombstone, column tombstone or cell
//     of family f with sequence <= dropped_before(f) is dead: kHidden, whatever else holds (it
//     hides nothing either: what it could hide is older, so dead too). A family dropped and
//     created again keeps only what was written after the drop. Row tombstones belong to no
//     family and are not affected. Dropping such entries is safe in any compaction, as every
//     entry they could hide is dead as well.
//   * GC (when Options::apply_gc): a visible cell's version rank is the number of visible cells
//     newer than it in its column, counting cells that GC collects. If its family's rule says
//     GcRule::ShouldCollect(rank, timestamp, now), the cell is kHidden. The rank is only right
//     when the stream holds every entry that could hide a newer version: a stream that is part
//     of the data (a flush or compaction) sets Options::gc_by_versions = false when newer data
//     outside it may hold a delete of some versions only (DeletesSomeVersions), and then every
//     rank counts as 0 (the newest: no version rule collects it; age rules still do).
//
// The stream must start at the start of a row (before its row tombstone); to start inside a
// row, first Add() the row's row tombstone and the family's tombstone entries. Keys that are not
// well-formed cell keys are reported as kMalformed and otherwise ignored.
//
// Cost: no allocation per entry in steady state (the previous key is kept in a reused buffer);
// Options::gc_rule_for and Options::dropped_before are called at most once per distinct family
// name (results are cached for the object's lifetime, so they must not change meanwhile).
//
// Thread-safety: not thread-safe; one instance per read or compaction.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "tessera/model/cell_key.h"
#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"

namespace tessera::model {

class CellVisibility {
 public:
  struct Options {
    // The GC rule of a family; nullptr (or an empty function) means keep everything. Only
    // called when apply_gc. The returned rule must outlive the CellVisibility.
    std::function<const GcRule*(std::string_view family)> gc_rule_for;
    // "Now" for max-age rules, in micros since the epoch.
    int64_t now_micros = 0;
    // Whether GC-collectable cells are hidden. Compaction sets it; reads may (Bigtable reads
    // may still return collectable cells, as GC is lazy).
    bool apply_gc = false;
    // Whether version counts may collect (max_num_versions, alone or inside a union or an
    // intersection). False when entries newer than the stream's, outside it, may include a
    // column tombstone with a time range (DeletesSomeVersions): it can delete the newer versions
    // of a column and keep an older one, which is then the column's newest and must stay
    // (issue 9). Reads see every entry and leave it true.
    bool gc_by_versions = true;
    // The sequence at or below which the family's entries are dead (the tablet's drop mark,
    // tablet::DroppedBefore); 0 = never dropped. An empty function means no family was dropped.
    // Applied whatever apply_gc says.
    std::function<uint64_t(std::string_view family)> dropped_before;
  };

  enum class Verdict {
    kVisible,    // a live cell: return it / keep it
    kHidden,     // shadowed, deleted, collected or a redundant tombstone: drop in compaction
    kTombstone,  // a live tombstone: not returned by reads; kept in compaction unless purgeable
    kMalformed,  // not a cell key (or a column tombstone with a bad value): reads report
                 // corruption; compaction keeps it, never destroying bytes it does not understand
  };

  explicit CellVisibility(Options options);

  CellVisibility(const CellVisibility&) = delete;
  CellVisibility& operator=(const CellVisibility&) = delete;

  // Classifies the next entry. REQUIRES: (cell_key, seq) comes after the previous entry in
  // storage order (key ascending, then seq descending). `cell_key` and `value` are not retained.
  Verdict Add(std::string_view cell_key, uint64_t seq, std::string_view value);
  // The same, for a key the caller has parsed already (ParseCellKeyLayout returned true and
  // filled `layout` from `cell_key`), so that a reader that decodes the cell too parses once.
  Verdict Add(std::string_view cell_key, const CellKeyLayout& layout, uint64_t seq,
              std::string_view value);

  // Forgets all state, as if newly constructed (e.g. after a seek to another row).
  void Reset();

 private:
  struct ColumnTombstone {
    uint64_t seq;
    TimeRange range;
  };

  // What the options say about one family, cached.
  struct FamilyInfo {
    std::string name;
    const GcRule* gc_rule = nullptr;  // nullptr: keep everything (or GC not applied)
    uint64_t dropped_before = 0;
  };

  // Sets gc_rule_ and family_dropped_ for `family`.
  void LookUpFamily(std::string_view family);

  const Options options_;

  // The previous well-formed key and its layout.
  std::string prev_key_;
  CellKeyLayout prev_;
  bool have_prev_ = false;

  // Row scope: the highest row tombstone sequence (0 = none).
  uint64_t row_tombstone_seq_ = 0;
  // Family scope: entries with a smaller sequence are hidden (max of row and family tombstone).
  uint64_t family_floor_ = 0;
  const GcRule* gc_rule_ = nullptr;
  // Entries of the current family with a sequence <= this are dead (the family was dropped).
  uint64_t family_dropped_ = 0;
  // Column scope: the live column tombstones, and the number of visible cells so far.
  std::vector<ColumnTombstone> column_tombstones_;
  int64_t column_versions_ = 0;

  // gc_rule_for and dropped_before results by family name.
  absl::InlinedVector<FamilyInfo, 2> family_cache_;  // most reads touch one or two families
};

// Whether compaction writes an entry with this verdict to its output. `can_purge_tombstones` is
// true only when no older data for the keys can exist outside the compaction (it includes the
// tablet's oldest file); then live tombstones have done their work and are dropped too.
inline bool KeepInCompaction(CellVisibility::Verdict verdict, bool can_purge_tombstones) {
  switch (verdict) {
    case CellVisibility::Verdict::kVisible:
    case CellVisibility::Verdict::kMalformed:
      return true;
    case CellVisibility::Verdict::kHidden:
      return false;
    case CellVisibility::Verdict::kTombstone:
      return !can_purge_tombstones;
  }
  return true;
}

std::string_view VerdictName(CellVisibility::Verdict verdict);

// Whether a storage entry (cell key and value) is a column tombstone whose time range is not
// every timestamp: a delete of some versions of a column that keeps the others, after which an
// older version can be the newest (CellVisibility::Options::gc_by_versions). False for cells,
// other tombstones, whole-column deletes and malformed entries.
bool DeletesSomeVersions(std::string_view cell_key, std::string_view value);

}  // namespace tessera::model
