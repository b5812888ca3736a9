#include "tessera/tablet/row_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <span>
#include <utility>

#include "absl/container/inlined_vector.h"

#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/storage/bloom.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/merger.h"
#include "tessera/tablet/level_iterator.h"
#include "tessera/util/random.h"

namespace tessera::tablet {
namespace {

using storage::Iterator;
using storage::SequenceNumber;

// A user-key interval [lo, hi); hi empty = unbounded.
struct KeyInterval {
  std::string lo;
  std::string hi;
};

// Whether the file may hold user keys in [lo, hi) (hi empty = unbounded).
bool FileOverlaps(const storage::FileMeta& meta, std::string_view lo, std::string_view hi) {
  std::string_view smallest = storage::ExtractUserKey(meta.smallest);
  std::string_view largest = storage::ExtractUserKey(meta.largest);
  if (largest < lo) return false;
  if (!hi.empty() && smallest >= hi) return false;
  return true;
}

// Merges every source of the snapshot that may hold keys in `range`. The files of one level
// >= 1 of one locality group hold disjoint rows: they go in as one level iterator, which opens
// only the file under its position.
std::unique_ptr<Iterator> NewSnapshotIterator(const TabletSnapshot& snapshot,
                                              const KeyInterval& range,
                                              const storage::TableReadOptions& read_options) {
  std::vector<std::unique_ptr<Iterator>> children;
  for (const auto& mem : snapshot.memtables) children.push_back(mem->NewIterator());
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const TableFile*>> levels;  // (group, level)
  for (const auto& file : snapshot.files->files) {
    if (!FileOverlaps(file->meta(), range.lo, range.hi)) continue;
    if (file->meta().level == 0) {
      children.push_back(file->table()->NewIterator(read_options));
    } else {
      levels[{file->meta().group, file->meta().level}].push_back(file.get());
    }
  }
  for (auto& [group_level, files] : levels) {
    if (files.size() == 1) {
      children.push_back(files.front()->table()->NewIterator(read_options));
    } else {
      children.push_back(NewLevelIterator(std::move(files), read_options));
    }
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

// A row being collected. Cells of `row` past `size` are spare: a scan refills their strings for
// the next row instead of allocating new ones.
struct RowBuffer {
  model::Row row;
  size_t size = 0;

  bool empty() const { return size == 0; }
  void Clear() { size = 0; }
  model::Cell& Append() {
    if (size == row.cells.size()) row.cells.emplace_back();
    return row.cells[size++];
  }
  // Leaves row.cells holding exactly the cells appended since Clear.
  const model::Row& Seal() {
    row.cells.resize(size);
    return row;
  }
};

// Feeds entries through visibility and the spec, collecting the cells of rows.
class CellCollector {
 public:
  CellCollector(const TabletSnapshot& snapshot, const model::ReadSpec& spec)
      : sequence_(snapshot.sequence),
        visibility_(VisibilityOptions(snapshot, spec)),
        filter_(spec) {}

  // Returns DataLoss for a malformed key. Appends the cell to `row` when visible and chosen.
  Status Add(std::string_view ikey, std::string_view value, RowBuffer* row) {
    storage::ParsedInternalKey parsed;
    if (!storage::ParseInternalKey(ikey, &parsed)) {
      return absl::DataLossError("malformed internal key in tablet data");
    }
    if (parsed.sequence > sequence_) return Status();  // written after the snapshot
    // One parse serves visibility and the decoding of the cell.
    model::CellKeyLayout layout;
    const model::CellVisibility::Verdict verdict =
        model::ParseCellKeyLayout(parsed.user_key, &layout)
            ? visibility_.Add(parsed.user_key, layout, parsed.sequence, value)
            : model::CellVisibility::Verdict::kMalformed;
    if (verdict == model::CellVisibility::Verdict::kMalformed) {
      return absl::DataLossError("malformed cell key or tombstone in tablet data");
    }
    if (verdict != model::CellVisibility::Verdict::kVisible) return Status();
    model::CellKeyView cell;
    model::DecodeCellKey(parsed.user_key, layout, &cell, &row_scratch_, &qualifier_scratch_);
    if (!filter_.Accept(cell.family, cell.qualifier, cell.timestamp_micros)) return Status();
    if (row->empty()) row->row.key.assign(cell.row.data(), cell.row.size());
    model::Cell& out = row->Append();
    out.family.assign(cell.family.data(), cell.family.size());
    out.qualifier.assign(cell.qualifier.data(), cell.qualifier.size());
    out.timestamp_micros = cell.timestamp_micros;
    out.value.assign(value.data(), value.size());
    out.labels.clear();
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

// The (family, qualifier) pairs of spec.columns whose family is chosen, sorted, each once.
std::vector<std::pair<std::string, std::string>> ChosenColumns(const model::ReadSpec& spec) {
  SpecFilter filter(spec);
  std::vector<std::pair<std::string, std::string>> columns;
  for (const auto& c : spec.columns) {
    if (filter.FamilyChosen(c.family)) columns.emplace_back(c.family, c.qualifier);
  }
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  return columns;
}

using Columns = std::vector<std::pair<std::string, std::string>>;

// The keys a read of one row needs, built once into one buffer (a read of a few columns costs
// one allocation for all of them, not two or three per interval). Each is a scope of the row,
// the interval [prefix, ScopeLimit(prefix)), with the internal key a seek to its start takes:
//   whole()      the row;
//   segments()   the intervals that hold what the spec asks for, in key order: the row's
//                tombstones, then for each chosen family its tombstone and its chosen columns
//                (or the whole family); the whole row when the spec chooses everything.
// Not copyable: the views point into its own buffer.
class RowReadKeys {
 public:
  struct Scope {
    std::string_view lo;    // the scope's prefix
    std::string_view hi;    // ScopeLimit(lo)
    std::string_view seek;  // lo as an internal key that sorts before every entry of lo
  };

  // `columns` is ChosenColumns(spec).
  RowReadKeys(std::string_view row, const model::ReadSpec& spec, const Columns& columns) {
    keys_.reserve(4 * (2 * row.size() + 32));
    Spans spans;  // where each scope's prefix lies in keys_, while keys_ may still move
    auto Add = [&](auto&& append_prefix) { AddScope(append_prefix, &spans); };
    Add([&](std::string* dst) { model::AppendRowPrefix(dst, row); });
    if (!spec.families.empty() || !spec.columns.empty()) {
      first_segment_ = 1;
      // Row tombstone: the row prefix followed by its kind byte.
      Add([&](std::string* dst) { model::AppendRowTombstoneKey(dst, row); });
      if (spec.columns.empty()) {
        std::vector<std::string> families = spec.families;
        std::sort(families.begin(), families.end());
        families.erase(std::unique(families.begin(), families.end()), families.end());
        for (const auto& f : families) {
          Add([&](std::string* dst) { model::AppendFamilyPrefix(dst, row, f); });
        }
      } else {
        std::string_view current_family;
        bool have_family = false;
        for (const auto& column : columns) {
          // Named, not structured bindings: lambdas may not capture those before C++20's DR
          // (clang 14 refuses).
          const std::string_view family = column.first;
          const std::string_view qualifier = column.second;
          if (!have_family || family != current_family) {
            Add([&](std::string* dst) { model::AppendFamilyTombstoneKey(dst, row, family); });
            current_family = family;
            have_family = true;
          }
          Add([&](std::string* dst) { model::AppendColumnPrefix(dst, row, family, qualifier); });
        }
      }
    }
    // The buffer is complete: the views are made now, and stay valid.
    for (const auto& [start, size] : spans) {
      const char* p = keys_.data() + start;
      scopes_.push_back(Scope{.lo = std::string_view(p, size),
                              .hi = std::string_view(p + size + kSeekTrailer, size + 1),
                              .seek = std::string_view(p, size + kSeekTrailer)});
    }
  }
  RowReadKeys(const RowReadKeys&) = delete;
  RowReadKeys& operator=(const RowReadKeys&) = delete;

  const Scope& whole() const { return scopes_.front(); }
  std::span<const Scope> segments() const {
    return std::span<const Scope>(scopes_).subspan(first_segment_);
  }

 private:
  static constexpr size_t kSeekTrailer = storage::kTrailerSize;
  using Spans = absl::InlinedVector<std::pair<size_t, size_t>, 8>;  // (start, prefix size)

  // Appends the scope whose prefix `append_prefix(&keys_)` appends: the prefix, its seek
  // trailer, then the prefix again and the scope limit byte; notes where in `spans`.
  template <typename AppendPrefix>
  void AddScope(AppendPrefix& append_prefix, Spans* spans) {
    const size_t start = keys_.size();
    append_prefix(&keys_);
    const size_t size = keys_.size() - start;
    PutFixed64(&keys_, storage::PackSequenceAndType(storage::kMaxSequenceNumber,
                                                    storage::kValueTypeForSeek));
    keys_.resize(keys_.size() + size + 1);
    char* hi = keys_.data() + start + size + kSeekTrailer;
    std::memcpy(hi, keys_.data() + start, size);
    hi[size] = model::cell_key_format::kScopeLimit;
    spans->emplace_back(start, size);
  }

  std::string keys_;
  absl::InlinedVector<Scope, 8> scopes_;
  size_t first_segment_ = 0;
};

// The files of a read of one row: few, so they stay off the heap.
using RowFileList = absl::InlinedVector<const TableFile*, 8>;

// The files whose key range holds the row's keys [lo, hi), in the order a read that stops early
// takes them: level 0 newest first, then each deeper level. Their bloom filters are asked only
// when a file is about to be read (a read that stops early leaves the deeper ones alone).
RowFileList RowFiles(const TabletSnapshot& snapshot, std::string_view lo, std::string_view hi) {
  RowFileList files;
  for (const auto& file : snapshot.files->files) {  // newest first
    if (FileOverlaps(file->meta(), lo, hi)) files.push_back(file.get());
  }
  std::stable_sort(files.begin(), files.end(), [](const TableFile* a, const TableFile* b) {
    return a->meta().level < b->meta().level;
  });
  return files;
}

// A scan's share of compaction by reads: once per kReadSamplePeriod bytes of entries passed, the
// newest file holding the row there is charged when two or more files hold it. The first
// sample comes at an offset drawn from the scan's start and seed, uniform in the period, so
// that a scan shorter than the period samples with the probability its length gives, and a
// run replays exactly.
class ReadSampler {
 public:
  ReadSampler(const TabletSnapshot* snapshot, ReadCharge charge, std::string_view start)
      : snapshot_(snapshot),
        charge_(std::move(charge.charge)),
        until_(charge_ ? Random(storage::FilterHash(start) + charge.seed).Uniform(kReadSamplePeriod)
                       : 0) {}

  void Passed(std::string_view ikey, size_t value_bytes) {
    if (!charge_) return;
    const uint64_t n = ikey.size() + value_bytes;
    if (n < until_) {
      until_ -= n;
      return;
    }
    until_ = kReadSamplePeriod;
    const std::string_view prefix = model::RowPrefix(storage::ExtractUserKey(ikey));
    const RowFileList holding = RowFiles(*snapshot_, prefix, model::ScopeLimit(prefix));
    if (holding.size() >= 2) charge_(holding.front());  // the newest
  }

 private:
  const TabletSnapshot* const snapshot_;
  const std::function<void(const TableFile*)> charge_;
  uint64_t until_;  // bytes left before the next sample
};

// A forward scan caches the first blocks it reads of each file, no more (TableReadOptions):
// 1 MiB of 4 KiB blocks, enough for the short scans that are read again, while a long one
// leaves the cache to the working set and costs no insertion and eviction per block. A
// reversed scan caches everything: it seeks back to each row's start, so at a block boundary
// it returns to the block before the one its iterator holds, which must then be a cache hit.
constexpr uint64_t kScanCachedBlocks = 256;
// And once it reads a file's blocks one after another, it reads 256 KiB at a time.
constexpr size_t kScanReadaheadBytes = 256 * 1024;

class ScanIterator final : public RowIterator {
 public:
  ScanIterator(TabletSnapshot snapshot, KeyInterval range, const model::ReadSpec& spec,
               uint64_t limit, ReadCharge charge)
      : snapshot_(std::move(snapshot)),
        range_(std::move(range)),
        spec_(spec),
        limit_(limit),
        collector_(snapshot_, spec_),
        sampler_(&snapshot_, std::move(charge), range_.lo) {
    storage::TableReadOptions ro;
    ro.fill_cache_blocks = kScanCachedBlocks;
    ro.readahead_bytes = kScanReadaheadBytes;
    iter_ = NewSnapshotIterator(snapshot_, range_, ro);
    iter_->Seek(storage::MakeInternalKey(range_.lo, storage::kMaxSequenceNumber,
                                         storage::kValueTypeForSeek));
    Advance();
  }

  bool Valid() const override { return valid_; }
  const model::Row& row() const override { return row_.row; }
  void Next() override { Advance(); }
  Status status() const override { return status_; }

 private:
  // Collects the next row that has a chosen cell.
  void Advance() {
    valid_ = false;
    if (!status_.ok() || (limit_ > 0 && returned_ >= limit_)) return;
    row_.Clear();
    while (iter_->Valid()) {
      std::string_view ukey = storage::ExtractUserKey(iter_->key());
      if (!range_.hi.empty() && ukey >= std::string_view(range_.hi)) break;
      // A row part is prefix-free (it ends with a terminator that no escaped byte forms), so a
      // key that starts with the current row's part is of that row: no search for its end.
      if (current_prefix_.empty() || !ukey.starts_with(current_prefix_)) {
        const std::string_view prefix = model::RowPrefix(ukey);
        if (!row_.empty()) {
          valid_ = true;
          ++returned_;
          row_.Seal();
          current_prefix_.assign(prefix.data(), prefix.size());
          collector_.StartRow();
          // The entry under the iterator belongs to the next row; it is fed on the next call.
          return;
        }
        current_prefix_.assign(prefix.data(), prefix.size());
        collector_.StartRow();
      }
      sampler_.Passed(iter_->key(), iter_->value().size());
      status_ = collector_.Add(iter_->key(), iter_->value(), &row_);
      if (!status_.ok()) return;
      iter_->Next();
    }
    if (!iter_->status().ok()) {
      status_ = iter_->status();
      return;
    }
    if (!row_.empty()) {
      valid_ = true;
      ++returned_;
      row_.Seal();
    }
  }

  TabletSnapshot snapshot_;
  const KeyInterval range_;
  const model::ReadSpec spec_;
  const uint64_t limit_;
  CellCollector collector_;
  ReadSampler sampler_;
  std::unique_ptr<Iterator> iter_;
  std::string current_prefix_;
  RowBuffer row_;
  bool valid_ = false;
  uint64_t returned_ = 0;
  Status status_;
};

// Rows in decreasing order. Invariant between calls: iter_ is at the last entry before the
// start of the row returned last (or of the range's end), or !Valid().
class ReverseScanIterator final : public RowIterator {
 public:
  ReverseScanIterator(TabletSnapshot snapshot, KeyInterval range, const model::ReadSpec& spec,
                      uint64_t limit, ReadCharge charge)
      : snapshot_(std::move(snapshot)),
        range_(std::move(range)),
        spec_(spec),
        limit_(limit),
        collector_(snapshot_, spec_),
        sampler_(&snapshot_, std::move(charge), range_.hi) {
    storage::TableReadOptions ro;
    iter_ = NewSnapshotIterator(snapshot_, range_, ro);
    if (range_.hi.empty()) {
      iter_->SeekToLast();
    } else {
      StepBefore(range_.hi);
    }
    Advance();
  }

  bool Valid() const override { return valid_; }
  const model::Row& row() const override { return row_.row; }
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
      row_.Clear();
      collector_.Restart();
      iter_->Seek(SeekKey(current_prefix_));
      for (; iter_->Valid(); iter_->Next()) {
        if (model::RowPrefix(storage::ExtractUserKey(iter_->key())) != current_prefix_) break;
        sampler_.Passed(iter_->key(), iter_->value().size());
        status_ = collector_.Add(iter_->key(), iter_->value(), &row_);
        if (!status_.ok()) return;
      }
      if (!iter_->status().ok()) break;
      StepBefore(current_prefix_);
      if (!row_.empty()) {
        valid_ = true;
        ++returned_;
        row_.Seal();
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
  ReadSampler sampler_;
  std::unique_ptr<Iterator> iter_;
  std::string current_prefix_;
  RowBuffer row_;
  bool valid_ = false;
  uint64_t returned_ = 0;
  Status status_;
};

// An iterator over another that the caller keeps.
class BorrowedIterator final : public Iterator {
 public:
  explicit BorrowedIterator(Iterator* base) : base_(base) {}
  bool Valid() const override { return base_->Valid(); }
  void SeekToFirst() override { base_->SeekToFirst(); }
  void SeekToLast() override { base_->SeekToLast(); }
  void Seek(std::string_view target) override { base_->Seek(target); }
  void Next() override { base_->Next(); }
  void Prev() override { base_->Prev(); }
  std::string_view key() const override { return base_->key(); }
  std::string_view value() const override { return base_->value(); }
  Status status() const override { return base_->status(); }

 private:
  Iterator* const base_;
};

std::vector<std::unique_ptr<Iterator>> Borrow(
    const std::vector<std::unique_ptr<Iterator>>& sources) {
  std::vector<std::unique_ptr<Iterator>> borrowed;
  borrowed.reserve(sources.size());
  for (const auto& source : sources) {
    borrowed.push_back(std::make_unique<BorrowedIterator>(source.get()));
  }
  return borrowed;
}

// Whether `source` holds any entry of the row `row`: one seek.
StatusOr<bool> HoldsRow(Iterator* source, const RowReadKeys::Scope& row) {
  source->Seek(row.seek);
  if (source->Valid()) return storage::ExtractUserKey(source->key()) < row.hi;
  RETURN_IF_ERROR(source->status());
  return false;
}

// Adds to `row` the visible, chosen cells of `segments` in `iter` (one source, or a merge).
Status CollectRow(const TabletSnapshot& snapshot, const model::ReadSpec& spec,
                  std::span<const RowReadKeys::Scope> segments, Iterator* iter, RowBuffer* row) {
  CellCollector collector(snapshot, spec);
  bool positioned = false;
  for (const RowReadKeys::Scope& seg : segments) {
    // Segments are in key order and the iterator only moves forward: once it rests at or past
    // the segment's start, nothing in between was passed over, and the seek is saved (a row of
    // a few cells costs one seek, not one per segment).
    if (positioned && !iter->Valid()) break;  // at the end (or failed: the status says)
    if (!positioned || storage::ExtractUserKey(iter->key()) < seg.lo) {
      iter->Seek(seg.seek);
      positioned = true;
    }
    for (; iter->Valid(); iter->Next()) {
      if (storage::ExtractUserKey(iter->key()) >= seg.hi) break;
      RETURN_IF_ERROR(collector.Add(iter->key(), iter->value(), row));
    }
    RETURN_IF_ERROR(iter->status());
  }
  return Status();
}

// A read of at most N versions of chosen columns may stop before the older files, as
// Cassandra's reads by column name do (docs/compaction.md, "Reads that stop early"): once
// every chosen column has N visible versions, a file whose newest cell is no newer than the
// Nth of each can add no version that ranks among the N (an equal timestamp is the same cell,
// older), and it cannot hide one (a tombstone hides only what is older than itself) -- provided
// everything it holds of the row is older than everything read. That holds for files of a
// deeper level than every file read (the age invariant of leveled compaction) and for files of
// level 0 whose sequences all precede those of the level-0 files read; the memtables are newer
// than every file.
class NewestVersionsRead {
 public:
  static bool Applies(const model::ReadSpec& spec) {
    return !spec.columns.empty() && spec.max_versions > 0;
  }

  // REQUIRES: Applies(spec). `columns` is ChosenColumns(spec); both must outlive this.
  NewestVersionsRead(const model::ReadSpec& spec, const Columns& columns)
      : spec_(spec), columns_(columns) {}

  // Notes that a file holding entries of the row was read.
  void Read(const storage::FileMeta& meta) {
    if (meta.level == 0) {
      level0_min_sequence_ = std::min(level0_min_sequence_, meta.min_sequence);
    }
    deepest_level_ = std::max<int64_t>(deepest_level_, meta.level);
  }

  // Whether files[from...] can change `row`, what the sources read so far gave.
  bool RestCannotChange(const model::Row& row, std::span<const TableFile* const> files,
                        size_t from) const {
    int64_t rest_newest = storage::FileMeta::kNoCellTimestamp;
    for (size_t i = from; i < files.size(); ++i) {
      const storage::FileMeta& meta = files[i]->meta();
      if (meta.max_timestamp == storage::FileMeta::kUnknownTimestamp) return false;
      const bool older = meta.level == 0 ? meta.max_sequence < level0_min_sequence_
                                         : static_cast<int64_t>(meta.level) > deepest_level_;
      if (!older) return false;
      rest_newest = std::max(rest_newest, meta.max_timestamp);
    }
    if (rest_newest == storage::FileMeta::kNoCellTimestamp) return true;  // only tombstones left
    for (const auto& [family, qualifier] : columns_) {
      int versions = 0;
      int64_t oldest = 0;
      for (const model::Cell& cell : row.cells) {
        if (cell.family != family || cell.qualifier != qualifier) continue;
        ++versions;
        oldest = cell.timestamp_micros;  // newest first within a column
      }
      if (versions < spec_.max_versions || oldest < rest_newest) return false;
    }
    return true;
  }

 private:
  const model::ReadSpec& spec_;
  const Columns& columns_;  // ChosenColumns(spec_)
  storage::SequenceNumber level0_min_sequence_ = storage::kMaxSequenceNumber;
  int64_t deepest_level_ = -1;
};

}  // namespace

StatusOr<std::optional<model::Row>> ReadRowFromSnapshot(const TabletSnapshot& snapshot,
                                                        std::string_view row,
                                                        const model::ReadSpec& spec,
                                                        storage::ReadStats* stats,
                                                        const TableFile** charged) {
  const Columns columns = spec.columns.empty() ? Columns() : ChosenColumns(spec);
  const RowReadKeys keys(row, spec, columns);
  const RowReadKeys::Scope& whole_row = keys.whole();
  const std::string_view row_prefix = whole_row.lo;
  const std::span<const RowReadKeys::Scope> segments = keys.segments();
  storage::TableReadOptions ro;
  ro.stats = stats;
  const RowFileList files = RowFiles(snapshot, whole_row.lo, whole_row.hi);
  RowBuffer result;
  const TableFile* first_consulted = nullptr;  // the first file whose filter was asked
  size_t consulted = 0;
  auto consult = [&](const TableFile* file) {
    if (consulted++ == 0) first_consulted = file;
    return file->table()->KeyMayMatch(row_prefix);
  };
  if (!NewestVersionsRead::Applies(spec)) {
    std::vector<std::unique_ptr<Iterator>> sources;
    sources.reserve(snapshot.memtables.size() + files.size());
    for (const auto& mem : snapshot.memtables) {
      if (mem->MayContain(row_prefix)) sources.push_back(mem->NewIterator());
    }
    for (const TableFile* file : files) {
      if (consult(file)) sources.push_back(file->table()->NewIterator(ro));
    }
    const std::unique_ptr<Iterator> merged =
        storage::NewMergingIterator(storage::InternalKeyComparator(), std::move(sources));
    RETURN_IF_ERROR(CollectRow(snapshot, spec, segments, merged.get(), &result));
  } else {
    // Newest sources first; after each one that holds some of the row, stop when the files
    // left can change nothing (see NewestVersionsRead).
    NewestVersionsRead early(spec, columns);
    std::vector<std::unique_ptr<Iterator>> held;  // the sources read that hold some of the row
    held.reserve(snapshot.memtables.size() + files.size());
    auto take = [&](std::unique_ptr<Iterator> source) -> StatusOr<bool> {
      ASSIGN_OR_RETURN(bool holds, HoldsRow(source.get(), whole_row));
      if (holds) held.push_back(std::move(source));
      return holds;
    };
    // Collects the row anew from every source held (a source alone is read without a merge).
    auto collect = [&]() -> Status {
      result.Clear();
      if (held.size() == 1) return CollectRow(snapshot, spec, segments, held[0].get(), &result);
      const std::unique_ptr<Iterator> merged =
          storage::NewMergingIterator(storage::InternalKeyComparator(), Borrow(held));
      return CollectRow(snapshot, spec, segments, merged.get(), &result);
    };
    for (const auto& mem : snapshot.memtables) {
      if (mem->MayContain(row_prefix)) RETURN_IF_ERROR(take(mem->NewIterator()).status());
    }
    if (!held.empty()) RETURN_IF_ERROR(collect());
    for (size_t i = 0; i < files.size(); ++i) {
      if (early.RestCannotChange(result.Seal(), files, i)) break;
      if (!consult(files[i])) continue;
      ASSIGN_OR_RETURN(bool holds, take(files[i]->table()->NewIterator(ro)));
      if (!holds) continue;
      early.Read(files[i]->meta());
      RETURN_IF_ERROR(collect());
    }
  }
  if (charged != nullptr) *charged = consulted >= 2 ? first_consulted : nullptr;
  if (result.empty()) return std::optional<model::Row>();
  result.Seal();
  return std::optional<model::Row>(std::move(result.row));
}

std::unique_ptr<RowIterator> NewSnapshotScan(TabletSnapshot snapshot, const model::RowRange& range,
                                             const model::ReadSpec& spec,
                                             const ScanOptions& options, ReadCharge charge) {
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
                                                 options.limit, std::move(charge));
  }
  return std::make_unique<ScanIterator>(std::move(snapshot), std::move(keys), spec, options.limit,
                                        std::move(charge));
}

Status WarmRowInSnapshot(const TabletSnapshot& snapshot, std::string_view row) {
  std::string row_prefix = model::EncodeRowPrefix(row);
  std::string limit = model::ScopeLimit(row_prefix);
  for (const auto& file : snapshot.files->files) {
    if (!FileOverlaps(file->meta(), row_prefix, limit)) continue;
    if (!file->table()->KeyMayMatch(row_prefix)) continue;
    RETURN_IF_ERROR(file->table()->WarmBlocksFor(
        storage::MakeInternalKey(row_prefix, storage::kMaxSequenceNumber,
                                 storage::kValueTypeForSeek),
        storage::MakeInternalKey(limit, storage::kMaxSequenceNumber, storage::kValueTypeForSeek)));
  }
  return Status();
}

}  // namespace tessera::tablet
