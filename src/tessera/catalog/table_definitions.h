// TableDefinitions: who decides what tables exist and what their schemas are. The admin service
// sends every change of a table definition (create, delete, schema update) here and reads from
// the local TableCatalog.
//
// Two implementations:
//   * TableCatalog (single-node mode, the default): the node's own catalog is the authority.
//   * ClusterDefinitions (cluster mode, cluster_definitions.h over catalog/schema_store.h):
//     the definition is decided in the lock service, so every node sees one schema, and
//     mirrored into the local catalog before the call returns (a node reads its own writes).
//
// Thread-safety: implementations are safe to call from many threads at once.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

struct TableInfo;  // table_catalog.h

class TableDefinitions {
 public:
  virtual ~TableDefinitions() = default;

  // Creates table `schema.name` in `instance` with one tablet per range between the split keys
  // (sorted and de-duplicated; an empty key is InvalidArgument). The new table's schema has
  // version 1. Returns the local snapshot of the new table.
  // Errors: InvalidArgument (names, GC rules, split keys), AlreadyExists
  // ('table "…" already exists'); cluster mode adds Unavailable (no lock-service session, or
  // the service could not be reached).
  virtual StatusOr<std::shared_ptr<const TableInfo>> CreateTable(
      std::string_view instance, model::TableSchema schema,
      std::vector<std::string> split_keys) = 0;

  // NotFound 'table "…" not found'; FailedPrecondition 'table "…" is protected from deletion';
  // cluster mode adds Unavailable.
  virtual Status DeleteTable(std::string_view full_name) = 0;

  // Runs `change` on a copy of the table's schema, validates the result (the name may not
  // change; names and GC rules must be valid), bumps schema.version and stores it. A non-OK
  // status from `change` is returned unchanged and nothing is stored. `change` may run more than
  // once (cluster mode retries a lost compare-and-set on the newer schema), so it must depend
  // only on the schema it is given. Returns the local snapshot after the change.
  // Errors: NotFound, InvalidArgument, whatever `change` returns; cluster mode adds Unavailable
  // and Aborted (lost the race too many times in a row).
  virtual StatusOr<std::shared_ptr<const TableInfo>> UpdateSchema(
      std::string_view full_name, const std::function<Status(model::TableSchema*)>& change) = 0;
};

}  // namespace tessera::catalog
