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
// Crash safety without a separate log:
//   * A table is live iff its tablets tile ["", ""). CreateTable creates the tablets one by one
//     and DeleteTable drops them one by one; a crash in between leaves a partial tiling, which
//     Open() finishes deleting (the create was never acknowledged; the delete was asked for).
//   * UpdateSchema bumps TableSchema::version and writes the schema to every tablet; a crash in
//     between leaves tablets with different versions, and Open() writes the highest version to
//     the others.
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
#include "tessera/model/schema.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/status.h"

namespace tessera::server {

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

struct TabletRef {
  tablet::TabletId id = 0;
  std::string start_row;  // inclusive
  std::string end_row;    // exclusive; "" = no upper bound
};

// An immutable snapshot of one table.
struct TableInfo {
  TableName name;
  std::string full_name;
  model::TableSchema schema;      // schema.name == name.table_id
  std::vector<TabletRef> tablets;  // by start_row; tile ["", "")

  // The tablet holding `row`.
  const TabletRef& TabletFor(std::string_view row) const;
  // Indexes into `tablets` of those overlapping [start, end) (end "" = unbounded), in order.
  std::vector<size_t> TabletsOverlapping(std::string_view start, std::string_view end) const;
};

class TableCatalog {
 public:
  // Rebuilds the catalog from the engine's tablets, finishing interrupted creates/deletes and
  // schema updates (see above). `engine` must outlive the catalog.
  static StatusOr<std::unique_ptr<TableCatalog>> Open(tablet::Engine* engine);

  TableCatalog(const TableCatalog&) = delete;
  TableCatalog& operator=(const TableCatalog&) = delete;

  // Creates table `schema.name` in `instance` with one tablet per range between the split keys
  // (which are sorted and de-duplicated; empty keys are InvalidArgument). Sets schema.version.
  // Errors: InvalidArgument (names, GC rules, split keys), AlreadyExists
  // ('table "…" already exists').
  StatusOr<std::shared_ptr<const TableInfo>> CreateTable(std::string_view instance,
                                                         model::TableSchema schema,
                                                         std::vector<std::string> split_keys);
  // NotFound 'table "…" not found'.
  StatusOr<std::shared_ptr<const TableInfo>> GetTable(std::string_view full_name) const;
  // The instance's tables, ordered by table id.
  std::vector<std::shared_ptr<const TableInfo>> ListTables(std::string_view instance) const;
  // NotFound; FailedPrecondition 'table "…" is protected from deletion'.
  Status DeleteTable(std::string_view full_name);
  // Runs `change` on a copy of the table's schema, validates the result (name and families must
  // stay valid; the name may not change) and stores it in every tablet. A non-OK status from
  // `change` is returned unchanged and nothing is stored. Returns the new snapshot.
  StatusOr<std::shared_ptr<const TableInfo>> UpdateSchema(
      std::string_view full_name, const std::function<Status(model::TableSchema*)>& change);

  // Deletes every row of the table, keeping the table (Engine::TruncateTablet on each tablet).
  Status TruncateTable(std::string_view full_name);

  tablet::Engine* engine() const { return engine_; }

 private:
  explicit TableCatalog(tablet::Engine* engine) : engine_(engine) {}
  Status Load();
  std::shared_ptr<const TableInfo> Find(std::string_view full_name) const;
  void Publish(std::shared_ptr<const TableInfo> info);
  void Unpublish(std::string_view full_name);

  tablet::Engine* const engine_;
  // Serializes changes (create, delete, schema updates, truncates).
  absl::Mutex change_mu_;
  // Guards tables_ and next_tablet_id_ for lookups; taken after change_mu_.
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const TableInfo>, std::less<>> tables_;
  tablet::TabletId next_tablet_id_ = 1;
};

}  // namespace tessera::server
