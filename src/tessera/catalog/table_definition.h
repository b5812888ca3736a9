// The vocabulary of table definitions shared by the cluster's schema store (schema_store.h) and
// each node's local catalog (server/table_catalog.h): table names, a definition decided by the
// cluster, and the rules every change of a schema follows. Pure functions over values.
//
// Thread-safety: everything here is a value or a pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

// "projects/{p}/instances/{i}" and "projects/{p}/instances/{i}/tables/{t}".
struct TableName {
  std::string instance;  // "projects/p/instances/i"
  std::string table_id;  // "t"

  std::string Full() const { return instance + "/tables/" + table_id; }
  // InvalidArgument naming the problem for anything that is not a well-formed table name
  // (the table id is checked with model::ValidateTableName).
  static StatusOr<TableName> Parse(std::string_view full_name);
};
// InvalidArgument unless `name` is "projects/{p}/instances/{i}" with non-empty p and i that
// contain no '/'.
Status ValidateInstanceName(std::string_view name);

// Checks and normalizes initial split keys: sorted, de-duplicated; InvalidArgument
// "initial split #N has an empty row key", or when there are kMaxInitialTablets or more
// (tablet_id.h).
Status NormalizeSplitKeys(std::vector<std::string>* split_keys);

// The schema a change makes of `old`: `change` run on a copy (its non-OK status is returned
// unchanged), checked (the name may not change; Validate()), with the next version. Shared by
// every TableDefinitions.
StatusOr<model::TableSchema> ChangedSchema(
    const model::TableSchema& old, const std::function<Status(model::TableSchema*)>& change);

// A table definition decided by the cluster (the schema store), for a node to apply locally
// (LocalTables::Apply, TableCatalog::ApplyDefinition).
struct TableDefinition {
  std::string full_name;  // "projects/{p}/instances/{i}/tables/{t}"; t == schema.name
  // The schema with the version the authority gave it (>= 1).
  model::TableSchema schema;
  // Initial tablet boundaries; used only when the table is created here.
  std::vector<std::string> split_keys;
  // The prefix of the table's tablet ids (tablet_id.h); used only when the table is created
  // here, with ids MakeTabletId(tablet_prefix, 0 .. split_keys.size()). Required (non-zero).
  uint64_t tablet_prefix = 0;
  // For each family of `schema`, the schema version at which it was last created (a family
  // dropped and created again gets the version of the re-creation). A family held locally
  // whose entry is newer than the local schema version was dropped and re-created while this
  // node did not look: its local data is dropped before the new family is added. Families
  // missing from the map count as created at version 1.
  std::map<std::string, uint64_t, std::less<>> family_since;
};

}  // namespace tessera::catalog
