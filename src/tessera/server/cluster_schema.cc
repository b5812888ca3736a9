#include "tessera/server/cluster_schema.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace {

// The state file:
//   file := "TSCS" format(1 byte = 0x01) varint32(count) entry*count fixed32(crc)
//   entry := lp(full table name) varint64(incarnation)
//   crc: crc32c::Mask of the CRC-32C of every byte before it
// Entries appear in strictly increasing name order.
constexpr std::string_view kStateMagic = "TSCS";
constexpr uint8_t kStateFormat = 0x01;

Status Malformed(std::string_view what) {
  return absl::DataLossError(tessera::StrCat("malformed schema record: ", what));
}

// A lock-service failure as the caller of a change sees it: the service's own InvalidArgument
// (a name or value over its limits) stays; anything else is the environment (Unavailable).
Status LockServiceError(std::string_view doing, const Status& status) {
  if (absl::IsInvalidArgument(status)) {
    return absl::InvalidArgumentError(tessera::StrCat(doing, ": ", status.message()));
  }
  return absl::UnavailableError(tessera::StrCat("lock service: ", doing, ": ", status.ToString()));
}

Status NotFoundTable(std::string_view full_name) {
  return absl::NotFoundError(tessera::StrCat("table \"", full_name, "\" not found"));
}

Status DetachedError() {
  return absl::UnavailableError("this node has no lock-service session (re-registering)");
}

}  // namespace

// --- SchemaRecord ---------------------------------------------------------------------------

std::string SchemaRecord::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  model::TableSchema plain = schema;
  plain.dropped_families.clear();
  PutLengthPrefixed(&out, plain.Encode());
  PutVarint32(&out, static_cast<uint32_t>(split_keys.size()));
  for (const std::string& key : split_keys) PutLengthPrefixed(&out, key);
  PutVarint32(&out, static_cast<uint32_t>(family_since.size()));
  for (const auto& [family, since] : family_since) {
    PutLengthPrefixed(&out, family);
    PutVarint64(&out, since);
  }
  return out;
}

StatusOr<SchemaRecord> SchemaRecord::Decode(std::string_view in) {
  if (in.empty()) return Malformed("empty");
  const auto format = static_cast<uint8_t>(in.front());
  if (format != kFormat) {
    return Malformed(tessera::StrCat("unknown format byte ", static_cast<int>(format)));
  }
  in.remove_prefix(1);
  SchemaRecord record;
  std::string_view encoded_schema;
  if (!GetLengthPrefixed(&in, &encoded_schema)) return Malformed("truncated schema");
  StatusOr<model::TableSchema> schema = model::TableSchema::Decode(encoded_schema);
  if (!schema.ok()) return Malformed(tessera::StrCat("schema: ", schema.status().message()));
  record.schema = *std::move(schema);
  if (!record.schema.dropped_families.empty()) return Malformed("schema lists dropped families");
  if (record.schema.version == 0) return Malformed("schema version 0");
  if (Status s = record.schema.Validate(); !s.ok()) return Malformed(std::string(s.message()));

  uint32_t count = 0;
  if (!GetVarint32(&in, &count)) return Malformed("truncated split count");
  if (count > in.size()) return Malformed("split count exceeds the record");
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view key;
    if (!GetLengthPrefixed(&in, &key)) return Malformed("truncated split key");
    if (key.empty()) return Malformed(tessera::StrCat("split key #", i, " is empty"));
    if (!record.split_keys.empty() && key <= record.split_keys.back()) {
      return Malformed(tessera::StrCat("split key #", i, " is out of order"));
    }
    record.split_keys.emplace_back(key);
  }

  if (!GetVarint32(&in, &count)) return Malformed("truncated family count");
  if (count != record.schema.families.size()) {
    return Malformed(tessera::StrCat(count, " family versions for ", record.schema.families.size(),
                                     " families"));
  }
  auto family = record.schema.families.begin();
  for (uint32_t i = 0; i < count; ++i, ++family) {
    std::string_view name;
    uint64_t since = 0;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint64(&in, &since)) {
      return Malformed("truncated family version");
    }
    if (name != family->first) {
      return Malformed(tessera::StrCat("family version #", i, " names \"", name, "\" where \"",
                                       family->first, "\" was expected"));
    }
    if (since == 0 || since > record.schema.version) {
      return Malformed(tessera::StrCat("family \"", name, "\" created at version ", since,
                                       " of schema version ", record.schema.version));
    }
    record.family_since.emplace(std::string(name), since);
  }
  if (!in.empty()) return Malformed(tessera::StrCat(in.size(), " trailing bytes"));
  return record;
}

// --- Opening, the state file ----------------------------------------------------------------

StatusOr<std::unique_ptr<ClusterSchema>> ClusterSchema::Open(TableCatalog* catalog,
                                                             const ClusterSchemaOptions& options) {
  if (catalog == nullptr) return absl::InvalidArgumentError("ClusterSchema needs a catalog");
  if (options.prefix.empty()) {
    return absl::InvalidArgumentError("ClusterSchemaOptions.prefix is empty");
  }
  RETURN_IF_ERROR(coord::ValidatePrefix(options.prefix));
  if (options.fs == nullptr || options.state_path.empty()) {
    return absl::InvalidArgumentError("ClusterSchemaOptions needs fs and state_path");
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "ClusterSchemaOptions.max_attempts must be at least 1, got ", options.max_attempts));
  }
  std::unique_ptr<ClusterSchema> schema(new ClusterSchema(catalog, options));
  RETURN_IF_ERROR(schema->LoadState());
  return schema;
}

ClusterSchema::~ClusterSchema() { Detach(); }

Status ClusterSchema::LoadState() {
  absl::MutexLock lock(&apply_mu_);
  if (!options_.fs->FileExists(options_.state_path)) return Status();
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(options_.fs, options_.state_path));
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(
        tessera::StrCat("cluster schema state file ", options_.state_path, ": ", what));
  };
  if (contents.size() < kStateMagic.size() + 1 + 4) return corrupt("truncated");
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(contents.data() + contents.size() - 4));
  std::string_view in(contents.data(), contents.size() - 4);
  if (crc32c::Value(in) != stored) return corrupt("checksum mismatch");
  if (in.substr(0, kStateMagic.size()) != kStateMagic) return corrupt("bad magic");
  in.remove_prefix(kStateMagic.size());
  if (static_cast<uint8_t>(in.front()) != kStateFormat) {
    return corrupt(tessera::StrCat("unknown format ", static_cast<int>(in.front())));
  }
  in.remove_prefix(1);
  uint32_t count = 0;
  if (!GetVarint32(&in, &count)) return corrupt("truncated count");
  std::map<std::string, int64_t, std::less<>> loaded;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view name;
    uint64_t incarnation = 0;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint64(&in, &incarnation)) {
      return corrupt(tessera::StrCat("entry #", i, " is truncated"));
    }
    if (!loaded.empty() && name <= loaded.rbegin()->first) {
      return corrupt(tessera::StrCat("entry #", i, " is out of order"));
    }
    loaded.emplace(std::string(name), static_cast<int64_t>(incarnation));
  }
  if (!in.empty()) return corrupt("trailing bytes");
  incarnations_ = std::move(loaded);
  return Status();
}

Status ClusterSchema::SaveStateLocked() {
  std::string out(kStateMagic);
  out.push_back(static_cast<char>(kStateFormat));
  PutVarint32(&out, static_cast<uint32_t>(incarnations_.size()));
  for (const auto& [name, incarnation] : incarnations_) {
    PutLengthPrefixed(&out, name);
    PutVarint64(&out, static_cast<uint64_t>(incarnation));
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  const std::string tmp = options_.state_path + ".tmp";
  RETURN_IF_ERROR(WriteStringToFile(options_.fs, tmp, out, /*sync=*/true));
  RETURN_IF_ERROR(options_.fs->RenameFile(tmp, options_.state_path));
  return options_.fs->SyncDir(std::string(Dirname(options_.state_path)));
}

Status ClusterSchema::SetIncarnationLocked(const std::string& full_name,
                                           std::optional<int64_t> incarnation) {
  auto it = incarnations_.find(full_name);
  const std::optional<int64_t> now =
      it == incarnations_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  if (now == incarnation) return Status();
  if (incarnation.has_value()) {
    incarnations_[full_name] = *incarnation;
  } else {
    incarnations_.erase(it);
  }
  Status s = SaveStateLocked();
  if (!s.ok()) {
    // Keep memory as on disk (as far as we know) so that a retry writes again.
    if (now.has_value()) {
      incarnations_[full_name] = *now;
    } else {
      incarnations_.erase(full_name);
    }
    return s;
  }
  return Status();
}

// --- Attachment -----------------------------------------------------------------------------

bool ClusterSchema::attached() const {
  absl::MutexLock lock(&mu_);
  return attached_ && !session_expired_;
}

ClusterSchemaStats ClusterSchema::GetStats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

StatusOr<coord::Session*> ClusterSchema::BeginUse() {
  absl::MutexLock lock(&mu_);
  if (!attached_ || session_expired_ || session_ == nullptr) return DetachedError();
  ++in_flight_;
  return session_;
}

void ClusterSchema::EndUse() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

Status ClusterSchema::Attach(coord::Session* session) {
  if (session == nullptr) return absl::InvalidArgumentError("Attach needs a session");
  absl::MutexLock attach(&attach_mu_);
  DetachLocked();
  {
    absl::MutexLock lock(&mu_);
    session_ = session;
    session_expired_ = false;
  }
  {
    // Revisions from an earlier attachment (maybe another service) mean nothing now; the
    // listing below is the truth. Incarnations stay: they describe the local data.
    absl::MutexLock lock(&apply_mu_);
    applied_.clear();
    needs_reconcile_ = false;
  }
  Status adopted = AdoptLocalTables(session);
  StatusOr<int64_t> revision = adopted.ok() ? ReconcileWith(session) : StatusOr<int64_t>(adopted);
  std::unique_ptr<coord::Watch> watch;
  if (revision.ok()) {
    coord::WatchOptions options;
    options.key = options_.prefix;
    options.prefix = true;
    options.start_revision = *revision + 1;
    StatusOr<std::unique_ptr<coord::Watch>> started = session->StartWatch(
        options, [this, session](const coord::WatchEvent& event) { OnWatchEvent(session, event); });
    if (started.ok()) {
      watch = *std::move(started);
    } else {
      revision = LockServiceError("watching the schema", started.status());
    }
  }
  absl::MutexLock lock(&mu_);
  if (!revision.ok()) {
    session_ = nullptr;
    TLOG_WARN("cluster schema: attach failed: {}", revision.status().ToString());
    return revision.status();
  }
  watch_ = std::move(watch);
  attached_ = true;
  TLOG_INFO("cluster schema: attached at revision {} (session {})", *revision, session->id().value);
  return Status();
}

void ClusterSchema::Detach() {
  absl::MutexLock attach(&attach_mu_);
  if (DetachLocked()) TLOG_INFO("cluster schema: detached");
}

bool ClusterSchema::DetachLocked() {
  std::unique_ptr<coord::Watch> watch;
  {
    absl::MutexLock lock(&mu_);
    if (session_ == nullptr) return false;
    attached_ = false;
    watch = std::move(watch_);
  }
  watch.reset();  // the callback is not running once this returns
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* in_flight) { return *in_flight == 0; }, &in_flight_));
  session_ = nullptr;
  return true;
}

Status ClusterSchema::Reconcile() {
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  return ReconcileWith(session).status();
}

// --- Applying -------------------------------------------------------------------------------

StatusOr<bool> ClusterSchema::ApplyRecordLocked(const std::string& full_name,
                                                const coord::FileInfo& file) {
  Applied& applied = applied_[full_name];
  if (file.mod_revision <= applied.revision) return false;

  StatusOr<SchemaRecord> record = SchemaRecord::Decode(file.value);
  StatusOr<TableName> name = TableName::Parse(full_name);
  if (record.ok() && name.ok() && record->schema.name != name->table_id) {
    record = Malformed(tessera::StrCat("the schema names table \"", record->schema.name, "\""));
  }
  if (!record.ok() || !name.ok()) {
    TLOG_ERROR("cluster schema: skipping the record {} (revision {}): {}", file.name,
               file.mod_revision, (!name.ok() ? name.status() : record.status()).ToString());
    absl::MutexLock lock(&mu_);
    ++stats_.malformed_records;
    applied.revision = file.mod_revision;  // skip it once, not at every reconcile
    return false;
  }

  // Another incarnation's data (or data of unknown incarnation) must go before the table is
  // made again. Order: drop, then record the new incarnation, then create.
  const int64_t incarnation = file.create_revision;
  auto known = incarnations_.find(full_name);
  const bool same = known != incarnations_.end() && known->second == incarnation;
  if (!same && catalog_->GetTable(full_name).ok()) {
    TLOG_WARN(
        "cluster schema: table {}: local data belongs to incarnation {}, the cluster's "
        "table is incarnation {}: dropping the local table",
        full_name,
        known == incarnations_.end() ? std::string("unknown") : std::to_string(known->second),
        incarnation);
    Status s = catalog_->DropTable(full_name);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  RETURN_IF_ERROR(SetIncarnationLocked(full_name, incarnation));

  TableDefinition definition;
  definition.full_name = full_name;
  definition.schema = std::move(record->schema);
  definition.split_keys = std::move(record->split_keys);
  definition.family_since = std::move(record->family_since);
  StatusOr<std::shared_ptr<const TableInfo>> info = catalog_->ApplyDefinition(definition);
  if (absl::IsFailedPrecondition(info.status()) || absl::IsInvalidArgument(info.status())) {
    TLOG_ERROR("cluster schema: skipping the record {} (revision {}): {}", file.name,
               file.mod_revision, info.status().ToString());
    absl::MutexLock lock(&mu_);
    ++stats_.divergent_records;
    applied.revision = file.mod_revision;
    return false;
  }
  RETURN_IF_ERROR(info.status());
  applied = Applied{file.mod_revision, true, incarnation};
  return true;
}

StatusOr<bool> ClusterSchema::ApplyDeleteLocked(const std::string& full_name, int64_t revision) {
  Applied& applied = applied_[full_name];
  if (revision < applied.revision) return false;
  Status s = catalog_->DropTable(full_name);
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  RETURN_IF_ERROR(SetIncarnationLocked(full_name, std::nullopt));
  if (s.ok()) TLOG_INFO("cluster schema: dropped table {} (revision {})", full_name, revision);
  applied = Applied{revision, false, 0};
  return s.ok();
}

Status ClusterSchema::AdoptLocalTables(coord::Session* session) {
  std::vector<std::shared_ptr<const TableInfo>> unknown;
  {
    absl::MutexLock lock(&apply_mu_);
    for (auto& info : catalog_->ListAllTables()) {
      if (!incarnations_.contains(info->full_name)) unknown.push_back(std::move(info));
    }
  }
  for (const auto& info : unknown) {
    SchemaRecord record;
    record.schema = info->schema;
    record.schema.dropped_families.clear();
    for (size_t i = 1; i < info->tablets.size(); ++i) {
      record.split_keys.push_back(info->tablets[i].start_row);
    }
    // The families' data here is the table's own: nothing older to fence off on other nodes.
    for (const auto& entry : record.schema.families) record.family_since.emplace(entry.first, 1);
    coord::PutOptions put_options;
    put_options.expected_version = 0;
    StatusOr<coord::FileInfo> put =
        session->Put(RecordName(info->full_name), record.Encode(), put_options);
    if (absl::IsAborted(put.status())) {
      TLOG_WARN("cluster schema: local table {} was made outside the cluster, which has a table "
                "of that name: the cluster's table replaces it (its local data is dropped)",
                info->full_name);
      continue;
    }
    if (!put.ok()) return LockServiceError("offering a local table", put.status());
    absl::MutexLock lock(&apply_mu_);
    RETURN_IF_ERROR(SetIncarnationLocked(info->full_name, put->create_revision));
    TLOG_INFO("cluster schema: local table {} joined the cluster's schema (incarnation {})",
              info->full_name, put->create_revision);
  }
  return Status();
}

StatusOr<int64_t> ClusterSchema::ReconcileWith(coord::Session* session) {
  StatusOr<coord::Listing> listing = session->List(options_.prefix);
  if (!listing.ok()) return LockServiceError("listing the schema", listing.status());

  absl::MutexLock lock(&apply_mu_);
  Status first_error;
  uint64_t failures = 0;
  auto note = [&](const Status& s, std::string_view table) {
    if (s.ok()) return;
    TLOG_ERROR("cluster schema: reconciling table {}: {}", table, s.ToString());
    ++failures;
    if (first_error.ok()) first_error = s;
  };
  std::set<std::string, std::less<>> seen;
  for (const coord::FileInfo& file : listing->files) {
    std::string full_name = file.name.substr(options_.prefix.size());
    note(ApplyRecordLocked(full_name, file).status(), full_name);
    seen.insert(std::move(full_name));
  }
  for (const auto& info : catalog_->ListAllTables()) {
    if (seen.contains(info->full_name)) continue;
    auto it = applied_.find(info->full_name);
    if (it != applied_.end() && it->second.revision > listing->revision) continue;  // newer
    note(ApplyDeleteLocked(info->full_name, listing->revision).status(), info->full_name);
  }
  // Incarnations of tables that exist neither here nor in the cluster (a crash between
  // dropping a table and forgetting it).
  std::vector<std::string> stale;
  for (const auto& entry : incarnations_) {
    if (!seen.contains(entry.first) && !catalog_->GetTable(entry.first).ok()) {
      stale.push_back(entry.first);
    }
  }
  for (const std::string& full_name : stale) {
    note(SetIncarnationLocked(full_name, std::nullopt), full_name);
  }
  needs_reconcile_ = !first_error.ok();
  {
    absl::MutexLock stats(&mu_);
    stats_.apply_failures += failures;
    if (first_error.ok()) ++stats_.reconciles;
  }
  if (!first_error.ok()) return first_error;
  TLOG_DEBUG("cluster schema: reconciled {} record(s) at revision {}", listing->files.size(),
             listing->revision);
  return listing->revision;
}

void ClusterSchema::OnWatchEvent(coord::Session* session, const coord::WatchEvent& event) {
  switch (event.type) {
    case coord::WatchEventType::kSessionExpired: {
      TLOG_WARN(
          "cluster schema: the lock-service session expired; changes are refused until "
          "the node attaches a new session");
      absl::MutexLock lock(&mu_);
      session_expired_ = true;
      return;
    }
    case coord::WatchEventType::kReset: {
      TLOG_WARN("cluster schema: watch reset at revision {}; reconciling", event.revision);
      (void)ReconcileWith(session);  // logged and counted inside
      return;
    }
    case coord::WatchEventType::kPut:
    case coord::WatchEventType::kDelete:
      break;
  }
  if (event.name.size() <= options_.prefix.size() ||
      event.name.compare(0, options_.prefix.size(), options_.prefix) != 0) {
    return;
  }
  bool reconcile_first = false;
  {
    absl::MutexLock lock(&apply_mu_);
    reconcile_first = needs_reconcile_;
  }
  if (reconcile_first && ReconcileWith(session).ok()) {
    TLOG_INFO("cluster schema: caught up after an earlier apply failure");
  }

  const std::string full_name = event.name.substr(options_.prefix.size());
  StatusOr<bool> applied = false;
  if (event.type == coord::WatchEventType::kDelete) {
    absl::MutexLock lock(&apply_mu_);
    applied = ApplyDeleteLocked(full_name, event.revision);
  } else {
    coord::FileInfo file;
    file.name = event.name;
    file.value = event.value;
    file.version = event.version;
    file.mod_revision = event.revision;
    bool need_get = false;
    {
      absl::MutexLock lock(&apply_mu_);
      auto it = applied_.find(full_name);
      if (event.version == 1) {
        file.create_revision = event.revision;  // the put that created the file
      } else if (it != applied_.end() && it->second.live && it->second.revision < event.revision) {
        // Changes come in order: no delete came between the put applied and this one.
        file.create_revision = it->second.incarnation;
      } else if (it != applied_.end() && event.revision <= it->second.revision) {
        return;  // already applied (a change made here, or a duplicate)
      } else {
        need_get = true;  // this incarnation's creation was not seen: ask
      }
      if (!need_get) applied = ApplyRecordLocked(full_name, file);
    }
    if (need_get) {
      StatusOr<coord::FileInfo> got = session->Get(event.name);
      absl::MutexLock lock(&apply_mu_);
      if (got.ok()) {
        applied = ApplyRecordLocked(full_name, *got);
      } else if (absl::IsNotFound(got.status())) {
        applied = ApplyDeleteLocked(full_name, event.revision);
      } else {
        applied = LockServiceError("reading a schema record", got.status());
      }
    }
  }
  if (!applied.ok()) {
    TLOG_ERROR("cluster schema: applying {} {} (revision {}) failed: {}",
               coord::WatchEventTypeName(event.type), event.name, event.revision,
               applied.status().ToString());
    {
      absl::MutexLock lock(&apply_mu_);
      needs_reconcile_ = true;
    }
    absl::MutexLock lock(&mu_);
    ++stats_.apply_failures;
    return;
  }
  if (*applied) {
    absl::MutexLock lock(&mu_);
    ++stats_.events_applied;
  }
}

// --- Changes --------------------------------------------------------------------------------

StatusOr<std::shared_ptr<const TableInfo>> ClusterSchema::CreateTable(
    std::string_view instance, model::TableSchema schema, std::vector<std::string> split_keys) {
  RETURN_IF_ERROR(ValidateInstanceName(instance));
  RETURN_IF_ERROR(schema.Validate());
  for (size_t i = 0; i < split_keys.size(); ++i) {
    if (split_keys[i].empty()) {
      return absl::InvalidArgumentError(
          tessera::StrCat("initial split #", i, " has an empty row key"));
    }
  }
  std::sort(split_keys.begin(), split_keys.end());
  split_keys.erase(std::unique(split_keys.begin(), split_keys.end()), split_keys.end());

  SchemaRecord record;
  record.schema = std::move(schema);
  record.schema.version = 1;
  record.schema.dropped_families.clear();
  record.split_keys = std::move(split_keys);
  for (const auto& entry : record.schema.families) record.family_since.emplace(entry.first, 1);
  const std::string full_name = TableName{std::string(instance), record.schema.name}.Full();

  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  coord::PutOptions put_options;
  put_options.expected_version = 0;
  StatusOr<coord::FileInfo> put = session->Put(RecordName(full_name), record.Encode(), put_options);
  if (absl::IsAborted(put.status())) {
    return absl::AlreadyExistsError(tessera::StrCat("table \"", full_name, "\" already exists"));
  }
  if (!put.ok()) return LockServiceError("creating a table", put.status());
  {
    absl::MutexLock lock(&apply_mu_);
    RETURN_IF_ERROR(ApplyRecordLocked(full_name, *put).status());
  }
  return catalog_->GetTable(full_name);
}

namespace {

// A table's record file; NotFound 'table "…" not found' when there is none.
StatusOr<coord::FileInfo> ReadRecordFile(coord::Session* session, const std::string& key,
                                         std::string_view full_name) {
  StatusOr<coord::FileInfo> got = session->Get(key);
  if (absl::IsNotFound(got.status())) return NotFoundTable(full_name);
  if (!got.ok()) return LockServiceError("reading a table's schema", got.status());
  return got;
}

Status TooManyAttempts(std::string_view full_name, std::string_view what, int attempts) {
  return absl::AbortedError(tessera::StrCat("table \"", full_name, "\": the schema changed ",
                                            attempts, " times while this ", what,
                                            " was tried; try again"));
}

}  // namespace

StatusOr<std::shared_ptr<const TableInfo>> ClusterSchema::UpdateSchema(
    std::string_view full_name, const std::function<Status(model::TableSchema*)>& change) {
  RETURN_IF_ERROR(TableName::Parse(full_name).status());
  const std::string key = RecordName(full_name);
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ASSIGN_OR_RETURN(coord::FileInfo got_file, ReadRecordFile(session, key, full_name));
    const coord::FileInfo* got = &got_file;
    StatusOr<SchemaRecord> old = SchemaRecord::Decode(got->value);
    if (!old.ok()) {
      return absl::DataLossError(
          tessera::StrCat("table \"", full_name, "\": ", old.status().message()));
    }
    ASSIGN_OR_RETURN(model::TableSchema schema, ChangedSchema(old->schema, change));

    SchemaRecord record;
    record.split_keys = old->split_keys;
    for (const auto& entry : schema.families) {
      auto since = old->family_since.find(entry.first);
      record.family_since.emplace(
          entry.first, since != old->family_since.end() ? since->second : schema.version);
    }
    record.schema = std::move(schema);
    coord::PutOptions put_options;
    put_options.expected_version = got->version;
    StatusOr<coord::FileInfo> put = session->Put(key, record.Encode(), put_options);
    if (absl::IsAborted(put.status())) continue;  // changed meanwhile: run `change` again
    if (!put.ok()) return LockServiceError("updating a table's schema", put.status());
    {
      absl::MutexLock lock(&apply_mu_);
      RETURN_IF_ERROR(ApplyRecordLocked(std::string(full_name), *put).status());
    }
    return catalog_->GetTable(full_name);
  }
  return TooManyAttempts(full_name, "update", options_.max_attempts);
}

Status ClusterSchema::DeleteTable(std::string_view full_name) {
  RETURN_IF_ERROR(TableName::Parse(full_name).status());
  const std::string key = RecordName(full_name);
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ASSIGN_OR_RETURN(coord::FileInfo got_file, ReadRecordFile(session, key, full_name));
    const coord::FileInfo* got = &got_file;
    StatusOr<SchemaRecord> record = SchemaRecord::Decode(got->value);
    if (record.ok() && record->schema.deletion_protection) {
      return absl::FailedPreconditionError(
          tessera::StrCat("table \"", full_name, "\" is protected from deletion"));
    }
    if (!record.ok()) {
      TLOG_WARN("cluster schema: deleting table {} whose record is malformed: {}", full_name,
                record.status().ToString());
    }
    Status s = session->Delete(key, got->version);
    if (absl::IsAborted(s) || absl::IsNotFound(s)) continue;  // changed meanwhile: look again
    if (!s.ok()) return LockServiceError("deleting a table", s);
    // The delete's own revision is not returned; no put of this name can lie between the
    // record read and the delete (compare-and-set), so "after got->mod_revision" orders it.
    absl::MutexLock lock(&apply_mu_);
    return ApplyDeleteLocked(std::string(full_name), got->mod_revision).status();
  }
  return TooManyAttempts(full_name, "delete", options_.max_attempts);
}

}  // namespace tessera::server
