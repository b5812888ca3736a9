// ClusterSchema: the table definitions of a cluster, decided in the lock service and mirrored
// into each node's TableCatalog (cluster mode; single-node mode uses the catalog directly).
// docs/server.md, "The schema in cluster mode", has the whole story.
//
// The lock service holds one persistent file per table, `<prefix><full table name>` (e.g.
// "schema/projects/p/instances/i/tables/t"), whose value is a SchemaRecord (format below).
// Changes decide there by compare-and-set on the file's version; then the node applies the
// result to its own catalog before answering (read-your-writes on the node that made it).
//
// Every node mirrors the records: Attach() lists the prefix and reconciles the catalog with it
// (creates missing tables, updates differing schemas, deletes local tables that have no record),
// then watches the prefix from the listing's revision + 1 and applies each change in order.
// Applying is idempotent and ordered: for each table the mirror remembers the revision of the
// last change it applied and ignores anything older or equal.
//
// Incarnations: a table deleted and created again under the same name is a new table. Its
// incarnation is the lock-service revision that created its record (FileInfo::create_revision).
// The mirror keeps, in a small state file in the data folder, the incarnation each local table's
// data belongs to; a record of another incarnation makes the node drop its local table (and its
// data) before creating the new one — also on a node that was down while it happened. A local
// table whose incarnation the state file does not know (made in single-node mode, say) is
// dropped when the cluster has a record of that name: its data cannot be proven to be the
// cluster table's. When the cluster has no table of that name, Attach() offers the local table
// to the cluster instead (a new record, of a new incarnation that the node then holds): a node
// that moves from single-node mode into a cluster keeps its tables. Write order keeps the file safe across crashes: the incarnation is recorded
// before a table is created, and forgotten only after a table is dropped.
//
// Families dropped and re-created while a node was not looking: the record carries, for each
// family, the schema version at which it was last created (TableDefinition::family_since), so
// the catalog drops the stale local family before adding the new one.
//
// Session loss: Detach() stops the watch; while detached every change returns Unavailable. The
// node (cluster/) calls Detach() when its session is lost and Attach(new_session) after
// re-registering, which reconciles whatever changed meanwhile.
//
// Thread-safety: every method is safe to call concurrently. Applying (from the watch callback,
// from a change made on this node, or from a reconcile) is serialized by apply_mu_, which is
// held across local catalog writes (disk) but never across a lock-service call.
// Lock order: attach_mu_, then apply_mu_, then mu_.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/coord/lock_service.h"
#include "tessera/server/table_catalog.h"
#include "tessera/server/table_definitions.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::server {

// The value of a table's file in the lock service.
//
//   record := format(1 byte = 0x01) lp(schema) varint32(splits) lp(split key)*splits
//             varint32(families) (lp(family name) varint64(since))*families
//   schema: model::TableSchema::Encode() with no dropped families (those are per node)
//   splits: the initial split keys, sorted, unique, none empty
//   since:  the schema version at which the family was last created; one entry per family of
//           the schema, in increasing name order, each in [1, schema.version]
// A reader refuses an unknown format byte (a newer writer must choose another one).
struct SchemaRecord {
  static constexpr uint8_t kFormat = 0x01;

  model::TableSchema schema;
  std::vector<std::string> split_keys;
  std::map<std::string, uint64_t, std::less<>> family_since;

  std::string Encode() const;
  // DataLoss naming the problem for anything malformed: unknown format, truncation, a bad
  // schema, split keys unsorted or empty, `since` entries that do not match the families,
  // trailing bytes.
  static StatusOr<SchemaRecord> Decode(std::string_view encoded);
};

struct ClusterSchemaOptions {
  // Where table files live in the lock service. Non-empty; may not change while a cluster runs.
  std::string prefix = "schema/";
  // The mirror's state file (the incarnation of each local table), e.g.
  // "<data-dir>/CLUSTER_SCHEMA". Required; `fs` must outlive the ClusterSchema.
  FileSystem* fs = nullptr;
  std::string state_path;
  // How many times a change retries a lost compare-and-set before giving up with Aborted.
  int max_attempts = 16;
};

struct ClusterSchemaStats {
  uint64_t events_applied = 0;     // watch events that changed the local catalog
  uint64_t malformed_records = 0;  // records skipped: undecodable, or naming another table
  uint64_t divergent_records = 0;  // records skipped: the catalog refused them (older than
                                   // the local schema, or the same version with other content)
  uint64_t apply_failures = 0;     // local applies that failed (retried by the next reconcile)
  uint64_t reconciles = 0;         // list-and-reconcile passes completed
};

class ClusterSchema final : public TableDefinitions {
 public:
  // Loads the state file (missing: no table has a known incarnation). `catalog` must outlive
  // the ClusterSchema. DataLoss if the state file is corrupt; InvalidArgument for bad options.
  static StatusOr<std::unique_ptr<ClusterSchema>> Open(TableCatalog* catalog,
                                                       const ClusterSchemaOptions& options);
  // Detaches.
  ~ClusterSchema() override;

  ClusterSchema(const ClusterSchema&) = delete;
  ClusterSchema& operator=(const ClusterSchema&) = delete;

  // Lists the prefix, reconciles the local catalog with it, and watches the prefix. Detaches
  // first if attached. `session` must stay alive until Detach() (or the destructor) returns.
  // On error (Unavailable: the lock service failed; or a local catalog error) the object stays
  // detached; what was reconciled so far stays applied.
  Status Attach(coord::Session* session);
  // Stops the watch and waits for changes under way to finish with the session; afterwards the
  // session is no longer used. Changes then fail with Unavailable until the next Attach().
  // Idempotent.
  void Detach();
  bool attached() const;

  // Lists the prefix and reconciles the local catalog with it now (Attach does it; a watch
  // reset does it; a node may call it after an apply failure). Unavailable when detached.
  Status Reconcile();

  ClusterSchemaStats GetStats() const;

  // --- TableDefinitions ---
  // AlreadyExists 'table "…" already exists' when the record exists.
  StatusOr<std::shared_ptr<const TableInfo>> CreateTable(
      std::string_view instance, model::TableSchema schema,
      std::vector<std::string> split_keys) override;
  // A record that cannot be decoded can still be deleted (there is no other way to clear it).
  Status DeleteTable(std::string_view full_name) override;
  StatusOr<std::shared_ptr<const TableInfo>> UpdateSchema(
      std::string_view full_name,
      const std::function<Status(model::TableSchema*)>& change) override;

  // The lock-service file name of a table.
  std::string RecordName(std::string_view full_name) const {
    return options_.prefix + std::string(full_name);
  }

 private:
  // What the mirror has applied for one table name.
  struct Applied {
    int64_t revision = 0;     // of the last change applied (a put, or the delete)
    bool live = false;        // false: the table was deleted at `revision`
    int64_t incarnation = 0;  // live: the record's create_revision
  };

  ClusterSchema(TableCatalog* catalog, const ClusterSchemaOptions& options)
      : catalog_(catalog), options_(options) {}

  // The session for one change, or Unavailable when detached; pairs with EndUse().
  StatusOr<coord::Session*> BeginUse();
  void EndUse();

  // Applies one record (as listed, got, or put) to the local catalog unless an equal or newer
  // change was applied already: true if applied. A malformed or refused record is logged,
  // counted and skipped (false, OK). Errors: the local catalog's or the state file's.
  StatusOr<bool> ApplyRecordLocked(const std::string& full_name, const coord::FileInfo& file)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Applies the deletion of a table's record, made at `revision` (or, from a change made here,
  // after it): drops the local table unless a newer change was applied. True if applied.
  StatusOr<bool> ApplyDeleteLocked(const std::string& full_name, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Stops the watch, waits for changes under way with the session, and forgets it. False if
  // there was no session.
  bool DetachLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(attach_mu_);
  // Offers the cluster every local table whose incarnation is unknown (made before this node
  // joined a cluster): a record is created for it unless one of that name exists. A table of a
  // known incarnation without a record was deleted by the cluster; the reconcile drops it.
  Status AdoptLocalTables(coord::Session* session);
  // Lists the prefix with `session` and reconciles; returns the listing's revision.
  StatusOr<int64_t> ReconcileWith(coord::Session* session);
  void OnWatchEvent(coord::Session* session, const coord::WatchEvent& event);

  // The state file: the incarnation each local table's data belongs to.
  Status LoadState();
  Status SaveStateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  Status SetIncarnationLocked(const std::string& full_name, std::optional<int64_t> incarnation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  TableCatalog* const catalog_;
  const ClusterSchemaOptions options_;

  // Serializes Attach and Detach. Taken before apply_mu_; never taken by a watch callback.
  absl::Mutex attach_mu_;
  // Serializes applying to the catalog and the state file. Taken before mu_.
  absl::Mutex apply_mu_;
  std::map<std::string, Applied, std::less<>> applied_ ABSL_GUARDED_BY(apply_mu_);
  std::map<std::string, int64_t, std::less<>> incarnations_ ABSL_GUARDED_BY(apply_mu_);
  // Set when a watch event could not be applied: the next event reconciles first.
  bool needs_reconcile_ ABSL_GUARDED_BY(apply_mu_) = false;

  // Guards the attachment and the statistics.
  mutable absl::Mutex mu_;
  coord::Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::unique_ptr<coord::Watch> watch_ ABSL_GUARDED_BY(mu_);
  bool attached_ ABSL_GUARDED_BY(mu_) = false;
  bool session_expired_ ABSL_GUARDED_BY(mu_) = false;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // changes using session_ now
  ClusterSchemaStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::server
