// Filter pushdown: what a storage read may leave out for a compiled RowFilter (row_filter.h)
// because restricting the read that way provably does not change the filter's output. The
// rules, with their proofs, are in docs/row_filters.md ("Pushdown").
//
// Thread-safety: pure functions over immutable input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/row.h"
#include "tessera/model/row_mutation.h"

namespace tessera::model {

struct FilterNode;

// Combined as ReadSpec's selections are: a cell is read when its family is listed (or the list
// is empty), its timestamp is in time_range, and it is among the newest max_versions of those
// cells in its column.
struct FilterPushdown {
  std::vector<std::string> families;  // sorted, distinct; empty = every family
  TimeRange time_range;               // default: every timestamp
  int max_versions = 0;               // 0 = every version
  // The filter outputs no cell for any row; the read need not happen at all.
  bool outputs_nothing = false;

  // The read that gets exactly this restriction (meaningless when outputs_nothing).
  ReadSpec ToReadSpec() const;
};

// The pushdown of the tree `root`. REQUIRES: `root` obeys FilterNode's invariants.
FilterPushdown ComputePushdown(const FilterNode& root);

// "a|b|c" where every alternative is a plain family name without regex meaning ([-_a-zA-Z0-9]+):
// the families, sorted and distinct. Empty for anything else. What a family regex node's
// literal_families holds.
std::vector<std::string> LiteralFamilies(std::string_view pattern);

}  // namespace tessera::model
