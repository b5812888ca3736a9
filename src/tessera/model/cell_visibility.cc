#include "tessera/model/cell_visibility.h"

#include <algorithm>
#include <cstring>

namespace tessera::model {

namespace {

// Families looked up are few (a table has a handful); beyond this many, stop caching.
constexpr size_t kMaxCachedFamilies = 64;

// How many scopes two well-formed keys share: 0 nothing, 1 the row, 2 the family, 3 the column,
// 4 the whole key (two cells with the same key).
int SharedScopes(std::string_view a, const CellKeyLayout& la, std::string_view b,
                 const CellKeyLayout& lb) {
  if (la.row_end != lb.row_end || std::memcmp(a.data(), b.data(), la.row_end) != 0) return 0;
  if (la.kind == CellKind::kRowTombstone || lb.kind == CellKind::kRowTombstone) return 1;
  if (la.family_end != lb.family_end ||
      std::memcmp(a.data() + la.row_end, b.data() + la.row_end, la.family_end - la.row_end) != 0) {
    return 1;
  }
  if (la.kind == CellKind::kFamilyTombstone || lb.kind == CellKind::kFamilyTombstone) return 2;
  if (la.column_end != lb.column_end ||
      std::memcmp(a.data() + la.family_end, b.data() + la.family_end,
                  la.column_end - la.family_end) != 0) {
    return 2;
  }
  if (la.kind != CellKind::kCell || lb.kind != CellKind::kCell) return 3;
  // Both cells of one column: equal keys iff equal timestamps.
  return la.timestamp_micros == lb.timestamp_micros ? 4 : 3;
}

}  // namespace

std::string_view VerdictName(CellVisibility::Verdict verdict) {
  switch (verdict) {
    case CellVisibility::Verdict::kVisible:
      return "Visible";
    case CellVisibility::Verdict::kHidden:
      return "Hidden";
    case CellVisibility::Verdict::kTombstone:
      return "Tombstone";
    case CellVisibility::Verdict::kMalformed:
      return "Malformed";
  }
  return "Unknown";
}

bool DeletesSomeVersions(std::string_view cell_key, std::string_view value) {
  if (value.size() != TimeRange::kEncodedSize) return false;  // cheap test first: the write path
  CellKeyLayout layout;
  if (!ParseCellKeyLayout(cell_key, &layout) || layout.kind != CellKind::kColumnTombstone) {
    return false;
  }
  TimeRange range;
  if (!TimeRange::Decode(value, &range)) return false;
  return range.start_micros > 0 || range.end_micros != 0;
}

CellVisibility::CellVisibility(Options options) : options_(std::move(options)) {}

void CellVisibility::Reset() {
  prev_key_.clear();
  have_prev_ = false;
  row_tombstone_seq_ = 0;
  family_floor_ = 0;
  gc_rule_ = nullptr;
  family_dropped_ = 0;
  column_tombstones_.clear();
  column_versions_ = 0;
}

void CellVisibility::LookUpFamily(std::string_view family) {
  for (const FamilyInfo& info : family_cache_) {
    if (info.name == family) {
      gc_rule_ = info.gc_rule;
      family_dropped_ = info.dropped_before;
      return;
    }
  }
  gc_rule_ = nullptr;
  if (options_.apply_gc && options_.gc_rule_for) {
    gc_rule_ = options_.gc_rule_for(family);
    if (gc_rule_ != nullptr && gc_rule_->is_none()) gc_rule_ = nullptr;
  }
  family_dropped_ = options_.dropped_before ? options_.dropped_before(family) : 0;
  if (family_cache_.size() < kMaxCachedFamilies) {
    family_cache_.push_back(FamilyInfo{std::string(family), gc_rule_, family_dropped_});
  }
}

CellVisibility::Verdict CellVisibility::Add(std::string_view key, uint64_t seq,
                                            std::string_view value) {
  CellKeyLayout layout;
  if (!ParseCellKeyLayout(key, &layout)) return Verdict::kMalformed;
  return Add(key, layout, seq, value);
}

CellVisibility::Verdict CellVisibility::Add(std::string_view key, const CellKeyLayout& layout,
                                            uint64_t seq, std::string_view value) {
  const int shared = have_prev_ ? SharedScopes(key, layout, prev_key_, prev_) : 0;
  if (shared < 1) row_tombstone_seq_ = 0;
  if (shared < 2) {
    family_floor_ = row_tombstone_seq_;
    if (layout.kind == CellKind::kRowTombstone) {
      gc_rule_ = nullptr;
      family_dropped_ = 0;
    } else {
      LookUpFamily(layout.family(key));
    }
  }
  if (shared < 3) {
    column_tombstones_.clear();
    column_versions_ = 0;
  }
  if (shared < 4) {
    prev_key_.assign(key.data(), key.size());
    prev_ = layout;
    have_prev_ = true;
  }

  switch (layout.kind) {
    case CellKind::kRowTombstone:
      if (seq < row_tombstone_seq_) return Verdict::kHidden;
      row_tombstone_seq_ = seq;
      return Verdict::kTombstone;

    case CellKind::kFamilyTombstone:
      if (seq <= family_dropped_ || seq < family_floor_) return Verdict::kHidden;
      family_floor_ = seq;
      return Verdict::kTombstone;

    case CellKind::kColumnTombstone: {
      TimeRange range;
      if (!TimeRange::Decode(value, &range)) return Verdict::kMalformed;
      if (seq <= family_dropped_ || range.IsEmpty() || seq < family_floor_) {
        return Verdict::kHidden;
      }
      for (const ColumnTombstone& t : column_tombstones_) {
        if (t.seq > seq && t.range.Covers(range)) return Verdict::kHidden;
      }
      column_tombstones_.push_back({seq, range});
      return Verdict::kTombstone;
    }

    case CellKind::kCell: {
      if (shared == 4) return Verdict::kHidden;  // an older write of the same cell
      if (seq <= family_dropped_ || seq < family_floor_) return Verdict::kHidden;
      const int64_t ts = layout.timestamp_micros;
      for (const ColumnTombstone& t : column_tombstones_) {
        if (t.seq > seq && t.range.Contains(ts)) return Verdict::kHidden;
      }
      const int64_t versions_newer = column_versions_++;
      const int64_t rank = options_.gc_by_versions ? versions_newer : 0;
      if (gc_rule_ != nullptr && gc_rule_->ShouldCollect(rank, ts, options_.now_micros)) {
        return Verdict::kHidden;
      }
      return Verdict::kVisible;
    }
  }
  return Verdict::kMalformed;
}

}  // namespace tessera::model
