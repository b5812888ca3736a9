#include "tessera/model/gc_rule_proto.h"

#include <cstdint>
#include <vector>

namespace tessera::model {

namespace {

namespace btadmin = ::google::bigtable::admin::v2;

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int kMaxGcDepth = 32;

StatusOr<GcRule> Convert(const btadmin::GcRule& proto, std::string_view family, int depth) {
  if (depth > kMaxGcDepth) {
    return absl::InvalidArgumentError(
        tessera::StrCat("column family ", family, ": GC rule nested deeper than ", kMaxGcDepth));
  }
  switch (proto.rule_case()) {
    case btadmin::GcRule::RULE_NOT_SET:
      return GcRule::None();
    case btadmin::GcRule::kMaxNumVersions:
      if (proto.max_num_versions() < 1) {
        return absl::InvalidArgumentError(tessera::StrCat(
            "column family ", family, ": max_num_versions must be at least 1, got ",
            proto.max_num_versions()));
      }
      return GcRule::MaxNumVersions(proto.max_num_versions());
    case btadmin::GcRule::kMaxAge: {
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
      return GcRule::MaxAge(micros);
    }
    case btadmin::GcRule::kIntersection:
    case btadmin::GcRule::kUnion: {
      const bool is_union = proto.rule_case() == btadmin::GcRule::kUnion;
      const auto& members = is_union ? proto.union_().rules() : proto.intersection().rules();
      std::vector<GcRule> rules;
      rules.reserve(members.size());
      for (const btadmin::GcRule& member : members) {
        ASSIGN_OR_RETURN(GcRule rule, Convert(member, family, depth + 1));
        rules.push_back(std::move(rule));
      }
      return is_union ? GcRule::Union(std::move(rules))
                      : GcRule::Intersection(std::move(rules));
    }
  }
  return absl::InvalidArgumentError(
      tessera::StrCat("column family ", family, ": unknown GC rule kind"));
}

}  // namespace

StatusOr<GcRule> GcRuleFromProto(const btadmin::GcRule& proto, std::string_view family) {
  if (proto.ByteSizeLong() > kMaxGcRuleBytes) {
    return absl::InvalidArgumentError(tessera::StrCat("column family ", family,
                                                      ": GC rule is larger than ",
                                                      kMaxGcRuleBytes, " bytes"));
  }
  ASSIGN_OR_RETURN(GcRule rule, Convert(proto, family, 0));
  RETURN_IF_ERROR_CTX(rule.Validate(), tessera::StrCat("column family ", family));
  return rule;
}

btadmin::GcRule GcRuleToProto(const GcRule& rule) {
  btadmin::GcRule out;
  switch (rule.kind()) {
    case GcRule::Kind::kNone:
      break;
    case GcRule::Kind::kMaxNumVersions:
      out.set_max_num_versions(rule.max_num_versions());
      break;
    case GcRule::Kind::kMaxAge:
      out.mutable_max_age()->set_seconds(rule.max_age_micros() / kMicrosPerSecond);
      out.mutable_max_age()->set_nanos(
          static_cast<int32_t>(rule.max_age_micros() % kMicrosPerSecond) * 1000);
      break;
    case GcRule::Kind::kUnion:
      out.mutable_union_();
      for (const auto& r : rule.rules()) *out.mutable_union_()->add_rules() = GcRuleToProto(r);
      break;
    case GcRule::Kind::kIntersection:
      out.mutable_intersection();
      for (const auto& r : rule.rules()) {
        *out.mutable_intersection()->add_rules() = GcRuleToProto(r);
      }
      break;
  }
  return out;
}

}  // namespace tessera::model
