// Test-only (differential_test): the garbage-collection rules the differential test gives its
// column families, and what they mean as a read filter.
//
// The API lets a cell that its family's GC rule may collect be returned by reads until it is
// physically collected, "which can take up to a week" (bigtable-api.md §5.6). The two servers
// collect at different times: the emulator in a background loop every 0.5–1.5 s that starts
// only with the first ModifyColumnFamilies (and never for intersections, §6 item 5); Tessera
// hides collectable cells on every read and drops them in flushes and compactions. So the
// emulator's answer is compared after KeepFilter(), which removes exactly the collectable
// cells, and Tessera's answer as it is (Tessera never returns a collectable cell: its read path
// applies the rules, docs/data_model.md).
//
// That comparison has one answer only while "collectable" never shrinks: a collectable cell
// that one server has already removed and the other has not must stay collectable. Collecting
// by versions makes a cell collectable when newer versions exist; it becomes uncollectable
// again only when newer versions are deleted, which among the generator's mutations only a
// DeleteFromColumn with a time range does (the others delete whole columns, families or rows).
// Hence: no time-ranged DeleteFromColumn in families with a version rule, and a rule is only
// ever changed to one at least as strict (Stricter()). Ages are one day, and every timestamp
// the generator chooses is either a few milliseconds after the epoch (always collectable by
// age) or the server's clock (never collectable by age during a run), so the split between
// young and old cells is fixed: kYoungFromMicros.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "google/bigtable/admin/v2/table.pb.h"
#include "google/bigtable/v2/data.pb.h"

namespace tessera::integration {

// Cells at or after this timestamp are young for every max-age rule of the test (2001-09-09):
// server-assigned timestamps are; the generator's explicit ones (< 1 s) are not.
inline constexpr int64_t kYoungFromMicros = 1'000'000'000'000'000;
inline constexpr int64_t kAgeMicros = 24LL * 3600 * 1'000'000;  // one day

struct GcShape {
  enum class Kind { kNone, kVersions, kAge, kUnion, kIntersection };
  Kind kind = Kind::kNone;
  int versions = 0;  // for kVersions, kUnion (versions || age), kIntersection (versions && age)

  // The admin proto's GcRule.
  google::bigtable::admin::v2::GcRule ToProto() const;
  // "never", "versions(2)", "age(1d)", "versions(2) || age(1d)", "versions(2) && age(1d)".
  std::string ToString() const;
  // Whether the newest cell of a column can be collected: only by an age rule alone or in a
  // union (ReadModifyWriteRow reads that cell, with no filter the emulator's answer could be
  // corrected by).
  bool MayCollectNewest() const { return kind == Kind::kAge || kind == Kind::kUnion; }
  // Whether some rule counts versions (no time-ranged column deletes then, see above).
  bool CountsVersions() const {
    return kind == Kind::kVersions || kind == Kind::kUnion || kind == Kind::kIntersection;
  }
  bool operator==(const GcShape&) const = default;
};

// Whether `next` collects everything `current` collects, in every column: a change from
// `current` to `next` never makes a collected cell visible again.
bool Stricter(const GcShape& next, const GcShape& current);

// A filter that keeps, of the cells of one family, exactly those the shape does not collect.
// Empty (no filter set) for kNone.
google::bigtable::v2::RowFilter KeepFilter(const GcShape& shape);

// A regex matching exactly `name` (family names hold [-_.a-zA-Z0-9]).
std::string ExactRegex(std::string_view name);

}  // namespace tessera::integration
