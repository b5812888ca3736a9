#include "tessera/replication/local_table_access.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/model/cell_key.h"
#include "tessera/model/family_kind.h"
#include "tessera/replication/local_row_stream.h"
#include "tessera/util/coding.h"

namespace tessera::replication {

LocalTableAccess::LocalTableAccess(tablet::Engine* engine, LocalTableAccessOptions options,
                                   TabletWriter* writer)
    : engine_(engine), writer_(writer), locks_(options.row_lock_stripes) {}

Status LocalTableAccess::Write(tablet::TabletId id, const model::RowMutation& mutation) {
  return writer_ != nullptr ? writer_->Write(id, mutation) : engine_->Apply(id, mutation);
}

Status LocalTableAccess::WriteBatch(tablet::TabletId id,
                                    std::span<const model::RowMutation> batch) {
  return writer_ != nullptr ? writer_->WriteBatch(id, batch)
                            : engine_->ApplyBatch(id, batch).status();
}

Status LocalTableAccess::Mutate(const catalog::TableInfo& table,
                                const model::RowMutation& mutation,
                                const AccessOptions& /*options*/) {
  const catalog::TabletRef& t = table.TabletFor(mutation.row());
  tablet::RowLocks::Guard guard = locks_.LockForWrite(table.full_name, mutation.row());
  Status s = Write(t.id, mutation);
  return s.ok() ? s : EngineError(table, s);
}

std::vector<Status> LocalTableAccess::MutateRows(const catalog::TableInfo& table,
                                                 std::span<const model::RowMutation> mutations,
                                                 const AccessOptions& /*options*/) {
  std::vector<Status> out(mutations.size());
  if (mutations.empty()) return out;
  const std::map<size_t, std::vector<size_t>> by_tablet = EntriesByTablet(table, mutations);
  if (by_tablet.size() == 1) {
    WriteTabletBatch(table, table.tablets[by_tablet.begin()->first].id, mutations,
                     by_tablet.begin()->second, &out);
    return out;
  }
  for (const auto& [index, indexes] : by_tablet) {
    std::vector<model::RowMutation> batch;
    batch.reserve(indexes.size());
    for (size_t i : indexes) batch.push_back(mutations[i]);
    WriteTabletBatch(table, table.tablets[index].id, batch, indexes, &out);
  }
  return out;
}

void LocalTableAccess::WriteTabletBatch(const catalog::TableInfo& table, tablet::TabletId id,
                                        std::span<const model::RowMutation> batch,
                                        const std::vector<size_t>& indexes,
                                        std::vector<Status>* out) {
  std::vector<std::string_view> rows;
  rows.reserve(batch.size());
  for (const model::RowMutation& m : batch) rows.push_back(m.row());
  std::vector<tablet::RowLocks::Guard> guards = locks_.LockRowsForWrite(table.full_name, rows);
  Status s = WriteBatch(id, batch);
  if (absl::IsInvalidArgument(s) && batch.size() > 1) {
    // A mutation did not validate and nothing was applied: each entry on its own, so that only
    // the bad ones fail. Rare (the service validates against the same schema), so not faster.
    for (size_t k = 0; k < batch.size(); ++k) {
      Status one = Write(id, batch[k]);
      (*out)[indexes[k]] = one.ok() ? one : EngineError(table, one);
    }
    return;
  }
  if (!s.ok()) s = EngineError(table, s);
  for (size_t i : indexes) (*out)[i] = s;
}

StatusOr<bool> LocalTableAccess::CheckAndMutate(const catalog::TableInfo& table,
                                                std::string_view row_key,
                                                model::RowFilter* predicate,
                                                const model::RowMutation& on_true,
                                                const model::RowMutation& on_false,
                                                const AccessOptions& /*options*/) {
  model::ReadSpec spec;
  if (predicate != nullptr) {
    spec = predicate->pushdown().ToReadSpec();
  } else {
    spec.max_versions = 1;  // "does the row have any cell" needs one per column at most
  }
  const catalog::TabletRef& t = table.TabletFor(row_key);
  const model::FamilyKinds kinds(table.schema);

  tablet::RowLocks::Guard guard = locks_.LockForReadModifyWrite(table.full_name, row_key);
  bool matched = false;
  if (predicate == nullptr || !predicate->pushdown().outputs_nothing) {
    StatusOr<std::optional<model::Row>> row = engine_->ReadRow(t.id, row_key, spec);
    if (!row.ok()) return EngineError(table, row.status());
    if (row->has_value()) {
      if (predicate == nullptr) {
        matched = !(*row)->cells.empty();
      } else {
        RETURN_IF_ERROR(kinds.ToPresented(&**row));
        predicate->Apply(&**row);
        matched = !(*row)->cells.empty();
      }
    }
  }
  const model::RowMutation& chosen = matched ? on_true : on_false;
  if (!chosen.empty()) {
    Status s = Write(t.id, chosen);
    if (!s.ok()) return EngineError(table, s);
  }
  return matched;
}

StatusOr<model::Row> LocalTableAccess::ReadModifyWrite(
    const catalog::TableInfo& table, std::string_view row_key,
    const std::vector<ReadModifyWriteRule>& rules, int64_t now_micros, size_t max_value_bytes,
    const AccessOptions& /*options*/) {
  // The columns the rules touch, each once, in stored order.
  struct Column {
    std::string presented;
    std::string value;
    int64_t latest_ts = -1;  // -1: no existing cell
    bool exists = false;
    bool modified = false;
  };
  using ColumnKey = std::pair<std::string, std::string>;  // (family, stored qualifier)
  std::map<ColumnKey, Column> columns;
  std::vector<std::map<ColumnKey, Column>::iterator> rule_column(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    auto [it, inserted] =
        columns.try_emplace(ColumnKey(rules[i].family, rules[i].stored_qualifier));
    if (inserted) it->second.presented = rules[i].qualifier;
    rule_column[i] = it;
  }
  model::ReadSpec spec;
  spec.max_versions = 1;
  for (const auto& [key, col] : columns) spec.columns.push_back({key.first, key.second});

  const catalog::TabletRef& t = table.TabletFor(row_key);
  tablet::RowLocks::Guard guard = locks_.LockForReadModifyWrite(table.full_name, row_key);
  StatusOr<std::optional<model::Row>> row = engine_->ReadRow(t.id, row_key, spec);
  if (!row.ok()) return EngineError(table, row.status());
  if (row->has_value()) {
    for (const model::Cell& c : (*row)->cells) {
      auto it = columns.find(ColumnKey(c.family, c.qualifier));
      if (it == columns.end() || it->second.exists) continue;  // newest first: keep the first
      it->second.exists = true;
      it->second.value = c.value;
      it->second.latest_ts = c.timestamp_micros;
    }
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const ReadModifyWriteRule& rule = rules[i];
    Column& col = rule_column[i]->second;
    if (rule.kind == ReadModifyWriteRule::Kind::kAppend) {
      if (col.value.size() + rule.append_value.size() > max_value_bytes) {
        return absl::InvalidArgumentError(
            StrCat("Appending to column ", rule.family, ":", model::DisplayBytes(rule.qualifier),
                   " would make its value ", col.value.size() + rule.append_value.size(),
                   " bytes; the maximum is ", max_value_bytes));
      }
      col.value += rule.append_value;
    } else {
      int64_t current = 0;
      if (col.exists || col.modified) {
        if (col.value.size() != 8) {
          return absl::FailedPreconditionError(
              StrCat("Cannot increment value '", model::DisplayBytes(col.value.substr(0, 64)),
                     "' (family=", rule.family, ", qualifier=", model::DisplayBytes(rule.qualifier),
                     "). The increment operation can only be performed on 64-bit values"));
        }
        current = static_cast<int64_t>(DecodeBigEndian64(col.value.data()));
      }
      // Wraps around on overflow, as two's complement addition does.
      const uint64_t sum =
          static_cast<uint64_t>(current) + static_cast<uint64_t>(rule.increment_amount);
      col.value = BigEndian64String(sum);  // two's complement, big-endian
    }
    col.modified = true;
  }
  // New cells sort before every existing one of their column: max(now, latest existing).
  model::RowMutation m(row_key);
  model::Row out;
  out.key = std::string(row_key);
  for (auto& [key, col] : columns) {
    const int64_t ts = std::max(now_micros, col.latest_ts);
    m.SetCell(key.first, key.second, ts, col.value);
    out.cells.push_back(
        model::Cell{key.first, std::move(col.presented), ts, std::move(col.value), {}});
  }
  Status s = Write(t.id, m);
  if (!s.ok()) return EngineError(table, s);
  return out;
}

StatusOr<std::unique_ptr<RowStream>> LocalTableAccess::Read(TableSnapshot table,
                                                            ReadRequest request,
                                                            const AccessOptions& /*options*/) {
  return NewLocalRowStream(engine_, std::move(table), std::move(request));
}

StatusOr<std::vector<RowKeySample>> LocalTableAccess::SampleRowKeys(const catalog::TableInfo& table,
                                                                    uint64_t every_bytes) {
  std::vector<RowKeySample> samples;
  uint64_t total = 0;
  for (const catalog::TabletRef& t : table.tablets) {
    StatusOr<uint64_t> bytes = engine_->ApproximateTabletBytes(t.id);
    if (!bytes.ok()) return EngineError(table, bytes.status());
    StatusOr<std::vector<std::string>> keys = engine_->SampleRowKeys(t.id, every_bytes);
    if (!keys.ok()) return EngineError(table, keys.status());
    if (keys->empty()) {
      // A small tablet: it may be empty, its size only the memtable's arena. A scan for one
      // row tells (it stops at the first live row); an empty tablet counts as 0 bytes.
      model::ReadSpec one;
      one.max_versions = 1;
      StatusOr<std::unique_ptr<tablet::RowIterator>> it =
          engine_->Scan(t.id, model::RowRange{}, one, tablet::ScanOptions{.limit = 1});
      if (!it.ok()) return EngineError(table, it.status());
      if (!(*it)->Valid()) {
        if (!(*it)->status().ok()) return EngineError(table, (*it)->status());
        *bytes = 0;
      }
    }
    // The engine's keys are about `every_bytes` apart; offsets are estimates, kept within the
    // tablet's size so that they never decrease.
    uint64_t offset = total;
    for (std::string& key : *keys) {
      offset = std::min(offset + every_bytes, total + *bytes);
      samples.push_back({std::move(key), static_cast<int64_t>(offset)});
    }
    total += *bytes;
    if (!t.end_row.empty()) samples.push_back({t.end_row, static_cast<int64_t>(total)});
  }
  if (total == 0) samples.clear();  // an empty table: only the end
  samples.push_back({"", static_cast<int64_t>(total)});
  return samples;
}

StatusOr<uint64_t> LocalTableAccess::DropRowRange(const catalog::TableInfo& table,
                                                  std::string_view prefix,
                                                  const AccessOptions& /*options*/) {
  const model::RowRange range = model::RowRange::WithPrefix(prefix);
  model::ReadSpec spec;
  spec.max_versions = 1;
  // Every row with data, also one whose cells GC may collect but has not: a relaxed rule would
  // bring them back (the emulator, and Bigtable, drop the range's data outright).
  spec.hide_collectable = false;
  uint64_t deleted = 0;
  // Engine errors come back unchanged: the admin API reports them as they are.
  for (size_t i : table.TabletsOverlapping(range.start, range.end)) {
    const catalog::TabletRef& t = table.tablets[i];
    ASSIGN_OR_RETURN(std::unique_ptr<tablet::RowIterator> it, engine_->Scan(t.id, range, spec, 0));
    for (; it->Valid(); it->Next()) {
      model::RowMutation m(it->row().key);
      m.DeleteFromRow();
      tablet::RowLocks::Guard guard = locks_.LockForWrite(table.full_name, it->row().key);
      RETURN_IF_ERROR(Write(t.id, m));
      ++deleted;
    }
    RETURN_IF_ERROR(it->status());
  }
  return deleted;
}

}  // namespace tessera::replication
