// Reading a google.bigtable.v2.RowFilter off the wire: validation with Bigtable's errors, and
// compilation into the model's filter tree (model/row_filter.h, which holds the meaning).
//
// CompileRowFilter() validates the whole filter and refuses, with InvalidArgument naming the
// field ("Error in field 'column_qualifier_regex_filter' : ..."), everything Bigtable refuses:
// bad or oversized regexes, empty row-key regex, chain/interleave with fewer than two filters,
// pass_all/block_all/sink/strip_value set to false, cells_per_row_limit and
// cells_per_column_limit <= 0, cells_per_row_offset < 0, row_sample outside (0, 1), bad labels
// and two labelled children in one chain, negative, inverted or off-granularity timestamp
// ranges, inverted value or column ranges, a column range without a family, a family regex
// with ':', an empty bitmask, a sink anywhere inside a condition, a serialized size above
// FilterOptions::max_serialized_bytes, nesting deeper than FilterOptions::max_depth and trees
// that may copy a cell more than FilterOptions::max_copies_per_cell times. Depth is checked
// before anything recurses, so hostile input cannot exhaust the stack.
//
// Regexes are RE2 in Latin-1 mode (raw bytes), matched against the whole string; `.` does not
// match "\n" unless the pattern says (?s); `\C` matches any byte.
//
// Thread-safety: a pure function; may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>

#include "google/bigtable/v2/data.pb.h"
#include "tessera/model/row_filter.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::server {

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
  // branches add up, chained interleaves multiply; model::MaxCopiesPerCell); bounds a row's
  // filtered size.
  uint64_t max_copies_per_cell = 256;
};

// Validates `proto` and compiles it. A RowFilter with no member of `filter` set passes
// everything. InvalidArgument naming the first problem found.
// The compiled filter keeps the encoded proto as its source (model::RowFilter::source).
StatusOr<model::RowFilter> CompileRowFilter(const google::bigtable::v2::RowFilter& proto,
                                            const FilterOptions& options);

// The options for a table of `schema`, with a fresh `seed` for its row samples.
FilterOptions FilterOptionsFor(const model::TableSchema& schema, uint64_t seed);

}  // namespace tessera::server
