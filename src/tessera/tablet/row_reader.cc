#include "tessera/tablet/row_reader.h"

#include <algorithm>
#include <utility>

#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/merger.h"

namespace tessera::tablet {
namespace {

using storage::Iterator;
using storage::SequenceNumber;

// A user-key interval [lo, hi); hi empty = unbounded.
struct KeyInterval {
  std::string lo;
  std::string hi;
};

bool FileOverlaps(const storage::FileMeta& meta, const KeyInterval& range) {
  std::string_view smallest = storage::ExtractUserKey(meta.smallest);
  std::string_view largest = storage::ExtractUserKey(meta.largest);
  if (largest < std::string_view(range.lo)) return false;
  if (!range.hi.empty() && smallest >= std::string_view(range.hi)) return false;
  return true;
}

// Merges every source of the snapshot that may hold keys in `range` (and, when `row_prefix` is
// given, that may hold that row according to its bloom filter).
std::unique_ptr<Iterator> NewSnapshotIterator(const TabletSnapshot& snapshot,
                                              const KeyInterval& range,
                                              const std::string* row_prefix,
                                              const storage::TableReadOptions& read_options) {
  std::vector<std::unique_ptr<Iterator>> children;
  for (const auto& mem : snapshot.memtables) children.push_back(mem->NewIterator());
  for (const auto& file : snapshot.files->files) {
    if (!FileOverlaps(file->meta(), range)) continue;
    if (row_prefix != nullptr && !file->table()->KeyMayMatch(*row_prefix)) continue;
    children.push_back(file->table()->NewIterator(read_options));
  }
  return storage::NewMergingIterator(storage::InternalKeyComparator(), std::move(children));
}

model::CellVisibility::Options VisibilityOptions(const TabletSnapshot& snapshot,
                                                 const model::ReadSpec& spec) {
  // The snapshot holds the descriptor and drop marks, which outlive every reader of it.
  const model::TableSchema* schema = &snapshot.descriptor->schema;
  const DropMarks* marks = snapshot.drop_marks.get();
  model::CellVisibility::Options options{
      .gc_rule_for = [schema](std::string_view family) { return schema->FindGcRule(family); },
      .now_micros = snapshot.now_micros,
      .apply_gc = spec.hide_collectable,
      .dropped_before = {}};
  if (marks != nullptr && !marks->empty()) {
    options.dropped_before = [marks](std::string_view family) {
      return DroppedBefore(*marks, family);
    };
  }
  return options;
}

// The ReadSpec's selection over visible cells, which arrive in key order.
class SpecFilter {
 public:
  explicit SpecFilter(const model::ReadSpec& spec) : spec_(spec) {}

  bool FamilyChosen(std::string_view family) const {
    if (spec_.families.empty()) return true;
    return std::find(spec_.families.begin(), spec_.families.end(), family) != spec_.families.end();
  }

  bool ColumnChosen(std::string_view family, std::string_view qualifier) const {
    if (spec_.columns.empty()) return true;
    for (const auto& c : spec_.columns) {
      if (c.family == family && c.qualifier == qualifier) return true;
    }
    return false;
  }

  // REQUIRES: cells of one column arrive together, newest first.
  bool Accept(std::string_view family, std::string_view qualifier, int64_t ts) {
    if (!FamilyChosen(family) || !ColumnChosen(family, qualifier)) return false;
    const model::TimeRange& tr = spec_.time_range;
    if (ts < tr.start_micros || (tr.end_micros != 0 && ts >= tr.end_micros)) return false;
    if (spec_.max_versions > 0) {
      if (family != last_family_ || qualifier != last_qualifier_) {
        last_family_.assign(family.data(), family.size());
        last_qualifier_.assign(qualifier.data(), qualifier.size());
        versions_ = 0;
      }
      if (++versions_ > spec_.max_versions) return false;
    }
    return true;
  }

  void StartRow() {
    last_family_.clear();
    last_qualifier_.clear();
    versions_ = 0;
  }

 private:
  const model::ReadSpec& spec_;
  std::string last_family_;
  std::string last_qualifier_;
  int versions_ = 0;
};

// Feeds entries through visibility and the spec, collecting the cells of rows.
class CellCollector {
 public:
  CellCollector(const TabletSnapshot& snapshot, const model::ReadSpec& spec)
      : sequence_(snapshot.sequence),
        visibility_(VisibilityOptions(snapshot, spec)),
        filter_(spec) {}

  // Returns DataLoss for a malformed key. Appends the cell to `row` when visible and chosen.
  Status Add(std::string_view ikey, std::string_view value, model::Row* row) {
    storage::ParsedInternalKey parsed;
    if (!storage::ParseInternalKey(ikey, &parsed)) {
      return absl::DataLossError("malformed internal key in tablet data");
    }
    if (parsed.sequence > sequence_) return Status();  // written after the snapshot
    model::CellVisibility::Verdict verdict =
        visibility_.Add(parsed.user_key, parsed.sequence, value);
    if (verdict == model::CellVisibility::Verdict::kMalformed) {
      return absl::DataLossError("malformed cell key or tombstone in tablet data");
    }
    if (verdict != model::CellVisibility::Verdict::kVisible) return Status();
    model::CellKeyView cell;
    if (!model::DecodeCellKey(parsed.user_key, &cell, &row_scratch_, &qualifier_scratch_)) {
      return absl::DataLossError("malformed cell key in tablet data");
    }
    if (!filter_.Accept(cell.family, cell.qualifier, cell.timestamp_micros)) return Status();
    if (row->cells.empty()) row->key.assign(cell.row.data(), cell.row.size());
    row->cells.push_back(model::Cell{std::string(cell.family),
                                     std::string(cell.qualifier),
                                     cell.timestamp_micros,
                                     std::string(value),
                                     {}});
    return Status();
  }

  void StartRow() { filter_.StartRow(); }

  // Forgets everything about the entries added so far: the next entry may come from anywhere
  // (it must still be the first entry of a row, see CellVisibility).
  void Restart() {
    visibility_.Reset();
    filter_.StartRow();
  }

 private:
  const SequenceNumber sequence_;
  model::CellVisibility visibility_;
  SpecFilter filter_;
  std::string row_scratch_;
  std::string qualifier_scratch_;
};

// Key intervals of one row that hold what `spec` asks for, in key order: the row's tombstones,
// then for each chosen family its tombstone and its chosen columns (or the whole family).
std::vector<KeyInterval> RowSegments(std::string_view row, const model::ReadSpec& spec) {
  std::string row_prefix = model::EncodeRowPrefix(row);
  std::vector<KeyInterval> segments;
  if (spec.families.empty() && spec.columns.empty()) {
    segments.push_back({row_prefix, model::ScopeLimit(row_prefix)});
    return segments;
  }
  // Row tombstone: the row prefix followed by its kind byte.
  std::string row_tombstone;
  model::AppendRowTombstoneKey(&row_tombstone, row);
  segments.push_back({row_tombstone, model::ScopeLimit(row_tombstone)});

  SpecFilter filter(spec);
  std::vector<std::pair<std::string, std::string>> columns;  // (family, qualifier)
  for (const auto& c : spec.columns) {
    if (filter.FamilyChosen(c.family)) columns.emplace_back(c.family, c.qualifier);
  }
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  if (spec.columns.empty()) {
    std::vector<std::string> families = spec.families;
    std::sort(families.begin(), families.end());
    families.erase(std::unique(families.begin(), families.end()), families.end());
    for (const auto& f : families) {
      std::string prefix = model::EncodeFamilyPrefix(row, f);
      segments.push_back({prefix, model::ScopeLimit(prefix)});
    }
    return segments;
  }
  std::string_view current_family;
  bool have_family = false;
  for (const auto& [family, qualifier] : columns) {
    if (!have_family || family != current_family) {
      std::string tomb;
      model::AppendFamilyTombstoneKey(&tomb, row, family);
      segments.push_back({tomb, model::ScopeLimit(tomb)});
      current_family = family;
      have_family = true;
    }
    std::string prefix = model::EncodeColumnPrefix(row, family, qualifier);
    segments.push_back({prefix, model::ScopeLimit(prefix)});
  }
  return segments;
}

class ScanIterator final : public RowIterator {
 public:
  ScanIterator(TabletSnapshot snapshot, KeyInterval range, const model::ReadSpec& spec,
               uint64_t limit)
      : snapshot_(std::move(snapshot)),
        range_(std::move(range)),
        spec_(spec),
        limit_(limit),
        collector_(snapshot_, spec_) {
    storage::TableReadOptions ro;
    iter_ = NewSnapshotIterator(snapshot_, range_, nullptr, ro);
    iter_->Seek(storage::MakeInternalKey(range_.lo, storage::kMaxSequenceNumber,
                                         storage::kValueTypeForSeek));
    Advance();
  }

  bool Valid() const override { return valid_; }
  const model::Row& row() const override { return row_; }
  void Next() override { Advance(); }
  Status status() const override { return status_; }

 private:
  // Collects the next row that has a chosen cell.
  void Advance() {
    valid_ = false;
    if (!status_.ok() || (limit_ > 0 && returned_ >= limit_)) return;
    row_.key.clear();
    row_.cells.clear();
    while (iter_->Valid()) {
      std::string_view ukey = storage::ExtractUserKey(iter_->key());
      if (!range_.hi.empty() && ukey >= std::string_view(range_.hi)) break;
      std::string_view prefix = model::RowPrefix(ukey);
      if (prefix != current_prefix_) {
        if (!row_.cells.empty()) {
          valid_ = true;
          ++returned_;
          current_prefix_.assign(prefix.data(), prefix.size());
          collector_.StartRow();
          // The entry under the iterator belongs to the next row; it is fed on the next call.
          return;
        }
        current_prefix_.assign(prefix.data(), prefix.size());
        collector_.StartRow();
      }
      status_ = collector_.Add(iter_->key(), iter_->value(), &row_);
      if (!status_.ok()) return;
      iter_->Next();
    }
    if (!iter_->status().ok()) {
      status_ = iter_->status();
      return;
    }
    if (!row_.cells.empty()) {
      valid_ = true;
      ++returned_;
    }
  }

  TabletSnapshot snapshot_;
  const KeyInterval range_;
  const model::ReadSpec spec_;
  const uint64_t limit_;
  CellCollector collector_;
  std::unique_ptr<Iterator> iter_;
  std::string current_prefix_;
  model::Row row_;
  bool valid_ = false;
  uint64_t returned_ = 0;
  Status status_;
};

// Rows in decreasing order. Invariant between calls: iter_ is at the last entry before the
// start of the row returned last (or of the range's end), or !Valid().
class ReverseScanIterator final : public RowIterator {
 public:
  ReverseScanIterator(TabletSnapshot snapshot, KeyInterval range, const model::ReadSpec& spec,
                      uint64_t limit)
      : snapshot_(std::move(snapshot)),
        range_(std::move(range)),
        spec_(spec),
        limit_(limit),
        collector_(snapshot_, spec_) {
    storage::TableReadOptions ro;
    iter_ = NewSnapshotIterator(snapshot_, range_, nullptr, ro);
    if (range_.hi.empty()) {
      iter_->SeekToLast();
    } else {
      StepBefore(range_.hi);
    }
    Advance();
  }

  bool Valid() const override { return valid_; }
  const model::Row& row() const override { return row_; }
  void Next() override { Advance(); }
  Status status() const override { return status_; }

 private:
  static std::string SeekKey(std::string_view user_key) {
    return storage::MakeInternalKey(user_key, storage::kMaxSequenceNumber,
                                    storage::kValueTypeForSeek);
  }

  // Positions iter_ at the last entry whose user key is < `user_key`.
  void StepBefore(std::string_view user_key) {
    iter_->Seek(SeekKey(user_key));
    if (iter_->Valid()) {
      iter_->Prev();
    } else if (iter_->status().ok()) {
      iter_->SeekToLast();  // every entry is before it
    }
  }

  // Collects the previous row that has a chosen cell.
  void Advance() {
    valid_ = false;
    if (!status_.ok() || (limit_ > 0 && returned_ >= limit_)) return;
    while (iter_->Valid()) {
      std::string_view ukey = storage::ExtractUserKey(iter_->key());
      // Range bounds are row prefixes, so a key at or above `lo` belongs to a row inside it.
      if (ukey < std::string_view(range_.lo)) break;
      const std::string_view prefix = model::RowPrefix(ukey);
      current_prefix_.assign(prefix.data(), prefix.size());
      row_.key.clear();
      row_.cells.clear();
      collector_.Restart();
      iter_->Seek(SeekKey(current_prefix_));
      for (; iter_->Valid(); iter_->Next()) {
        if (model::RowPrefix(storage::ExtractUserKey(iter_->key())) != current_prefix_) break;
        status_ = collector_.Add(iter_->key(), iter_->value(), &row_);
        if (!status_.ok()) return;
      }
      if (!iter_->status().ok()) break;
      StepBefore(current_prefix_);
      if (!row_.cells.empty()) {
        valid_ = true;
        ++returned_;
        return;
      }
    }
    if (!iter_->status().ok()) status_ = iter_->status();
  }

  TabletSnapshot snapshot_;
  const KeyInterval range_;
  const model::ReadSpec spec_;
  const uint64_t limit_;
  CellCollector collector_;
  std::unique_ptr<Iterator> iter_;
  std::string current_prefix_;
  model::Row row_;
  bool valid_ = false;
  uint64_t returned_ = 0;
  Status status_;
};

}  // namespace

StatusOr<std::optional<model::Row>> ReadRowFromSnapshot(const TabletSnapshot& snapshot,
                                                        std::string_view row,
                                                        const model::ReadSpec& spec,
                                                        storage::ReadStats* stats) {
  std::string row_prefix = model::EncodeRowPrefix(row);
  KeyInterval whole_row{row_prefix, model::ScopeLimit(row_prefix)};
  storage::TableReadOptions ro;
  ro.stats = stats;
  std::unique_ptr<Iterator> iter = NewSnapshotIterator(snapshot, whole_row, &row_prefix, ro);
  CellCollector collector(snapshot, spec);
  model::Row result;
  for (const KeyInterval& seg : RowSegments(row, spec)) {
    iter->Seek(
        storage::MakeInternalKey(seg.lo, storage::kMaxSequenceNumber, storage::kValueTypeForSeek));
    for (; iter->Valid(); iter->Next()) {
      if (storage::ExtractUserKey(iter->key()) >= std::string_view(seg.hi)) break;
      RETURN_IF_ERROR(collector.Add(iter->key(), iter->value(), &result));
    }
    RETURN_IF_ERROR(iter->status());
  }
  if (result.cells.empty()) return std::optional<model::Row>();
  return std::optional<model::Row>(std::move(result));
}

std::unique_ptr<RowIterator> NewSnapshotScan(TabletSnapshot snapshot, const model::RowRange& range,
                                             const model::ReadSpec& spec,
                                             const ScanOptions& options) {
  const TabletDescriptor& d = *snapshot.descriptor;
  std::string start = std::max(range.start, d.start_row);
  std::string end = range.end;
  if (!d.end_row.empty() && (end.empty() || d.end_row < end)) end = d.end_row;
  KeyInterval keys;
  if (!start.empty()) keys.lo = model::EncodeRowPrefix(start);
  if (!end.empty()) keys.hi = model::EncodeRowPrefix(end);
  if (!keys.hi.empty() && keys.lo >= keys.hi) {
    keys.hi = keys.lo;  // empty range
  }
  if (options.reversed) {
    return std::make_unique<ReverseScanIterator>(std::move(snapshot), std::move(keys), spec,
                                                 options.limit);
  }
  return std::make_unique<ScanIterator>(std::move(snapshot), std::move(keys), spec, options.limit);
}

Status WarmRowInSnapshot(const TabletSnapshot& snapshot, std::string_view row) {
  std::string row_prefix = model::EncodeRowPrefix(row);
  std::string limit = model::ScopeLimit(row_prefix);
  for (const auto& file : snapshot.files->files) {
    if (!FileOverlaps(file->meta(), KeyInterval{row_prefix, limit})) continue;
    if (!file->table()->KeyMayMatch(row_prefix)) continue;
    RETURN_IF_ERROR(file->table()->WarmBlocksFor(
        storage::MakeInternalKey(row_prefix, storage::kMaxSequenceNumber,
                                 storage::kValueTypeForSeek),
        storage::MakeInternalKey(limit, storage::kMaxSequenceNumber, storage::kValueTypeForSeek)));
  }
  return Status();
}

}  // namespace tessera::tablet
