// ClusterDefinitions: the catalog::TableDefinitions of cluster mode. The definitions are decided by
// the cluster's schema store (catalog/schema_store.h) in the lock service and mirrored into this
// node's catalog::TableCatalog; this is the thin glue between the two: it gives the store the
// catalog as catalog::LocalTables (apply a definition, drop a table, list), and gives the admin
// service catalog::TableInfo snapshots after each change (a node reads its own writes).
//
// The node (server.cc) attaches store() to its lock-service session after registering and
// detaches it when the session is lost.
//
// Thread-safety: every method is safe to call concurrently (the store's and the catalog's
// contracts).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tessera/catalog/schema_store.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/table_definitions.h"
#include "tessera/util/status.h"

namespace tessera::server {

class ClusterDefinitions final : public catalog::TableDefinitions {
 public:
  // Opens the store (SchemaStore::Open's errors) over `catalog`, which must outlive the
  // object. InvalidArgument without a catalog.
  static StatusOr<std::unique_ptr<ClusterDefinitions>> Open(
      catalog::TableCatalog* catalog, const catalog::SchemaStoreOptions& options);
  ~ClusterDefinitions() override;

  ClusterDefinitions(const ClusterDefinitions&) = delete;
  ClusterDefinitions& operator=(const ClusterDefinitions&) = delete;

  catalog::SchemaStore* store() const { return store_.get(); }

  // Runs after every change that succeeded, before the change returns, with the revision every
  // node must have applied to hold it (catalog::SchemaStore): the node's schema agreement
  // (schema_agreement.h) waits there. Null (the default): nothing runs.
  void SetAfterChange(std::function<void(int64_t revision)> after_change);

  // Creates the METADATA table (catalog/metadata_table.h) unless the cluster has it; OK when it
  // exists. No schema agreement wait: the master's MetadataSync calls this from its step.
  Status EnsureMetadataTable();

  // --- catalog::TableDefinitions (errors: catalog::SchemaStore's) ---
  // The instance of Tessera's own tables (catalog::kMetadataInstance) is refused with
  // PermissionDenied. A CreateTable also makes the METADATA table when there is none, so that
  // the new table's tablets can be located as soon as the master has written their rows.
  StatusOr<std::shared_ptr<const catalog::TableInfo>> CreateTable(
      std::string_view instance, model::TableSchema schema,
      std::vector<std::string> split_keys) override;
  Status DeleteTable(std::string_view full_name) override;
  StatusOr<std::shared_ptr<const catalog::TableInfo>> UpdateSchema(
      std::string_view full_name,
      const std::function<Status(model::TableSchema*)>& change) override;

 private:
  class CatalogTables;
  explicit ClusterDefinitions(catalog::TableCatalog* catalog);

  void AfterChange(int64_t revision) const;

  catalog::TableCatalog* const catalog_;
  mutable absl::Mutex after_change_mu_;
  std::function<void(int64_t)> after_change_ ABSL_GUARDED_BY(after_change_mu_);
  const std::unique_ptr<CatalogTables> local_;
  std::unique_ptr<catalog::SchemaStore> store_;  // uses local_: declared after it
};

}  // namespace tessera::server
