// A table's schema as `tessera shell` uses it: which families exist and their kinds (plain,
// super columns, time-sorted), to turn columns as typed (ColumnRef) into the qualifier bytes
// and filters the API wants, and stored qualifiers back into readable text.
//
// How the server presents Cassandra's additions (model/family_kind.h): a super-column
// family's qualifiers are "super:column"; a time-sorted family's qualifiers (or sub-columns)
// are 8-byte big-endian signed integers, which the shell reads and writes as times in
// microseconds since the epoch. Families of a server that sends no Tessera options (the
// emulator) are all plain.
//
// Thread-safety: values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "google/bigtable/admin/v2/table.pb.h"
#include "google/bigtable/v2/data.pb.h"
#include "tessera/cli/shell_parser.h"
#include "tessera/model/gc_rule.h"
#include "tessera/util/status.h"

namespace tessera::cli::shell {

enum class TimeFormat { kIso, kMicros };

struct FamilyInfo {
  bool super_columns = false;
  bool time_sorted = false;
  std::string gc_text;  // cbt's notation ("versions() > 2"), or "(unreadable: ...)"
};

struct TableInfo {
  std::string name;  // the table id
  std::map<std::string, FamilyInfo, std::less<>> families;
  bool deletion_protection = false;

  // nullptr if there is no such family; lives as long as `families` is unchanged.
  const FamilyInfo* Find(std::string_view family) const;
};

TableInfo TableInfoFromProto(std::string_view table_id, const google::bigtable::admin::v2::Table& t);

// GC rules convert with model::GcRuleToProto / GcRuleFromProto (model/gc_rule_proto.h).

// A column of a read or write, resolved against the schema.
struct ResolvedColumn {
  enum class What {
    kFamily,       // every column of the family
    kQualifier,    // one column: `qualifier` holds its exact bytes
    kSuperColumn,  // every column of super column `qualifier` (the super name)
  };
  std::string family;
  What what = What::kFamily;
  std::string qualifier;
};

// Resolves `ref`. For writes (`for_write`) a whole family or super column is refused. Errors
// (InvalidArgument, NotFound for a missing family) name the table, family and text.
//   plain:               qualifier bytes as typed
//   time-sorted:         the qualifier is a time (ParseTimeMicros) -> 8 bytes big-endian;
//                        exactly 8 bytes that are not a time are taken as they are
//   super:               "super" -> the super column; "super:column" -> that column
//   super + time-sorted: "super:<time>" -> "super:" + 8 bytes
StatusOr<ResolvedColumn> ResolveColumn(const TableInfo& table, const ColumnRef& ref,
                                       bool for_write);

// The filter selecting exactly the resolved column's cells (regexes escaped, Go and RE2 alike).
google::bigtable::v2::RowFilter ColumnFilter(const ResolvedColumn& column);

// Chains (or returns the only one of) `filters`; nullopt if empty.
std::optional<google::bigtable::v2::RowFilter> ChainFilters(
    std::vector<google::bigtable::v2::RowFilter> filters);
// Same with an interleave (union).
std::optional<google::bigtable::v2::RowFilter> InterleaveFilters(
    std::vector<google::bigtable::v2::RowFilter> filters);

// A qualifier as the shell shows it: time-sorted qualifiers as times, the rest escaped.
std::string DisplayQualifier(const FamilyInfo* family, std::string_view qualifier,
                             TimeFormat format);

}  // namespace tessera::cli::shell
