// Fuzzes TableSchema::Decode. A decoded schema must have valid family names and GC rules and
// survive Encode/Decode. Nothing may crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessera/model/schema.h"

using tessera::model::TableSchema;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto schema = TableSchema::Decode(input);
  if (!schema.ok()) return 0;
  for (const auto& [family, f] : schema->families) {
    if (!tessera::model::ValidateFamilyName(family).ok() || !f.gc_rule.Validate().ok()) {
      std::abort();
    }
  }
  auto again = TableSchema::Decode(schema->Encode());
  if (!again.ok() || !(*again == *schema)) std::abort();
  (void)schema->DebugString();
  return 0;
}
