#include "tessera/server/row_filter_proto.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "re2/re2.h"
#include "tessera/model/filter_pushdown.h"

namespace tessera::server {

namespace v2 = google::bigtable::v2;

namespace {

using model::ByteRange;
using Kind = model::FilterNode::Kind;

Status FieldError(std::string_view field, std::string_view what, std::string_view path) {
  std::string msg = StrCat("Error in field '", field, "' : ", what);
  if (!path.empty()) msg += StrCat(" (at ", path, ")");
  return absl::InvalidArgumentError(msg);
}

std::string ChildPath(std::string_view parent, std::string_view child) {
  return parent.empty() ? std::string(child) : StrCat(parent, ".", child);
}

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

  StatusOr<std::unique_ptr<model::FilterNode>> Compile(const v2::RowFilter& f, bool in_condition,
                                                       const std::string& path) {
    auto node = std::make_unique<model::FilterNode>();
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
        node->literal_families = model::LiteralFamilies(pattern);
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

}  // namespace

StatusOr<model::RowFilter> CompileRowFilter(const v2::RowFilter& proto,
                                            const FilterOptions& options) {
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
  if (model::MaxCopiesPerCell(*root, options.max_copies_per_cell) > options.max_copies_per_cell) {
    return absl::InvalidArgumentError(StrCat("RowFilter may output a cell more than ",
                                             options.max_copies_per_cell,
                                             " times (nested interleaves); restructure it"));
  }
  model::RowFilter filter(std::move(root), options.sample_seed);
  if (size > 0) filter.set_source(proto.SerializeAsString());  // to be sent on (coordinator.h)
  return filter;
}

FilterOptions FilterOptionsFor(const model::TableSchema& schema, uint64_t seed) {
  FilterOptions options;
  options.millisecond_granularity = schema.granularity == model::TimestampGranularity::kMillis;
  options.sample_seed = seed;
  return options;
}

}  // namespace tessera::server
