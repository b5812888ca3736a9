#include "tessera/catalog/schema_store.h"

#include <algorithm>
#include <utility>

#include "tessera/catalog/schema_record.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/util/logging.h"

namespace tessera::catalog {

namespace {

Status NotFoundTable(std::string_view full_name) {
  return absl::NotFoundError(tessera::StrCat("table \"", full_name, "\" not found"));
}

Status DetachedError() {
  return absl::UnavailableError("this node has no lock-service session (re-registering)");
}

// A table's record file; NotFound 'table "…" not found' when there is none.
StatusOr<coord::FileInfo> ReadRecordFile(coord::Session* session, const std::string& key,
                                         std::string_view full_name) {
  StatusOr<coord::FileInfo> got = session->Get(key);
  if (absl::IsNotFound(got.status())) return NotFoundTable(full_name);
  if (!got.ok()) return coord::LockServiceCallError("reading a table's schema", got.status());
  return got;
}

Status TooManyAttempts(std::string_view full_name, std::string_view what, int attempts) {
  return absl::AbortedError(tessera::StrCat("table \"", full_name, "\": the schema changed ",
                                            attempts, " times while this ", what,
                                            " was tried; try again"));
}

}  // namespace

// --- Opening, attaching ---------------------------------------------------------------------

StatusOr<std::unique_ptr<SchemaStore>> SchemaStore::Open(LocalTables* local,
                                                         const SchemaStoreOptions& options) {
  if (local == nullptr) return absl::InvalidArgumentError("SchemaStore needs local tables");
  if (options.prefix.empty()) {
    return absl::InvalidArgumentError("SchemaStoreOptions.prefix is empty");
  }
  RETURN_IF_ERROR(coord::ValidatePrefix(options.prefix));
  if (options.fs == nullptr || options.state_path.empty()) {
    return absl::InvalidArgumentError("SchemaStoreOptions needs fs and state_path");
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "SchemaStoreOptions.max_attempts must be at least 1, got ", options.max_attempts));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<IncarnationFile> incarnations,
                   IncarnationFile::Open(options.fs, options.state_path));
  std::unique_ptr<SchemaStore> store(new SchemaStore(local, options, std::move(incarnations)));
  ASSIGN_OR_RETURN(
      store->mirror_,
      coord::PrefixMirror::Create(
          store.get(), coord::PrefixMirrorOptions{options.prefix, "the schema", "cluster schema"}));
  return store;
}

SchemaStore::~SchemaStore() { Detach(); }

bool SchemaStore::attached() const { return mirror_->running(); }

SchemaStoreStats SchemaStore::GetStats() const {
  SchemaStoreStats stats;
  {
    absl::MutexLock lock(&mu_);
    stats = stats_;
  }
  const coord::PrefixMirrorStats mirror = mirror_->GetStats();
  stats.apply_failures = mirror.failures;
  stats.reconciles = mirror.resyncs;
  return stats;
}

StatusOr<coord::PrefixMirror::SessionUse> SchemaStore::BeginUse() {
  StatusOr<coord::PrefixMirror::SessionUse> use = mirror_->UseSession();
  if (!use.ok()) return DetachedError();
  return use;
}

Status SchemaStore::Attach(coord::Session* session) {
  if (session == nullptr) return absl::InvalidArgumentError("Attach needs a session");
  absl::MutexLock attach(&attach_mu_);
  mirror_->Stop();
  attached_ = false;
  Status s = AdoptLocalTables(session);
  if (s.ok()) s = mirror_->Start(session);
  if (!s.ok()) {
    TLOG_WARN("cluster schema: attach failed: {}", s.ToString());
    return s;
  }
  attached_ = true;
  TLOG_INFO("cluster schema: attached (session {})", session->id().value);
  return Status();
}

void SchemaStore::Detach() {
  absl::MutexLock attach(&attach_mu_);
  mirror_->Stop();
  if (attached_) TLOG_INFO("cluster schema: detached");
  attached_ = false;
}

Status SchemaStore::Reconcile() {
  ASSIGN_OR_RETURN(coord::PrefixMirror::SessionUse use, BeginUse());
  return mirror_->Resync();
}

Status SchemaStore::AdoptLocalTables(coord::Session* session) {
  for (const LocalTable& table : local_->List()) {
    if (incarnations_->Get(table.full_name).has_value()) continue;
    SchemaRecord record;
    record.schema = table.schema;
    record.split_keys = table.split_keys;
    // Its tablets keep their ids on every node (0 for tablets made before cluster-wide ids:
    // the other nodes then use the record's create revision, see tablet_id.h).
    record.tablet_prefix = table.tablet_prefix;
    // The families' data here is the table's own: nothing older to fence off on other nodes.
    for (const auto& entry : record.schema.families) record.family_since.emplace(entry.first, 1);
    coord::PutOptions put_options;
    put_options.expected_version = 0;
    StatusOr<coord::FileInfo> put =
        session->Put(RecordName(table.full_name), record.Encode(), put_options);
    if (absl::IsAborted(put.status())) {
      TLOG_WARN(
          "cluster schema: local table {} was made outside the cluster, which has a table "
          "of that name: the cluster's table replaces it (its local data is dropped)",
          table.full_name);
      continue;
    }
    if (!put.ok()) return coord::LockServiceCallError("offering a local table", put.status());
    RETURN_IF_ERROR(incarnations_->Set(table.full_name, put->create_revision));
    TLOG_INFO("cluster schema: local table {} joined the cluster's schema (incarnation {})",
              table.full_name, put->create_revision);
  }
  return Status();
}

// --- Applying (the mirror's listener) -------------------------------------------------------

Status SchemaStore::OnPut(const coord::FileInfo& file, coord::MirrorCause cause) {
  ASSIGN_OR_RETURN(bool applied, ApplyRecord(file.name.substr(options_.prefix.size()), file));
  if (applied && cause == coord::MirrorCause::kWatch) {
    absl::MutexLock lock(&mu_);
    ++stats_.events_applied;
  }
  Applied(file.mod_revision);
  return Status();
}

Status SchemaStore::OnDelete(const std::string& name, int64_t revision, coord::MirrorCause cause) {
  ASSIGN_OR_RETURN(bool applied, ApplyDelete(name.substr(options_.prefix.size()), revision));
  if (applied && cause == coord::MirrorCause::kWatch) {
    absl::MutexLock lock(&mu_);
    ++stats_.events_applied;
  }
  Applied(revision);
  return Status();
}

Status SchemaStore::OnSynced(int64_t revision, const std::set<std::string, std::less<>>& live) {
  Status first_error;
  auto note = [&](const Status& s, std::string_view table) {
    if (s.ok()) return;
    TLOG_ERROR("cluster schema: reconciling table {}: {}", table, s.ToString());
    if (first_error.ok()) first_error = s;
  };
  // Local tables the cluster has no record of.
  for (const LocalTable& table : local_->List()) {
    if (live.contains(RecordName(table.full_name))) continue;
    note(ApplyDelete(table.full_name, revision).status(), table.full_name);
  }
  // Incarnations of tables that exist neither here nor in the cluster (a crash between
  // dropping a table and forgetting it).
  for (const std::string& full_name : incarnations_->Names()) {
    if (!live.contains(RecordName(full_name)) && !local_->Contains(full_name)) {
      note(incarnations_->Set(full_name, std::nullopt), full_name);
    }
  }
  if (first_error.ok()) Applied(revision);
  return first_error;
}

// --- Agreement -------------------------------------------------------------------------------

int64_t SchemaStore::applied_revision() const {
  absl::MutexLock lock(&mu_);
  return applied_revision_;
}

void SchemaStore::Applied(int64_t revision) {
  absl::MutexLock lock(&mu_);
  applied_revision_ = std::max(applied_revision_, revision);
}

void SchemaStore::OnSessionExpired() {
  TLOG_WARN(
      "cluster schema: the lock-service session expired; changes are refused until "
      "the node attaches a new session");
}

StatusOr<bool> SchemaStore::ApplyRecord(const std::string& full_name, const coord::FileInfo& file) {
  StatusOr<SchemaRecord> record = SchemaRecord::Decode(file.value);
  StatusOr<TableName> name = TableName::Parse(full_name);
  if (record.ok() && name.ok() && record->schema.name != name->table_id) {
    record =
        MalformedRecord(tessera::StrCat("the schema names table \"", record->schema.name, "\""));
  }
  if (!record.ok() || !name.ok()) {
    TLOG_ERROR("cluster schema: skipping the record {} (revision {}): {}", file.name,
               file.mod_revision, (!name.ok() ? name.status() : record.status()).ToString());
    absl::MutexLock lock(&mu_);
    ++stats_.malformed_records;
    return false;
  }

  // Another incarnation's data (or data of unknown incarnation) must go before the table is
  // made again. Order: drop, then record the new incarnation, then create.
  const int64_t incarnation = file.create_revision;
  const std::optional<int64_t> known = incarnations_->Get(full_name);
  if (known != incarnation && local_->Contains(full_name)) {
    TLOG_WARN(
        "cluster schema: table {}: local data belongs to incarnation {}, the cluster's "
        "table is incarnation {}: dropping the local table",
        full_name, known.has_value() ? std::to_string(*known) : std::string("unknown"),
        incarnation);
    Status s = local_->Drop(full_name);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  RETURN_IF_ERROR(incarnations_->Set(full_name, incarnation));

  TableDefinition definition;
  definition.full_name = full_name;
  definition.schema = std::move(record->schema);
  definition.split_keys = std::move(record->split_keys);
  definition.family_since = std::move(record->family_since);
  if (record->tablet_prefix != 0) {
    definition.tablet_prefix = record->tablet_prefix;
  } else {
    StatusOr<uint64_t> prefix = TabletPrefixFromRevision(file.create_revision);
    if (!prefix.ok()) {
      TLOG_ERROR("cluster schema: skipping the record {}: {}", file.name,
                 prefix.status().ToString());
      absl::MutexLock lock(&mu_);
      ++stats_.malformed_records;
      return false;
    }
    definition.tablet_prefix = *prefix;
  }
  Status applied = local_->Apply(definition);
  if (absl::IsFailedPrecondition(applied) || absl::IsInvalidArgument(applied)) {
    TLOG_ERROR("cluster schema: skipping the record {} (revision {}): {}", file.name,
               file.mod_revision, applied.ToString());
    absl::MutexLock lock(&mu_);
    ++stats_.divergent_records;
    return false;
  }
  RETURN_IF_ERROR(applied);
  return true;
}

StatusOr<bool> SchemaStore::ApplyDelete(const std::string& full_name, int64_t revision) {
  Status s = local_->Drop(full_name);
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  RETURN_IF_ERROR(incarnations_->Set(full_name, std::nullopt));
  if (s.ok()) TLOG_INFO("cluster schema: dropped table {} (revision {})", full_name, revision);
  return s.ok();
}

// --- Changes --------------------------------------------------------------------------------

StatusOr<std::string> SchemaStore::CreateTable(std::string_view instance, model::TableSchema schema,
                                               std::vector<std::string> split_keys,
                                               int64_t* revision) {
  RETURN_IF_ERROR(ValidateInstanceName(instance));
  RETURN_IF_ERROR(schema.Validate());
  RETURN_IF_ERROR(NormalizeSplitKeys(&split_keys));

  SchemaRecord record;
  record.schema = std::move(schema);
  record.schema.version = 1;
  record.split_keys = std::move(split_keys);
  for (const auto& entry : record.schema.families) record.family_since.emplace(entry.first, 1);
  std::string full_name = TableName{std::string(instance), record.schema.name}.Full();

  ASSIGN_OR_RETURN(coord::PrefixMirror::SessionUse session, BeginUse());
  coord::PutOptions put_options;
  put_options.expected_version = 0;
  StatusOr<coord::FileInfo> put = session->Put(RecordName(full_name), record.Encode(), put_options);
  if (absl::IsAborted(put.status())) {
    return absl::AlreadyExistsError(tessera::StrCat("table \"", full_name, "\" already exists"));
  }
  if (!put.ok()) return coord::LockServiceCallError("creating a table", put.status());
  RETURN_IF_ERROR(mirror_->DeliverLocalPut(*put));
  if (revision != nullptr) *revision = put->mod_revision;
  return full_name;
}

Status SchemaStore::UpdateSchema(std::string_view full_name,
                                 const std::function<Status(model::TableSchema*)>& change,
                                 int64_t* revision) {
  RETURN_IF_ERROR(TableName::Parse(full_name).status());
  const std::string key = RecordName(full_name);
  ASSIGN_OR_RETURN(coord::PrefixMirror::SessionUse session, BeginUse());
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ASSIGN_OR_RETURN(coord::FileInfo got, ReadRecordFile(session.get(), key, full_name));
    StatusOr<SchemaRecord> old = SchemaRecord::Decode(got.value);
    if (!old.ok()) {
      return absl::DataLossError(
          tessera::StrCat("table \"", full_name, "\": ", old.status().message()));
    }
    ASSIGN_OR_RETURN(model::TableSchema schema, ChangedSchema(old->schema, change));

    SchemaRecord record;
    record.split_keys = old->split_keys;
    record.tablet_prefix = old->tablet_prefix;
    for (const auto& entry : schema.families) {
      auto since = old->family_since.find(entry.first);
      record.family_since.emplace(
          entry.first, since != old->family_since.end() ? since->second : schema.version);
    }
    record.schema = std::move(schema);
    coord::PutOptions put_options;
    put_options.expected_version = got.version;
    StatusOr<coord::FileInfo> put = session->Put(key, record.Encode(), put_options);
    if (absl::IsAborted(put.status())) continue;  // changed meanwhile: run `change` again
    if (!put.ok()) return coord::LockServiceCallError("updating a table's schema", put.status());
    if (revision != nullptr) *revision = put->mod_revision;
    return mirror_->DeliverLocalPut(*put);
  }
  return TooManyAttempts(full_name, "update", options_.max_attempts);
}

Status SchemaStore::DeleteTable(std::string_view full_name, int64_t* revision) {
  RETURN_IF_ERROR(TableName::Parse(full_name).status());
  const std::string key = RecordName(full_name);
  ASSIGN_OR_RETURN(coord::PrefixMirror::SessionUse session, BeginUse());
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ASSIGN_OR_RETURN(coord::FileInfo got, ReadRecordFile(session.get(), key, full_name));
    StatusOr<SchemaRecord> record = SchemaRecord::Decode(got.value);
    if (record.ok() && record->schema.deletion_protection) {
      return absl::FailedPreconditionError(
          tessera::StrCat("table \"", full_name, "\" is protected from deletion"));
    }
    if (!record.ok()) {
      TLOG_WARN("cluster schema: deleting table {} whose record is malformed: {}", full_name,
                record.status().ToString());
    }
    Status s = session->Delete(key, got.version);
    if (absl::IsAborted(s) || absl::IsNotFound(s)) continue;  // changed meanwhile: look again
    if (!s.ok()) return coord::LockServiceCallError("deleting a table", s);
    // The delete's own revision is not returned; no put of this name can lie between the
    // record read and the delete (compare-and-set), so "after got.mod_revision" orders it,
    // and a node holds it once it has applied got.mod_revision + 1 or later.
    if (revision != nullptr) *revision = got.mod_revision + 1;
    return mirror_->DeliverLocalDelete(key, got.mod_revision);
  }
  return TooManyAttempts(full_name, "delete", options_.max_attempts);
}

}  // namespace tessera::catalog
