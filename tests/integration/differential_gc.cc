#include "differential_gc.h"

#include <algorithm>

#include "tessera/util/status.h"

namespace tessera::integration {
namespace {

namespace btv2 = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

// A column's cells are newest first, and the young ones (kYoungFromMicros) come before the old
// ones, so what a shape keeps of a column is always a prefix: its length, for a column of
// `total` cells of which `young` are young.
int KeptPrefix(const GcShape& s, int total, int young) {
  switch (s.kind) {
    case GcShape::Kind::kNone:
      return total;
    case GcShape::Kind::kVersions:
      return std::min(s.versions, total);
    case GcShape::Kind::kAge:
      return young;
    case GcShape::Kind::kUnion:  // collected when either collects
      return std::min(s.versions, young);
    case GcShape::Kind::kIntersection:  // collected when both collect
      return std::max(std::min(s.versions, total), young);
  }
  return total;
}

btv2::RowFilter YoungOnly() {
  btv2::RowFilter f;
  f.mutable_timestamp_range_filter()->set_start_timestamp_micros(kYoungFromMicros);
  return f;
}

btv2::RowFilter NewestVersions(int n) {
  btv2::RowFilter f;
  f.set_cells_per_column_limit_filter(n);
  return f;
}

}  // namespace

btadmin::GcRule GcShape::ToProto() const {
  btadmin::GcRule rule;
  auto age = [](btadmin::GcRule* r) {
    r->mutable_max_age()->set_seconds(kAgeMicros / 1'000'000);
  };
  switch (kind) {
    case Kind::kNone:
      break;
    case Kind::kVersions:
      rule.set_max_num_versions(versions);
      break;
    case Kind::kAge:
      age(&rule);
      break;
    case Kind::kUnion:
      rule.mutable_union_()->add_rules()->set_max_num_versions(versions);
      age(rule.mutable_union_()->add_rules());
      break;
    case Kind::kIntersection:
      rule.mutable_intersection()->add_rules()->set_max_num_versions(versions);
      age(rule.mutable_intersection()->add_rules());
      break;
  }
  return rule;
}

std::string GcShape::ToString() const {
  switch (kind) {
    case Kind::kNone:
      return "never";
    case Kind::kVersions:
      return StrCat("versions(", versions, ")");
    case Kind::kAge:
      return "age(1d)";
    case Kind::kUnion:
      return StrCat("versions(", versions, ") || age(1d)");
    case Kind::kIntersection:
      return StrCat("versions(", versions, ") && age(1d)");
  }
  return "?";
}

bool Stricter(const GcShape& next, const GcShape& current) {
  // Prefix lengths are monotone in both arguments; columns longer than any version count in
  // play behave like this bound.
  constexpr int kLongest = 8;
  for (int total = 0; total <= kLongest; ++total) {
    for (int young = 0; young <= total; ++young) {
      if (KeptPrefix(next, total, young) > KeptPrefix(current, total, young)) return false;
    }
  }
  return true;
}

btv2::RowFilter KeepFilter(const GcShape& shape) {
  btv2::RowFilter f;
  switch (shape.kind) {
    case GcShape::Kind::kNone:
      break;
    case GcShape::Kind::kVersions:
      f = NewestVersions(shape.versions);
      break;
    case GcShape::Kind::kAge:
      f = YoungOnly();
      break;
    case GcShape::Kind::kUnion: {
      // Kept by both: the newest N that are young (young cells are the newest, so the newest N
      // of the young ones are those of the column that are young).
      auto* chain = f.mutable_chain();
      *chain->add_filters() = NewestVersions(shape.versions);
      *chain->add_filters() = YoungOnly();
      break;
    }
    case GcShape::Kind::kIntersection: {
      // Kept by either: the young ones, and the old ones among the newest N — two disjoint
      // sets, so the interleave duplicates nothing.
      auto* inter = f.mutable_interleave();
      *inter->add_filters() = YoungOnly();
      auto* old_newest = inter->add_filters()->mutable_chain();
      *old_newest->add_filters() = NewestVersions(shape.versions);
      old_newest->add_filters()->mutable_timestamp_range_filter()->set_end_timestamp_micros(
          kYoungFromMicros);
      break;
    }
  }
  return f;
}

std::string ExactRegex(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '.') out.push_back('\\');  // the only metacharacter family names can hold
    out.push_back(c);
  }
  return out;
}

}  // namespace tessera::integration
