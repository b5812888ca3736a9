// Fuzzes MutationBuilder on arbitrary MutateRowRequest bytes against a fixed schema with every
// family kind. A built mutation must be a well-formed batch; nothing may crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "google/bigtable/v2/bigtable.pb.h"
#include "tessera/model/row_mutation.h"
#include "tessera/server/mutation_builder.h"

namespace {

tessera::model::TableSchema Schema() {
  tessera::model::TableSchema s;
  s.name = "t";
  s.families["cf"];
  s.families["super"].super_columns = true;
  s.families["time"].time_sorted = true;
  s.families["inbox"].super_columns = true;
  s.families["inbox"].time_sorted = true;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::model::TableSchema schema = Schema();
  google::bigtable::v2::MutateRowRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  tessera::server::MutationBuilder builder(schema);
  auto built = builder.Build(request.row_key(), request.mutations(), 1'700'000'000'000'000);
  if (!built.ok()) return 0;
  if (!tessera::model::ValidateRowMutation(built->encoded()).ok()) std::abort();
  if (built->row() != request.row_key()) std::abort();
  return 0;
}
