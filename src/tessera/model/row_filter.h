// RowFilter: Bigtable's filter language, compiled to a tree of FilterNodes and applied to one
// row at a time, with Bigtable's semantics (docs/row_filters.md):
//
//   chain        children in sequence, each on the previous one's output
//   interleave   every child on a copy of the input; outputs pooled (duplicates kept) and merged
//                in cell order; for equal (family, qualifier, timestamp), the earlier child's
//                cells come first, each child's own order kept
//   condition    the predicate runs on the input; if it outputs any cell, true_branch runs on
//                the input, else false_branch; an absent branch outputs nothing
//   sink         its input goes straight to the final output (not to its parent, which sees
//                no cells from it); the final output is the top filter's output merged with
//                everything sunk, in cell order, the top filter's cells first on ties
//   leaves       pass_all, block_all, row_key_regex, row_sample, family_regex, qualifier_regex,
//                column_range, timestamp_range, value_regex, value_range, value_bitmask,
//                cells_per_row_offset, cells_per_row_limit, cells_per_column_limit,
//                strip_value, apply_label
//
// This is the meaning only. The tree is built, and every argument validated, by whoever reads
// a filter off the wire: server/row_filter_proto.h compiles google.bigtable.v2.RowFilter into
// it (regexes are RE2 in Latin-1 mode, matched against the whole string). The pushdown
// analysis (filter_pushdown.h) says what a storage read may leave out.
//
// Thread-safety: Apply() is not const (row_sample draws from the filter's own generator), so
// one RowFilter serves one thread; build one per request. Const methods may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/filter_pushdown.h"
#include "tessera/model/row.h"
#include "tessera/model/row_mutation.h"
#include "tessera/util/random.h"

namespace re2 {
class RE2;
}

namespace tessera::model {

// An interval of byte strings; each bound absent (unbounded), closed or open. Byte order is
// unsigned (std::string's comparison).
struct ByteRange {
  bool has_start = false;
  bool start_open = false;
  std::string start;
  bool has_end = false;
  bool end_open = false;
  std::string end;

  bool Contains(std::string_view s) const;
};

// One node of a compiled filter. Which members a node uses depends on its kind; the others
// keep their defaults. Invariants the builder must keep (RowFilter relies on them):
//   * chain, interleave: `children` non-empty, none null;
//   * condition: `predicate` non-null (an absent predicate is a pass_all node); the branches
//     may be null (outputs nothing); no sink anywhere below a condition;
//   * the *_regex kinds: `regex` non-null and ok();
//   * cells_per_row_limit, cells_per_column_limit: count >= 1; cells_per_row_offset: >= 0;
//   * row_sample: 0 < probability < 1.
struct FilterNode {
  enum class Kind {
    kPassAll,
    kBlockAll,
    kChain,
    kInterleave,
    kCondition,
    kSink,
    kRowKeyRegex,
    kRowSample,
    kFamilyRegex,
    kQualifierRegex,
    kColumnRange,
    kTimestampRange,
    kValueRegex,
    kValueRange,
    kValueBitmask,
    kCellsPerRowOffset,
    kCellsPerRowLimit,
    kCellsPerColumnLimit,
    kStripValue,
    kApplyLabel,
  };

  FilterNode();
  explicit FilterNode(Kind k);
  ~FilterNode();
  FilterNode(FilterNode&&) noexcept;
  FilterNode& operator=(FilterNode&&) noexcept;

  Kind kind = Kind::kPassAll;
  std::vector<std::unique_ptr<FilterNode>> children;  // chain, interleave
  std::unique_ptr<FilterNode> predicate;              // condition
  std::unique_ptr<FilterNode> true_branch;            // condition; null = outputs nothing
  std::unique_ptr<FilterNode> false_branch;           // condition; null = outputs nothing
  std::unique_ptr<re2::RE2> regex;                    // the *_regex kinds
  // Family regex: the families it names literally ("a|b"; LiteralFamilies()), empty when it
  // is a real pattern. Only the pushdown analysis reads it.
  std::vector<std::string> literal_families;
  std::string family;      // column range
  ByteRange range;         // column range (qualifiers), value range
  TimeRange time_range;    // timestamp range
  std::string text;        // label, or bitmask
  int64_t count = 0;       // offset / limits
  double probability = 0;  // row sample
};

// An upper bound on how many output cells one input cell can become under `root` (interleave
// branches add up, chained interleaves multiply, sunk copies count too); saturates just above
// `cap`, so deep nesting cannot overflow. Bounds a row's filtered size: builders refuse trees
// whose bound passes their limit.
uint64_t MaxCopiesPerCell(const FilterNode& root, uint64_t cap);

class RowFilter {
 public:
  // `root` obeys FilterNode's invariants; `sample_seed` seeds the row_sample generator (a fresh
  // one per request; tests pass a fixed one to replay).
  RowFilter(std::unique_ptr<FilterNode> root, uint64_t sample_seed);
  // A filter that passes every cell unchanged (what a request without a filter gets).
  static RowFilter PassAll();

  RowFilter(RowFilter&&) noexcept;
  RowFilter& operator=(RowFilter&&) noexcept;
  ~RowFilter();

  // Replaces row->cells by the filter's output. The caller drops the row if no cell is left.
  // REQUIRES: row->cells in cell order (model/row.h). Keeps that order.
  void Apply(Row* row);

  // True if Apply() never changes a row (pass_all, an empty filter, chains of those).
  bool IsPassAll() const { return pass_all_; }
  // What the read may be restricted to; computed once at construction.
  const FilterPushdown& pushdown() const { return pushdown_; }

  // The encoded wire filter (google.bigtable.v2.RowFilter) this one was compiled from, so that
  // a coordinator can send it on to the node that reads; empty for a filter built in code.
  const std::string& source() const { return source_; }
  void set_source(std::string source) { source_ = std::move(source); }

 private:
  std::unique_ptr<FilterNode> root_;
  FilterPushdown pushdown_;
  bool pass_all_ = false;
  Random random_;
  std::string source_;
};

}  // namespace tessera::model
