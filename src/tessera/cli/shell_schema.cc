#include "tessera/cli/shell_schema.h"

#include "tessera/cli/shell_format.h"
#include "tessera/client/bigtable_client.h"
#include "tessera/model/gc_rule_proto.h"

namespace tessera::cli::shell {
namespace {

namespace btv2 = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

std::string EncodeTime(int64_t micros) { return client::EncodeBigEndianInt64(micros); }

// A time-sorted (sub)qualifier as typed -> its 8 bytes.
StatusOr<std::string> TimeQualifier(const TableInfo& table, std::string_view family,
                                    std::string_view text) {
  StatusOr<int64_t> t = ParseTimeMicros(text);
  if (t.ok()) return EncodeTime(*t);
  if (text.size() == 8) return std::string(text);
  return absl::InvalidArgumentError(StrCat(
      "family \"", family, "\" of table \"", table.name,
      "\" is time-sorted: a column is a time (microseconds or YYYY-MM-DDTHH:MM:SS[.ffffff]Z), "
      "got \"", text, "\""));
}

}  // namespace

const FamilyInfo* TableInfo::Find(std::string_view family) const {
  auto it = families.find(family);
  return it == families.end() ? nullptr : &it->second;
}

TableInfo TableInfoFromProto(std::string_view table_id, const btadmin::Table& t) {
  TableInfo info;
  info.name = std::string(table_id);
  info.deletion_protection = t.deletion_protection();
  for (const auto& [name, family] : t.column_families()) {
    FamilyInfo f;
    f.super_columns = family.tessera_options().super_columns();
    f.time_sorted = family.tessera_options().time_sorted();
    StatusOr<model::GcRule> rule = model::GcRuleFromProto(family.gc_rule(), name);
    f.gc_text = rule.ok() ? rule->ToString() : StrCat("(unreadable: ", rule.status().message(), ")");
    info.families.emplace(name, std::move(f));
  }
  return info;
}



StatusOr<ResolvedColumn> ResolveColumn(const TableInfo& table, const ColumnRef& ref,
                                       bool for_write) {
  const FamilyInfo* family = table.Find(ref.family);
  if (family == nullptr) {
    return absl::NotFoundError(
        StrCat("table \"", table.name, "\" has no family \"", ref.family, "\""));
  }
  ResolvedColumn out;
  out.family = ref.family;
  if (!ref.qualifier.has_value()) {
    if (for_write) {
      return absl::InvalidArgumentError(
          StrCat("\"", ref.family, "\": a family alone is not a column (want family:qualifier)"));
    }
    return out;
  }
  const std::string& text = *ref.qualifier;
  if (!family->super_columns) {
    out.what = ResolvedColumn::What::kQualifier;
    if (family->time_sorted) {
      ASSIGN_OR_RETURN(out.qualifier, TimeQualifier(table, ref.family, text));
    } else {
      out.qualifier = text;
    }
    return out;
  }
  const size_t colon = text.find(':');
  const std::string super = text.substr(0, colon);
  if (super.empty()) {
    return absl::InvalidArgumentError(StrCat("family \"", ref.family,
                                             "\" has super columns: want ", ref.family,
                                             ":<super>[:<column>], got \"", ref.family, ":",
                                             text, "\""));
  }
  if (colon == std::string::npos) {
    if (for_write) {
      return absl::InvalidArgumentError(
          StrCat("family \"", ref.family, "\" has super columns: write ", ref.family, ":", super,
                 ":<column>, not a whole super column"));
    }
    out.what = ResolvedColumn::What::kSuperColumn;
    out.qualifier = super;
    return out;
  }
  out.what = ResolvedColumn::What::kQualifier;
  const std::string column = text.substr(colon + 1);
  if (family->time_sorted) {
    ASSIGN_OR_RETURN(std::string t, TimeQualifier(table, ref.family, column));
    out.qualifier = StrCat(super, ":", t);
  } else {
    out.qualifier = text;
  }
  return out;
}

btv2::RowFilter ColumnFilter(const ResolvedColumn& column) {
  btv2::RowFilter family;
  family.set_family_name_regex_filter(client::RegexEscape(column.family));
  if (column.what == ResolvedColumn::What::kFamily) return family;
  btv2::RowFilter qualifier;
  if (column.what == ResolvedColumn::What::kQualifier) {
    qualifier.set_column_qualifier_regex_filter(client::RegexEscape(column.qualifier));
  } else {
    // Any bytes after "super:"; (?s) lets '.' match a newline in RE2 and in Go alike.
    qualifier.set_column_qualifier_regex_filter(
        StrCat(client::RegexEscape(column.qualifier), "\\:(?s:.*)"));
  }
  btv2::RowFilter chain;
  *chain.mutable_chain()->add_filters() = std::move(family);
  *chain.mutable_chain()->add_filters() = std::move(qualifier);
  return chain;
}

std::optional<btv2::RowFilter> ChainFilters(std::vector<btv2::RowFilter> filters) {
  if (filters.empty()) return std::nullopt;
  if (filters.size() == 1) return std::move(filters[0]);
  btv2::RowFilter chain;
  for (auto& f : filters) *chain.mutable_chain()->add_filters() = std::move(f);
  return chain;
}

std::optional<btv2::RowFilter> InterleaveFilters(std::vector<btv2::RowFilter> filters) {
  if (filters.empty()) return std::nullopt;
  if (filters.size() == 1) return std::move(filters[0]);
  btv2::RowFilter interleave;
  for (auto& f : filters) *interleave.mutable_interleave()->add_filters() = std::move(f);
  return interleave;
}

std::string DisplayQualifier(const FamilyInfo* family, std::string_view qualifier,
                             TimeFormat format) {
  if (family == nullptr || !family->time_sorted) return EscapeBytes(qualifier);
  std::string_view prefix;
  std::string_view time = qualifier;
  if (family->super_columns) {
    const size_t colon = qualifier.find(':');
    if (colon == std::string_view::npos) return EscapeBytes(qualifier);
    prefix = qualifier.substr(0, colon + 1);
    time = qualifier.substr(colon + 1);
  }
  StatusOr<int64_t> t = client::DecodeBigEndianInt64(time);
  if (!t.ok()) return EscapeBytes(qualifier);
  return StrCat(EscapeBytes(prefix), FormatTime(*t, format));
}

}  // namespace tessera::cli::shell
