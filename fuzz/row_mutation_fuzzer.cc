// Fuzzes the row-mutation decoder: validation, the reader and the mapping to storage entries.
// A batch that validates must map every mutation to a well-formed cell key, and copying it with
// FromEncoded must keep its bytes. Nothing may crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessera/model/cell_key.h"
#include "tessera/model/row_mutation.h"

using namespace tessera::model;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  RowMutationReader reader(input);
  MutationView m;
  uint32_t n = 0;
  while (reader.Next(&m)) ++n;
  const bool valid = ValidateRowMutation(input).ok();
  if (valid != reader.status().ok()) std::abort();
  uint32_t entries = 0;
  tessera::Status s = ForEachCellEntry(input, [&](std::string_view key, std::string_view) {
    CellKeyLayout layout;
    if (!ParseCellKeyLayout(key, &layout)) std::abort();
    ++entries;
  });
  if (s.ok() != valid) std::abort();
  if (!valid) {
    if (entries != 0) std::abort();  // all or nothing
    return 0;
  }
  if (entries != n || n != reader.count()) std::abort();
  auto copy = RowMutation::FromEncoded(input);
  if (!copy.ok() || copy->encoded() != input || copy->size() != n) std::abort();
  return 0;
}
