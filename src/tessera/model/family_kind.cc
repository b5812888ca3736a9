#include "tessera/model/family_kind.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "tessera/model/cell_key.h"

namespace tessera::model {
namespace {

constexpr char kSuperSeparatorPresented = ':';
constexpr char kSuperSeparatorStored = '\0';

Status BadQualifier(std::string_view family, std::string_view qualifier, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("Invalid qualifier \"", DisplayBytes(qualifier),
                                           "\" for column family \"", family, "\": ", why));
}

Status BadStored(std::string_view family, std::string_view kind, std::string_view stored,
                 std::string_view why) {
  return absl::DataLossError(StrCat("stored qualifier \"", DisplayBytes(stored),
                                    "\" of column family \"", family, "\" (", kind,
                                    ") is malformed: ", why));
}

Status CheckSuperName(std::string_view family, std::string_view qualifier, std::string_view super) {
  if (super.empty()) {
    return BadQualifier(family, qualifier,
                        "a super-column family's qualifier is \"super:column\" with a non-empty "
                        "super column name");
  }
  if (super.find(kSuperSeparatorStored) != std::string_view::npos) {
    return BadQualifier(family, qualifier, "a super column name may not contain a 0x00 byte");
  }
  return Status();
}

}  // namespace

void InvertBytes(std::string_view in, std::string* out) {
  out->resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) (*out)[i] = static_cast<char>(~in[i]);
}

std::string_view FamilyKind::Name() const {
  if (super_columns_ && time_sorted_) return "super_columns+time_sorted";
  if (super_columns_) return "super_columns";
  if (time_sorted_) return "time_sorted";
  return "plain";
}

Status FamilyKind::ToStored(std::string_view family, std::string_view presented,
                            std::string* stored) const {
  std::string_view column = presented;
  stored->clear();
  if (super_columns_) {
    const size_t sep = presented.find(kSuperSeparatorPresented);
    if (sep == std::string_view::npos) {
      return BadQualifier(family, presented,
                          "a super-column family's qualifier is \"super:column\" (no ':' found)");
    }
    std::string_view super = presented.substr(0, sep);
    RETURN_IF_ERROR(CheckSuperName(family, presented, super));
    column = presented.substr(sep + 1);
    stored->append(super);
    stored->push_back(kSuperSeparatorStored);
  }
  if (!time_sorted_) {
    stored->append(column);
    return Status();
  }
  if (column.size() != kTimeSortedQualifierSize) {
    return BadQualifier(
        family, presented,
        StrCat("a time-sorted family's column must be exactly ", kTimeSortedQualifierSize,
               " bytes (a big-endian time or time-ordered id), got ", column.size()));
  }
  const size_t base = stored->size();
  stored->resize(base + column.size());
  for (size_t i = 0; i < column.size(); ++i) (*stored)[base + i] = static_cast<char>(~column[i]);
  return Status();
}

Status FamilyKind::ToPresented(std::string_view family, std::string_view stored,
                               std::string* presented) const {
  std::string_view column = stored;
  presented->clear();
  if (super_columns_) {
    const size_t sep = stored.find(kSuperSeparatorStored);
    if (sep == std::string_view::npos || sep == 0) {
      return BadStored(family, Name(), stored, "no super column name before a 0x00 byte");
    }
    presented->append(stored.substr(0, sep));
    presented->push_back(kSuperSeparatorPresented);
    column = stored.substr(sep + 1);
  }
  if (!time_sorted_) {
    presented->append(column);
    return Status();
  }
  if (column.size() != kTimeSortedQualifierSize) {
    return BadStored(
        family, Name(), stored,
        StrCat("column of ", column.size(), " bytes, expected ", kTimeSortedQualifierSize));
  }
  const size_t base = presented->size();
  presented->resize(base + column.size());
  for (size_t i = 0; i < column.size(); ++i) {
    (*presented)[base + i] = static_cast<char>(~column[i]);
  }
  return Status();
}

Status FamilyKind::SuperColumnPrefix(std::string_view family, std::string_view super,
                                     std::string* prefix) const {
  if (!super_columns_) {
    return absl::InvalidArgumentError(
        StrCat("column family \"", family, "\" is not a super-column family"));
  }
  if (super.find(kSuperSeparatorPresented) != std::string_view::npos) {
    return BadQualifier(family, super, "a super column name may not contain ':'");
  }
  RETURN_IF_ERROR(CheckSuperName(family, super, super));
  prefix->assign(super);
  prefix->push_back(kSuperSeparatorStored);
  return Status();
}

FamilyKinds::FamilyKinds(const TableSchema& schema) {
  for (const auto& [name, family] : schema.families) {
    FamilyKind kind = FamilyKind::Of(family);
    if (!kind.plain()) special_.emplace(name, kind);
  }
}

FamilyKind FamilyKinds::Get(std::string_view family) const {
  auto it = special_.find(family);
  return it == special_.end() ? FamilyKind() : it->second;
}

Status FamilyKinds::ToPresented(Row* row) const {
  if (all_plain()) return Status();
  std::string presented;
  for (Cell& c : row->cells) {
    const FamilyKind kind = Get(c.family);
    if (kind.plain()) continue;
    RETURN_IF_ERROR(kind.ToPresented(c.family, c.qualifier, &presented));
    c.qualifier.swap(presented);
  }
  return Status();
}

void FamilyKinds::RestoreStoredOrder(Row* row) const {
  if (all_plain() || row->cells.size() < 2) return;
  bool special = false;
  for (const Cell& c : row->cells) {
    if (!Get(c.family).plain()) {
      special = true;
      break;
    }
  }
  if (!special) return;
  struct Keyed {
    std::string stored;
    size_t index;
  };
  std::vector<Keyed> keys(row->cells.size());
  for (size_t i = 0; i < row->cells.size(); ++i) {
    const Cell& c = row->cells[i];
    keys[i].index = i;
    if (!Get(c.family).ToStored(c.family, c.qualifier, &keys[i].stored).ok()) {
      keys[i].stored = c.qualifier;  // cannot happen: the qualifier came from ToPresented
    }
  }
  std::stable_sort(keys.begin(), keys.end(), [&](const Keyed& a, const Keyed& b) {
    const Cell& ca = row->cells[a.index];
    const Cell& cb = row->cells[b.index];
    if (int c = ca.family.compare(cb.family); c != 0) return c < 0;
    if (int c = a.stored.compare(b.stored); c != 0) return c < 0;
    return ca.timestamp_micros > cb.timestamp_micros;
  });
  std::vector<Cell> sorted;
  sorted.reserve(keys.size());
  for (const Keyed& k : keys) sorted.push_back(std::move(row->cells[k.index]));
  row->cells = std::move(sorted);
}

}  // namespace tessera::model
