// SchemaStore: the table definitions of a cluster, decided in the lock service and mirrored
// into each node's tables (cluster mode; single-node mode uses the node's catalog directly).
// docs/catalog.md says where it sits; docs/server.md, "The schema in cluster mode", has the
// whole story.
//
// The lock service holds one persistent file per table, `<prefix><full table name>` (e.g.
// "schema/projects/p/instances/i/tables/t"), whose value is a SchemaRecord (schema_record.h).
// Changes decide there by compare-and-set on the file's version, retried when lost; then the
// node applies the result to its own tables before answering (read-your-writes on the node that
// made it).
//
// Every node mirrors the records with a coord::PrefixMirror: Attach() lists the prefix and
// makes the local tables match (creates missing tables, applies differing schemas, drops local
// tables that have no record), then follows the watch in revision order; a reset reconciles
// again. The mirror drops anything not newer than what it delivered for a name, so a late or
// repeated event never rolls a schema back.
//
// Incarnations: a table deleted and created again under the same name is a new table. Its
// incarnation is the lock-service revision that created its record (FileInfo::create_revision).
// The IncarnationFile (incarnation_file.h) keeps the incarnation each local table's data
// belongs to; a record of another incarnation makes the node drop its local table (and its
// data) before creating the new one — also on a node that was down while it happened. A local
// table whose incarnation the file does not know (made in single-node mode, say) is dropped
// when the cluster has a record of that name: its data cannot be proven to be the cluster
// table's. When the cluster has no table of that name, Attach() offers the local table to the
// cluster instead (a new record, of a new incarnation that the node then holds): a node that
// moves from single-node mode into a cluster keeps its tables.
//
// Families dropped and re-created while a node was not looking: the record carries, for each
// family, the schema version at which it was last created (TableDefinition::family_since), so
// the node drops the stale local family before adding the new one.
//
// Agreement (Cassandra's schema agreement): a change is durable once it is in the lock service,
// and applied on the node that made it before it returns; the other nodes apply it when their
// watch delivers it, a few milliseconds later. applied_revision() says how far this node has
// applied, and the changes give the revision another node must have applied to hold them, so that the node that made a change can wait (bounded) until
// every live node holds it before it answers (server/schema_agreement.h).
//
// Session loss: Detach() stops the mirror; while detached (or once the session expired) every
// change returns Unavailable. The node calls Detach() when its session is lost and
// Attach(new_session) after re-registering, which reconciles whatever changed meanwhile.
//
// Thread-safety: every method is safe to call concurrently. Applying (from the watch, from a
// change made on this node, or from a reconcile) is serialized by the mirror, which holds its
// delivery lock across LocalTables writes (disk) but never across a lock-service call.
// Lock order: attach_mu_, then the mirror's locks, then the IncarnationFile's, then mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/incarnation_file.h"
#include "tessera/catalog/local_tables.h"
#include "tessera/coord/lock_service.h"
#include "tessera/coord/prefix_mirror.h"
#include "tessera/model/schema.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

struct SchemaStoreOptions {
  // Where table files live in the lock service. Non-empty; may not change while a cluster runs.
  std::string prefix = "schema/";
  // The incarnation file, e.g. "<data-dir>/CLUSTER_SCHEMA". Required; `fs` must outlive the
  // SchemaStore.
  FileSystem* fs = nullptr;
  std::string state_path;
  // How many times a change retries a lost compare-and-set before giving up with Aborted.
  int max_attempts = 16;
};

struct SchemaStoreStats {
  uint64_t events_applied = 0;     // watch events that changed the local tables
  uint64_t malformed_records = 0;  // records skipped: undecodable, or naming another table
  uint64_t divergent_records = 0;  // records skipped: the local tables refused them (older
                                   // than the local schema, or the same version with other
                                   // content)
  uint64_t apply_failures = 0;     // local applies that failed (retried by the next reconcile)
  uint64_t reconciles = 0;         // list-and-reconcile passes completed
};

class SchemaStore final : private coord::MirrorListener {
 public:
  // Loads the incarnation file. `local` must outlive the SchemaStore. DataLoss if the file is
  // corrupt; InvalidArgument for bad options.
  static StatusOr<std::unique_ptr<SchemaStore>> Open(LocalTables* local,
                                                     const SchemaStoreOptions& options);
  // Detaches.
  ~SchemaStore() override;

  SchemaStore(const SchemaStore&) = delete;
  SchemaStore& operator=(const SchemaStore&) = delete;

  // Offers the cluster the local tables of unknown incarnation, then lists the prefix,
  // reconciles the local tables with it, and watches the prefix. Detaches first if attached.
  // `session` must stay alive until Detach() (or the destructor) returns. On error
  // (Unavailable: the lock service failed; or a local error) the store stays detached; what
  // was reconciled so far stays applied.
  Status Attach(coord::Session* session);
  // Stops the watch and waits for changes under way to finish with the session; afterwards the
  // session is no longer used. Changes then fail with Unavailable until the next Attach().
  // Idempotent.
  void Detach();
  bool attached() const;

  // Lists the prefix and reconciles the local tables with it now (Attach does it; a watch
  // reset does it; a node may call it after an apply failure). Unavailable when detached.
  Status Reconcile();

  SchemaStoreStats GetStats() const;

  // --- Agreement ---
  // The lock-service revision up to which this node has applied the cluster's schema: every
  // record and delete at or below it has been applied to the local tables (or refused as
  // malformed or divergent, which is logged and counted). 0 before the first listing.
  int64_t applied_revision() const;

  // --- Changes (the contract of catalog::TableDefinitions, which wraps these) ---
  // Creates the record of table `schema.name` in `instance` (schema version 1) and applies it
  // locally; returns the table's full name. InvalidArgument (names, GC rules, split keys),
  // AlreadyExists 'table "…" already exists', Unavailable.
  // Every change sets *revision (when given) to the revision another node must have applied
  // (applied_revision()) to hold the change. A delete's own revision is not known here (the
  // lock service does not return it): it is the record's last revision + 1, which is exact
  // unless another change of the service came between the read of the record and the delete —
  // then a node may report that revision a few milliseconds before its watch delivers the
  // delete.
  StatusOr<std::string> CreateTable(std::string_view instance, model::TableSchema schema,
                                    std::vector<std::string> split_keys,
                                    int64_t* revision = nullptr);
  // NotFound, FailedPrecondition (protected), Unavailable, Aborted (lost too many races). A
  // record that cannot be decoded can still be deleted (there is no other way to clear it).
  Status DeleteTable(std::string_view full_name, int64_t* revision = nullptr);
  // Runs `change` on the record's schema (maybe more than once: a lost compare-and-set runs it
  // again on the newer schema) and stores and applies the result. NotFound, InvalidArgument,
  // DataLoss (the record is malformed), whatever `change` returns, Unavailable, Aborted.
  Status UpdateSchema(std::string_view full_name,
                      const std::function<Status(model::TableSchema*)>& change,
                      int64_t* revision = nullptr);

  // The lock-service file name of a table.
  std::string RecordName(std::string_view full_name) const {
    return options_.prefix + std::string(full_name);
  }

 private:
  SchemaStore(LocalTables* local, const SchemaStoreOptions& options,
              std::unique_ptr<IncarnationFile> incarnations)
      : local_(local), options_(options), incarnations_(std::move(incarnations)) {}

  // --- coord::MirrorListener (called one at a time by mirror_) ---
  Status OnPut(const coord::FileInfo& file, coord::MirrorCause cause) override;
  Status OnDelete(const std::string& name, int64_t revision, coord::MirrorCause cause) override;
  Status OnSynced(int64_t revision, const std::set<std::string, std::less<>>& live) override;
  void OnSessionExpired() override;

  // The session for one change, or Unavailable when detached.
  StatusOr<coord::PrefixMirror::SessionUse> BeginUse();
  // Applies one record to the local tables: true if applied. A malformed or refused record is
  // logged, counted and skipped (false, OK). Errors: the local tables' or the incarnation
  // file's.
  StatusOr<bool> ApplyRecord(const std::string& full_name, const coord::FileInfo& file);
  // Drops the local table (deleted in the cluster at `revision`): true if there was one.
  StatusOr<bool> ApplyDelete(const std::string& full_name, int64_t revision);
  // Offers the cluster every local table whose incarnation is unknown (made before this node
  // joined a cluster): a record is created for it unless one of that name exists. A table of a
  // known incarnation without a record was deleted by the cluster; the reconcile drops it.
  Status AdoptLocalTables(coord::Session* session);

  LocalTables* const local_;
  const SchemaStoreOptions options_;
  const std::unique_ptr<IncarnationFile> incarnations_;

  // Records that everything up to `revision` is applied.
  void Applied(int64_t revision) ABSL_LOCKS_EXCLUDED(mu_);

  // Serializes Attach and Detach. Never taken by a mirror delivery.
  absl::Mutex attach_mu_;
  bool attached_ ABSL_GUARDED_BY(attach_mu_) = false;

  // Guards the statistics kept here (the mirror keeps failures and reconciles) and the
  // agreement's state.
  mutable absl::Mutex mu_;
  SchemaStoreStats stats_ ABSL_GUARDED_BY(mu_);
  int64_t applied_revision_ ABSL_GUARDED_BY(mu_) = 0;

  // Last, so that it stops (and no longer calls this object) before the rest goes.
  std::unique_ptr<coord::PrefixMirror> mirror_;
};

}  // namespace tessera::catalog
