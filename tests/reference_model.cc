#include "tests/reference_model.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "tessera/util/status.h"

namespace tessera::test {

using model::Cell;
using model::ReadSpec;
using model::Row;
using model::RowRange;

namespace {

std::string Printable(std::string_view s) {
  return absl::CHexEscape(absl::string_view(s.data(), s.size()));
}

// Values can be kilobytes of random bytes: show the start and the length.
std::string ShortValue(std::string_view s) {
  constexpr size_t kShown = 20;
  if (s.size() <= kShown) return Printable(s);
  return StrCat(Printable(s.substr(0, kShown)), "...(", s.size(), " bytes)");
}

bool InRange(const RowRange& range, std::string_view row) {
  return row >= range.start && (range.end.empty() || row < range.end);
}

}  // namespace

bool ModelCollects(const model::GcRule& rule, int64_t rank, int64_t ts, int64_t now) {
  switch (rule.kind()) {
    case model::GcRule::Kind::kNone:
      return false;
    case model::GcRule::Kind::kMaxNumVersions:
      return rank >= rule.max_num_versions();
    case model::GcRule::Kind::kMaxAge:
      return static_cast<__int128>(now) - ts > rule.max_age_micros();
    case model::GcRule::Kind::kUnion:
      return std::any_of(rule.rules().begin(), rule.rules().end(),
                         [&](const model::GcRule& r) { return ModelCollects(r, rank, ts, now); });
    case model::GcRule::Kind::kIntersection:
      return !rule.rules().empty() &&
             std::all_of(rule.rules().begin(), rule.rules().end(),
                         [&](const model::GcRule& r) { return ModelCollects(r, rank, ts, now); });
  }
  return false;
}

void ReferenceModel::SetFamily(const std::string& family, const model::GcRule& rule) {
  Observe();
  families_[family] = rule;
  UpdateAllEligibility();
}

void ReferenceModel::DropFamily(const std::string& family) {
  Observe();
  families_.erase(family);
  for (auto it = rows_.begin(); it != rows_.end();) {
    it->second.erase(family);
    it = it->second.empty() ? rows_.erase(it) : std::next(it);
  }
}

bool ReferenceModel::HasFamily(std::string_view family) const {
  return families_.contains(std::string(family));
}

std::vector<std::string> ReferenceModel::Families() const {
  std::vector<std::string> out;
  for (const auto& [name, rule] : families_) out.push_back(name);
  return out;
}

const model::GcRule& ReferenceModel::RuleOf(std::string_view family) const {
  static const model::GcRule kNone;
  auto it = families_.find(std::string(family));
  return it == families_.end() ? kNone : it->second;
}

void ReferenceModel::Observe() {
  const int64_t now = clock_->NowMicros();
  if (now != observed_now_) {
    observed_now_ = now;
    UpdateAllEligibility();
  }
}

void ReferenceModel::UpdateEligibility(RowData* row) {
  for (auto& [family, columns] : *row) {
    const model::GcRule& rule = RuleOf(family);
    for (auto& [qualifier, column] : columns) {
      int64_t rank = 0;
      for (auto& [ts, cell] : column) {
        if (ModelCollects(rule, rank, ts, observed_now_)) cell.eligible = true;
        ++rank;
      }
    }
  }
}

void ReferenceModel::UpdateAllEligibility() {
  for (auto& [key, row] : rows_) UpdateEligibility(&row);
}

void ReferenceModel::Apply(const model::RowMutation& mutation) {
  Observe();
  const std::string key(mutation.row());
  RowData& row = rows_[key];
  Status s = model::ForEachMutation(mutation.encoded(), [&](const model::MutationView& m) {
    const std::string family(m.family);
    switch (m.type) {
      case model::MutationType::kSetCell:
        row[family][std::string(m.qualifier)][m.timestamp_micros] =
            CellState{std::string(m.value), false};
        break;
      case model::MutationType::kDeleteFromColumn: {
        auto fit = row.find(family);
        if (fit == row.end()) break;
        auto cit = fit->second.find(std::string(m.qualifier));
        if (cit == fit->second.end()) break;
        Column& column = cit->second;
        for (auto it = column.begin(); it != column.end();) {
          const bool in_range = it->first >= m.range.start_micros &&
                                (m.range.end_micros == 0 || it->first < m.range.end_micros);
          it = in_range ? column.erase(it) : std::next(it);
        }
        if (column.empty()) fit->second.erase(cit);
        if (fit->second.empty()) row.erase(fit);
        break;
      }
      case model::MutationType::kDeleteFromFamily:
        row.erase(family);
        break;
      case model::MutationType::kDeleteFromRow:
        row.clear();
        break;
    }
  });
  EXPECT_TRUE(s.ok()) << "ReferenceModel::Apply: bad mutation: " << s;
  if (row.empty()) {
    rows_.erase(key);
  } else {
    UpdateEligibility(&row);
  }
}

bool ReferenceModel::Selects(const ReadSpec& spec, std::string_view family,
                             std::string_view qualifier, int64_t ts) const {
  if (!spec.families.empty() &&
      std::find(spec.families.begin(), spec.families.end(), family) == spec.families.end()) {
    return false;
  }
  if (!spec.columns.empty() &&
      std::none_of(spec.columns.begin(), spec.columns.end(),
                   [&](const auto& c) { return c.family == family && c.qualifier == qualifier; })) {
    return false;
  }
  return ts >= spec.time_range.start_micros &&
         (spec.time_range.end_micros == 0 || ts < spec.time_range.end_micros);
}

std::optional<Row> ReferenceModel::ReadRowData(std::string_view key, const RowData& row,
                                               const ReadSpec& spec) const {
  Row out;
  out.key = std::string(key);
  for (const auto& [family, columns] : row) {
    const model::GcRule& rule = RuleOf(family);
    for (const auto& [qualifier, column] : columns) {
      int64_t rank = 0;
      int taken = 0;
      for (const auto& [ts, cell] : column) {
        const bool collected = ModelCollects(rule, rank++, ts, observed_now_);
        if (collected || !Selects(spec, family, qualifier, ts)) continue;
        if (spec.max_versions > 0 && taken >= spec.max_versions) break;
        ++taken;
        out.cells.push_back(Cell{family, qualifier, ts, cell.value});
      }
    }
  }
  if (out.cells.empty()) return std::nullopt;
  return out;
}

std::optional<Row> ReferenceModel::ReadRow(std::string_view row, const ReadSpec& spec) {
  Observe();
  auto it = rows_.find(std::string(row));
  if (it == rows_.end()) return std::nullopt;
  return ReadRowData(it->first, it->second, spec);
}

std::vector<Row> ReferenceModel::Scan(const RowRange& range, const ReadSpec& spec, uint64_t limit,
                                      bool reversed) {
  Observe();
  std::vector<Row> out;
  auto visit = [&](const std::string& key, const RowData& data) {
    if (!InRange(range, key)) return true;
    if (limit > 0 && out.size() >= limit) return false;
    std::optional<Row> row = ReadRowData(key, data, spec);
    if (row.has_value()) out.push_back(std::move(*row));
    return true;
  };
  if (reversed) {
    for (auto it = rows_.rbegin(); it != rows_.rend(); ++it) {
      if (it->first < range.start) break;
      if (!visit(it->first, it->second)) break;
    }
  } else {
    for (auto it = rows_.lower_bound(range.start); it != rows_.end(); ++it) {
      if (!InRange(range, it->first)) break;
      if (!visit(it->first, it->second)) break;
    }
  }
  return out;
}

ReferenceModel::ColumnBounds ReferenceModel::BoundsOf(std::string_view family,
                                                      std::string_view qualifier,
                                                      const Column& column,
                                                      const ReadSpec& spec) const {
  ColumnBounds bounds;
  const model::GcRule& rule = RuleOf(family);
  int64_t rank = 0;
  int64_t never_eligible_newer = 0;
  for (const auto& [ts, cell] : column) {
    const bool visible_in_model = !ModelCollects(rule, rank, ts, observed_now_);
    if (Selects(spec, family, qualifier, ts)) {
      if (!cell.eligible) {
        // Never collected in any state, so not collected now either.
        EXPECT_TRUE(visible_in_model) << "reference model: eligibility out of date";
        bounds.lower.push_back(ts);
      }
      if (visible_in_model ||
          (cell.eligible && !ModelCollects(rule, never_eligible_newer, ts, observed_now_))) {
        bounds.upper[ts] = &cell;
      }
    }
    ++rank;
    if (!cell.eligible) ++never_eligible_newer;
  }
  return bounds;
}

std::string ReferenceModel::CheckRowData(std::string_view key, const RowData* row,
                                         const ReadSpec& spec, const Row* actual, bool* must_exist,
                                         bool* may_exist) const {
  *must_exist = false;
  *may_exist = false;
  // Bounds of every column of the model row.
  std::map<std::pair<std::string, std::string>, ColumnBounds> bounds;
  if (row != nullptr) {
    for (const auto& [family, columns] : *row) {
      for (const auto& [qualifier, column] : columns) {
        ColumnBounds b = BoundsOf(family, qualifier, column, spec);
        if (!b.lower.empty()) *must_exist = true;
        if (!b.upper.empty()) *may_exist = true;
        bounds.emplace(std::make_pair(family, qualifier), std::move(b));
      }
    }
  }
  if (actual == nullptr) {
    if (*must_exist) return "row missing";
    return "";
  }
  if (actual->key != key) return StrCat("row key ", Printable(actual->key), " returned");
  if (actual->cells.empty()) return "row returned with no cell";

  // Order: family, qualifier, timestamp descending; no duplicates.
  for (size_t i = 1; i < actual->cells.size(); ++i) {
    const Cell& a = actual->cells[i - 1];
    const Cell& b = actual->cells[i];
    const bool ordered = std::tie(a.family, a.qualifier) < std::tie(b.family, b.qualifier) ||
                         (a.family == b.family && a.qualifier == b.qualifier &&
                          a.timestamp_micros > b.timestamp_micros);
    if (!ordered) return StrCat("cells out of order or duplicated at index ", i);
  }

  // Group the returned cells by column.
  std::map<std::pair<std::string, std::string>, std::vector<const Cell*>> returned;
  for (const Cell& c : actual->cells) returned[{c.family, c.qualifier}].push_back(&c);

  for (const auto& [column, cells] : returned) {
    auto bit = bounds.find(column);
    const std::string name = StrCat(column.first, ":", Printable(column.second));
    if (bit == bounds.end()) return StrCat("column ", name, " should not be returned");
    const ColumnBounds& b = bit->second;
    for (const Cell* c : cells) {
      auto uit = b.upper.find(c->timestamp_micros);
      if (uit == b.upper.end()) {
        return StrCat("cell ", name, "@", c->timestamp_micros, " should not be returned");
      }
      if (uit->second->value != c->value) {
        return StrCat("cell ", name, "@", c->timestamp_micros, " has value ", ShortValue(c->value),
                      ", expected ", ShortValue(uit->second->value));
      }
    }
    if (spec.max_versions > 0 && cells.size() > static_cast<size_t>(spec.max_versions)) {
      return StrCat("column ", name, " has ", cells.size(), " versions, max_versions is ",
                    spec.max_versions);
    }
  }
  // Cells that must be there.
  for (const auto& [column, b] : bounds) {
    if (b.lower.empty()) continue;
    const std::string name = StrCat(column.first, ":", Printable(column.second));
    auto rit = returned.find(column);
    std::set<int64_t> got;
    int64_t oldest = INT64_MAX;
    if (rit != returned.end()) {
      for (const Cell* c : rit->second) {
        got.insert(c->timestamp_micros);
        oldest = std::min(oldest, c->timestamp_micros);
      }
    }
    const bool full = spec.max_versions > 0 && got.size() >= static_cast<size_t>(spec.max_versions);
    for (int64_t ts : b.lower) {
      if (full && ts <= oldest) break;  // lower is newest first
      if (!got.contains(ts)) return StrCat("cell ", name, "@", ts, " missing");
    }
  }
  return "";
}

::testing::AssertionResult ReferenceModel::CheckRow(std::string_view row, const ReadSpec& spec,
                                                    const std::optional<Row>& actual) {
  Observe();
  auto it = rows_.find(std::string(row));
  const RowData* data = it == rows_.end() ? nullptr : &it->second;
  bool must = false;
  bool may = false;
  std::string error =
      CheckRowData(row, data, spec, actual.has_value() ? &*actual : nullptr, &must, &may);
  if (error.empty()) return ::testing::AssertionSuccess();
  std::optional<Row> expected = data ? ReadRowData(row, *data, spec) : std::nullopt;
  return ::testing::AssertionFailure()
         << "ReadRow(" << Printable(row) << ", " << DebugString(spec) << "): " << error
         << "\n  engine: " << (actual.has_value() ? DebugString(*actual) : "(none)")
         << "\n  model:  " << (expected.has_value() ? DebugString(*expected) : "(none)")
         << "\n  (eligible cells in model: " << EligibleCellCount() << ")";
}

::testing::AssertionResult ReferenceModel::CheckScan(const RowRange& range, const ReadSpec& spec,
                                                     uint64_t limit, const std::vector<Row>& actual,
                                                     bool reversed) {
  Observe();
  // Reports the keys of both answers and, for the row at fault, both versions of it.
  auto fail = [&](const std::string& error, std::string_view row = {}, bool has_row = false) {
    std::vector<Row> expected = Scan(range, spec, limit, reversed);
    auto keys = [](const std::vector<Row>& rows) {
      std::string out;
      for (const Row& r : rows) out += StrCat(out.empty() ? "" : " ", Printable(r.key));
      return out;
    };
    ::testing::AssertionResult result = ::testing::AssertionFailure();
    result << (reversed ? "Reversed scan([" : "Scan([") << Printable(range.start) << ", "
           << Printable(range.end) << "), " << DebugString(spec) << ", limit " << limit
           << "): " << error << "\n  engine rows: " << keys(actual)
           << "\n  model rows:  " << keys(expected);
    if (has_row) {
      auto find = [&](const std::vector<Row>& rows) -> std::string {
        for (const Row& r : rows) {
          if (r.key == row) return DebugString(r);
        }
        return "(none)";
      };
      result << "\n  engine: " << find(actual) << "\n  model:  " << find(expected);
    }
    return result << "\n  (eligible cells in model: " << EligibleCellCount() << ")";
  };
  if (limit > 0 && actual.size() > limit) {
    return fail(StrCat(actual.size(), " rows returned"));
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!InRange(range, actual[i].key)) {
      return fail(StrCat("row ", Printable(actual[i].key), " is outside the range"));
    }
    if (i > 0 &&
        (reversed ? actual[i].key >= actual[i - 1].key : actual[i].key <= actual[i - 1].key)) {
      return fail(StrCat("row ", Printable(actual[i].key), " out of order"));
    }
    auto it = rows_.find(actual[i].key);
    bool must = false;
    bool may = false;
    std::string error = CheckRowData(actual[i].key, it == rows_.end() ? nullptr : &it->second, spec,
                                     &actual[i], &must, &may);
    if (!error.empty()) {
      return fail(StrCat("row ", Printable(actual[i].key), ": ", error), actual[i].key, true);
    }
  }
  // Rows that must be there: all of the range when the limit was not reached, else those the
  // scan passed before its last returned row.
  const bool limited = limit > 0 && actual.size() == limit;
  std::set<std::string_view> returned;
  for (const Row& r : actual) returned.insert(r.key);
  for (auto it = rows_.lower_bound(range.start); it != rows_.end(); ++it) {
    if (!InRange(range, it->first)) break;
    if (limited && (reversed ? it->first <= actual.back().key : it->first >= actual.back().key)) {
      if (reversed) continue;
      break;
    }
    if (returned.contains(it->first)) continue;
    bool must = false;
    bool may = false;
    CheckRowData(it->first, &it->second, spec, nullptr, &must, &may);
    if (must) return fail(StrCat("row ", Printable(it->first), " missing"), it->first, true);
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::string> ReferenceModel::RowKeys() const {
  std::vector<std::string> out;
  for (const auto& [key, row] : rows_) out.push_back(key);
  return out;
}

size_t ReferenceModel::CellCount() const {
  size_t n = 0;
  for (const auto& [key, row] : rows_) {
    for (const auto& [family, columns] : row) {
      for (const auto& [qualifier, column] : columns) n += column.size();
    }
  }
  return n;
}

size_t ReferenceModel::EligibleCellCount() const {
  size_t n = 0;
  for (const auto& [key, row] : rows_) {
    for (const auto& [family, columns] : row) {
      for (const auto& [qualifier, column] : columns) {
        for (const auto& [ts, cell] : column) n += cell.eligible ? 1 : 0;
      }
    }
  }
  return n;
}

std::vector<Row> ReferenceModel::AllRowsIgnoringGc() const {
  std::vector<Row> out;
  for (const auto& [key, row] : rows_) {
    Row r;
    r.key = key;
    for (const auto& [family, columns] : row) {
      for (const auto& [qualifier, column] : columns) {
        for (const auto& [ts, cell] : column) {
          r.cells.push_back(Cell{family, qualifier, ts, cell.value});
        }
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string ReferenceModel::DebugString(const Row& row) {
  std::string out = StrCat(Printable(row.key), " {");
  for (size_t i = 0; i < row.cells.size(); ++i) {
    const Cell& c = row.cells[i];
    out += StrCat(i == 0 ? "" : ", ", c.family, ":", Printable(c.qualifier), "@",
                  c.timestamp_micros, "=", ShortValue(c.value));
  }
  return out + "}";
}

std::string ReferenceModel::DebugString(const std::vector<Row>& rows) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    out += StrCat(i == 0 ? "" : "\n          ", DebugString(rows[i]));
  }
  return out + "]";
}

std::string ReferenceModel::DebugString(const ReadSpec& spec) {
  std::string out = "spec{";
  if (!spec.families.empty()) {
    out += "families=";
    for (const auto& f : spec.families) out += f + ",";
  }
  if (!spec.columns.empty()) {
    out += " columns=";
    for (const auto& c : spec.columns) out += StrCat(c.family, ":", Printable(c.qualifier), ",");
  }
  if (spec.time_range.start_micros != 0 || spec.time_range.end_micros != 0) {
    out += StrCat(" time=[", spec.time_range.start_micros, ",", spec.time_range.end_micros, ")");
  }
  if (spec.max_versions > 0) out += StrCat(" max_versions=", spec.max_versions);
  return out + "}";
}

}  // namespace tessera::test
