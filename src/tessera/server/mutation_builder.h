// MutationBuilder: a row's google.bigtable.v2.Mutation list -> one model::RowMutation, validated
// as production Cloud Bigtable validates it (docs/server.md, "Writes"):
//
//   row key           non-empty, at most kMaxRowKeyBytes           INVALID_ARGUMENT
//   mutations         1 .. kMaxMutations per row                   INVALID_ARGUMENT
//   family            must exist in the table                      NOT_FOUND (permanent)
//   qualifier         at most kMaxQualifierBytes; the family kind's form (model/family_kind.h)
//   value             at most kMaxValueBytes                       INVALID_ARGUMENT
//   set_cell ts       -1 = server time (now truncated to the table's granularity); other
//                     negatives invalid; a MILLIS table needs multiples of 1000 unless
//                     timestamp_origin is CLIENT_AUTO_GENERATED (then truncated)
//   delete_from_column time range: non-negative, not inverted, on the table's granularity
//   add_to_cell / merge_to_cell: INVALID_ARGUMENT (Tessera has no aggregate families)
//   no mutation set   INVALID_ARGUMENT
//
// Errors about one mutation read like production's: "Error in Mutation list : Error in element
// #3 : <what>", keeping the code of <what>.
//
// Thread-safety: MutationBuilder holds only a reference to an immutable schema; it may be used
// from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "google/bigtable/v2/data.pb.h"
#include "google/protobuf/repeated_field.h"
#include "tessera/model/row_mutation.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::server {

inline constexpr size_t kMaxRowKeyBytes = 4096;
inline constexpr size_t kMaxQualifierBytes = 16 * 1024;
inline constexpr size_t kMaxValueBytes = 100ull << 20;
inline constexpr size_t kMaxMutations = 100'000;

using MutationList = google::protobuf::RepeatedPtrField<google::bigtable::v2::Mutation>;

// InvalidArgument unless `row_key` is non-empty and at most kMaxRowKeyBytes.
Status ValidateRowKey(std::string_view row_key);

// `now_micros` truncated to the table's granularity: the timestamp "-1" stands for.
int64_t ServerTimestamp(const model::TableSchema& schema, int64_t now_micros);

// InvalidArgument unless `ts` is a valid user timestamp for the table: >= 0 and, for a MILLIS
// table, a multiple of 1000 (production's "Timestamp granularity mismatch" message).
Status CheckTimestampGranularity(const model::TableSchema& schema, int64_t ts);

class MutationBuilder {
 public:
  // `schema` must outlive the builder.
  explicit MutationBuilder(const model::TableSchema& schema) : schema_(schema) {}

  // Converts `mutations` for row `row_key`; `now_micros` (the server clock) stands in for
  // timestamp -1. Checks the row key and the mutation count (1 .. kMaxMutations) too.
  StatusOr<model::RowMutation> Build(std::string_view row_key, const MutationList& mutations,
                                     int64_t now_micros) const;

  // Appends `mutations` to *out without the row-key and count checks (for callers that check
  // them over several lists, as CheckAndMutateRow does). Element numbers in messages start at 0
  // for the first element of `mutations`.
  Status AppendTo(const MutationList& mutations, int64_t now_micros,
                  model::RowMutation* out) const;

  // Maps a presented qualifier of `family` to its stored form (model/family_kind.h). NotFound for
  // an unknown family, InvalidArgument for a qualifier that does not fit the family's kind or is
  // longer than kMaxQualifierBytes. *stored may alias nothing passed in.
  Status StoredQualifier(std::string_view family, std::string_view presented,
                         std::string* stored) const;

 private:
  Status AppendOne(const google::bigtable::v2::Mutation& m, int64_t now_micros,
                   model::RowMutation* out, std::string* scratch) const;
  // NotFound "Requested column family not found: <f>" unless the family exists.
  StatusOr<const model::FamilySchema*> FindFamily(std::string_view family) const;

  const model::TableSchema& schema_;
};

// NotFound naming `family`, as production says it.
Status FamilyNotFound(std::string_view family);

}  // namespace tessera::server
