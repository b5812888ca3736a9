#include "tessera/server/admin_convert.h"

#include <vector>

namespace tessera::server {

StatusOr<model::FamilySchema> FamilyFromProto(const admin::ColumnFamily& proto,
                                              std::string_view family) {
  RETURN_IF_ERROR(model::ValidateFamilyName(family));
  if (proto.has_value_type()) {
    return absl::UnimplementedError(tessera::StrCat(
        "column family ", family,
        ": value_type (aggregate families, AddToCell) is not supported by Tessera"));
  }
  model::FamilySchema out;
  ASSIGN_OR_RETURN(out.gc_rule, GcRuleFromProto(proto.gc_rule(), family));
  out.super_columns = proto.tessera_options().super_columns();
  out.time_sorted = proto.tessera_options().time_sorted();
  return out;
}

admin::ColumnFamily FamilyToProto(const model::FamilySchema& family) {
  admin::ColumnFamily out;
  *out.mutable_gc_rule() = GcRuleToProto(family.gc_rule);
  if (family.super_columns || family.time_sorted) {
    out.mutable_tessera_options()->set_super_columns(family.super_columns);
    out.mutable_tessera_options()->set_time_sorted(family.time_sorted);
  }
  return out;
}

admin::Table TableToProto(const catalog::TableInfo& info, admin::Table::View view) {
  admin::Table out;
  out.set_name(info.full_name);
  if (view == admin::Table::NAME_ONLY) return out;
  if (view == admin::Table::REPLICATION_VIEW || view == admin::Table::FULL) {
    (*out.mutable_cluster_states())["tessera"].set_replication_state(
        admin::Table::ClusterState::READY);
    if (view == admin::Table::REPLICATION_VIEW) return out;
  }
  for (const auto& [name, family] : info.schema.families) {
    (*out.mutable_column_families())[name] = FamilyToProto(family);
  }
  out.set_granularity(info.schema.granularity == model::TimestampGranularity::kMicros
                          ? admin::Table::MICROS
                          : admin::Table::MILLIS);
  out.set_deletion_protection(info.schema.deletion_protection);
  const model::TableOptions& options = info.schema.options;
  if (view == admin::Table::FULL && !options.empty()) {
    out.mutable_tessera_options()->set_placement(options.placement);
    out.mutable_tessera_options()->set_read_consistency(options.read_consistency);
    out.mutable_tessera_options()->set_write_consistency(options.write_consistency);
    out.mutable_tessera_options()->set_compaction(options.compaction);
  }
  return out;
}

}  // namespace tessera::server
