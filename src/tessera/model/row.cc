#include "tessera/model/row.h"

#include <algorithm>
#include <utility>

namespace tessera::model {

bool CellOrderLess(const Cell& a, const Cell& b) {
  if (int c = a.family.compare(b.family); c != 0) return c < 0;
  if (int c = a.qualifier.compare(b.qualifier); c != 0) return c < 0;
  return a.timestamp_micros > b.timestamp_micros;
}

RowRange RowRange::SingleKey(std::string_view key) {
  RowRange range{std::string(key), std::string(key)};
  range.end.push_back('\0');
  return range;
}

RowRange RowRange::WithPrefix(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(end.back() + 1);
  return RowRange{std::string(prefix), std::move(end)};
}

bool RowRange::IsSingleKey() const {
  return end.size() == start.size() + 1 && end.back() == '\0' &&
         end.compare(0, start.size(), start) == 0 && !start.empty();
}

RowSet RowSet::All() { return RowSet(std::vector<RowRange>{RowRange{}}); }

RowSet RowSet::Of(std::vector<std::string> keys, std::vector<RowRange> ranges) {
  ranges.reserve(ranges.size() + keys.size());
  for (const std::string& key : keys) {
    if (key.empty()) continue;  // no row has the empty key
    ranges.push_back(RowRange::SingleKey(key));
  }
  std::erase_if(ranges, [](const RowRange& r) { return !r.end.empty() && r.start >= r.end; });
  std::sort(ranges.begin(), ranges.end(),
            [](const RowRange& a, const RowRange& b) { return a.start < b.start; });
  std::vector<RowRange> merged;
  for (RowRange& r : ranges) {
    if (!merged.empty()) {
      RowRange& last = merged.back();
      if (last.end.empty()) continue;  // unbounded: covers everything after
      if (r.start <= last.end) {       // overlapping or adjacent
        if (r.end.empty() || r.end > last.end) last.end = std::move(r.end);
        continue;
      }
    }
    merged.push_back(std::move(r));
  }
  return RowSet(std::move(merged));
}

bool RowSet::Contains(std::string_view row) const {
  // The last range starting at or before `row` is the only one that can hold it.
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), row,
                       [](std::string_view r, const RowRange& range) { return r < range.start; });
  return it != ranges_.begin() && std::prev(it)->Contains(row);
}

}  // namespace tessera::model
