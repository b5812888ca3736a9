#include "tessera/server/row_filter.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <string_view>
#include <utility>

#include "re2/re2.h"

namespace tessera::server {

namespace v2 = google::bigtable::v2;

namespace {

enum class Kind {
  kPassAll,
  kBlockAll,
  kChain,
  kInterleave,
  kCondition,
  kSink,
  kRowKeyRegex,
  kRowSample,
  kFamilyRegex,
  kQualifierRegex,
  kColumnRange,
  kTimestampRange,
  kValueRegex,
  kValueRange,
  kValueBitmask,
  kCellsPerRowOffset,
  kCellsPerRowLimit,
  kCellsPerColumnLimit,
  kStripValue,
  kApplyLabel,
};

// An interval of byte strings; each bound absent (unbounded), closed or open.
struct ByteRange {
  bool has_start = false;
  bool start_open = false;
  std::string start;
  bool has_end = false;
  bool end_open = false;
  std::string end;

  // std::string comparison is unsigned-byte order (char_traits<char> compares as unsigned).
  bool Contains(std::string_view s) const {
    if (has_start) {
      int c = s.compare(start);
      if (c < 0 || (c == 0 && start_open)) return false;
    }
    if (has_end) {
      int c = s.compare(end);
      if (c > 0 || (c == 0 && end_open)) return false;
    }
    return true;
  }
};

Status FieldError(std::string_view field, std::string_view what, std::string_view path) {
  std::string msg = StrCat("Error in field '", field, "' : ", what);
  if (!path.empty()) msg += StrCat(" (at ", path, ")");
  return absl::InvalidArgumentError(msg);
}

std::string ChildPath(std::string_view parent, std::string_view child) {
  return parent.empty() ? std::string(child) : StrCat(parent, ".", child);
}

}  // namespace

struct RowFilter::Node {
  Kind kind = Kind::kPassAll;
  std::vector<std::unique_ptr<Node>> children;  // chain, interleave
  std::unique_ptr<Node> predicate;              // condition
  std::unique_ptr<Node> true_branch;            // condition; null = outputs nothing
  std::unique_ptr<Node> false_branch;           // condition; null = outputs nothing
  std::unique_ptr<RE2> regex;                   // the *_regex kinds
  std::vector<std::string> literal_families;    // family regex naming families literally
  std::string family;                           // column range
  ByteRange range;                              // column range (qualifiers), value range
  model::TimeRange time_range;                  // timestamp range
  std::string text;                             // label, or bitmask
  int64_t count = 0;                            // offset / limits
  double probability = 0;                       // row sample
};

namespace {

using Node = RowFilter::Node;
using Cells = std::vector<FilterCell>;

// ---------------------------------------------------------------------------
// Validation and compilation.

// Refuses nesting deeper than `max_depth` without recursing past it.
Status CheckDepth(const v2::RowFilter& f, int depth, int max_depth) {
  if (depth > max_depth) {
    return absl::InvalidArgumentError(
        StrCat("RowFilter is nested more than ", max_depth, " levels deep"));
  }
  switch (f.filter_case()) {
    case v2::RowFilter::kChain:
      for (const auto& c : f.chain().filters())
        RETURN_IF_ERROR(CheckDepth(c, depth + 1, max_depth));
      break;
    case v2::RowFilter::kInterleave:
      for (const auto& c : f.interleave().filters()) {
        RETURN_IF_ERROR(CheckDepth(c, depth + 1, max_depth));
      }
      break;
    case v2::RowFilter::kCondition: {
      const auto& cond = f.condition();
      if (cond.has_predicate_filter()) {
        RETURN_IF_ERROR(CheckDepth(cond.predicate_filter(), depth + 1, max_depth));
      }
      if (cond.has_true_filter()) {
        RETURN_IF_ERROR(CheckDepth(cond.true_filter(), depth + 1, max_depth));
      }
      if (cond.has_false_filter()) {
        RETURN_IF_ERROR(CheckDepth(cond.false_filter(), depth + 1, max_depth));
      }
      break;
    }
    default:
      break;
  }
  return absl::OkStatus();
}

// True if `f` applies a label anywhere. REQUIRES: depth already checked.
bool ContainsLabel(const v2::RowFilter& f) {
  switch (f.filter_case()) {
    case v2::RowFilter::kApplyLabelTransformer:
      return true;
    case v2::RowFilter::kChain:
      return std::any_of(f.chain().filters().begin(), f.chain().filters().end(), ContainsLabel);
    case v2::RowFilter::kInterleave:
      return std::any_of(f.interleave().filters().begin(), f.interleave().filters().end(),
                         ContainsLabel);
    case v2::RowFilter::kCondition:
      return (f.condition().has_predicate_filter() &&
              ContainsLabel(f.condition().predicate_filter())) ||
             (f.condition().has_true_filter() && ContainsLabel(f.condition().true_filter())) ||
             (f.condition().has_false_filter() && ContainsLabel(f.condition().false_filter()));
    default:
      return false;
  }
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

Status ParseByteRange(bool has_start, bool start_open, const std::string& start, bool has_end,
                      bool end_open, const std::string& end, std::string_view field,
                      std::string_view what, std::string_view path, ByteRange* out) {
  out->has_start = has_start;
  out->start_open = start_open;
  out->start = start;
  out->has_end = has_end;
  out->end_open = end_open;
  out->end = end;
  if (has_start && has_end && start.compare(end) > 0) {
    return FieldError(field, StrCat("the start ", what, " sorts after the end ", what), path);
  }
  return absl::OkStatus();
}

// The number of regex filters in `f`. REQUIRES: depth already checked.
int CountRegexes(const v2::RowFilter& f) {
  switch (f.filter_case()) {
    case v2::RowFilter::kRowKeyRegexFilter:
    case v2::RowFilter::kFamilyNameRegexFilter:
    case v2::RowFilter::kColumnQualifierRegexFilter:
    case v2::RowFilter::kValueRegexFilter:
      return 1;
    case v2::RowFilter::kChain:
    case v2::RowFilter::kInterleave: {
      const auto& filters =
          f.filter_case() == v2::RowFilter::kChain ? f.chain().filters() : f.interleave().filters();
      int n = 0;
      for (const auto& c : filters) n += CountRegexes(c);
      return n;
    }
    case v2::RowFilter::kCondition: {
      const auto& cond = f.condition();
      return (cond.has_predicate_filter() ? CountRegexes(cond.predicate_filter()) : 0) +
             (cond.has_true_filter() ? CountRegexes(cond.true_filter()) : 0) +
             (cond.has_false_filter() ? CountRegexes(cond.false_filter()) : 0);
    }
    default:
      return 0;
  }
}

class Compiler {
 public:
  // `regex_memory_bytes`: the RE2 budget of each regex.
  Compiler(const FilterOptions& options, int64_t regex_memory_bytes)
      : options_(options), regex_memory_bytes_(regex_memory_bytes) {}

  StatusOr<std::unique_ptr<Node>> Compile(const v2::RowFilter& f, bool in_condition,
                                          const std::string& path) {
    auto node = std::make_unique<Node>();
    switch (f.filter_case()) {
      case v2::RowFilter::FILTER_NOT_SET:
        node->kind = Kind::kPassAll;
        break;

      case v2::RowFilter::kChain:
      case v2::RowFilter::kInterleave: {
        const bool chain = f.filter_case() == v2::RowFilter::kChain;
        const auto& filters = chain ? f.chain().filters() : f.interleave().filters();
        const char* field = chain ? "chain" : "interleave";
        if (filters.size() < 2) {
          return FieldError(
              field,
              StrCat(chain ? "Chain" : "Interleave", " must contain at least two RowFilters"),
              path);
        }
        if (chain) {
          int labelled = 0;
          for (const auto& c : filters) labelled += ContainsLabel(c) ? 1 : 0;
          if (labelled > 1) {
            return FieldError(field,
                              "a Chain may have at most one sub-filter containing an "
                              "apply_label_transformer (a cell carries at most one label)",
                              path);
          }
        }
        node->kind = chain ? Kind::kChain : Kind::kInterleave;
        for (int i = 0; i < filters.size(); ++i) {
          ASSIGN_OR_RETURN(auto child,
                           Compile(filters[i], in_condition,
                                   ChildPath(path, StrCat(field, ".filters[", i, "]"))));
          node->children.push_back(std::move(child));
        }
        break;
      }

      case v2::RowFilter::kCondition: {
        const auto& cond = f.condition();
        node->kind = Kind::kCondition;
        // An absent predicate is an empty RowFilter: it passes every cell.
        ASSIGN_OR_RETURN(node->predicate, Compile(cond.predicate_filter(), /*in_condition=*/true,
                                                  ChildPath(path, "condition.predicate_filter")));
        if (cond.has_true_filter()) {
          ASSIGN_OR_RETURN(node->true_branch, Compile(cond.true_filter(), /*in_condition=*/true,
                                                      ChildPath(path, "condition.true_filter")));
        }
        if (cond.has_false_filter()) {
          ASSIGN_OR_RETURN(node->false_branch, Compile(cond.false_filter(), /*in_condition=*/true,
                                                       ChildPath(path, "condition.false_filter")));
        }
        break;
      }

      case v2::RowFilter::kSink:
        if (!f.sink()) return FieldError("sink", "argument must be true if set", path);
        if (in_condition) {
          return FieldError("sink",
                            "a sink cannot be used in the predicate_filter, true_filter or "
                            "false_filter of a Condition",
                            path);
        }
        node->kind = Kind::kSink;
        break;

      case v2::RowFilter::kPassAllFilter:
        if (!f.pass_all_filter()) {
          return FieldError("pass_all_filter", "argument must be true if set", path);
        }
        node->kind = Kind::kPassAll;
        break;

      case v2::RowFilter::kBlockAllFilter:
        if (!f.block_all_filter()) {
          return FieldError("block_all_filter", "argument must be true if set", path);
        }
        node->kind = Kind::kBlockAll;
        break;

      case v2::RowFilter::kRowKeyRegexFilter: {
        if (f.row_key_regex_filter().empty()) {
          return FieldError("row_key_regex_filter", "argument must not be empty", path);
        }
        node->kind = Kind::kRowKeyRegex;
        ASSIGN_OR_RETURN(node->regex,
                         CompileRegex(f.row_key_regex_filter(), "row_key_regex_filter", path));
        break;
      }

      case v2::RowFilter::kRowSampleFilter: {
        const double p = f.row_sample_filter();
        if (!(p > 0.0 && p < 1.0)) {  // also refuses NaN
          return FieldError("row_sample_filter",
                            StrCat("argument must be between 0.0 and 1.0, exclusive, but got ", p),
                            path);
        }
        node->kind = Kind::kRowSample;
        node->probability = p;
        break;
      }

      case v2::RowFilter::kFamilyNameRegexFilter: {
        const std::string& pattern = f.family_name_regex_filter();
        if (pattern.find(':') != std::string::npos) {
          return FieldError("family_name_regex_filter",
                            "the regex must not contain the ':' character", path);
        }
        node->kind = Kind::kFamilyRegex;
        ASSIGN_OR_RETURN(node->regex, CompileRegex(pattern, "family_name_regex_filter", path));
        node->literal_families = LiteralFamilies(pattern);
        break;
      }

      case v2::RowFilter::kColumnQualifierRegexFilter: {
        node->kind = Kind::kQualifierRegex;
        ASSIGN_OR_RETURN(node->regex, CompileRegex(f.column_qualifier_regex_filter(),
                                                   "column_qualifier_regex_filter", path));
        break;
      }

      case v2::RowFilter::kColumnRangeFilter: {
        const auto& r = f.column_range_filter();
        if (r.family_name().empty()) {
          return FieldError("column_range_filter", "family_name must not be empty", path);
        }
        node->kind = Kind::kColumnRange;
        node->family = r.family_name();
        using CR = v2::ColumnRange;
        const bool start_open = r.start_qualifier_case() == CR::kStartQualifierOpen;
        const bool end_open = r.end_qualifier_case() == CR::kEndQualifierOpen;
        RETURN_IF_ERROR(
            ParseByteRange(r.start_qualifier_case() != CR::START_QUALIFIER_NOT_SET, start_open,
                           start_open ? r.start_qualifier_open() : r.start_qualifier_closed(),
                           r.end_qualifier_case() != CR::END_QUALIFIER_NOT_SET, end_open,
                           end_open ? r.end_qualifier_open() : r.end_qualifier_closed(),
                           "column_range_filter", "qualifier", path, &node->range));
        break;
      }

      case v2::RowFilter::kTimestampRangeFilter: {
        const int64_t start = f.timestamp_range_filter().start_timestamp_micros();
        const int64_t end = f.timestamp_range_filter().end_timestamp_micros();
        if (start < 0 || end < 0) {
          return FieldError(
              "timestamp_range_filter",
              StrCat("timestamps must not be negative, but got [", start, ", ", end, ")"), path);
        }
        if (end != 0 && end < start) {
          return FieldError("timestamp_range_filter",
                            StrCat("inverted timestamp range [", start, ", ", end, ")"), path);
        }
        if (options_.millisecond_granularity) {
          for (int64_t ts : {start, end}) {
            if (ts % 1000 != 0) {
              return FieldError(
                  "timestamp_range_filter",
                  StrCat("Timestamp granularity mismatch. Expected a multiple of 1000 "
                         "(millisecond granularity), but got ",
                         ts, "."),
                  path);
            }
          }
        }
        node->kind = Kind::kTimestampRange;
        node->time_range = model::TimeRange{start, end};
        break;
      }

      case v2::RowFilter::kValueRegexFilter: {
        node->kind = Kind::kValueRegex;
        ASSIGN_OR_RETURN(node->regex,
                         CompileRegex(f.value_regex_filter(), "value_regex_filter", path));
        break;
      }

      case v2::RowFilter::kValueRangeFilter: {
        const auto& r = f.value_range_filter();
        using VR = v2::ValueRange;
        node->kind = Kind::kValueRange;
        const bool start_open = r.start_value_case() == VR::kStartValueOpen;
        const bool end_open = r.end_value_case() == VR::kEndValueOpen;
        RETURN_IF_ERROR(ParseByteRange(r.start_value_case() != VR::START_VALUE_NOT_SET, start_open,
                                       start_open ? r.start_value_open() : r.start_value_closed(),
                                       r.end_value_case() != VR::END_VALUE_NOT_SET, end_open,
                                       end_open ? r.end_value_open() : r.end_value_closed(),
                                       "value_range_filter", "value", path, &node->range));
        break;
      }

      case v2::RowFilter::kValueBitmaskFilter:
        if (f.value_bitmask_filter().mask().empty()) {
          return FieldError("value_bitmask_filter", "mask must not be empty", path);
        }
        node->kind = Kind::kValueBitmask;
        node->text = f.value_bitmask_filter().mask();
        break;

      case v2::RowFilter::kCellsPerRowOffsetFilter:
        if (f.cells_per_row_offset_filter() < 0) {
          return FieldError("cells_per_row_offset_filter", "argument must be >= 0", path);
        }
        node->kind =
            f.cells_per_row_offset_filter() == 0 ? Kind::kPassAll : Kind::kCellsPerRowOffset;
        node->count = f.cells_per_row_offset_filter();
        break;

      case v2::RowFilter::kCellsPerRowLimitFilter:
        if (f.cells_per_row_limit_filter() <= 0) {
          return FieldError("cells_per_row_limit_filter", "argument must be > 0", path);
        }
        node->kind = Kind::kCellsPerRowLimit;
        node->count = f.cells_per_row_limit_filter();
        break;

      case v2::RowFilter::kCellsPerColumnLimitFilter:
        if (f.cells_per_column_limit_filter() <= 0) {
          return FieldError("cells_per_column_limit_filter", "argument must be > 0", path);
        }
        node->kind = Kind::kCellsPerColumnLimit;
        node->count = f.cells_per_column_limit_filter();
        break;

      case v2::RowFilter::kStripValueTransformer:
        if (!f.strip_value_transformer()) {
          return FieldError("strip_value_transformer", "argument must be true if set", path);
        }
        node->kind = Kind::kStripValue;
        break;

      case v2::RowFilter::kApplyLabelTransformer: {
        const std::string& label = f.apply_label_transformer();
        bool valid = !label.empty() && label.size() <= kMaxLabelLength;
        for (char ch : label) {
          valid = valid && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-');
        }
        if (!valid) {
          return FieldError("apply_label_transformer",
                            StrCat("label must match [a-z0-9\\-]+ and be at most ", kMaxLabelLength,
                                   " characters long, but got \"", label, "\""),
                            path);
        }
        node->kind = Kind::kApplyLabel;
        node->text = label;
        break;
      }

      default:
        return FieldError("filter",
                          StrCat("unsupported RowFilter kind (field number ",
                                 static_cast<int>(f.filter_case()), ")"),
                          path);
    }
    return node;
  }

 private:
  StatusOr<std::unique_ptr<RE2>> CompileRegex(std::string_view pattern, std::string_view field,
                                              std::string_view path) {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    o.set_log_errors(false);
    o.set_never_capture(true);
    o.set_max_mem(regex_memory_bytes_);
    auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), o);
    if (re->ok()) return re;
    if (re->error_code() == RE2::ErrorPatternTooLarge) {
      return FieldError(
          field,
          StrCat("regular expression too large: its compiled form exceeds its ",
                 regex_memory_bytes_, "-byte share of the filter's regex memory budget"),
          path);
    }
    return FieldError(field, StrCat("error parsing regexp: ", re->error()), path);
  }

  const FilterOptions& options_;
  const int64_t regex_memory_bytes_;
};

// ---------------------------------------------------------------------------
// Evaluation.

struct EvalContext {
  Random* random;
  Cells* sunk;  // cells that reached a sink
};

bool FullMatch(const RE2& re, std::string_view text) {
  return re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::ANCHOR_BOTH,
                  nullptr, 0);
}

bool SameColumn(const FilterCell& a, const FilterCell& b) {
  return a.family == b.family && a.qualifier == b.qualifier;
}

// Whether a per-cell predicate keeps `c`. REQUIRES: n is one of the per-cell predicate kinds.
bool CellMatches(const Node& n, const FilterCell& c) {
  switch (n.kind) {
    case Kind::kFamilyRegex:
      return FullMatch(*n.regex, c.family);
    case Kind::kQualifierRegex:
      return FullMatch(*n.regex, c.qualifier);
    case Kind::kValueRegex:
      return FullMatch(*n.regex, c.value);
    case Kind::kColumnRange:
      return c.family == n.family && n.range.Contains(c.qualifier);
    case Kind::kTimestampRange:
      return n.time_range.Contains(c.timestamp_micros);
    case Kind::kValueRange:
      return n.range.Contains(c.value);
    case Kind::kValueBitmask: {
      if (c.value.size() != n.text.size()) return false;
      for (size_t i = 0; i < c.value.size(); ++i) {
        const auto v = static_cast<unsigned char>(c.value[i]);
        const auto m = static_cast<unsigned char>(n.text[i]);
        if ((v & m) != m) return false;
      }
      return true;
    }
    default:
      return true;
  }
}

// Appends `b` to `a` keeping cell order; on ties the cells of `a` come first.
void MergeInto(Cells* a, Cells&& b) {
  if (b.empty()) return;
  if (a->empty()) {
    *a = std::move(b);
    return;
  }
  Cells out;
  out.reserve(a->size() + b.size());
  std::merge(std::make_move_iterator(a->begin()), std::make_move_iterator(a->end()),
             std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()),
             std::back_inserter(out), CellOrderLess);
  *a = std::move(out);
}

// Replaces *cells by n's output on them. Recursion depth is bounded by the compiled depth.
void Eval(const Node& n, std::string_view key, Cells* cells, EvalContext& ctx) {
  switch (n.kind) {
    case Kind::kPassAll:
      return;
    case Kind::kBlockAll:
      cells->clear();
      return;
    case Kind::kChain:
      for (const auto& child : n.children) {
        // An empty row stays empty through any filter; stop early.
        if (cells->empty()) return;
        Eval(*child, key, cells, ctx);
      }
      return;
    case Kind::kInterleave: {
      Cells merged;
      for (size_t i = 0; i < n.children.size(); ++i) {
        Cells branch = (i + 1 == n.children.size()) ? std::move(*cells) : *cells;
        Eval(*n.children[i], key, &branch, ctx);
        MergeInto(&merged, std::move(branch));
      }
      *cells = std::move(merged);
      return;
    }
    case Kind::kCondition: {
      Cells probe = *cells;
      Eval(*n.predicate, key, &probe, ctx);
      const Node* branch = probe.empty() ? n.false_branch.get() : n.true_branch.get();
      if (branch == nullptr) {
        cells->clear();
      } else {
        Eval(*branch, key, cells, ctx);
      }
      return;
    }
    case Kind::kSink:
      ctx.sunk->insert(ctx.sunk->end(), std::make_move_iterator(cells->begin()),
                       std::make_move_iterator(cells->end()));
      cells->clear();
      return;
    case Kind::kRowKeyRegex:
      if (!FullMatch(*n.regex, key)) cells->clear();
      return;
    case Kind::kRowSample: {
      // A uniform double in [0, 1) from the top 53 bits; drawn once per row evaluation.
      const double u = static_cast<double>(ctx.random->Next64() >> 11) * 0x1.0p-53;
      if (!(u < n.probability)) cells->clear();
      return;
    }
    case Kind::kFamilyRegex:
    case Kind::kQualifierRegex:
    case Kind::kValueRegex:
    case Kind::kColumnRange:
    case Kind::kTimestampRange:
    case Kind::kValueRange:
    case Kind::kValueBitmask:
      std::erase_if(*cells, [&n](const FilterCell& c) { return !CellMatches(n, c); });
      return;
    case Kind::kCellsPerRowOffset:
      if (static_cast<int64_t>(cells->size()) <= n.count) {
        cells->clear();
      } else {
        cells->erase(cells->begin(), cells->begin() + n.count);
      }
      return;
    case Kind::kCellsPerRowLimit:
      if (static_cast<int64_t>(cells->size()) > n.count) cells->resize(n.count);
      return;
    case Kind::kCellsPerColumnLimit: {
      // Cells of a column are adjacent and newest first: keep the first `count` of each run.
      size_t out = 0;
      int64_t run = 0;
      for (size_t i = 0; i < cells->size(); ++i) {
        // cells[out - 1] is the last kept cell (never a moved-from one). As count >= 1 keeps
        // the first cell of every column, it is in the same column as cells[i - 1].
        const bool same = i > 0 && SameColumn((*cells)[i], (*cells)[out - 1]);
        run = same ? run + 1 : 1;
        if (run <= n.count) {
          if (out != i) (*cells)[out] = std::move((*cells)[i]);
          ++out;
        }
      }
      cells->resize(out);
      return;
    }
    case Kind::kStripValue:
      for (auto& c : *cells) c.value.clear();
      return;
    case Kind::kApplyLabel:
      for (auto& c : *cells) c.labels.push_back(n.text);
      return;
  }
}

// ---------------------------------------------------------------------------
// Pushdown analysis (docs/row_filters.md). For a filter F and a restriction r (keep only the
// cells of some families, or of some time range), "S is safe for F" means F(row) = F(r_S(row))
// for every row. "F commutes with r" means F(r_S(x)) = r_S(F(x)) for every S and x.

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
  model::TimeRange range;  // every timestamp by default

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

bool CommutesWithFamilyRestriction(const Node& n) {
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

bool CommutesWithTimeRestriction(const Node& n) {
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

FamilySet SafeFamilies(const Node& n) {
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

TimeSet SafeTimes(const Node& n) {
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

bool ContainsSink(const Node& n) {
  if (n.kind == Kind::kSink) return true;
  for (const auto& c : n.children) {
    if (ContainsSink(*c)) return true;
  }
  // Conditions cannot hold sinks (refused by Compile).
  return false;
}

FilterPushdown ComputePushdown(const Node& root) {
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
  std::vector<const Node*> prefix;
  if (root.kind == Kind::kChain) {
    for (const auto& c : root.children) prefix.push_back(c.get());
  } else {
    prefix.push_back(&root);
  }
  for (const Node* n : prefix) {
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

bool IsPassAllNode(const Node& n) {
  if (n.kind == Kind::kPassAll) return true;
  if (n.kind != Kind::kChain) return false;
  return std::all_of(n.children.begin(), n.children.end(),
                     [](const auto& c) { return IsPassAllNode(*c); });
}

}  // namespace

bool CellOrderLess(const FilterCell& a, const FilterCell& b) {
  if (int c = a.family.compare(b.family); c != 0) return c < 0;
  if (int c = a.qualifier.compare(b.qualifier); c != 0) return c < 0;
  return a.timestamp_micros > b.timestamp_micros;
}

RowFilter::RowFilter(std::unique_ptr<Node> root, uint64_t sample_seed)
    : root_(std::move(root)), random_(sample_seed) {
  pass_all_ = IsPassAllNode(*root_);
  pushdown_ = ComputePushdown(*root_);
}

RowFilter::RowFilter(RowFilter&&) noexcept = default;
RowFilter& RowFilter::operator=(RowFilter&&) noexcept = default;
RowFilter::~RowFilter() = default;

namespace {

// Upper bounds on how many cells one input cell can become: `main` on the filter's output,
// `sunk` emitted by sinks inside it. Interleaves add their branches', chains multiply their
// stages' (what reaches a sink in stage i is the product of the stages before it), a condition
// emits one branch. Saturates just above `cap`, so deep nesting cannot overflow.
struct Copies {
  uint64_t main = 1;
  uint64_t sunk = 0;
};

Copies CopyBound(const Node& n, uint64_t cap) {
  auto sat = [cap](uint64_t v) { return std::min(v, cap + 1); };
  switch (n.kind) {
    case Kind::kChain: {
      Copies out{1, 0};
      for (const auto& c : n.children) {
        const Copies stage = CopyBound(*c, cap);
        out.sunk = sat(out.sunk + sat(out.main * stage.sunk));
        out.main = sat(out.main * stage.main);
      }
      return out;
    }
    case Kind::kInterleave: {
      Copies out{0, 0};
      for (const auto& c : n.children) {
        const Copies branch = CopyBound(*c, cap);
        out.main = sat(out.main + branch.main);
        out.sunk = sat(out.sunk + branch.sunk);
      }
      return out;
    }
    case Kind::kCondition: {
      Copies out{0, 0};
      for (const Node* branch : {n.true_branch.get(), n.false_branch.get()}) {
        if (branch == nullptr) continue;
        const Copies b = CopyBound(*branch, cap);
        out.main = std::max(out.main, b.main);
        out.sunk = std::max(out.sunk, b.sunk);
      }
      return out;
    }
    case Kind::kSink:
      return Copies{1, 1};
    default:
      return Copies{1, 0};
  }
}

}  // namespace

StatusOr<RowFilter> RowFilter::Compile(const v2::RowFilter& proto, const FilterOptions& options) {
  // Depth first: everything after this (ByteSizeLong included) recurses over the message.
  RETURN_IF_ERROR(CheckDepth(proto, 0, options.max_depth));
  const size_t size = proto.ByteSizeLong();
  if (size > options.max_serialized_bytes) {
    return absl::InvalidArgumentError(StrCat("RowFilter is ", size,
                                             " bytes when serialized; at most ",
                                             options.max_serialized_bytes, " are allowed"));
  }
  const int regexes = CountRegexes(proto);
  Compiler compiler(options, options.max_regex_memory_bytes / std::max(regexes, 1));
  ASSIGN_OR_RETURN(auto root, compiler.Compile(proto, /*in_condition=*/false, ""));
  // Nested interleaves copy cells exponentially: 20 levels of two branches would turn one cell
  // into a million. Refuse filters whose output could exceed max_copies_per_cell per input.
  const Copies bound = CopyBound(*root, options.max_copies_per_cell);
  const uint64_t copies = bound.main + bound.sunk;
  if (copies > options.max_copies_per_cell) {
    return absl::InvalidArgumentError(
        StrCat("RowFilter may output a cell more than ", options.max_copies_per_cell,
               " times (nested interleaves); restructure it"));
  }
  return RowFilter(std::move(root), options.sample_seed);
}

RowFilter RowFilter::PassAll() { return RowFilter(std::make_unique<Node>(), 0); }

bool RowFilter::IsPassAll() const { return pass_all_; }

void RowFilter::Apply(FilterRow* row) {
  if (pass_all_ || row->cells.empty()) return;
  Cells sunk;
  EvalContext ctx{&random_, &sunk};
  Eval(*root_, row->key, &row->cells, ctx);
  if (!sunk.empty()) {
    // Sinks fire in evaluation order, not cell order.
    std::stable_sort(sunk.begin(), sunk.end(), CellOrderLess);
    MergeInto(&row->cells, std::move(sunk));
  }
}

}  // namespace tessera::server
