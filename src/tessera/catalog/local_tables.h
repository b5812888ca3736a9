// LocalTables: the node's own tables as the schema store (schema_store.h) sees them. The store
// decides in the lock service; an implementation makes the node's tables follow (server/
// implements it over its TableCatalog and engine), so that catalog/ needs nothing from server/.
//
// Thread-safety: the store calls one method at a time for applying (from its mirror's delivery,
// see coord/prefix_mirror.h), but Contains and List may also come from Attach on another
// thread: implementations must be safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/catalog/table_definition.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

// A table as the node holds it.
struct LocalTable {
  std::string full_name;
  model::TableSchema schema;            // as stored locally (may carry dropped families)
  std::vector<std::string> split_keys;  // the start rows of its tablets after the first
  // The prefix its tablet ids share (tablet_id.h); 0 when they share none (tablets made before
  // cluster-wide ids).
  uint64_t tablet_prefix = 0;
};

class LocalTables {
 public:
  virtual ~LocalTables() = default;

  // Whether the node holds a table of that name.
  virtual bool Contains(std::string_view full_name) const = 0;
  // Every local table, ordered by full name.
  virtual std::vector<LocalTable> List() const = 0;
  // Makes the local table match `definition` (creates it, or applies a newer schema; nothing
  // when equal). Refusals the store counts and skips: InvalidArgument (a bad definition) and
  // FailedPrecondition (the local schema is newer, or differs at the same version). Any other
  // error is the environment's and is retried by the next reconcile.
  virtual Status Apply(const TableDefinition& definition) = 0;
  // Drops the table and its data, protected or not (the cluster decided). NotFound when absent.
  virtual Status Drop(std::string_view full_name) = 0;
};

}  // namespace tessera::catalog
