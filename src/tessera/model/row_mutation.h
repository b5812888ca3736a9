// The mutations of one row, applied atomically, as one encoded batch. The same bytes are the
// commit-log record, so there is one encoding to test (format: row_mutation.cc and
// docs/row_mutation_format.md).
//
// Each mutation maps to exactly one storage entry (ForEachCellEntry):
//   SetCell          -> Cell key,            value = the cell value
//   DeleteFromColumn -> ColumnTombstone key, value = the TimeRange (EncodeTimeRange)
//   DeleteFromFamily -> FamilyTombstone key, value = empty
//   DeleteFromRow    -> RowTombstone key,    value = empty
// Mutations take effect in order: the engine gives entry i of a batch a sequence number greater
// than entry i-1's, so "delete row, then set cell" leaves the cell (cell_visibility.h).
//
// Thread-safety: RowMutation is a value type without internal synchronization; const methods
// may be called concurrently. The decoding functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tessera/model/cell_key.h"
#include "tessera/util/status.h"

namespace tessera::model {

// Timestamps [start_micros, end_micros); end_micros == 0 means no upper bound. The default
// range covers every timestamp >= 0 (Bigtable timestamps are never negative).
struct TimeRange {
  int64_t start_micros = 0;
  int64_t end_micros = 0;

  static constexpr size_t kEncodedSize = 16;  // fixed64 start, fixed64 end (little-endian)

  bool Contains(int64_t ts) const {
    return ts >= start_micros && (end_micros == 0 || ts < end_micros);
  }
  // True if the range contains no timestamp.
  bool IsEmpty() const { return end_micros != 0 && end_micros <= start_micros; }
  // True if every timestamp in `other` is in this range.
  bool Covers(const TimeRange& other) const {
    if (other.IsEmpty()) return true;
    if (other.start_micros < start_micros) return false;
    if (end_micros == 0) return true;
    return other.end_micros != 0 && other.end_micros <= end_micros;
  }
  // Writes exactly kEncodedSize bytes.
  void EncodeTo(char* dst) const;
  void AppendTo(std::string* dst) const;
  // Returns false unless `encoded` is exactly kEncodedSize bytes.
  static bool Decode(std::string_view encoded, TimeRange* out);

  bool operator==(const TimeRange&) const = default;
};

enum class MutationType : uint8_t {
  kSetCell = 1,
  kDeleteFromColumn = 2,
  kDeleteFromFamily = 3,
  kDeleteFromRow = 4,
};

// One decoded mutation. The views point into the encoded batch it was read from. Fields that
// the type does not use are empty / zero.
struct MutationView {
  MutationType type = MutationType::kSetCell;
  std::string_view family;       // all but kDeleteFromRow
  std::string_view qualifier;    // kSetCell, kDeleteFromColumn
  std::string_view value;        // kSetCell
  int64_t timestamp_micros = 0;  // kSetCell
  TimeRange range;               // kDeleteFromColumn
};

// Builds the encoded batch of one row.
//
//   RowMutation m("user#42");
//   m.SetCell("cf", "name", ts, "Ada").DeleteFromColumn("cf", "old", {0, ts});
//   log->AddRecord(m.encoded());
//
// REQUIRES for every family argument: no 0x00 byte (schema.h's ValidateFamilyName checks the
// full rule; the server validates against the table schema before building).
class RowMutation {
 public:
  explicit RowMutation(std::string_view row);

  RowMutation(const RowMutation&) = default;
  RowMutation& operator=(const RowMutation&) = default;
  RowMutation(RowMutation&&) noexcept = default;
  RowMutation& operator=(RowMutation&&) noexcept = default;

  RowMutation& SetCell(std::string_view family, std::string_view qualifier,
                       int64_t timestamp_micros, std::string_view value);
  RowMutation& DeleteFromColumn(std::string_view family, std::string_view qualifier,
                                TimeRange range = {});
  RowMutation& DeleteFromFamily(std::string_view family);
  RowMutation& DeleteFromRow();

  // Drops the mutations, keeps the row.
  void Clear();

  // Validates `encoded` (as ValidateRowMutation) and copies it.
  static StatusOr<RowMutation> FromEncoded(std::string_view encoded);

  // The row; a view into encoded(), valid until the next non-const call.
  std::string_view row() const;
  const std::string& encoded() const { return encoded_; }
  // Number of mutations.
  uint32_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  RowMutation() = default;
  void SetCount(uint32_t count);

  std::string encoded_;
  uint32_t row_offset_ = 0;
  uint32_t row_size_ = 0;
  uint32_t count_offset_ = 0;
  uint32_t count_ = 0;
};

// Reads an encoded batch one mutation at a time without allocating.
//
//   RowMutationReader reader(encoded);
//   MutationView m;
//   while (reader.Next(&m)) { ... }
//   RETURN_IF_ERROR(reader.status());
//
// `encoded` must outlive the reader and every view it returns. Errors: DataLoss for structural
// damage (truncated, bad type byte, count mismatch, trailing bytes), InvalidArgument for a family
// containing 0x00. Next() may have returned some mutations before an error is found; use
// ValidateRowMutation or ForEach* for all-or-nothing.
class RowMutationReader {
 public:
  explicit RowMutationReader(std::string_view encoded);

  // The row and mutation count from the header (empty / 0 if the header is bad).
  std::string_view row() const { return row_; }
  uint32_t count() const { return count_; }

  // Returns true and fills *m with the next mutation; false at the end or on error.
  bool Next(MutationView* m);
  const Status& status() const { return status_; }

 private:
  bool Fail(size_t offset, std::string_view what);

  const char* begin_;
  const char* pos_;    // next mutation; nullptr after an error
  const char* limit_;  // end of the batch; nullptr after an error
  std::string_view row_;
  uint32_t count_ = 0;
  uint32_t read_ = 0;
  Status status_;
};

// OK iff `encoded` is a well-formed batch.
Status ValidateRowMutation(std::string_view encoded);

// Calls fn(const MutationView&) for every mutation in order. fn returns void or Status; a
// non-OK Status stops the walk and is returned. fn is called only if the whole batch is
// well-formed (validated first), so a damaged batch has no partial effect.
template <typename Fn>
Status ForEachMutation(std::string_view encoded, Fn&& fn);

// Calls fn(std::string_view cell_key, std::string_view value) with the storage entry of every
// mutation in order (see the table atop this file). Both views are valid only during the call.
// fn returns void or Status as for ForEachMutation; validated first, like ForEachMutation.
// `scratch` holds the key between calls; pass one that lives across batches to avoid
// allocating.
template <typename Fn>
Status ForEachCellEntry(std::string_view encoded, std::string* scratch, Fn&& fn);
template <typename Fn>
Status ForEachCellEntry(std::string_view encoded, Fn&& fn) {
  std::string scratch;
  return ForEachCellEntry(encoded, &scratch, std::forward<Fn>(fn));
}

// Appends the storage entry key of `m` to `row_prefix_key`, which holds EncodeRowPrefix(row)
// on entry; sets *value to the entry's value (using `range_buf` for DeleteFromColumn).
void AppendEntryForMutation(const MutationView& m, std::string* row_prefix_key,
                            std::string_view* value, char (&range_buf)[TimeRange::kEncodedSize]);

// ---------------------------------------------------------------------------------------------
// Implementation details.

namespace internal {
template <typename Fn, typename... Args>
Status InvokeVisitor(Fn& fn, Args&&... args) {
  if constexpr (std::is_same_v<std::invoke_result_t<Fn&, Args...>, void>) {
    fn(std::forward<Args>(args)...);
    return Status();
  } else {
    return fn(std::forward<Args>(args)...);
  }
}
}  // namespace internal

template <typename Fn>
Status ForEachMutation(std::string_view encoded, Fn&& fn) {
  RETURN_IF_ERROR(ValidateRowMutation(encoded));
  RowMutationReader reader(encoded);
  MutationView m;
  while (reader.Next(&m)) {
    RETURN_IF_ERROR(internal::InvokeVisitor(fn, static_cast<const MutationView&>(m)));
  }
  return reader.status();
}

template <typename Fn>
Status ForEachCellEntry(std::string_view encoded, std::string* scratch, Fn&& fn) {
  RETURN_IF_ERROR(ValidateRowMutation(encoded));
  RowMutationReader reader(encoded);
  scratch->clear();
  AppendEscaped(scratch, reader.row());
  const size_t row_prefix_size = scratch->size();
  char range_buf[TimeRange::kEncodedSize];
  MutationView m;
  std::string_view value;
  while (reader.Next(&m)) {
    scratch->resize(row_prefix_size);
    AppendEntryForMutation(m, scratch, &value, range_buf);
    RETURN_IF_ERROR(internal::InvokeVisitor(fn, std::string_view(*scratch), value));
  }
  return reader.status();
}

}  // namespace tessera::model
