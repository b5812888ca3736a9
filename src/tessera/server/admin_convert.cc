#include "tessera/server/admin_convert.h"

#include <vector>

namespace tessera::server {

namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int kMaxGcDepth = 32;

StatusOr<model::GcRule> Convert(const admin::GcRule& proto, std::string_view family, int depth) {
  if (depth > kMaxGcDepth) {
    return absl::InvalidArgumentError(
        tessera::StrCat("column family ", family, ": GC rule nested deeper than ", kMaxGcDepth));
  }
  switch (proto.rule_case()) {
    case admin::GcRule::RULE_NOT_SET:
      return model::GcRule::None();
    case admin::GcRule::kMaxNumVersions:
      if (proto.max_num_versions() < 1) {
        return absl::InvalidArgumentError(tessera::StrCat(
            "column family ", family, ": max_num_versions must be at least 1, got ",
            proto.max_num_versions()));
      }
      return model::GcRule::MaxNumVersions(proto.max_num_versions());
    case admin::GcRule::kMaxAge: {
      const auto& d = proto.max_age();
      if (d.seconds() < 0 || d.nanos() < 0 || d.nanos() >= 1'000'000'000 ||
          d.seconds() > INT64_MAX / kMicrosPerSecond - 1) {
        return absl::InvalidArgumentError(tessera::StrCat(
            "column family ", family, ": max_age must be a positive duration, got ", d.seconds(),
            "s ", d.nanos(), "ns"));
      }
      const int64_t micros = d.seconds() * kMicrosPerSecond + d.nanos() / 1000;
      if (micros <= 0) {
        return absl::InvalidArgumentError(tessera::StrCat(
            "column family ", family, ": max_age must be at least one microsecond"));
      }
      return model::GcRule::MaxAge(micros);
    }
    case admin::GcRule::kIntersection:
    case admin::GcRule::kUnion: {
      const bool is_union = proto.rule_case() == admin::GcRule::kUnion;
      const auto& members = is_union ? proto.union_().rules() : proto.intersection().rules();
      std::vector<model::GcRule> rules;
      rules.reserve(members.size());
      for (const admin::GcRule& member : members) {
        ASSIGN_OR_RETURN(model::GcRule rule, Convert(member, family, depth + 1));
        rules.push_back(std::move(rule));
      }
      return is_union ? model::GcRule::Union(std::move(rules))
                      : model::GcRule::Intersection(std::move(rules));
    }
  }
  return absl::InvalidArgumentError(
      tessera::StrCat("column family ", family, ": unknown GC rule kind"));
}

}  // namespace

StatusOr<model::GcRule> GcRuleFromProto(const admin::GcRule& proto, std::string_view family) {
  if (proto.ByteSizeLong() > kMaxGcRuleBytes) {
    return absl::InvalidArgumentError(tessera::StrCat("column family ", family,
                                                      ": GC rule is larger than ",
                                                      kMaxGcRuleBytes, " bytes"));
  }
  ASSIGN_OR_RETURN(model::GcRule rule, Convert(proto, family, 0));
  RETURN_IF_ERROR_CTX(rule.Validate(), tessera::StrCat("column family ", family));
  return rule;
}

admin::GcRule GcRuleToProto(const model::GcRule& rule) {
  admin::GcRule out;
  switch (rule.kind()) {
    case model::GcRule::Kind::kNone:
      break;
    case model::GcRule::Kind::kMaxNumVersions:
      out.set_max_num_versions(rule.max_num_versions());
      break;
    case model::GcRule::Kind::kMaxAge:
      out.mutable_max_age()->set_seconds(rule.max_age_micros() / kMicrosPerSecond);
      out.mutable_max_age()->set_nanos(
          static_cast<int32_t>(rule.max_age_micros() % kMicrosPerSecond) * 1000);
      break;
    case model::GcRule::Kind::kUnion:
      for (const auto& r : rule.rules()) *out.mutable_union_()->add_rules() = GcRuleToProto(r);
      break;
    case model::GcRule::Kind::kIntersection:
      for (const auto& r : rule.rules()) {
        *out.mutable_intersection()->add_rules() = GcRuleToProto(r);
      }
      break;
  }
  return out;
}

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

admin::Table TableToProto(const TableInfo& info, admin::Table::View view) {
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
  return out;
}

}  // namespace tessera::server
