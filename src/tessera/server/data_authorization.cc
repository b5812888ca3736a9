#include "tessera/server/data_authorization.h"

#include <algorithm>

#include "tessera/server/audit.h"

namespace tessera::server {
namespace v2 = ::google::bigtable::v2;

namespace {

void SortUnique(std::vector<std::string>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

FamilyNeeds MutationFamilies(const google::protobuf::RepeatedPtrField<v2::Mutation>& mutations) {
  FamilyNeeds needs;
  for (const v2::Mutation& m : mutations) {
    switch (m.mutation_case()) {
      case v2::Mutation::kSetCell:
        needs.families.push_back(m.set_cell().family_name());
        break;
      case v2::Mutation::kAddToCell:
        needs.families.push_back(m.add_to_cell().family_name());
        break;
      case v2::Mutation::kMergeToCell:
        needs.families.push_back(m.merge_to_cell().family_name());
        break;
      case v2::Mutation::kDeleteFromColumn:
        needs.families.push_back(m.delete_from_column().family_name());
        break;
      case v2::Mutation::kDeleteFromFamily:
        needs.families.push_back(m.delete_from_family().family_name());
        break;
      case v2::Mutation::kDeleteFromRow:
        return FamilyNeeds{.scope = FamilyNeeds::Scope::kTable};
      case v2::Mutation::MUTATION_NOT_SET:
        break;  // refused as malformed by the mutation builder
    }
  }
  SortUnique(&needs.families);
  return needs;
}

FamilyNeeds FilterFamilies(const model::RowFilter* filter) {
  if (filter == nullptr || filter->pushdown().families.empty()) {
    return FamilyNeeds{.scope = FamilyNeeds::Scope::kEveryFamily};
  }
  return FamilyNeeds{.scope = FamilyNeeds::Scope::kFamilies,
                     .families = filter->pushdown().families};
}

FamilyNeeds Union(FamilyNeeds a, const FamilyNeeds& b) {
  a.scope = std::max(a.scope, b.scope);
  if (a.scope != FamilyNeeds::Scope::kFamilies) {
    a.families.clear();
    return a;
  }
  a.families.insert(a.families.end(), b.families.begin(), b.families.end());
  SortUnique(&a.families);
  return a;
}

Status AuthorizeData(const AccessControl* access, const rpc::ServerContext& context,
                     const catalog::TableInfo& table, Permission permission,
                     const FamilyNeeds& needs) {
  if (access == nullptr) return Status();
  auto check = [&](const std::string& resource) {
    Status s = access->Check(context.principal(), permission, resource);
    if (!s.ok()) AuditRefusal(context, resource, s);
    return s;
  };
  // A grant on the table covers every family, so one check decides most calls.
  if (access->Allowed(context.principal(), permission, table.full_name)) return Status();
  switch (needs.scope) {
    case FamilyNeeds::Scope::kTable:
      return check(table.full_name);
    case FamilyNeeds::Scope::kEveryFamily:
      if (table.schema.families.empty()) return check(table.full_name);
      for (const auto& [family, schema] : table.schema.families) {
        RETURN_IF_ERROR(check(FamilyResource(table.full_name, family)));
      }
      return Status();
    case FamilyNeeds::Scope::kFamilies:
      for (const std::string& family : needs.families) {
        RETURN_IF_ERROR(check(FamilyResource(table.full_name, family)));
      }
      return Status();
  }
  return Status();
}

}  // namespace tessera::server
