// A table's schema: its column families and their settings — logical, the same value on every
// node (docs/sequence_numbers.md, "The schema is logical"). Encoded into the manifest and the
// cluster catalog. The marks a dropped family leaves in a tablet's data are the tablet's, not
// the schema's (tablet::DropMarks).
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
  // Cassandra's additions (docs/super_columns.md). A super-column family's qualifiers are
  // "super:column"; a time-sorted family's columns (or sub-columns) are 8-byte big-endian
  // times, returned newest first. The server maps them to and from stored qualifiers.
  bool super_columns = false;
  bool time_sorted = false;

  bool operator==(const FamilySchema&) const = default;
};

// Tessera's table options (tessera.v1.TableOptions on the wire), kept with the schema so that
// every node and every restart sees them. model/ keeps them as text and does not interpret
// them; the layers that act on them check them when a table is created (the admin service):
// `placement` in catalog/placement.h's text form, the levels as replication/consistency.h
// names them, `compaction` "leveled" or "size_tiered" (docs/compaction.md). "" = not set: a
// table made before the options existed, or a choice left to the node's default.
struct TableOptions {
  std::string placement;
  std::string read_consistency;
  std::string write_consistency;
  std::string compaction;

  bool empty() const {
    return placement.empty() && read_consistency.empty() && write_consistency.empty() &&
           compaction.empty();
  }
  bool operator==(const TableOptions&) const = default;
};

enum class TimestampGranularity : uint8_t {
  kMillis = 0,  // every user timestamp is a multiple of 1000 micros (Bigtable's default)
  kMicros = 1,
};

struct TableSchema {
  std::string name;
  // Bumped by whoever changes the schema; when copies disagree (a crash between updating the
  // tablets of one table), the highest version is the table's schema.
  uint64_t version = 0;
  TimestampGranularity granularity = TimestampGranularity::kMillis;
  // DeleteTable and dropping a family are refused while set.
  bool deletion_protection = false;
  // Ordered so that the encoding is deterministic; transparent for string_view lookups.
  std::map<std::string, FamilySchema, std::less<>> families;
  TableOptions options;

  // nullptr if the table has no such family. The pointer lives until `families` changes.
  const FamilySchema* Find(std::string_view family) const;
  // The family's GC rule, or nullptr if the family does not exist.
  const GcRule* FindGcRule(std::string_view family) const;

  // InvalidArgument naming the first bad table name, family name or GC rule.
  Status Validate() const;

  // Binary form (for the manifest and the catalog):
  //   schema  := format(1 byte = 0x03 | 0x04 | 0x05) lp(name) varint64(version)
  //              table_flags(1 byte) varint32(count) family*count
  //              [lp(placement) lp(read_consistency) lp(write_consistency)]  -- 0x04, 0x05
  //              [lp(compaction)]                                            -- 0x05 only
  //   family  := lp(name) flags(1 byte) lp(gc rule, GcRule::Encode)
  //   table_flags: bit 0 = deletion_protection, bit 1 = micros granularity, others 0
  //   flags:       bit 0 = in_memory, bit 1 = super_columns, bit 2 = time_sorted, others 0
  // Families appear in strictly increasing name order. A schema whose options are all empty is
  // written in format 0x03, one without a compaction choice in 0x04: the earliest format that
  // holds it, so that the versions before read it too. Older formats still decode: 0x02
  // is 0x03 followed by the tablet's drop marks, which the schema held before they moved to the
  // tablet (varint32(dropped) drop*dropped, drop := lp(name) varint64(sequence), in strictly
  // increasing name order); 0x01 has no version, no table flags and no drops.
  void EncodeTo(std::string* dst) const;
  std::string Encode() const;
  // DataLoss for malformed input: truncated, unknown format or flags, families (or drops) out of
  // order or duplicated, bad family names or GC rules, trailing bytes. The drop marks of format
  // 0x02 go to *legacy_drop_marks when it is given (it is cleared first), and are discarded
  // otherwise.
  static StatusOr<TableSchema> Decode(
      std::string_view encoded,
      std::map<std::string, uint64_t, std::less<>>* legacy_drop_marks = nullptr);

  std::string DebugString() const;

  bool operator==(const TableSchema&) const = default;
};

}  // namespace tessera::model
