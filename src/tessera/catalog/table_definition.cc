#include "tessera/catalog/table_definition.h"

#include <algorithm>

#include "tessera/catalog/tablet_id.h"

namespace tessera::catalog {

namespace {

constexpr std::string_view kProjects = "projects/";
constexpr std::string_view kInstances = "/instances/";
constexpr std::string_view kTables = "/tables/";

bool IsPlainSegment(std::string_view s) {
  return !s.empty() && s.find('/') == std::string_view::npos;
}

}  // namespace

Status ValidateInstanceName(std::string_view name) {
  std::string_view rest = name;
  if (rest.substr(0, kProjects.size()) != kProjects) {
    return absl::InvalidArgumentError(
        tessera::StrCat("instance name \"", name, "\" must look like projects/P/instances/I"));
  }
  rest.remove_prefix(kProjects.size());
  const size_t slash = rest.find(kInstances);
  if (slash == std::string_view::npos || !IsPlainSegment(rest.substr(0, slash)) ||
      !IsPlainSegment(rest.substr(slash + kInstances.size()))) {
    return absl::InvalidArgumentError(
        tessera::StrCat("instance name \"", name, "\" must look like projects/P/instances/I"));
  }
  return Status();
}

StatusOr<TableName> TableName::Parse(std::string_view full_name) {
  const size_t pos = full_name.rfind(kTables);
  if (pos == std::string_view::npos) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "table name \"", full_name, "\" must look like projects/P/instances/I/tables/T"));
  }
  TableName name;
  name.instance = std::string(full_name.substr(0, pos));
  name.table_id = std::string(full_name.substr(pos + kTables.size()));
  if (!ValidateInstanceName(name.instance).ok()) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "table name \"", full_name, "\" must look like projects/P/instances/I/tables/T"));
  }
  RETURN_IF_ERROR(model::ValidateTableName(name.table_id));
  return name;
}

Status NormalizeSplitKeys(std::vector<std::string>* split_keys) {
  for (size_t i = 0; i < split_keys->size(); ++i) {
    if ((*split_keys)[i].empty()) {
      return absl::InvalidArgumentError(
          tessera::StrCat("initial split #", i, " has an empty row key"));
    }
  }
  std::sort(split_keys->begin(), split_keys->end());
  split_keys->erase(std::unique(split_keys->begin(), split_keys->end()), split_keys->end());
  if (split_keys->size() >= kMaxInitialTablets) {
    return absl::InvalidArgumentError(
        tessera::StrCat(split_keys->size(), " initial splits: a table starts with at most ",
                        kMaxInitialTablets - 1, " splits"));
  }
  return Status();
}

StatusOr<model::TableSchema> ChangedSchema(
    const model::TableSchema& old, const std::function<Status(model::TableSchema*)>& change) {
  model::TableSchema schema = old;
  RETURN_IF_ERROR(change(&schema));
  if (schema.name != old.name) {
    return absl::InvalidArgumentError("a table's name cannot change");
  }
  RETURN_IF_ERROR(schema.Validate());
  schema.version = old.version + 1;
  return schema;
}

}  // namespace tessera::catalog
