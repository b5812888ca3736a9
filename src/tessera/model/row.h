// Rows as every layer sees them: the tablet returns them, the server filters and streams them,
// the client rebuilds them from a ReadRows stream, and a coordinator merges replicas' copies.
// Also what a read asks for: a RowSet (which rows) and a ReadSpec (which cells of each row).
//
// Thread-safety: plain values; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/row_mutation.h"

namespace tessera::model {

// One cell. `labels` are added by a filter's apply_label_transformer (row_filter.h); cells read
// from storage carry none.
struct Cell {
  std::string family;
  std::string qualifier;
  int64_t timestamp_micros = 0;
  std::string value;
  std::vector<std::string> labels = {};  // "= {}": Cell{f, q, ts, v} leaves it empty quietly

  bool operator==(const Cell&) const = default;
};

// Cell order: family name ascending, then qualifier bytes ascending, then timestamp newest
// first. A strict weak order; value and labels do not take part.
bool CellOrderLess(const Cell& a, const Cell& b);

// One row. Invariant of rows read from a tablet, and REQUIRED by the row filters
// (row_filter.h): `cells` are in cell order, with at most one cell per (family, qualifier,
// timestamp). Filter output may hold equal triples (interleave and sink duplicates), and a
// client's row holds the cells in the order the server sent them.
struct Row {
  std::string key;
  std::vector<Cell> cells;

  bool operator==(const Row&) const = default;
};

// Rows [start, end); end "" = no upper bound.
struct RowRange {
  std::string start;
  std::string end;

  // The range holding exactly `key`: [key, key + "\0").
  static RowRange SingleKey(std::string_view key);
  // The rows whose keys start with `prefix`: [prefix, the smallest key above all of them).
  static RowRange WithPrefix(std::string_view prefix);
  // True if the range holds exactly one row key (start), as SingleKey() builds it.
  bool IsSingleKey() const;
  bool Contains(std::string_view row) const { return row >= start && (end.empty() || row < end); }

  bool operator==(const RowRange&) const = default;
};

// A set of rows: disjoint, non-adjacent ranges in increasing order (normalised once, at
// construction). Empty ranges and the empty key (no row has it) are dropped, overlapping and
// adjacent ranges merged, so each row is read once and in order whatever the request held.
class RowSet {
 public:
  // Every row.
  static RowSet All();
  // The rows named by `keys` and covered by `ranges`, in any order, possibly overlapping.
  // No keys and no ranges is the empty set (unlike the Bigtable RowSet message, whose empty
  // form means every row; the proto conversion in server/ says so).
  static RowSet Of(std::vector<std::string> keys, std::vector<RowRange> ranges);

  RowSet() = default;  // empty

  const std::vector<RowRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  bool Contains(std::string_view row) const;

  bool operator==(const RowSet&) const = default;

 private:
  explicit RowSet(std::vector<RowRange> ranges) : ranges_(std::move(ranges)) {}

  std::vector<RowRange> ranges_;
};

struct ColumnSelector {
  std::string family;
  std::string qualifier;
};

// What to return of each row. Selections combine: a cell is returned when its family is chosen
// (or `families` is empty), its column is chosen (or `columns` is empty), its timestamp is in
// `time_range`, and it is among the newest `max_versions` matching versions of its column.
struct ReadSpec {
  std::vector<std::string> families;
  std::vector<ColumnSelector> columns;
  TimeRange time_range;  // [start, end); end 0 = no upper bound
  int max_versions = 0;  // 0 = all versions
  // Whether cells that the families' GC rules may collect are left out (as every read of
  // Bigtable data does). False for deleting what is there: a row holding only such cells is
  // still a row to delete, or its cells come back when the rule is relaxed.
  bool hide_collectable = true;
};

}  // namespace tessera::model
