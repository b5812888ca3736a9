// Fuzzes CompileRowFilter on arbitrary wire bytes and, when a filter compiles, applies it to
// a fixed row. Compile must refuse what it cannot bound (depth, size, regex memory); Apply must
// keep the cell order invariant and never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "google/bigtable/v2/data.pb.h"
#include "tessera/server/row_filter_proto.h"

namespace {

tessera::model::Row SampleRow() {
  tessera::model::Row row;
  row.key = "row\x00\xff";
  for (const char* family : {"a", "cf", "z"}) {
    for (const char* qualifier : {"", "q", "q\n1", "\xff"}) {
      for (int64_t ts : {3000, 2000, 0}) {
        row.cells.push_back(
            tessera::model::Cell{family, qualifier, ts, std::string("value-") + qualifier, {}});
      }
    }
  }
  return row;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  google::bigtable::v2::RowFilter proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  tessera::server::FilterOptions options;
  options.millisecond_granularity = size % 2 == 0;
  auto filter = tessera::server::CompileRowFilter(proto, options);
  if (!filter.ok()) return 0;
  tessera::model::Row row = SampleRow();
  filter->Apply(&row);
  if (row.cells.size() > 100000) std::abort();  // bounded growth (interleave duplicates)
  for (size_t i = 1; i < row.cells.size(); ++i) {
    if (tessera::model::CellOrderLess(row.cells[i], row.cells[i - 1])) std::abort();
  }
  return 0;
}
