// Merging copies of one row that several sources returned (the replicas of a tablet, or the
// pieces of one read) into one row, as a coordinator reconciles replica reads.
//
// The result holds every (family, qualifier, timestamp) that any input holds, once, in cell
// order (model/row.h). When inputs disagree on the cell at one (family, qualifier, timestamp)
// the greatest value wins (unsigned byte order; then the greatest labels, which storage rows
// never carry), Cassandra's reconcile rule for equal timestamps: the result depends only on the
// set of input cells, never on the order of the inputs or of which replica answered first.
// Exact duplicates collapse by the same rule.
//
// Thread-safety: a pure function.
#pragma once

#include <vector>

#include "tessera/model/row.h"

namespace tessera::model {

// Merges `rows` into one row with their common key. An empty input gives an empty row (key ""
// and no cells); the caller decides whether a row without cells exists.
// REQUIRES: every row has the same key, and its cells in cell order.
Row MergeRows(std::vector<Row> rows);

}  // namespace tessera::model
