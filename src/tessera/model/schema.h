// A table's schema: its column families and their settings. Encoded into the manifest.
//
// Thread-safety: plain values; const methods may run concurrently.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "tessera/model/gc_rule.h"
#include "tessera/util/status.h"

namespace tessera::model {

inline constexpr size_t kMaxFamilyNameSize = 64;
inline constexpr size_t kMaxTableNameSize = 50;

// OK iff `family` matches [-_.a-zA-Z0-9]+ and has at most kMaxFamilyNameSize bytes; otherwise
// InvalidArgument naming it.
Status ValidateFamilyName(std::string_view family);
// OK iff `table` matches [_a-zA-Z0-9][-_.a-zA-Z0-9]* with at most kMaxTableNameSize bytes (as
// Bigtable's table ids); otherwise InvalidArgument naming it.
Status ValidateTableName(std::string_view table);

struct FamilySchema {
  GcRule gc_rule;
  // Hint: keep this family's blocks in the block cache with priority.
  bool in_memory = false;

  bool operator==(const FamilySchema&) const = default;
};

struct TableSchema {
  std::string name;
  // Ordered so that the encoding is deterministic; transparent for string_view lookups.
  std::map<std::string, FamilySchema, std::less<>> families;

  // nullptr if the table has no such family. The pointer lives until `families` changes.
  const FamilySchema* Find(std::string_view family) const;
  // The family's GC rule, or nullptr if the family does not exist.
  const GcRule* FindGcRule(std::string_view family) const;

  // InvalidArgument naming the first bad table name, family name or GC rule.
  Status Validate() const;

  // Binary form (for the manifest):
  //   schema := format(1 byte = 0x01) lp(name) varint32(count) family*count
  //   family := lp(name) flags(1 byte: bit 0 = in_memory, others 0) lp(gc rule, GcRule::Encode)
  // Families appear in strictly increasing name order.
  void EncodeTo(std::string* dst) const;
  std::string Encode() const;
  // DataLoss for malformed input: truncated, unknown format or flags, families out of order or
  // duplicated, bad family names or GC rules, trailing bytes.
  static StatusOr<TableSchema> Decode(std::string_view encoded);

  std::string DebugString() const;

  bool operator==(const TableSchema&) const = default;
};

}  // namespace tessera::model
