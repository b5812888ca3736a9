#include "tessera/catalog/table_catalog.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "tessera/catalog/tablet_id.h"
#include "tessera/util/logging.h"

namespace tessera::catalog {

namespace {

// True if `tablets` (sorted by start row) tile ["", "") without gaps or overlaps.
bool Tiles(const std::vector<TabletRef>& tablets) {
  if (tablets.empty() || !tablets.front().start_row.empty()) return false;
  for (size_t i = 0; i + 1 < tablets.size(); ++i) {
    if (tablets[i].end_row.empty() || tablets[i].end_row != tablets[i + 1].start_row) return false;
  }
  return tablets.back().end_row.empty();
}

uint64_t TabletPrefixOf(const std::vector<TabletRef>& tablets) {
  std::vector<uint64_t> ids;
  for (const TabletRef& t : tablets) ids.push_back(t.id);
  return catalog::CommonTabletPrefix(ids).value_or(0);
}

}  // namespace

size_t TableInfo::TabletIndexFor(std::string_view row) const {
  // The last tablet whose start_row <= row.
  auto it =
      std::upper_bound(tablets.begin(), tablets.end(), row,
                       [](std::string_view r, const TabletRef& t) { return r < t.start_row; });
  return static_cast<size_t>(it - 1 - tablets.begin());
}

std::vector<size_t> TableInfo::TabletsOverlapping(std::string_view start,
                                                  std::string_view end) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < tablets.size(); ++i) {
    const TabletRef& t = tablets[i];
    const bool ends_before_start = !t.end_row.empty() && t.end_row <= start;
    const bool starts_after_end = !end.empty() && t.start_row >= end;
    if (!ends_before_start && !starts_after_end) out.push_back(i);
  }
  return out;
}

StatusOr<std::unique_ptr<TableCatalog>> TableCatalog::Open(tablet::Engine* engine, uint64_t seed) {
  std::unique_ptr<TableCatalog> catalog(new TableCatalog(engine, seed));
  RETURN_IF_ERROR(catalog->Load());
  return catalog;
}

StatusOr<std::unique_ptr<TableCatalog>> TableCatalog::Open(tablet::Engine* engine) {
  std::random_device entropy;
  return Open(engine, uint64_t{entropy()} << 32 | entropy());
}

Status TableCatalog::Load() {
  struct Found {
    std::vector<TabletRef> tablets;
    std::vector<model::TableSchema> schemas;
  };
  std::map<std::string, Found> found;
  for (tablet::TabletId id : engine_->ListTablets()) {
    StatusOr<tablet::TabletDescriptor> d = engine_->GetTablet(id);
    if (absl::IsNotFound(d.status())) continue;
    RETURN_IF_ERROR(d.status());
    Found& f = found[d->table];
    f.tablets.push_back(TabletRef{id, d->start_row, d->end_row});
    f.schemas.push_back(std::move(d->schema));
  }
  for (auto& entry : found) {
    const std::string& full_name = entry.first;
    Found& f = entry.second;  // a plain reference: clang 14 cannot capture structured bindings
    // Sort tablets (and their schemas) by start row.
    std::vector<size_t> order(f.tablets.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f.tablets[a].start_row < f.tablets[b].start_row; });
    std::vector<TabletRef> tablets;
    for (size_t i : order) tablets.push_back(f.tablets[i]);

    StatusOr<TableName> name = TableName::Parse(full_name);
    if (!name.ok() || !Tiles(tablets)) {
      // An interrupted CreateTable or DeleteTable: finish deleting.
      TLOG_WARN("catalog: removing the {} tablet(s) of incomplete table {}", tablets.size(),
                full_name);
      for (const TabletRef& t : tablets) {
        Status s = engine_->DropTablet(t.id);
        if (!s.ok() && !absl::IsNotFound(s)) return s;
      }
      continue;
    }
    // The newest schema wins; write it where an interrupted update did not reach.
    size_t newest = 0;
    for (size_t i = 1; i < f.schemas.size(); ++i) {
      if (f.schemas[i].version > f.schemas[newest].version) newest = i;
    }
    for (size_t i = 0; i < f.schemas.size(); ++i) {
      if (f.schemas[i].version != f.schemas[newest].version) {
        TLOG_WARN("catalog: table {}: tablet {} has schema version {}, repairing to {}", full_name,
                  f.tablets[i].id, f.schemas[i].version, f.schemas[newest].version);
        RETURN_IF_ERROR(engine_->UpdateSchema(f.tablets[i].id, f.schemas[newest]));
      }
    }
    auto info = std::make_shared<TableInfo>();
    info->name = *std::move(name);
    info->full_name = full_name;
    info->schema = f.schemas[newest];
    info->tablets = std::move(tablets);
    info->tablet_prefix = TabletPrefixOf(info->tablets);
    tables_.emplace(full_name, std::move(info));
  }
  return Status();
}

std::shared_ptr<const TableInfo> TableCatalog::Find(std::string_view full_name) const {
  std::shared_lock lock(mu_);
  auto it = tables_.find(full_name);
  return it == tables_.end() ? nullptr : it->second;
}

void TableCatalog::Publish(std::shared_ptr<const TableInfo> info) {
  std::unique_lock lock(mu_);
  const std::string key = info->full_name;
  tables_[key] = std::move(info);
}

void TableCatalog::Unpublish(std::string_view full_name) {
  std::unique_lock lock(mu_);
  auto it = tables_.find(full_name);
  if (it != tables_.end()) tables_.erase(it);
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::CreateTable(
    std::string_view instance, model::TableSchema schema, std::vector<std::string> split_keys) {
  RETURN_IF_ERROR(ValidateInstanceName(instance));
  RETURN_IF_ERROR(schema.Validate());
  RETURN_IF_ERROR(catalog::NormalizeSplitKeys(&split_keys));
  schema.version = 1;
  TableName name{std::string(instance), schema.name};
  absl::MutexLock change(&change_mu_);
  // A prefix another table of this node holds (a 2^-47 chance) is drawn again.
  for (int attempt = 0;; ++attempt) {
    StatusOr<std::shared_ptr<const TableInfo>> created =
        CreateLocked(name, schema, split_keys, catalog::NewLocalTabletPrefix(&random_));
    if (!absl::IsFailedPrecondition(created.status()) || attempt == 2) return created;
  }
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::CreateLocked(
    TableName name, model::TableSchema schema, const std::vector<std::string>& split_keys,
    uint64_t prefix) {
  auto info = std::make_shared<TableInfo>();
  info->name = std::move(name);
  info->full_name = info->name.Full();
  if (Find(info->full_name) != nullptr) {
    return absl::AlreadyExistsError(
        tessera::StrCat("table \"", info->full_name, "\" already exists"));
  }
  info->schema = schema;
  info->tablet_prefix = prefix;
  std::string start;
  for (size_t i = 0; i <= split_keys.size(); ++i) {
    TabletRef ref;
    ref.id = catalog::MakeTabletId(prefix, i);
    ref.start_row = start;
    ref.end_row = i < split_keys.size() ? split_keys[i] : std::string();
    start = ref.end_row;
    tablet::TabletDescriptor d{info->full_name, ref.start_row, ref.end_row, schema};
    Status s = engine_->CreateTablet(ref.id, d);
    if (absl::IsAlreadyExists(s)) {
      s = absl::FailedPreconditionError(
          tessera::StrCat("table \"", info->full_name, "\": tablet id ", ref.id,
                          " is already used by another tablet of this node"));
    }
    if (!s.ok()) {
      // Leave no partial table behind (Open() would remove it too).
      for (const TabletRef& t : info->tablets) (void)engine_->DropTablet(t.id);
      return s;
    }
    info->tablets.push_back(std::move(ref));
  }
  Publish(info);
  return std::shared_ptr<const TableInfo>(info);
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::GetTable(
    std::string_view full_name) const {
  std::shared_ptr<const TableInfo> info = Find(full_name);
  if (info == nullptr) {
    return absl::NotFoundError(tessera::StrCat("table \"", full_name, "\" not found"));
  }
  return info;
}

std::vector<std::shared_ptr<const TableInfo>> TableCatalog::ListTables(
    std::string_view instance) const {
  std::vector<std::shared_ptr<const TableInfo>> out;
  std::shared_lock lock(mu_);
  for (const auto& [name, info] : tables_) {
    if (info->name.instance == instance) out.push_back(info);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->name.table_id < b->name.table_id; });
  return out;
}

std::vector<std::shared_ptr<const TableInfo>> TableCatalog::ListAllTables() const {
  std::vector<std::shared_ptr<const TableInfo>> out;
  std::shared_lock lock(mu_);
  for (const auto& entry : tables_) out.push_back(entry.second);
  return out;  // tables_ is ordered by full name
}

Status TableCatalog::DeleteTable(std::string_view full_name) {
  absl::MutexLock change(&change_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<const TableInfo> info, GetTable(full_name));
  if (info->schema.deletion_protection) {
    return absl::FailedPreconditionError(
        tessera::StrCat("table \"", full_name, "\" is protected from deletion"));
  }
  return DropLocked(*info);
}

Status TableCatalog::DropTable(std::string_view full_name) {
  absl::MutexLock change(&change_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<const TableInfo> info, GetTable(full_name));
  return DropLocked(*info);
}

Status TableCatalog::DropLocked(const TableInfo& info) {
  // Unpublish first: new requests see NOT_FOUND; a crash midway leaves a partial tiling that
  // Open() finishes deleting.
  Unpublish(info.full_name);
  for (const TabletRef& t : info.tablets) {
    Status s = engine_->DropTablet(t.id);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return Status();
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::UpdateSchema(
    std::string_view full_name, const std::function<Status(model::TableSchema*)>& change) {
  absl::MutexLock lock(&change_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<const TableInfo> old, GetTable(full_name));
  ASSIGN_OR_RETURN(model::TableSchema schema, ChangedSchema(old->schema, change));
  return WriteSchemaLocked(*old, std::move(schema));
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::WriteSchemaLocked(
    const TableInfo& old, model::TableSchema schema) {
  for (const TabletRef& t : old.tablets) {
    RETURN_IF_ERROR(engine_->UpdateSchema(t.id, schema));
  }
  auto info = std::make_shared<TableInfo>(old);
  info->schema = std::move(schema);
  Publish(info);
  return std::shared_ptr<const TableInfo>(info);
}

StatusOr<std::shared_ptr<const TableInfo>> TableCatalog::ApplyDefinition(
    const TableDefinition& definition) {
  ASSIGN_OR_RETURN(TableName name, TableName::Parse(definition.full_name));
  model::TableSchema schema = definition.schema;
  if (schema.name != name.table_id) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "table \"", definition.full_name, "\": the schema names table \"", schema.name, "\""));
  }
  RETURN_IF_ERROR(schema.Validate());
  if (schema.version == 0) {
    return absl::InvalidArgumentError(
        tessera::StrCat("table \"", definition.full_name, "\": schema version 0"));
  }
  for (const auto& [family, since] : definition.family_since) {
    if (schema.Find(family) == nullptr || since == 0 || since > schema.version) {
      return absl::InvalidArgumentError(
          tessera::StrCat("table \"", definition.full_name, "\": family \"", family,
                          "\" is listed as created at version ", since, " of schema version ",
                          schema.version, " (missing from the schema, or out of range)"));
    }
  }
  std::vector<std::string> split_keys = definition.split_keys;
  RETURN_IF_ERROR(catalog::NormalizeSplitKeys(&split_keys));

  absl::MutexLock change(&change_mu_);
  std::shared_ptr<const TableInfo> old = Find(definition.full_name);
  if (old == nullptr) {
    if (definition.tablet_prefix == 0 || definition.tablet_prefix >= (uint64_t{1} << 48)) {
      return absl::InvalidArgumentError(
          tessera::StrCat("table \"", definition.full_name, "\": tablet prefix ",
                          definition.tablet_prefix, " is not in [1, 2^48)"));
    }
    return CreateLocked(std::move(name), std::move(schema), split_keys, definition.tablet_prefix);
  }

  const uint64_t local_version = old->schema.version;
  if (schema.version < local_version ||
      (schema.version == local_version && !(schema == old->schema))) {
    return absl::FailedPreconditionError(tessera::StrCat(
        "table \"", definition.full_name, "\": the local schema (version ", local_version,
        ") is newer than, or diverges from, the definition (version ", schema.version, ")"));
  }
  if (schema.version == local_version) return old;

  // Families dropped and re-created since the local version: drop the local ones first, so
  // that the engine marks their data dead, in a step of its own (crash repair then sees the
  // intermediate version, lower than the definition's, and the mirror applies the rest).
  std::vector<std::string> renewed;
  for (const auto& [family, since] : definition.family_since) {
    if (since > local_version && old->schema.Find(family) != nullptr) renewed.push_back(family);
  }
  if (!renewed.empty()) {
    if (schema.version - 1 <= local_version) {
      return absl::InvalidArgumentError(tessera::StrCat(
          "table \"", definition.full_name, "\": family \"", renewed.front(),
          "\" is listed as re-created at version ", schema.version,
          " although the local schema at version ", local_version, " already holds it"));
    }
    model::TableSchema step = schema;
    step.version = schema.version - 1;
    for (const std::string& family : renewed) step.families.erase(family);
    TLOG_INFO("catalog: table {}: dropping the local data of re-created families ({} of them)",
              definition.full_name, renewed.size());
    ASSIGN_OR_RETURN(old, WriteSchemaLocked(*old, std::move(step)));
  }
  return WriteSchemaLocked(*old, std::move(schema));
}

Status TableCatalog::TruncateTable(std::string_view full_name) {
  absl::MutexLock lock(&change_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<const TableInfo> info, GetTable(full_name));
  for (const TabletRef& t : info->tablets) {
    RETURN_IF_ERROR(engine_->TruncateTablet(t.id));
  }
  return Status();
}

}  // namespace tessera::catalog
