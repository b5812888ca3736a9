#include "tessera/server/admin_service.h"

#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/model/row_mutation.h"
#include "tessera/replication/consistency.h"
#include "tessera/replication/consistency_token.h"
#include "tessera/server/admin_convert.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/list_pages.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace {

namespace admin = ::google::bigtable::admin::v2;

Status ApplyModification(const admin::ModifyColumnFamiliesRequest::Modification& m, size_t index,
                         model::TableSchema* schema) {
  const std::string& id = m.id();
  auto context = [&](const Status& s) {
    return Status(s.code(), tessera::StrCat("modification #", index, " (family \"", id,
                                            "\"): ", s.message()));
  };
  // FamilyFromProto and GcRuleFromProto name the family themselves ("column family cf: ...").
  auto numbered = [&](const Status& s) {
    return Status(s.code(), tessera::StrCat("modification #", index, ": ", s.message()));
  };
  switch (m.mod_case()) {
    case admin::ModifyColumnFamiliesRequest::Modification::kCreate: {
      if (schema->Find(id) != nullptr) {
        return absl::AlreadyExistsError(tessera::StrCat(
            "modification #", index, ": column family \"", id, "\" already exists"));
      }
      StatusOr<model::FamilySchema> family = FamilyFromProto(m.create(), id);
      if (!family.ok()) return numbered(family.status());
      schema->families[id] = *std::move(family);
      return Status();
    }
    case admin::ModifyColumnFamiliesRequest::Modification::kUpdate: {
      auto it = schema->families.find(id);
      if (it == schema->families.end()) {
        return absl::NotFoundError(
            tessera::StrCat("modification #", index, ": column family \"", id, "\" not found"));
      }
      std::vector<std::string> paths(m.update_mask().paths().begin(),
                                     m.update_mask().paths().end());
      if (paths.empty()) paths.push_back("gc_rule");
      for (const std::string& path : paths) {
        if (path == "gc_rule") {
          StatusOr<model::GcRule> rule = GcRuleFromProto(m.update().gc_rule(), id);
          if (!rule.ok()) return numbered(rule.status());
          it->second.gc_rule = *std::move(rule);
        } else if (path == "value_type") {
          return context(absl::UnimplementedError(
              "value_type (aggregate families) is not supported by Tessera"));
        } else if (path == "tessera_options") {
          const auto& o = m.update().tessera_options();
          if (o.super_columns() != it->second.super_columns ||
              o.time_sorted() != it->second.time_sorted) {
            return context(absl::FailedPreconditionError(
                "a family's kind (super columns, time sorted) is fixed when it is created"));
          }
        } else {
          return context(absl::InvalidArgumentError(
              tessera::StrCat("update_mask path \"", path,
                              "\" is not one of gc_rule, value_type, tessera_options")));
        }
      }
      return Status();
    }
    case admin::ModifyColumnFamiliesRequest::Modification::kDrop: {
      if (!m.drop()) {
        return context(absl::InvalidArgumentError("drop must be true"));
      }
      if (schema->families.erase(id) == 0) {
        return absl::NotFoundError(
            tessera::StrCat("modification #", index, ": column family \"", id, "\" not found"));
      }
      if (schema->deletion_protection) {
        return absl::FailedPreconditionError(tessera::StrCat(
            "table \"", schema->name, "\" is protected from deletion: cannot drop column family \"",
            id, "\""));
      }
      return Status();
    }
    case admin::ModifyColumnFamiliesRequest::Modification::MOD_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(tessera::StrCat("modification #", index, " (family \"", id,
                                                    "\") sets none of create, update, drop"));
}

}  // namespace

// --- the logic -----------------------------------------------------------------------------

StatusOr<admin::Table> AdminService::DoCreateTable(const admin::CreateTableRequest& request) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(request.parent()));
  RETURN_IF_ERROR(model::ValidateTableName(request.table_id()));
  model::TableSchema schema;
  schema.name = request.table_id();
  switch (request.table().granularity()) {
    case admin::Table::TIMESTAMP_GRANULARITY_UNSPECIFIED:
    case admin::Table::MILLIS:
      schema.granularity = model::TimestampGranularity::kMillis;
      break;
    case admin::Table::MICROS:
      schema.granularity = model::TimestampGranularity::kMicros;
      break;
    default:
      return absl::InvalidArgumentError(
          tessera::StrCat("unknown timestamp granularity ", request.table().granularity()));
  }
  schema.deletion_protection = request.table().deletion_protection();
  for (const auto& [id, family] : request.table().column_families()) {
    ASSIGN_OR_RETURN(schema.families[id], FamilyFromProto(family, id));
  }
  std::vector<std::string> splits;
  for (const auto& split : request.initial_splits()) splits.push_back(split.key());
  RETURN_IF_ERROR(ResolveTableOptions(request.table().tessera_options(), &schema, &splits));
  ASSIGN_OR_RETURN(
      std::shared_ptr<const catalog::TableInfo> info,
      definitions_->CreateTable(request.parent(), std::move(schema), std::move(splits)));
  TLOG_INFO("admin: created table {} ({} tablets, placement {})", info->full_name,
            info->tablets.size(), info->schema.options.placement);
  return TableToProto(*info, admin::Table::SCHEMA_VIEW);
}

Status AdminService::ResolveTableOptions(const ::tessera::v1::TableOptions& options,
                                         model::TableSchema* schema,
                                         std::vector<std::string>* splits) const {
  auto bad = [](std::string_view field, std::string_view message) {
    return absl::InvalidArgumentError(tessera::StrCat("tessera_options.", field, ": ", message));
  };
  const std::string& read = options.read_consistency();
  if (!read.empty() && !replication::ParseReadLevel(read)) {
    return bad("read_consistency", tessera::StrCat("unknown read consistency level \"", read,
                                                   "\" (primary, quorum or one)"));
  }
  const std::string& write = options.write_consistency();
  if (!write.empty() && !replication::ParseWriteLevel(write)) {
    return bad("write_consistency", tessera::StrCat("unknown write consistency level \"", write,
                                                    "\" (one, quorum, all or local_quorum)"));
  }
  const std::string& compaction = options.compaction();
  if (!compaction.empty() && !tablet::ParseCompactionStyle(compaction).has_value()) {
    return bad("compaction",
               tessera::StrCat("unknown compaction \"", compaction, "\" (leveled or size_tiered)"));
  }
  catalog::ClusterView cluster;
  if (placement_.cluster) {
    ASSIGN_OR_RETURN(cluster, placement_.cluster());
  } else {
    cluster.live.emplace_back().endpoint = "this node";
  }
  StatusOr<catalog::PlacementPolicy> policy =
      catalog::ResolveTablePlacement(options.placement(), placement_.placement, cluster.live);
  if (!policy.ok()) return bad("placement", std::string(policy.status().message()));
  *splits = catalog::TableSplitKeys(*policy, cluster.Ring(), std::move(*splits));
  schema->options =
      model::TableOptions{catalog::FormatPlacementPolicy(*policy), read, write, compaction};
  return Status();
}

StatusOr<admin::ListTablesResponse> AdminService::DoListTables(
    const admin::ListTablesRequest& request, std::string_view principal) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(request.parent()));
  ASSIGN_OR_RETURN(const int page_size, ListPageSize(request.page_size()));
  // The page token is the id of the last table of the previous page.
  const std::string& after = request.page_token();
  RETURN_IF_ERROR(CheckListPageToken(after, model::ValidateTableName(after).ok()));
  const admin::Table::View view =
      request.view() == admin::Table::VIEW_UNSPECIFIED ? admin::Table::NAME_ONLY : request.view();
  admin::ListTablesResponse response;
  for (const auto& info : catalog_->ListTables(request.parent())) {
    if (!after.empty() && info->name.table_id <= after) continue;
    if (access_control_ != nullptr && !access_control_->HoldsAnything(principal, info->full_name)) {
      continue;
    }
    if (response.tables_size() == page_size) {
      response.set_next_page_token(
          response.tables(page_size - 1)
              .name()
              .substr(request.parent().size() + std::string_view("/tables/").size()));
      break;
    }
    *response.add_tables() = TableToProto(*info, view);
  }
  return response;
}

StatusOr<admin::Table> AdminService::DoGetTable(const admin::GetTableRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> info,
                   catalog_->GetTable(request.name()));
  const admin::Table::View view =
      request.view() == admin::Table::VIEW_UNSPECIFIED ? admin::Table::SCHEMA_VIEW : request.view();
  return TableToProto(*info, view);
}

StatusOr<::google::longrunning::Operation> AdminService::DoUpdateTable(
    const admin::UpdateTableRequest& request) {
  const std::string& name = request.table().name();
  RETURN_IF_ERROR(catalog::TableName::Parse(name).status());
  if (request.update_mask().paths().empty()) {
    return absl::InvalidArgumentError("update_mask must name the fields to change");
  }
  for (const std::string& path : request.update_mask().paths()) {
    if (path != "deletion_protection") {
      return absl::UnimplementedError(tessera::StrCat(
          "UpdateTable: changing \"", path, "\" is not supported (only deletion_protection)"));
    }
  }
  const bool protect = request.table().deletion_protection();
  ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> info,
                   definitions_->UpdateSchema(name, [protect](model::TableSchema* schema) {
                     schema->deletion_protection = protect;
                     return Status();
                   }));
  ::google::longrunning::Operation op;
  op.set_name(tessera::StrCat("operations/", name, "/update/", info->schema.version));
  op.set_done(true);
  op.mutable_response()->PackFrom(TableToProto(*info, admin::Table::SCHEMA_VIEW));
  return op;
}

Status AdminService::DoDeleteTable(const admin::DeleteTableRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  RETURN_IF_ERROR(definitions_->DeleteTable(request.name()));
  TLOG_INFO("admin: deleted table {}", request.name());
  return Status();
}

StatusOr<admin::Table> AdminService::DoModifyColumnFamilies(
    const admin::ModifyColumnFamiliesRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  if (request.modifications().empty()) {
    return absl::InvalidArgumentError("no modifications given");
  }
  // A family dropped and created again in one request must lose its data (§5.6: the drop
  // purges it). The engine marks a family's data dead when a schema change removes it, and a
  // single change would only show it unchanged, so the request is applied in parts, cut
  // before each create of a family dropped earlier in it. A dry run on the current schema
  // first keeps a failing request without effect, as a single change would.
  std::vector<int> cuts;  // indexes of the modifications that start a new part
  {
    ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> current,
                     catalog_->GetTable(request.name()));
    model::TableSchema trial = current->schema;
    std::set<std::string> dropped;
    for (int i = 0; i < request.modifications_size(); ++i) {
      const auto& m = request.modifications(i);
      RETURN_IF_ERROR(ApplyModification(m, i, &trial));
      if (m.has_create() && dropped.contains(m.id())) {
        cuts.push_back(i);
        dropped.clear();
      }
      if (m.mod_case() == admin::ModifyColumnFamiliesRequest::Modification::kDrop) {
        dropped.insert(m.id());
      }
    }
  }
  cuts.push_back(request.modifications_size());
  std::shared_ptr<const catalog::TableInfo> info;
  int begin = 0;
  for (int end : cuts) {
    ASSIGN_OR_RETURN(
        info, definitions_->UpdateSchema(
                  request.name(), [&request, begin, end](model::TableSchema* schema) {
                    for (int i = begin; i < end; ++i) {
                      RETURN_IF_ERROR(ApplyModification(request.modifications(i), i, schema));
                    }
                    return Status();
                  }));
    begin = end;
  }
  return TableToProto(*info, admin::Table::SCHEMA_VIEW);
}

Status AdminService::DoDropRowRange(const admin::DropRowRangeRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> info,
                   catalog_->GetTable(request.name()));
  switch (request.target_case()) {
    case admin::DropRowRangeRequest::kRowKeyPrefix: {
      if (request.row_key_prefix().empty()) {
        return absl::InvalidArgumentError(
            "row_key_prefix must not be empty (use delete_all_data_from_table to drop every row)");
      }
      ASSIGN_OR_RETURN(uint64_t deleted, access_->DropRowRange(*info, request.row_key_prefix(),
                                                              replication::AccessOptions()));
      TLOG_INFO("admin: DropRowRange {} prefix of {} bytes: {} rows deleted", info->full_name,
                request.row_key_prefix().size(), deleted);
      return Status();
    }
    case admin::DropRowRangeRequest::kDeleteAllDataFromTable:
      if (!request.delete_all_data_from_table()) {
        return absl::InvalidArgumentError("delete_all_data_from_table must be true when set");
      }
      if (cluster_mode_) {
        // The tablets live on replicas across the cluster, not all here: every row is deleted
        // through its tablet's primary, as for a prefix. Truncating this node's replicas would
        // leave the others' rows, and this node's replicas diverged from them.
        ASSIGN_OR_RETURN(uint64_t deleted, access_->DropRowRange(*info, "", replication::AccessOptions()));
        TLOG_INFO("admin: DropRowRange {} all data: {} rows deleted", info->full_name, deleted);
        return Status();
      }
      return catalog_->TruncateTable(request.name());
    case admin::DropRowRangeRequest::TARGET_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "DropRowRange needs row_key_prefix or delete_all_data_from_table");
}

StatusOr<replication::ConsistencyTokens*> AdminService::TokensFor(
    const catalog::TableInfo& table) const {
  if (!tokens_) return nullptr;
  // A node's own table that joined the cluster is served by each node alone.
  for (const catalog::TabletRef& ref : table.tablets) {
    if (!catalog::IsClusterTabletId(ref.id)) return nullptr;
  }
  replication::ConsistencyTokens* tokens = tokens_();
  if (tokens == nullptr) return absl::UnavailableError("this node is still joining its cluster");
  return tokens;
}

StatusOr<admin::GenerateConsistencyTokenResponse> AdminService::DoGenerateConsistencyToken(
    const admin::GenerateConsistencyTokenRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> info,
                   catalog_->GetTable(request.name()));
  ASSIGN_OR_RETURN(replication::ConsistencyTokens * tokens, TokensFor(*info));
  admin::GenerateConsistencyTokenResponse response;
  if (tokens == nullptr) {
    // Not replicated: every acknowledged write is already visible to every reader, so a token
    // only has to name the point in the write history it was issued at.
    response.set_consistency_token(
        replication::SingleNodeToken(catalog_->engine()->GetStats().last_sequence));
    return response;
  }
  absl::Notification answered;
  StatusOr<std::string> token;
  tokens->Generate(info, [&](StatusOr<std::string> t) {
    token = std::move(t);
    answered.Notify();
  });
  answered.WaitForNotification();
  RETURN_IF_ERROR(token.status());
  response.set_consistency_token(*std::move(token));
  return response;
}

StatusOr<admin::CheckConsistencyResponse> AdminService::DoCheckConsistency(
    const admin::CheckConsistencyRequest& request) {
  RETURN_IF_ERROR(catalog::TableName::Parse(request.name()).status());
  ASSIGN_OR_RETURN(std::shared_ptr<const catalog::TableInfo> info,
                   catalog_->GetTable(request.name()));
  const std::string& token = request.consistency_token();
  admin::CheckConsistencyResponse response;
  if (replication::IsSingleNodeToken(token)) {
    response.set_consistent(true);
    return response;
  }
  ASSIGN_OR_RETURN(replication::ConsistencyTokens * tokens, TokensFor(*info));
  if (tokens == nullptr) {
    return absl::InvalidArgumentError(
        tessera::StrCat("consistency token \"", token, "\" was not issued by this server"));
  }
  absl::Notification answered;
  StatusOr<bool> consistent;
  tokens->Check(info, token, [&](StatusOr<bool> c) {
    consistent = std::move(c);
    answered.Notify();
  });
  answered.WaitForNotification();
  ASSIGN_OR_RETURN(const bool reached, std::move(consistent));
  response.set_consistent(reached);
  return response;
}

// --- gRPC handlers ------------------------------------------------------------------------------
// Each asks the serving check first: a cluster node without a lock-service session refuses
// every admin call, reads too, as it refuses data calls (issue 9: ListTables answered while
// reads were refused).

void AdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService = Admin::service_full_name();
  services->Add(kService, "CreateTable", this, &AdminService::CreateTable, executor);
  services->Add(kService, "ListTables", this, &AdminService::ListTables, executor);
  services->Add(kService, "GetTable", this, &AdminService::GetTable, executor);
  services->Add(kService, "UpdateTable", this, &AdminService::UpdateTable, executor);
  services->Add(kService, "DeleteTable", this, &AdminService::DeleteTable, executor);
  services->Add(kService, "ModifyColumnFamilies", this, &AdminService::ModifyColumnFamilies,
                executor);
  services->Add(kService, "DropRowRange", this, &AdminService::DropRowRange, executor);
  services->Add(kService, "GenerateConsistencyToken", this,
                &AdminService::GenerateConsistencyToken, executor);
  services->Add(kService, "CheckConsistency", this, &AdminService::CheckConsistency, executor);
}

Status AdminService::CheckServing() const { return serving_check_ ? serving_check_() : Status(); }

rpc::UnaryReactor* AdminService::CreateTable(rpc::ServerContext* context,
                                                    const admin::CreateTableRequest* request,
                                                    admin::Table* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoCreateTable(*request), response);
}

rpc::UnaryReactor* AdminService::ListTables(rpc::ServerContext* context,
                                                   const admin::ListTablesRequest* request,
                                                   admin::ListTablesResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoListTables(*request, context->principal()), response);
}

rpc::UnaryReactor* AdminService::GetTable(rpc::ServerContext* context,
                                                 const admin::GetTableRequest* request,
                                                 admin::Table* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoGetTable(*request), response);
}

rpc::UnaryReactor* AdminService::UpdateTable(rpc::ServerContext* context,
                                                    const admin::UpdateTableRequest* request,
                                                    ::google::longrunning::Operation* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoUpdateTable(*request), response);
}

rpc::UnaryReactor* AdminService::DeleteTable(rpc::ServerContext* context,
                                                    const admin::DeleteTableRequest* request,
                                                    ::google::protobuf::Empty*) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoDeleteTable(*request));
}

rpc::UnaryReactor* AdminService::ModifyColumnFamilies(
    rpc::ServerContext* context, const admin::ModifyColumnFamiliesRequest* request,
    admin::Table* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoModifyColumnFamilies(*request), response);
}

rpc::UnaryReactor* AdminService::DropRowRange(rpc::ServerContext* context,
                                                     const admin::DropRowRangeRequest* request,
                                                     ::google::protobuf::Empty*) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoDropRowRange(*request));
}

rpc::UnaryReactor* AdminService::GenerateConsistencyToken(
    rpc::ServerContext* context, const admin::GenerateConsistencyTokenRequest* request,
    admin::GenerateConsistencyTokenResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoGenerateConsistencyToken(*request), response);
}

rpc::UnaryReactor* AdminService::CheckConsistency(
    rpc::ServerContext* context, const admin::CheckConsistencyRequest* request,
    admin::CheckConsistencyResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoCheckConsistency(*request), response);
}

}  // namespace tessera::server
