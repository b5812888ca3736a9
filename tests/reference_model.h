// ReferenceModel: a plain in-memory Bigtable, the oracle of the engine-level tests. It shares no
// code with the engine: a std::map of row -> family -> qualifier -> timestamp -> value, mutated
// with Bigtable's semantics and read with the engine's ReadSpec.
//
// Semantics:
//   - SetCell overwrites the cell with the same (row, family, qualifier, timestamp).
//   - DeleteFromColumn removes the existing cells of the column whose timestamp is in the
//     range [start, end) (end 0 = no upper bound); DeleteFromFamily and DeleteFromRow remove
//     every existing cell of the family / row. Deletes act on what exists when they are applied:
//     a later SetCell is visible even with an older timestamp. The mutations of one RowMutation
//     apply in order.
//   - GC rules apply at read time: a cell is hidden when the family's rule collects it, with
//     version_rank = number of (not deleted) newer versions of its column and age relative to the
//     clock's now. Then the ReadSpec selects (families, columns, time range, newest max_versions
//     of what is left in each column).
//
// Lazy GC. A compaction may physically drop a cell that its family's rule collected at the
// moment of the compaction, and the cell then stays gone even if it would be visible again later
// (the newer versions that pushed it out were deleted, or the rule changed). The model cannot
// know when compactions ran, so it tracks per cell whether the rule ever collected it in any
// state the engine could have seen (after every applied RowMutation, clock change and rule
// change): such a cell is "eligible". The Check* functions then accept any answer the engine
// could give for SOME set of dropped eligible cells:
//   - a cell that was never eligible must be returned (if the spec selects it), since a
//     dropped newer version can only lower its rank;
//   - a returned cell must exist in the model with the model's value, pass the spec, and be
//     visible under the rule either in the model or, for an eligible cell, with the smallest
//     rank it could have (counting only newer never-eligible versions);
//   - with a ReadSpec max_versions k, a column holds at most k cells, and every never-eligible
//     selected cell newer than the oldest returned one is returned.
// Without eligible cells (no max-versions rule, or none triggered yet) this is exact equality
// with ReadRow / Scan. A max-age rule alone never loosens the check: age only grows.
//
// The clock is read at every Apply / SetFamily / Read / Check call; when it moved since the last
// call, eligibility is brought up to date first (for the state as it was before the call).
//
// Thread-safety: none; one test thread owns a model.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"

namespace tessera::test {

class ReferenceModel {
 public:
  // `clock` must outlive the model.
  explicit ReferenceModel(const Clock* clock) : clock_(clock) {}

  // Declares a family with its GC rule, or replaces the rule of a known family (UpdateSchema).
  // Cells already eligible stay eligible.
  void SetFamily(const std::string& family, const model::GcRule& rule);
  // Drops a family and every cell of it (UpdateSchema without the family). Declaring the family
  // again later (SetFamily) starts it empty.
  void DropFamily(const std::string& family);
  bool HasFamily(std::string_view family) const;
  std::vector<std::string> Families() const;

  // Applies every mutation of `mutation` in order. REQUIRES: well-formed; families declared.
  void Apply(const model::RowMutation& mutation);
  // Forgets every row (a dropped and recreated tablet, TruncateTablet).
  void Clear() { rows_.clear(); }

  // The exact read-time answer.
  std::optional<model::Row> ReadRow(std::string_view row, const model::ReadSpec& spec);
  // Rows of [range.start, range.end) (end "" = unbounded) with a selected cell; at most `limit`
  // rows (0 = all); in decreasing row order when `reversed`.
  std::vector<model::Row> Scan(const model::RowRange& range, const model::ReadSpec& spec,
                               uint64_t limit, bool reversed = false);

  // Whether an engine answer is one the engine could give (see "Lazy GC" above).
  ::testing::AssertionResult CheckRow(std::string_view row, const model::ReadSpec& spec,
                                      const std::optional<model::Row>& actual);
  // `reversed`: `actual` came from a reversed scan (rows in decreasing order, and with a limit
  // the rows kept are the last ones of the range).
  ::testing::AssertionResult CheckScan(const model::RowRange& range, const model::ReadSpec& spec,
                                       uint64_t limit, const std::vector<model::Row>& actual,
                                       bool reversed = false);

  // Row keys holding at least one cell (deleted cells excluded, GC not applied).
  std::vector<std::string> RowKeys() const;
  // Cells stored (deleted cells excluded, GC not applied).
  size_t CellCount() const;
  size_t EligibleCellCount() const;
  // The whole state as rows (every stored cell, GC not applied), for whole-state comparisons.
  std::vector<model::Row> AllRowsIgnoringGc() const;

  static std::string DebugString(const model::Row& row);
  static std::string DebugString(const std::vector<model::Row>& rows);
  static std::string DebugString(const model::ReadSpec& spec);

 private:
  struct CellState {
    std::string value;
    bool eligible = false;  // ever collected by the family's rule in an observable state
  };
  // Timestamp -> cell, newest first.
  using Column = std::map<int64_t, CellState, std::greater<int64_t>>;
  using Family = std::map<std::string, Column>;
  using RowData = std::map<std::string, Family>;

  // What the check of one column accepts.
  struct ColumnBounds {
    std::vector<int64_t> lower;  // must be returned (selected, never eligible)
    std::map<int64_t, const CellState*, std::greater<int64_t>> upper;  // may be returned
  };

  // Brings eligibility up to date when the clock moved.
  void Observe();
  void UpdateEligibility(RowData* row);
  void UpdateAllEligibility();
  const model::GcRule& RuleOf(std::string_view family) const;

  bool Selects(const model::ReadSpec& spec, std::string_view family, std::string_view qualifier,
               int64_t ts) const;
  std::optional<model::Row> ReadRowData(std::string_view key, const RowData& row,
                                        const model::ReadSpec& spec) const;
  ColumnBounds BoundsOf(std::string_view family, std::string_view qualifier, const Column& column,
                        const model::ReadSpec& spec) const;
  // Empty string when `actual` (the row's cells of one row, or nullopt) is acceptable; the
  // reason otherwise. *must_exist tells whether the row must be returned.
  std::string CheckRowData(std::string_view key, const RowData* row, const model::ReadSpec& spec,
                           const model::Row* actual, bool* must_exist, bool* may_exist) const;

  const Clock* const clock_;
  int64_t observed_now_ = INT64_MIN;
  std::map<std::string, model::GcRule> families_;
  std::map<std::string, RowData> rows_;
};

// Whether `rule` collects a cell with `rank` newer versions and timestamp `ts` at `now`. The
// model's own evaluation of GcRule (it does not call GcRule::ShouldCollect).
bool ModelCollects(const model::GcRule& rule, int64_t rank, int64_t ts, int64_t now);

}  // namespace tessera::test
