#include "tessera/model/row_merge.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

namespace tessera::model {
namespace {

bool SameTriple(const Cell& a, const Cell& b) {
  return a.timestamp_micros == b.timestamp_micros && a.qualifier == b.qualifier &&
         a.family == b.family;
}

// Of two cells at one (family, qualifier, timestamp), whether `a` loses to `b`.
bool LosesTo(const Cell& a, const Cell& b) {
  return std::tie(a.value, a.labels) < std::tie(b.value, b.labels);
}

}  // namespace

Row MergeRows(std::vector<Row> rows) {
  Row out;
  if (rows.empty()) return out;
  out.key = std::move(rows.front().key);
  std::vector<Cell> all;
  size_t total = 0;
  for (const Row& r : rows) total += r.cells.size();
  all.reserve(total);
  for (Row& r : rows) {
    // Each input is sorted: merging keeps `all` sorted at linear cost per input.
    const auto middle = static_cast<std::ptrdiff_t>(all.size());
    all.insert(all.end(), std::make_move_iterator(r.cells.begin()),
               std::make_move_iterator(r.cells.end()));
    std::inplace_merge(all.begin(), all.begin() + middle, all.end(), CellOrderLess);
  }
  out.cells.reserve(all.size());
  for (Cell& c : all) {
    if (!out.cells.empty() && SameTriple(out.cells.back(), c)) {
      if (LosesTo(out.cells.back(), c)) out.cells.back() = std::move(c);
      continue;
    }
    out.cells.push_back(std::move(c));
  }
  return out;
}

}  // namespace tessera::model
