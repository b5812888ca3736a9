// RowFilter: a compiled google.bigtable.v2.RowFilter, applied to one row at a time. The whole
// filter language with Bigtable's semantics (docs/row_filters.md):
//
//   chain        children in sequence, each on the previous one's output
//   interleave   every child on a copy of the input; outputs pooled (duplicates kept) and merged
//                in cell order; for equal (family, qualifier, timestamp), the earlier child's
//                cells come first, each child's own order kept
//   condition    the predicate runs on the input; if it outputs any cell, true_filter runs on
//                the input, else false_filter; an absent branch outputs nothing
//   sink         its input goes straight to the final output (not to its parent, which sees
//                no cells from it); the final output is the top filter's output merged with
//                everything sunk, in cell order, the top filter's cells first on ties
//   leaves       pass_all, block_all, row_key_regex, row_sample, family_name_regex,
//                column_qualifier_regex, column_range, timestamp_range, value_regex, value_range,
//                value_bitmask, cells_per_row_offset, cells_per_row_limit,
//                cells_per_column_limit, strip_value_transformer, apply_label_transformer
//
// Regexes are RE2 in Latin-1 mode (raw bytes), matched against the whole string; `.` does not
// match "\n" unless the pattern says (?s); `\C` matches any byte.
//
// Compile() validates the whole filter and refuses, with InvalidArgument naming the field
// ("Error in field 'column_qualifier_regex_filter' : ..."), everything Bigtable refuses: bad or
// oversized regexes, empty row-key regex, chain/interleave with fewer than two filters,
// pass_all/block_all/sink/strip_value set to false, cells_per_row_limit and
// cells_per_column_limit <= 0, cells_per_row_offset < 0, row_sample outside (0, 1), bad labels
// and two labelled children in one chain, negative, inverted or off-granularity timestamp
// ranges, inverted value or column ranges, a column range without a family, a family regex
// with ':', an empty bitmask, a sink anywhere inside a condition, a serialized size above
// FilterOptions::max_serialized_bytes and nesting deeper than FilterOptions::max_depth. Depth
// is checked before anything recurses, so hostile input cannot exhaust the stack.
//
// Thread-safety: Apply() is not const (row_sample draws from the filter's own generator), so
// one RowFilter serves one thread; compile one per request. Const methods may run
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "google/bigtable/v2/data.pb.h"
#include "tessera/model/row_mutation.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::server {

// One cell as filters see it. `labels` are added by apply_label_transformer.
struct FilterCell {
  std::string family;
  std::string qualifier;
  int64_t timestamp_micros = 0;
  std::string value;
  std::vector<std::string> labels;

  bool operator==(const FilterCell&) const = default;
};

// One row as filters see it. Invariant (REQUIRED by RowFilter::Apply and kept by it): `cells`
// are in cell order: family name ascending, then qualifier bytes ascending, then timestamp
// descending. Equal (family, qualifier, timestamp) triples only occur in filter output
// (interleave and sink duplicates).
struct FilterRow {
  std::string key;
  std::vector<FilterCell> cells;

  bool operator==(const FilterRow&) const = default;
};

// Strict weak order of cell order (timestamps descending within a column).
bool CellOrderLess(const FilterCell& a, const FilterCell& b);

// Bigtable's published limits on a RowFilter.
inline constexpr size_t kMaxRowFilterBytes = 20480;
inline constexpr int kMaxRowFilterDepth = 20;
inline constexpr size_t kMaxLabelLength = 15;

struct FilterOptions {
  // --- behaviour ---
  // Millisecond-granular table: timestamp_range_filter bounds must be multiples of 1000.
  bool millisecond_granularity = true;
  // Seed of the row_sample_filter generator. The server passes a fresh one per request;
  // tests pass a fixed one to replay.
  uint64_t sample_seed = 0;
  // Largest accepted serialized filter, in bytes.
  size_t max_serialized_bytes = kMaxRowFilterBytes;
  // Deepest accepted nesting: the top filter is at depth 0, the children of a chain,
  // interleave or condition at depth d are at d + 1.
  int max_depth = kMaxRowFilterDepth;
  // Memory budget shared by all regexes of one filter, in bytes: each of the n regexes gets
  // budget / n as its RE2::Options::max_mem (compiled program plus match-time DFA cache).
  // A pattern whose program does not fit its share is refused, which bounds compile time,
  // match time and memory however many regexes the filter holds.
  int64_t max_regex_memory_bytes = int64_t{4} << 20;
  // Largest accepted bound on how many output cells one input cell can become (interleave
  // branches add up, chained interleaves multiply); bounds a row's filtered size.
  uint64_t max_copies_per_cell = 256;
};

// What the server may push into the storage read, because restricting the read this way
// provably does not change the filter's output (see docs/row_filters.md for the rules).
// Combined as the engine's ReadSpec does: a cell is read when its family is listed (or the
// list is empty), its timestamp is in time_range, and it is among the newest max_versions of
// those cells in its column.
struct FilterPushdown {
  std::vector<std::string> families;  // sorted, distinct; empty = every family
  model::TimeRange time_range;        // default: every timestamp
  int max_versions = 0;               // 0 = every version
  // The filter outputs no cell for any row; the server need not read at all.
  bool outputs_nothing = false;
};

class RowFilter {
 public:
  // Validates `proto` and compiles it. A RowFilter with no member of `filter` set passes
  // everything. InvalidArgument naming the first problem found.
  static StatusOr<RowFilter> Compile(const google::bigtable::v2::RowFilter& proto,
                                     const FilterOptions& options);
  // A filter that passes every cell unchanged (what a request without a filter gets).
  static RowFilter PassAll();

  RowFilter(RowFilter&&) noexcept;
  RowFilter& operator=(RowFilter&&) noexcept;
  ~RowFilter();

  // Replaces row->cells by the filter's output. The caller drops the row if no cell is left.
  // REQUIRES: row->cells in cell order (see FilterRow). Keeps that order.
  void Apply(FilterRow* row);

  // True if Apply() never changes a row (pass_all, an empty filter, chains of those).
  bool IsPassAll() const;
  // What the read may be restricted to; computed once by Compile().
  const FilterPushdown& pushdown() const { return pushdown_; }

  struct Node;  // compiled form, defined in row_filter.cc

 private:
  RowFilter(std::unique_ptr<Node> root, uint64_t sample_seed);

  std::unique_ptr<Node> root_;
  FilterPushdown pushdown_;
  bool pass_all_ = false;
  Random random_;
};

}  // namespace tessera::server
