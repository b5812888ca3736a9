// SchemaRecord: the value of a table's file in the lock service, `<prefix><full table name>`
// (docs/server.md, "The schema in cluster mode"). Written by the schema store's compare-and-set
// changes, read by every node's mirror.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

// The value of a table's file in the lock service.
//
//   record := format(1 byte) lp(schema) varint32(splits) lp(split key)*splits
//             varint32(families) (lp(family name) varint64(since))*families
//             [varint64(tablet prefix)]                       -- format 0x02 only
//   format: 0x01, or 0x02 when the record names its tablets' id prefix (tablet_id.h)
//   schema: model::TableSchema::Encode() (an old schema encoding, 0x02, must list no dropped
//           families: those are per tablet)
//   splits: the initial split keys, sorted, unique, none empty
//   since:  the schema version at which the family was last created; one entry per family of
//           the schema, in increasing name order, each in [1, schema.version]
//   tablet prefix: non-zero, below 2^48
// A reader refuses an unknown format byte (a newer writer must choose another one). A record
// with no tablet prefix is written in format 0x01, which the previous version reads too.
struct SchemaRecord {
  static constexpr uint8_t kFormat = 0x01;
  static constexpr uint8_t kFormatWithTabletPrefix = 0x02;

  model::TableSchema schema;
  std::vector<std::string> split_keys;
  std::map<std::string, uint64_t, std::less<>> family_since;
  // The prefix of the table's tablet ids when it is not the record's create revision: a table
  // made by one node alone that joined the cluster keeps its ids (tablet_id.h). 0 = none.
  uint64_t tablet_prefix = 0;

  std::string Encode() const;
  // DataLoss naming the problem for anything malformed: unknown format, truncation, a bad
  // schema, split keys unsorted or empty, `since` entries that do not match the families, a
  // tablet prefix of 0 or of 2^48 or more, trailing bytes.
  static StatusOr<SchemaRecord> Decode(std::string_view encoded);
};

// DataLoss "malformed schema record: <what>", for records that decode but do not fit (a schema
// naming another table).
Status MalformedRecord(std::string_view what);

}  // namespace tessera::catalog
