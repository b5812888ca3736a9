// FamilyKind: how the qualifiers of a column family are stored, for Cassandra's two additions to
// the Bigtable model (docs/super_columns.md). The server presents qualifiers to clients (and to
// filters) in one form and stores them in another, chosen so that the storage order — ascending
// bytes — is the order Cassandra promises:
//
//   kind                         presented qualifier   stored qualifier
//   plain                        q                     q
//   time_sorted                  t (exactly 8 bytes)   ~t (every byte inverted): newest first
//   super_columns                "super:column"        super 0x00 column
//   super_columns + time_sorted  "super:t" (t 8 bytes) super 0x00 ~t
//
// The presented form of a super column splits at the first ':'; the super name is non-empty and
// holds no ':' and no 0x00 byte; the column is any bytes (8 for a time-sorted family). Because
// the super name ends at a 0x00 in storage, super columns sort by their names' bytes and each
// one's columns are contiguous, so one super column is one stored prefix (SuperColumnPrefix).
//
// Consequence: for these families the order in which a row's columns are returned differs from
// ascending presented bytes (newest first; "a:x" before "a-:y" because "a" < "a-"). Plain
// families are untouched.
//
// Thread-safety: a small immutable value; every method is const and pure.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "tessera/model/row.h"
#include "tessera/model/schema.h"
#include "tessera/util/status.h"

namespace tessera::model {

inline constexpr size_t kTimeSortedQualifierSize = 8;

class FamilyKind {
 public:
  FamilyKind() = default;  // plain
  FamilyKind(bool super_columns, bool time_sorted)
      : super_columns_(super_columns), time_sorted_(time_sorted) {}
  static FamilyKind Of(const model::FamilySchema& family) {
    return FamilyKind(family.super_columns, family.time_sorted);
  }

  bool plain() const { return !super_columns_ && !time_sorted_; }
  bool super_columns() const { return super_columns_; }
  bool time_sorted() const { return time_sorted_; }

  // Sets *stored to the stored form of the presented qualifier `presented` of `family` (the
  // family's name is used only in messages). InvalidArgument naming family and qualifier when
  // `presented` is not a valid qualifier of this kind. For plain families this is a copy; use
  // plain() to skip it.
  Status ToStored(std::string_view family, std::string_view presented, std::string* stored) const;

  // The reverse. DataLoss naming family and qualifier when `stored` cannot have been written by
  // ToStored for this kind (stored bytes damaged, or written under another kind).
  Status ToPresented(std::string_view family, std::string_view stored,
                     std::string* presented) const;

  // Sets *prefix to the stored prefix shared by every column of super column `super` (super
  // 0x00). InvalidArgument if this is not a super-column family or `super` is not a valid super
  // name (empty, or holding ':' or 0x00).
  Status SuperColumnPrefix(std::string_view family, std::string_view super,
                           std::string* prefix) const;

  // A readable name: "plain", "time_sorted", "super_columns", "super_columns+time_sorted".
  std::string_view Name() const;

 private:
  bool super_columns_ = false;
  bool time_sorted_ = false;
};

// Inverts every byte of `in` into *out (ascending stored order = descending time order).
void InvertBytes(std::string_view in, std::string* out);

// The kinds of one table's families, for converting whole rows between stored form (what the
// tablet returns) and presented form (what filters and clients see). Families the schema does
// not know (created after the snapshot) are plain.
class FamilyKinds {
 public:
  explicit FamilyKinds(const TableSchema& schema);

  bool all_plain() const { return special_.empty(); }
  FamilyKind Get(std::string_view family) const;

  // Rewrites row->cells' qualifiers from stored to presented form. The cells stay in storage
  // order, which is the order the row is returned in. DataLoss (FamilyKind::ToPresented) for a
  // stored qualifier that its family's kind cannot have written.
  Status ToPresented(Row* row) const;

  // A filter merges interleave and sink outputs in ascending presented order; for super-column
  // and time-sorted families that is not the order the row is returned in. Restores it: cells
  // by family, stored qualifier, timestamp newest first, ties in their current order.
  // REQUIRES: every qualifier of row->cells is in presented form.
  void RestoreStoredOrder(Row* row) const;

 private:
  std::map<std::string, FamilyKind, std::less<>> special_;  // the families that are not plain
};

}  // namespace tessera::model
