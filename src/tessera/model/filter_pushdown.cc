#include "tessera/model/filter_pushdown.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "tessera/model/row_filter.h"

namespace tessera::model {

namespace {

using Kind = FilterNode::Kind;

// For a filter F and a restriction r (keep only the cells of some families, or of some time
// range), "S is safe for F" means F(row) = F(r_S(row)) for every row. "F commutes with r" means
// F(r_S(x)) = r_S(F(x)) for every S and x.

// A set of families: every family, or a finite (possibly empty) set.
struct FamilySet {
  bool all = true;
  std::set<std::string> names;

  static FamilySet All() { return {}; }
  static FamilySet None() { return {false, {}}; }
  static FamilySet Of(const std::vector<std::string>& v) {
    return {false, std::set<std::string>(v.begin(), v.end())};
  }
  void IntersectWith(const FamilySet& o) {
    if (o.all) return;
    if (all) {
      *this = o;
      return;
    }
    std::set<std::string> both;
    std::set_intersection(names.begin(), names.end(), o.names.begin(), o.names.end(),
                          std::inserter(both, both.end()));
    names = std::move(both);
  }
  void UnionWith(const FamilySet& o) {
    if (all) return;
    if (o.all) {
      *this = All();
      return;
    }
    names.insert(o.names.begin(), o.names.end());
  }
};

// A set of timestamps: empty, or one interval [start, end) with end 0 = unbounded.
struct TimeSet {
  bool empty = false;
  TimeRange range;  // every timestamp by default

  static TimeSet All() { return {}; }
  static TimeSet None() { return {true, {}}; }
  void IntersectWith(const TimeSet& o) {
    if (empty) return;
    if (o.empty) {
      *this = None();
      return;
    }
    range.start_micros = std::max(range.start_micros, o.range.start_micros);
    if (range.end_micros == 0 ||
        (o.range.end_micros != 0 && o.range.end_micros < range.end_micros)) {
      range.end_micros = o.range.end_micros;
    }
    if (range.IsEmpty()) *this = None();
  }
  // The smallest interval holding both (a safe superset of the union).
  void HullWith(const TimeSet& o) {
    if (o.empty) return;
    if (empty) {
      *this = o;
      return;
    }
    range.start_micros = std::min(range.start_micros, o.range.start_micros);
    range.end_micros = (range.end_micros == 0 || o.range.end_micros == 0)
                           ? 0
                           : std::max(range.end_micros, o.range.end_micros);
  }
};

bool CommutesWithFamilyRestriction(const FilterNode& n) {
  switch (n.kind) {
    case Kind::kChain:
    case Kind::kInterleave:
      return std::all_of(n.children.begin(), n.children.end(),
                         [](const auto& c) { return CommutesWithFamilyRestriction(*c); });
    case Kind::kCondition:          // the predicate sees other families
    case Kind::kCellsPerRowOffset:  // counts cells of every family
    case Kind::kCellsPerRowLimit:
    case Kind::kSink:
      return false;
    default:  // per-cell predicates, transformers, whole-row decisions, per-column limits
      return true;
  }
}

bool CommutesWithTimeRestriction(const FilterNode& n) {
  switch (n.kind) {
    case Kind::kChain:
    case Kind::kInterleave:
      return std::all_of(n.children.begin(), n.children.end(),
                         [](const auto& c) { return CommutesWithTimeRestriction(*c); });
    case Kind::kCondition:
    case Kind::kCellsPerRowOffset:
    case Kind::kCellsPerRowLimit:
    case Kind::kCellsPerColumnLimit:  // "newest N" depends on the older cells removed
    case Kind::kSink:
      return false;
    default:
      return true;
  }
}

FamilySet SafeFamilies(const FilterNode& n) {
  switch (n.kind) {
    case Kind::kBlockAll:
      return FamilySet::None();
    case Kind::kFamilyRegex:
      return n.literal_families.empty() ? FamilySet::All() : FamilySet::Of(n.literal_families);
    case Kind::kColumnRange:
      return FamilySet::Of({n.family});
    case Kind::kChain: {
      // Each element's safe set is safe for the chain while every element before it commutes.
      FamilySet s = FamilySet::All();
      for (const auto& c : n.children) {
        s.IntersectWith(SafeFamilies(*c));
        if (!CommutesWithFamilyRestriction(*c)) break;
      }
      return s;
    }
    case Kind::kInterleave: {
      FamilySet s = FamilySet::None();
      for (const auto& c : n.children) s.UnionWith(SafeFamilies(*c));
      return s;
    }
    case Kind::kCondition: {
      FamilySet s = SafeFamilies(*n.predicate);
      if (n.true_branch) s.UnionWith(SafeFamilies(*n.true_branch));
      if (n.false_branch) s.UnionWith(SafeFamilies(*n.false_branch));
      return s;
    }
    default:
      return FamilySet::All();
  }
}

TimeSet SafeTimes(const FilterNode& n) {
  switch (n.kind) {
    case Kind::kBlockAll:
      return TimeSet::None();
    case Kind::kTimestampRange:
      return n.time_range.IsEmpty() ? TimeSet::None() : TimeSet{false, n.time_range};
    case Kind::kChain: {
      TimeSet s = TimeSet::All();
      for (const auto& c : n.children) {
        s.IntersectWith(SafeTimes(*c));
        if (!CommutesWithTimeRestriction(*c)) break;
      }
      return s;
    }
    case Kind::kInterleave: {
      TimeSet s = TimeSet::None();
      for (const auto& c : n.children) s.HullWith(SafeTimes(*c));
      return s;
    }
    case Kind::kCondition: {
      TimeSet s = SafeTimes(*n.predicate);
      if (n.true_branch) s.HullWith(SafeTimes(*n.true_branch));
      if (n.false_branch) s.HullWith(SafeTimes(*n.false_branch));
      return s;
    }
    default:
      return TimeSet::All();
  }
}

bool ContainsSink(const FilterNode& n) {
  if (n.kind == Kind::kSink) return true;
  for (const auto& c : n.children) {
    if (ContainsSink(*c)) return true;
  }
  // Conditions cannot hold sinks (refused by Compile).
  return false;
}

}  // namespace

FilterPushdown ComputePushdown(const FilterNode& root) {
  FilterPushdown p;
  if (ContainsSink(root)) return p;  // sunk cells escape the analysis: read everything
  const FamilySet families = SafeFamilies(root);
  const TimeSet times = SafeTimes(root);
  if ((!families.all && families.names.empty()) || times.empty) {
    p.outputs_nothing = true;
    return p;
  }
  if (!families.all) p.families.assign(families.names.begin(), families.names.end());
  p.time_range = times.range;
  // max_versions: a cells_per_column_limit at the top, or in a top chain after only
  // predicates that the pushed families / time range express exactly. Every cell the engine
  // then returns passes those predicates, so the newest N it keeps are the newest N the
  // filter would keep.
  std::vector<const FilterNode*> prefix;
  if (root.kind == Kind::kChain) {
    for (const auto& c : root.children) prefix.push_back(c.get());
  } else {
    prefix.push_back(&root);
  }
  for (const FilterNode* n : prefix) {
    if (n->kind == Kind::kCellsPerColumnLimit) {
      p.max_versions = static_cast<int>(n->count);
      break;
    }
    const bool exact = n->kind == Kind::kTimestampRange ||
                       (n->kind == Kind::kFamilyRegex && !n->literal_families.empty());
    if (!exact) break;
  }
  return p;
}

ReadSpec FilterPushdown::ToReadSpec() const {
  ReadSpec spec;
  spec.families = families;
  spec.time_range = time_range;
  spec.max_versions = max_versions;
  return spec;
}

// "a|b|c" where every alternative is a plain family name without regex meaning: the families.
// Empty for anything else.
std::vector<std::string> LiteralFamilies(std::string_view pattern) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t bar = pattern.find('|', pos);
    std::string_view part = pattern.substr(pos, bar == std::string_view::npos ? bar : bar - pos);
    if (part.empty()) return {};
    for (char ch : part) {
      bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
      if (!plain) return {};
    }
    out.emplace_back(part);
    if (bar == std::string_view::npos) break;
    pos = bar + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tessera::model
