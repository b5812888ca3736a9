#include "tessera/server/cluster_definitions.h"

#include <algorithm>
#include <utility>

#include "tessera/catalog/metadata_table.h"
#include "tessera/util/logging.h"

namespace tessera::server {

// The catalog as the schema store sees it.
class ClusterDefinitions::CatalogTables final : public catalog::LocalTables {
 public:
  explicit CatalogTables(catalog::TableCatalog* catalog) : catalog_(catalog) {}

  bool Contains(std::string_view full_name) const override {
    return catalog_->GetTable(full_name).ok();
  }
  std::vector<catalog::LocalTable> List() const override {
    std::vector<catalog::LocalTable> out;
    for (const auto& info : catalog_->ListAllTables()) {
      catalog::LocalTable table{info->full_name, info->schema, {}, info->tablet_prefix};
      for (size_t i = 1; i < info->tablets.size(); ++i) {
        table.split_keys.push_back(info->tablets[i].start_row);
      }
      out.push_back(std::move(table));
    }
    return out;
  }
  Status Apply(const catalog::TableDefinition& definition) override {
    return catalog_->ApplyDefinition(definition).status();
  }
  Status Drop(std::string_view full_name) override { return catalog_->DropTable(full_name); }

 private:
  catalog::TableCatalog* const catalog_;
};

ClusterDefinitions::ClusterDefinitions(catalog::TableCatalog* catalog)
    : catalog_(catalog), local_(std::make_unique<CatalogTables>(catalog)) {}

ClusterDefinitions::~ClusterDefinitions() = default;

StatusOr<std::unique_ptr<ClusterDefinitions>> ClusterDefinitions::Open(
    catalog::TableCatalog* catalog, const catalog::SchemaStoreOptions& options) {
  if (catalog == nullptr) return absl::InvalidArgumentError("ClusterDefinitions needs a catalog");
  std::unique_ptr<ClusterDefinitions> definitions(new ClusterDefinitions(catalog));
  ASSIGN_OR_RETURN(definitions->store_,
                   catalog::SchemaStore::Open(definitions->local_.get(), options));
  return definitions;
}

namespace {

// Refuses a change, by a client, of the instance that holds Tessera's own tables.
Status CheckNotReserved(std::string_view instance_or_table) {
  const std::string_view instance = instance_or_table.substr(
      0, std::min(instance_or_table.size(), instance_or_table.find("/tables/")));
  if (!catalog::IsReservedInstance(instance)) return Status();
  return absl::PermissionDeniedError(
      StrCat("instance ", instance, " holds Tessera's own tables (", catalog::kMetadataTable,
             "): they are read-only to clients"));
}

}  // namespace

Status ClusterDefinitions::EnsureMetadataTable() {
  if (catalog_->GetTable(catalog::kMetadataTable).ok()) return Status();
  StatusOr<std::string> created =
      store_->CreateTable(catalog::kMetadataInstance, catalog::MetadataSchema(), {}, nullptr);
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  return Status();
}

StatusOr<std::shared_ptr<const catalog::TableInfo>> ClusterDefinitions::CreateTable(
    std::string_view instance, model::TableSchema schema, std::vector<std::string> split_keys) {
  RETURN_IF_ERROR(CheckNotReserved(instance));
  int64_t revision = 0;
  ASSIGN_OR_RETURN(std::string full_name, store_->CreateTable(instance, std::move(schema),
                                                              std::move(split_keys), &revision));
  // The table is made; its tablets are located through METADATA, which the master creates
  // too should this fail.
  if (Status s = EnsureMetadataTable(); !s.ok()) {
    TLOG_WARN("cluster schema: could not create {} after {}: {}", catalog::kMetadataTable,
              full_name, s.ToString());
  }
  AfterChange(revision);
  return catalog_->GetTable(full_name);
}

Status ClusterDefinitions::DeleteTable(std::string_view full_name) {
  RETURN_IF_ERROR(CheckNotReserved(full_name));
  int64_t revision = 0;
  RETURN_IF_ERROR(store_->DeleteTable(full_name, &revision));
  AfterChange(revision);
  return Status();
}

StatusOr<std::shared_ptr<const catalog::TableInfo>> ClusterDefinitions::UpdateSchema(
    std::string_view full_name, const std::function<Status(model::TableSchema*)>& change) {
  RETURN_IF_ERROR(CheckNotReserved(full_name));
  int64_t revision = 0;
  RETURN_IF_ERROR(store_->UpdateSchema(full_name, change, &revision));
  AfterChange(revision);
  return catalog_->GetTable(full_name);
}

void ClusterDefinitions::SetAfterChange(std::function<void(int64_t revision)> after_change) {
  absl::MutexLock lock(&after_change_mu_);
  after_change_ = std::move(after_change);
}

void ClusterDefinitions::AfterChange(int64_t revision) const {
  std::function<void(int64_t)> after_change;
  {
    absl::MutexLock lock(&after_change_mu_);
    after_change = after_change_;
  }
  if (after_change) after_change(revision);
}

}  // namespace tessera::server
