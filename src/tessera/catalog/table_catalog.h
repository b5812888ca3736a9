// TableCatalog: the node's tables — Bigtable tables mapped onto the engine's tablets.
//
// A table is named "projects/{p}/instances/{i}/tables/{t}"; any project and instance strings
// are accepted and a table id lives inside its instance (the same id under two instances is two
// tables). A table is a set of tablets that tile the whole row space ["", "") in order: the
// initial split keys of CreateTable are the tablet boundaries. Nothing is stored beside the
// engine: each tablet's descriptor holds the full table name, its row range and the table's
// schema (with the table options: version, granularity, deletion protection), so the catalog is
// rebuilt from Engine::ListTablets() at Open().
//
// Tablet ids (catalog/tablet_id.h) name the same tablet on every node: MakeTabletId(prefix,
// ordinal) with the table's prefix — drawn at random by CreateTable (a table made by this node
// alone), or given by the cluster's definition (ApplyDefinition). Tablets made before ids were
// cluster-wide keep their ids (prefix 0).
//
// Crash safety without a separate log:
//   * A table is live iff its tablets tile ["", ""). CreateTable creates the tablets one by one
//     and DeleteTable drops them one by one; a crash in between leaves a partial tiling, which
//     Open() finishes deleting (the create was never acknowledged; the delete was asked for).
//   * UpdateSchema bumps TableSchema::version and writes the schema to every tablet; a crash in
//     between leaves tablets with different versions, and Open() writes the highest version to
//     the others. ApplyDefinition (a mirror's write) keeps this true: it only ever writes a
//     version higher than the table's current one (or nothing).
//
// Thread-safety: every method is safe to call concurrently. Lookups (GetTable, ListTables) take
// a shared lock and return immutable snapshots; changes are serialized by one mutex. A
// TableInfo snapshot stays valid after the table changes or is deleted; calls into the engine
// with a dropped tablet then fail with NotFound.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tessera/catalog/table_definition.h"
#include "tessera/catalog/table_definitions.h"
#include "tessera/model/schema.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

struct TabletRef {
  tablet::TabletId id = 0;
  std::string start_row;  // inclusive
  std::string end_row;    // exclusive; "" = no upper bound
};

// An immutable snapshot of one table.
struct TableInfo {
  TableName name;
  std::string full_name;
  model::TableSchema schema;       // schema.name == name.table_id
  std::vector<TabletRef> tablets;  // by start_row; tile ["", "")
  // The prefix of the tablets' ids (catalog::CommonTabletPrefix); 0 for tablets made before
  // ids were cluster-wide.
  uint64_t tablet_prefix = 0;

  // The tablet holding `row`, and its index into `tablets`.
  const TabletRef& TabletFor(std::string_view row) const { return tablets[TabletIndexFor(row)]; }
  size_t TabletIndexFor(std::string_view row) const;
  // Indexes into `tablets` of those overlapping [start, end) (end "" = unbounded), in order.
  std::vector<size_t> TabletsOverlapping(std::string_view start, std::string_view end) const;
};

class TableCatalog final : public TableDefinitions {
 public:
  // Rebuilds the catalog from the engine's tablets, finishing interrupted creates/deletes and
  // schema updates (see above). `engine` must outlive the catalog. `seed` seeds the prefixes
  // CreateTable draws (a simulation passes its own; the other overload takes the system's
  // entropy).
  static StatusOr<std::unique_ptr<TableCatalog>> Open(tablet::Engine* engine, uint64_t seed);
  static StatusOr<std::unique_ptr<TableCatalog>> Open(tablet::Engine* engine);

  TableCatalog(const TableCatalog&) = delete;
  TableCatalog& operator=(const TableCatalog&) = delete;

  // Creates table `schema.name` in `instance` with one tablet per range between the split keys
  // (which are sorted and de-duplicated; empty keys are InvalidArgument), under a new random
  // tablet prefix (drawn again should it meet a tablet of this node). Sets schema.version.
  // Errors: InvalidArgument (names, GC rules, split keys), AlreadyExists
  // ('table "…" already exists').
  StatusOr<std::shared_ptr<const TableInfo>> CreateTable(
      std::string_view instance, model::TableSchema schema,
      std::vector<std::string> split_keys) override;
  // NotFound 'table "…" not found'.
  StatusOr<std::shared_ptr<const TableInfo>> GetTable(std::string_view full_name) const;
  // The instance's tables, ordered by table id.
  std::vector<std::shared_ptr<const TableInfo>> ListTables(std::string_view instance) const;
  // Every table of every instance, ordered by full name.
  std::vector<std::shared_ptr<const TableInfo>> ListAllTables() const;
  // NotFound; FailedPrecondition 'table "…" is protected from deletion'.
  Status DeleteTable(std::string_view full_name) override;
  // Runs `change` on a copy of the table's schema, validates the result (name and families must
  // stay valid; the name may not change) and stores it in every tablet. A non-OK status from
  // `change` is returned unchanged and nothing is stored. Returns the new snapshot.
  StatusOr<std::shared_ptr<const TableInfo>> UpdateSchema(
      std::string_view full_name,
      const std::function<Status(model::TableSchema*)>& change) override;

  // --- For a mirror of definitions decided elsewhere (catalog::SchemaStore) ---
  // Makes the local table match `definition`: creates it when absent (with the definition's
  // version, split keys and tablet prefix), or replaces its schema wholesale when the definition's
  // version is higher than the local one. Families missing from the new schema are dropped through
  // the engine (their data stays dead even if re-created later); families re-created since the
  // local version (see TableDefinition::family_since) are dropped first, in a separate step
  // written with the version just below the definition's. Nothing happens when the local
  // schema already equals the definition's. The tablets of an existing table are kept.
  // Errors: InvalidArgument (bad name, schema, split keys or family_since; no tablet prefix for
  // a table to create), FailedPrecondition when the local schema is newer than the definition,
  // or has the same version with other content (a rollback or a divergence: refused, so that
  // the crash-repair rule above holds), or when one of the table's tablet ids is already used
  // by another tablet of this node; engine errors.
  StatusOr<std::shared_ptr<const TableInfo>> ApplyDefinition(const TableDefinition& definition);
  // Deletes the table whether or not it is protected from deletion (the authority checked).
  // NotFound 'table "…" not found'.
  Status DropTable(std::string_view full_name);

  // Deletes every row of the table, keeping the table (Engine::TruncateTablet on each tablet).
  Status TruncateTable(std::string_view full_name);

  tablet::Engine* engine() const { return engine_; }

 private:
  TableCatalog(tablet::Engine* engine, uint64_t seed) : engine_(engine), random_(seed) {}
  Status Load();
  // Creates the tablets of a new table with `schema` as given, with ids MakeTabletId(prefix,
  // 0..). REQUIRES: split_keys sorted, unique and fewer than kMaxInitialTablets; prefix in
  // [1, 2^48). AlreadyExists when the name is taken; FailedPrecondition when a tablet id is.
  StatusOr<std::shared_ptr<const TableInfo>> CreateLocked(
      TableName name, model::TableSchema schema, const std::vector<std::string>& split_keys,
      uint64_t prefix) ABSL_EXCLUSIVE_LOCKS_REQUIRED(change_mu_);
  // Writes `schema` to every tablet of `old` and publishes the result.
  StatusOr<std::shared_ptr<const TableInfo>> WriteSchemaLocked(const TableInfo& old,
                                                               model::TableSchema schema)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(change_mu_);
  Status DropLocked(const TableInfo& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(change_mu_);
  std::shared_ptr<const TableInfo> Find(std::string_view full_name) const;
  void Publish(std::shared_ptr<const TableInfo> info);
  void Unpublish(std::string_view full_name);

  tablet::Engine* const engine_;
  // Serializes changes (create, delete, schema updates, truncates).
  absl::Mutex change_mu_;
  Random random_ ABSL_GUARDED_BY(change_mu_);  // draws CreateTable's prefixes
  // Guards tables_ for lookups; taken after change_mu_.
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const TableInfo>, std::less<>> tables_;
};

}  // namespace tessera::catalog
