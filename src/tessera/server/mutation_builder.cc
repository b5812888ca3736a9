#include "tessera/server/mutation_builder.h"

#include "tessera/model/cell_key.h"
#include "tessera/model/family_kind.h"

namespace tessera::server {
namespace {

namespace v2 = google::bigtable::v2;

constexpr int64_t kMillis = 1000;

bool IsMillis(const model::TableSchema& schema) {
  return schema.granularity == model::TimestampGranularity::kMillis;
}

Status InElement(size_t index, const Status& s) {
  return Status(s.code(),
                StrCat("Error in Mutation list : Error in element #", index, " : ", s.message()));
}

Status CheckValueTimestamp(const model::TableSchema& schema, int64_t ts, std::string_view what) {
  if (ts < 0) {
    return absl::InvalidArgumentError(
        StrCat("Invalid ", what, " ", ts, ": timestamps must be non-negative (or -1 for the "
               "server's time in set_cell)"));
  }
  return CheckTimestampGranularity(schema, ts);
}

}  // namespace

Status FamilyNotFound(std::string_view family) {
  return absl::NotFoundError(StrCat("Requested column family not found: ", family));
}

Status ValidateRowKey(std::string_view row_key) {
  if (row_key.empty()) return absl::InvalidArgumentError("Row keys must be non-empty");
  if (row_key.size() > kMaxRowKeyBytes) {
    return absl::InvalidArgumentError(StrCat("Row key is too long: ", row_key.size(),
                                             " bytes; the maximum is ", kMaxRowKeyBytes));
  }
  return Status();
}

int64_t ServerTimestamp(const model::TableSchema& schema, int64_t now_micros) {
  if (now_micros < 0) now_micros = 0;
  return IsMillis(schema) ? now_micros - now_micros % kMillis : now_micros;
}

Status CheckTimestampGranularity(const model::TableSchema& schema, int64_t ts) {
  if (ts < 0) {
    return absl::InvalidArgumentError(StrCat("Invalid timestamp ", ts, ": must be non-negative"));
  }
  if (IsMillis(schema) && ts % kMillis != 0) {
    return absl::InvalidArgumentError(
        StrCat("Timestamp granularity mismatch. Expected a multiple of 1000 (millisecond "
               "granularity), but got ",
               ts, "."));
  }
  return Status();
}

StatusOr<const model::FamilySchema*> MutationBuilder::FindFamily(std::string_view family) const {
  const model::FamilySchema* f = schema_.Find(family);
  if (f == nullptr) return FamilyNotFound(family);
  return f;
}

Status MutationBuilder::StoredQualifier(std::string_view family, std::string_view presented,
                                        std::string* stored) const {
  ASSIGN_OR_RETURN(const model::FamilySchema* f, FindFamily(family));
  if (presented.size() > kMaxQualifierBytes) {
    return absl::InvalidArgumentError(StrCat("Column qualifier is too long: ", presented.size(),
                                             " bytes; the maximum is ", kMaxQualifierBytes));
  }
  return model::FamilyKind::Of(*f).ToStored(family, presented, stored);
}

Status MutationBuilder::AppendOne(const v2::Mutation& m, int64_t now_micros,
                                  model::RowMutation* out, std::string* scratch) const {
  switch (m.mutation_case()) {
    case v2::Mutation::kSetCell: {
      const v2::Mutation::SetCell& set = m.set_cell();
      RETURN_IF_ERROR(StoredQualifier(set.family_name(), set.column_qualifier(), scratch));
      if (set.value().size() > kMaxValueBytes) {
        return absl::InvalidArgumentError(StrCat("Value is too large: ", set.value().size(),
                                                 " bytes; the maximum is ", kMaxValueBytes));
      }
      int64_t ts = set.timestamp_micros();
      if (ts == -1) {
        ts = ServerTimestamp(schema_, now_micros);
      } else if (ts >= 0 && IsMillis(schema_) &&
                 m.timestamp_origin() == v2::Mutation::CLIENT_AUTO_GENERATED) {
        ts -= ts % kMillis;  // the client made it up: truncate instead of rejecting
      } else {
        RETURN_IF_ERROR(CheckValueTimestamp(schema_, ts, "timestamp"));
      }
      out->SetCell(set.family_name(), *scratch, ts, set.value());
      return Status();
    }
    case v2::Mutation::kDeleteFromColumn: {
      const v2::Mutation::DeleteFromColumn& del = m.delete_from_column();
      RETURN_IF_ERROR(StoredQualifier(del.family_name(), del.column_qualifier(), scratch));
      model::TimeRange range;
      if (del.has_time_range()) {
        range.start_micros = del.time_range().start_timestamp_micros();
        range.end_micros = del.time_range().end_timestamp_micros();
        RETURN_IF_ERROR(CheckValueTimestamp(schema_, range.start_micros, "start timestamp"));
        if (range.end_micros != 0) {
          RETURN_IF_ERROR(CheckValueTimestamp(schema_, range.end_micros, "end timestamp"));
          if (range.end_micros < range.start_micros) {
            return absl::InvalidArgumentError(
                StrCat("Inverted time range [", range.start_micros, ", ", range.end_micros,
                       "): the start must not be after the end"));
          }
        }
      }
      out->DeleteFromColumn(del.family_name(), *scratch, range);
      return Status();
    }
    case v2::Mutation::kDeleteFromFamily: {
      const std::string& family = m.delete_from_family().family_name();
      RETURN_IF_ERROR(FindFamily(family).status());
      out->DeleteFromFamily(family);
      return Status();
    }
    case v2::Mutation::kDeleteFromRow:
      out->DeleteFromRow();
      return Status();
    case v2::Mutation::kAddToCell:
    case v2::Mutation::kMergeToCell: {
      const bool add = m.mutation_case() == v2::Mutation::kAddToCell;
      const std::string& family =
          add ? m.add_to_cell().family_name() : m.merge_to_cell().family_name();
      RETURN_IF_ERROR(FindFamily(family).status());
      return absl::InvalidArgumentError(
          StrCat(add ? "AddToCell" : "MergeToCell", " needs an aggregate column family, and \"",
                 family, "\" is not one (Tessera has no aggregate families)"));
    }
    case v2::Mutation::MUTATION_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "Mutation has no operation set (expected one of set_cell, delete_from_column, "
      "delete_from_family, delete_from_row)");
}

Status MutationBuilder::AppendTo(const MutationList& mutations, int64_t now_micros,
                                 model::RowMutation* out) const {
  std::string scratch;
  for (int i = 0; i < mutations.size(); ++i) {
    Status s = AppendOne(mutations.Get(i), now_micros, out, &scratch);
    if (!s.ok()) return InElement(i, s);
  }
  return Status();
}

StatusOr<model::RowMutation> MutationBuilder::Build(std::string_view row_key,
                                                    const MutationList& mutations,
                                                    int64_t now_micros) const {
  RETURN_IF_ERROR(ValidateRowKey(row_key));
  if (mutations.empty()) return absl::InvalidArgumentError("No mutations provided");
  if (static_cast<size_t>(mutations.size()) > kMaxMutations) {
    return absl::InvalidArgumentError(StrCat("Too many mutations: ", mutations.size(),
                                             "; the maximum is ", kMaxMutations));
  }
  model::RowMutation out(row_key);
  RETURN_IF_ERROR(AppendTo(mutations, now_micros, &out));
  return out;
}

}  // namespace tessera::server
