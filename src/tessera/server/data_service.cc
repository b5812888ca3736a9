#include "tessera/server/data_service.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "google/bigtable/v2/feature_flags.pb.h"
#include "tessera/model/cell_key.h"
#include "tessera/model/family_kind.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/mutation_builder.h"
#include "tessera/server/read_rows_chunker.h"
#include "tessera/server/row_filter_proto.h"
#include "tessera/util/coding.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace v2 = ::google::bigtable::v2;

namespace {

constexpr size_t kMaxReadModifyWriteRules = 100'000;

// The (table, tablets, schema) snapshot a request works on.
using TablePtr = std::shared_ptr<const TableInfo>;

// Maps an engine error on `table` to what a Bigtable client should see.
Status EngineError(const TableInfo& table, const Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      // The tablet was dropped under us: the table was deleted concurrently.
      return absl::NotFoundError(StrCat("table \"", table.full_name, "\" not found"));
    case absl::StatusCode::kFailedPrecondition:
      // The engine is closed: the server is shutting down; a retry reaches it again later.
      return absl::UnavailableError(StrCat("the server is shutting down: ", s.message()));
    default:
      return s;
  }
}

// Index of the tablet holding `row` (tablets tile ["", "")).
size_t TabletIndexFor(const TableInfo& table, std::string_view row) {
  auto it = std::upper_bound(
      table.tablets.begin(), table.tablets.end(), row,
      [](std::string_view r, const TabletRef& t) { return r < t.start_row; });
  return static_cast<size_t>(it - table.tablets.begin()) - 1;
}

// A request's RowSet in model form (model/row.h normalises it). Production's checks and
// messages; an empty RowSet message means every row.
StatusOr<model::RowSet> RowSetFromProto(const v2::RowSet& set) {
  if (set.row_keys_size() == 0 && set.row_ranges_size() == 0) return model::RowSet::All();
  std::vector<model::RowRange> ranges;
  ranges.reserve(set.row_ranges_size());
  for (int i = 0; i < set.row_ranges_size(); ++i) {
    const v2::RowRange& r = set.row_ranges(i);
    const bool start_open = r.start_key_case() == v2::RowRange::kStartKeyOpen;
    const bool end_closed = r.end_key_case() == v2::RowRange::kEndKeyClosed;
    const std::string& start_key = start_open ? r.start_key_open() : r.start_key_closed();
    const std::string& end_key = end_closed ? r.end_key_closed() : r.end_key_open();
    if (!start_key.empty() && !end_key.empty() && start_key > end_key) {
      return absl::InvalidArgumentError(
          StrCat("Error in element #", i, ": ", start_open ? "start_key_open" : "start_key_closed",
                 " \"", model::DisplayBytes(start_key), "\" must not sort after ",
                 end_closed ? "end_key_closed" : "end_key_open", " \"",
                 model::DisplayBytes(end_key), "\""));
    }
    model::RowRange& range = ranges.emplace_back();
    range.start = start_key;
    if (start_open && !start_key.empty()) range.start.push_back('\0');
    range.end = end_key;  // "" (unset or empty) = unbounded
    if (end_closed && !end_key.empty()) range.end.push_back('\0');
  }
  return model::RowSet::Of(std::vector<std::string>(set.row_keys().begin(), set.row_keys().end()),
                           std::move(ranges));
}

// Decodes the client's "bigtable-features" header (base64 of FeatureFlags); defaults if absent
// or unreadable.
v2::FeatureFlags ClientFeatures(const grpc::CallbackServerContext* ctx) {
  v2::FeatureFlags flags;
  const auto& md = ctx->client_metadata();
  auto it = md.find("bigtable-features");
  if (it == md.end()) return flags;
  const absl::string_view encoded(it->second.data(), it->second.size());
  std::string raw;
  if (absl::WebSafeBase64Unescape(encoded, &raw) || absl::Base64Unescape(encoded, &raw)) {
    if (!flags.ParseFromString(raw)) flags.Clear();
  }
  return flags;
}

// Family kinds of a schema, looked up per cell while converting engine rows.
class KindCache {
 public:
  explicit KindCache(const model::TableSchema& schema) {
    for (const auto& [name, family] : schema.families) {
      model::FamilyKind kind = model::FamilyKind::Of(family);
      if (!kind.plain()) special_.emplace(name, kind);
    }
  }
  bool all_plain() const { return special_.empty(); }
  // Plain for families the schema does not know (created after the snapshot).
  model::FamilyKind Get(std::string_view family) const {
    auto it = special_.find(family);
    return it == special_.end() ? model::FamilyKind() : it->second;
  }

 private:
  std::map<std::string, model::FamilyKind, std::less<>> special_;
};

// An engine row as filters and clients see it: qualifiers in presented form. Cells stay in
// storage order (which is presented order for these families; see model/family_kind.h).
Status ToFilterRow(const model::Row& row, const KindCache& kinds, model::Row* out) {
  out->key = row.key;
  out->cells.clear();
  out->cells.reserve(row.cells.size());
  for (const model::Cell& c : row.cells) {
    model::Cell& fc = out->cells.emplace_back();
    fc.family = c.family;
    if (kinds.all_plain()) {
      fc.qualifier = c.qualifier;
    } else {
      RETURN_IF_ERROR(kinds.Get(c.family).ToPresented(c.family, c.qualifier, &fc.qualifier));
    }
    fc.timestamp_micros = c.timestamp_micros;
    fc.value = c.value;
  }
  return Status();
}

// The filter merges interleave and sink outputs in ascending presented order; for super-column
// and time-sorted families that is not the order the row is returned in. Restore it.
void RestoreStoredOrder(const KindCache& kinds, model::Row* row) {
  if (kinds.all_plain() || row->cells.size() < 2) return;
  bool special = false;
  for (const model::Cell& c : row->cells) {
    if (!kinds.Get(c.family).plain()) {
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
    const model::Cell& c = row->cells[i];
    keys[i].index = i;
    if (!kinds.Get(c.family).ToStored(c.family, c.qualifier, &keys[i].stored).ok()) {
      keys[i].stored = c.qualifier;  // cannot happen: the qualifier came from ToPresented
    }
  }
  std::stable_sort(keys.begin(), keys.end(), [&](const Keyed& a, const Keyed& b) {
    const model::Cell& ca = row->cells[a.index];
    const model::Cell& cb = row->cells[b.index];
    if (int c = ca.family.compare(cb.family); c != 0) return c < 0;
    if (int c = a.stored.compare(b.stored); c != 0) return c < 0;
    return ca.timestamp_micros > cb.timestamp_micros;
  });
  std::vector<model::Cell> sorted;
  sorted.reserve(keys.size());
  for (const Keyed& k : keys) sorted.push_back(std::move(row->cells[k.index]));
  row->cells = std::move(sorted);
}

FilterOptions FilterOptionsFor(const model::TableSchema& schema, uint64_t seed) {
  FilterOptions options;
  options.millisecond_granularity = schema.granularity == model::TimestampGranularity::kMillis;
  options.sample_seed = seed;
  return options;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Impl: what the RPCs share.

class DataService::Impl {
 public:
  Impl(TableCatalog* catalog, Clock* clock, Executor* executor, DataServiceOptions options)
      : catalog_(catalog),
        clock_(clock),
        executor_(executor),
        options_(options),
        locks_(options.row_lock_stripes) {}

  TableCatalog* catalog() const { return catalog_; }
  tablet::Engine* engine() const { return catalog_->engine(); }
  Clock* clock() const { return clock_; }
  const DataServiceOptions& options() const { return options_; }
  bool has_executor() const { return executor_ != nullptr; }
  tablet::RowLocks* row_locks() { return &locks_; }

  // Runs `fn` on the executor, or right here without one.
  void Run(std::function<void()> fn) {
    if (executor_ != nullptr) {
      executor_->Schedule(std::move(fn));
    } else {
      fn();
    }
  }

  // A fresh seed for a request's row_sample_filter.
  uint64_t NextSeed() {
    return static_cast<uint64_t>(clock_->MonotonicMicros()) * 0x9e3779b97f4a7c15ull +
           seed_counter_.fetch_add(1, std::memory_order_relaxed);
  }

  // The table a data request names. Views are not supported.
  StatusOr<TablePtr> ResolveTable(std::string_view table_name,
                                  std::string_view authorized_view_name,
                                  std::string_view materialized_view_name) const {
    if (!authorized_view_name.empty()) {
      return absl::UnimplementedError(StrCat("authorized views are not supported by Tessera (",
                                             authorized_view_name, ")"));
    }
    if (!materialized_view_name.empty()) {
      return absl::UnimplementedError(StrCat("materialized views are not supported by Tessera (",
                                             materialized_view_name, ")"));
    }
    if (options_.serving_check) RETURN_IF_ERROR(options_.serving_check());
    if (table_name.empty()) return absl::InvalidArgumentError("table_name must be set");
    ASSIGN_OR_RETURN(TableName name, TableName::Parse(table_name));
    return catalog_->GetTable(name.Full());
  }

  // Applies `m` to its row of `table` under the row's stripe in shared mode.
  Status ApplyWrite(const TableInfo& table, const model::RowMutation& m) {
    const TabletRef& t = table.TabletFor(m.row());
    tablet::RowLocks::Guard guard = locks_.LockForWrite(table.full_name, m.row());
    Status s = engine()->Apply(t.id, m);
    return s.ok() ? s : EngineError(table, s);
  }

  Status MutateRow(const v2::MutateRowRequest& req) {
    ASSIGN_OR_RETURN(TablePtr table, ResolveTable(req.table_name(), req.authorized_view_name(), ""));
    MutationBuilder builder(table->schema);
    ASSIGN_OR_RETURN(model::RowMutation m,
                     builder.Build(req.row_key(), req.mutations(), clock_->NowMicros()));
    return ApplyWrite(*table, m);
  }

  // One MutateRows entry.
  Status MutateEntry(const TableInfo& table, const v2::MutateRowsRequest::Entry& entry,
                     int64_t now_micros) {
    MutationBuilder builder(table.schema);
    ASSIGN_OR_RETURN(model::RowMutation m,
                     builder.Build(entry.row_key(), entry.mutations(), now_micros));
    return ApplyWrite(table, m);
  }

  StatusOr<bool> CheckAndMutateRow(const v2::CheckAndMutateRowRequest& req);
  Status ReadModifyWriteRow(const v2::ReadModifyWriteRowRequest& req,
                            v2::ReadModifyWriteRowResponse* resp);
  Status SampleRowKeys(const v2::SampleRowKeysRequest& req,
                       std::vector<v2::SampleRowKeysResponse>* out);

 private:
  TableCatalog* const catalog_;
  Clock* const clock_;
  Executor* const executor_;
  const DataServiceOptions options_;
  tablet::RowLocks locks_;
  std::atomic<uint64_t> seed_counter_{0};
};

StatusOr<bool> DataService::Impl::CheckAndMutateRow(const v2::CheckAndMutateRowRequest& req) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveTable(req.table_name(), req.authorized_view_name(), ""));
  RETURN_IF_ERROR(ValidateRowKey(req.row_key()));
  if (req.true_mutations().empty() && req.false_mutations().empty()) {
    return absl::InvalidArgumentError("No mutations provided");
  }
  for (const auto* list : {&req.true_mutations(), &req.false_mutations()}) {
    if (static_cast<size_t>(list->size()) > kMaxMutations) {
      return absl::InvalidArgumentError(StrCat("Too many mutations: ", list->size(),
                                               "; the maximum is ", kMaxMutations));
    }
  }
  const int64_t now = clock_->NowMicros();
  MutationBuilder builder(table->schema);
  model::RowMutation on_true(req.row_key()), on_false(req.row_key());
  RETURN_IF_ERROR_CTX(builder.AppendTo(req.true_mutations(), now, &on_true),
                      "Error in field 'true_mutations'");
  RETURN_IF_ERROR_CTX(builder.AppendTo(req.false_mutations(), now, &on_false),
                      "Error in field 'false_mutations'");
  std::optional<model::RowFilter> predicate;
  model::ReadSpec spec;
  if (req.has_predicate_filter()) {
    ASSIGN_OR_RETURN(
        model::RowFilter f,
        CompileRowFilter(req.predicate_filter(), FilterOptionsFor(table->schema, NextSeed())));
    spec = f.pushdown().ToReadSpec();
    predicate.emplace(std::move(f));
  } else {
    spec.max_versions = 1;  // "does the row have any cell" needs one per column at most
  }
  const TabletRef& t = table->TabletFor(req.row_key());
  const KindCache kinds(table->schema);

  tablet::RowLocks::Guard guard = locks_.LockForReadModifyWrite(table->full_name, req.row_key());
  bool matched = false;
  if (!predicate.has_value() || !predicate->pushdown().outputs_nothing) {
    StatusOr<std::optional<model::Row>> row = engine()->ReadRow(t.id, req.row_key(), spec);
    if (!row.ok()) return EngineError(*table, row.status());
    if (row->has_value()) {
      if (!predicate.has_value()) {
        matched = !(*row)->cells.empty();
      } else {
        model::Row frow;
        RETURN_IF_ERROR(ToFilterRow(**row, kinds, &frow));
        predicate->Apply(&frow);
        matched = !frow.cells.empty();
      }
    }
  }
  const model::RowMutation& chosen = matched ? on_true : on_false;
  if (!chosen.empty()) {
    Status s = engine()->Apply(t.id, chosen);
    if (!s.ok()) return EngineError(*table, s);
  }
  return matched;
}

Status DataService::Impl::ReadModifyWriteRow(const v2::ReadModifyWriteRowRequest& req,
                                             v2::ReadModifyWriteRowResponse* resp) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveTable(req.table_name(), req.authorized_view_name(), ""));
  RETURN_IF_ERROR(ValidateRowKey(req.row_key()));
  if (req.rules().empty()) return absl::InvalidArgumentError("No rules provided");
  if (static_cast<size_t>(req.rules_size()) > kMaxReadModifyWriteRules) {
    return absl::InvalidArgumentError(StrCat("Too many rules: ", req.rules_size(),
                                             "; the maximum is ", kMaxReadModifyWriteRules));
  }
  // Validate every rule and find the columns they touch, before taking the lock.
  MutationBuilder builder(table->schema);
  struct Column {
    std::string presented;
    std::string value;
    int64_t latest_ts = -1;  // -1: no existing cell
    bool exists = false;
    bool modified = false;
  };
  using ColumnKey = std::pair<std::string, std::string>;  // (family, stored qualifier)
  std::map<ColumnKey, Column> columns;
  std::vector<std::map<ColumnKey, Column>::iterator> rule_column(req.rules_size());
  for (int i = 0; i < req.rules_size(); ++i) {
    const v2::ReadModifyWriteRule& rule = req.rules(i);
    std::string stored;
    Status s = builder.StoredQualifier(rule.family_name(), rule.column_qualifier(), &stored);
    if (s.ok() && rule.rule_case() == v2::ReadModifyWriteRule::RULE_NOT_SET) {
      s = absl::InvalidArgumentError("rule has neither append_value nor increment_amount set");
    }
    if (s.ok() && rule.append_value().size() > kMaxValueBytes) {
      s = absl::InvalidArgumentError("append_value is larger than the maximum value size");
    }
    if (!s.ok()) {
      return Status(s.code(), StrCat("Error in field 'rules' : Error in element #", i, " : ",
                                     s.message()));
    }
    auto [it, inserted] = columns.try_emplace(ColumnKey(rule.family_name(), std::move(stored)));
    if (inserted) it->second.presented = rule.column_qualifier();
    rule_column[i] = it;
  }
  model::ReadSpec spec;
  spec.max_versions = 1;
  for (const auto& [key, col] : columns) spec.columns.push_back({key.first, key.second});

  const TabletRef& t = table->TabletFor(req.row_key());
  tablet::RowLocks::Guard guard = locks_.LockForReadModifyWrite(table->full_name, req.row_key());
  StatusOr<std::optional<model::Row>> row = engine()->ReadRow(t.id, req.row_key(), spec);
  if (!row.ok()) return EngineError(*table, row.status());
  if (row->has_value()) {
    for (const model::Cell& c : (*row)->cells) {
      auto it = columns.find(ColumnKey(c.family, c.qualifier));
      if (it == columns.end() || it->second.exists) continue;  // newest first: keep the first
      it->second.exists = true;
      it->second.value = c.value;
      it->second.latest_ts = c.timestamp_micros;
    }
  }
  for (int i = 0; i < req.rules_size(); ++i) {
    const v2::ReadModifyWriteRule& rule = req.rules(i);
    Column& col = rule_column[i]->second;
    if (rule.rule_case() == v2::ReadModifyWriteRule::kAppendValue) {
      if (col.value.size() + rule.append_value().size() > kMaxValueBytes) {
        return absl::InvalidArgumentError(
            StrCat("Appending to column ", rule.family_name(), ":",
                   model::DisplayBytes(rule.column_qualifier()), " would make its value ",
                   col.value.size() + rule.append_value().size(), " bytes; the maximum is ",
                   kMaxValueBytes));
      }
      col.value += rule.append_value();
    } else {
      int64_t current = 0;
      if (col.exists || col.modified) {
        if (col.value.size() != 8) {
          return absl::FailedPreconditionError(StrCat(
              "Cannot increment value '", model::DisplayBytes(col.value.substr(0, 64)),
              "' (family=", rule.family_name(),
              ", qualifier=", model::DisplayBytes(rule.column_qualifier()),
              "). The increment operation can only be performed on 64-bit values"));
        }
        current = static_cast<int64_t>(DecodeBigEndian64(col.value.data()));
      }
      // Wraps around on overflow, as two's complement addition does.
      const uint64_t sum =
          static_cast<uint64_t>(current) + static_cast<uint64_t>(rule.increment_amount());
      col.value = BigEndian64String(sum);  // two's complement, big-endian
    }
    col.modified = true;
  }
  // New cells sort before every existing one of their column: max(now, latest existing).
  const int64_t now = ServerTimestamp(table->schema, clock_->NowMicros());
  model::RowMutation m(req.row_key());
  v2::Row* out = resp->mutable_row();
  out->set_key(req.row_key());
  v2::Family* family = nullptr;
  for (auto& [key, col] : columns) {
    const int64_t ts = std::max(now, col.latest_ts);
    m.SetCell(key.first, key.second, ts, col.value);
    if (family == nullptr || family->name() != key.first) {
      family = out->add_families();
      family->set_name(key.first);
    }
    v2::Column* column = family->add_columns();
    column->set_qualifier(col.presented);
    v2::Cell* cell = column->add_cells();
    cell->set_timestamp_micros(ts);
    cell->set_value(std::move(col.value));
  }
  Status s = engine()->Apply(t.id, m);
  if (!s.ok()) {
    resp->Clear();
    return EngineError(*table, s);
  }
  return Status();
}

Status DataService::Impl::SampleRowKeys(const v2::SampleRowKeysRequest& req,
                                        std::vector<v2::SampleRowKeysResponse>* out) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveTable(req.table_name(), req.authorized_view_name(),
                                                req.materialized_view_name()));
  struct Sample {
    std::string key;
    uint64_t offset;
  };
  std::vector<Sample> samples;
  uint64_t total = 0;
  const uint64_t every = std::max<uint64_t>(1, options_.sample_every_bytes);
  for (const TabletRef& t : table->tablets) {
    StatusOr<uint64_t> bytes = engine()->ApproximateTabletBytes(t.id);
    if (!bytes.ok()) return EngineError(*table, bytes.status());
    StatusOr<std::vector<std::string>> keys = engine()->SampleRowKeys(t.id, every);
    if (!keys.ok()) return EngineError(*table, keys.status());
    if (keys->empty()) {
      // A small tablet: it may be empty, its size only the memtable's arena. A scan for one
      // row tells (it stops at the first live row); an empty tablet counts as 0 bytes.
      model::ReadSpec one;
      one.max_versions = 1;
      StatusOr<std::unique_ptr<tablet::RowIterator>> it =
          engine()->Scan(t.id, model::RowRange{}, one, tablet::ScanOptions{.limit = 1});
      if (!it.ok()) return EngineError(*table, it.status());
      if (!(*it)->Valid()) {
        if (!(*it)->status().ok()) return EngineError(*table, (*it)->status());
        *bytes = 0;
      }
    }
    // The engine's keys are about `every` bytes apart; offsets are estimates, kept within the
    // tablet's size so that they never decrease.
    uint64_t offset = total;
    for (std::string& key : *keys) {
      offset = std::min(offset + every, total + *bytes);
      samples.push_back({std::move(key), offset});
    }
    total += *bytes;
    if (!t.end_row.empty()) samples.push_back({t.end_row, total});
  }
  if (total == 0) samples.clear();  // an empty table: only the end
  out->clear();
  for (Sample& s : samples) {
    v2::SampleRowKeysResponse& r = out->emplace_back();
    r.set_row_key(std::move(s.key));
    r.set_offset_bytes(static_cast<int64_t>(s.offset));
  }
  v2::SampleRowKeysResponse& last = out->emplace_back();
  last.set_offset_bytes(static_cast<int64_t>(total));
  return Status();
}

namespace {

// ---------------------------------------------------------------------------------------------
// Reactors.

// Writes a prepared list of responses one at a time, then finishes. `Prepare` runs on the
// executor and fills the list (or fails the call).
template <typename Response>
class ListWriter final : public grpc::ServerWriteReactor<Response> {
 public:
  using Prepare = std::function<Status(std::vector<Response>*)>;

  ListWriter(DataService::Impl* impl, Prepare prepare) : impl_(impl) {
    impl_->Run([this, prepare = std::move(prepare)] {
      Status s = prepare(&responses_);
      if (!s.ok()) {
        this->Finish(ToGrpcStatus(s));
        return;
      }
      WriteNext();
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ >= responses_.size()) {
      this->Finish(grpc::Status::OK);
      return;
    }
    const Response* r = &responses_[next_++];
    if (next_ == responses_.size()) {
      this->StartWriteAndFinish(r, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      this->StartWrite(r);
    }
  }

  DataService::Impl* const impl_;
  std::vector<Response> responses_;
  size_t next_ = 0;
};

// MutateRows: entries applied independently (spread over a few executor tasks so that their
// commit-log writes group-commit); one response with a status per entry.
class MutateRowsReactor final : public grpc::ServerWriteReactor<v2::MutateRowsResponse> {
 public:
  MutateRowsReactor(DataService::Impl* impl, const v2::MutateRowsRequest* req)
      : impl_(impl), req_(req) {
    impl_->Run([this] { Start(); });
  }

  void OnDone() override { delete this; }

 private:
  void Start() {
    StatusOr<TablePtr> table = impl_->ResolveTable(req_->table_name(),
                                                   req_->authorized_view_name(), "");
    if (!table.ok()) return Finish(ToGrpcStatus(table.status()));
    table_ = *std::move(table);
    const int n = req_->entries_size();
    if (n == 0) {
      return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "No entries provided"));
    }
    size_t total = 0;
    for (const auto& e : req_->entries()) total += e.mutations_size();
    if (total > kMaxMutations) {
      return Finish(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          StrCat("Too many mutations: ", total, " in all entries; the maximum is ",
                 kMaxMutations)));
    }
    now_micros_ = impl_->clock()->NowMicros();
    statuses_.resize(n);
    int tasks = 1;
    if (impl_->has_executor()) {
      tasks = std::clamp(impl_->options().mutate_rows_parallelism, 1, n);
    }
    pending_.store(tasks);
    // Task k applies entries [k*n/tasks, (k+1)*n/tasks). The last task to finish responds.
    for (int k = 1; k < tasks; ++k) {
      impl_->Run([this, k, n, tasks] { ApplySlice(k * n / tasks, (k + 1) * n / tasks); });
    }
    ApplySlice(0, n / tasks);
  }

  void ApplySlice(int begin, int end) {
    for (int i = begin; i < end; ++i) {
      statuses_[i] = impl_->MutateEntry(*table_, req_->entries(i), now_micros_);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) Respond();
  }

  void Respond() {
    for (size_t i = 0; i < statuses_.size(); ++i) {
      v2::MutateRowsResponse::Entry* e = response_.add_entries();
      e->set_index(static_cast<int64_t>(i));
      // Every entry carries a status, OK ones too (an empty message, present on the wire):
      // some clients read entry.status.code without checking that the status is there.
      google::rpc::Status* status = e->mutable_status();
      if (!statuses_[i].ok()) {
        status->set_code(static_cast<int32_t>(statuses_[i].code()));
        status->set_message(std::string(statuses_[i].message()));
      }
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  DataService::Impl* const impl_;
  const v2::MutateRowsRequest* const req_;
  TablePtr table_;
  int64_t now_micros_ = 0;
  std::vector<Status> statuses_;  // slot i written only by the task that owns entry i
  std::atomic<int> pending_{0};
  v2::MutateRowsResponse response_;
};

// ReadRows: scans the requested ranges tablet by tablet, filters each row, and streams the
// chunked rows one response at a time. A step (on the executor) fills the next response; the
// next step starts only after OnWriteDone, so a slow reader holds no more than one response.
//
// Lifetime: gRPC deletes nothing; the reactor deletes itself in OnDone, which gRPC calls only
// after Finish() — and Finish() is called exactly once, as the last action of a step or of
// OnWriteDone. Steps and OnWriteDone never overlap (each starts the other), so the scan state
// needs no lock; `cancelled_` is the only field OnCancel touches.
class ReadRowsReactor final : public grpc::ServerWriteReactor<v2::ReadRowsResponse> {
 public:
  ReadRowsReactor(DataService::Impl* impl, grpc::CallbackServerContext* ctx,
                  const v2::ReadRowsRequest* req)
      : impl_(impl),
        req_(req),
        chunker_(ChunkerOptions{.max_chunk_value_bytes = impl->options().read_chunk_bytes,
                                .target_response_bytes = impl->options().read_response_bytes,
                                .max_response_bytes = impl->options().read_response_max_bytes}),
        start_micros_(impl->clock()->MonotonicMicros()) {
    send_last_scanned_ = ClientFeatures(ctx).last_scanned_row_responses();
    Schedule();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
      return;
    }
    Schedule();
  }
  void OnCancel() override { cancelled_.store(true, std::memory_order_relaxed); }
  void OnDone() override { delete this; }

 private:
  enum class StepResult { kWaiting, kYield };

  // Runs steps until one writes or finishes. Without an executor the loop runs inline, so a
  // long filtered scan does not recurse.
  void Schedule() {
    if (impl_->has_executor() && !impl_->options().inline_reads) {
      impl_->Run([this] {
        if (Step() == StepResult::kYield) Schedule();
      });
    } else {
      while (Step() == StepResult::kYield) {
      }
    }
  }

  StepResult Fail(const Status& s) {
    Finish(ToGrpcStatus(s));
    return StepResult::kWaiting;
  }

  Status Init() {
    ASSIGN_OR_RETURN(table_, impl_->ResolveTable(req_->table_name(), req_->authorized_view_name(),
                                                 req_->materialized_view_name()));
    if (req_->rows_limit() < 0) {
      return absl::InvalidArgumentError(
          StrCat("rows_limit must not be negative, got ", req_->rows_limit()));
    }
    limit_ = req_->rows_limit();
    ASSIGN_OR_RETURN(rows_, RowSetFromProto(req_->rows()));
    if (req_->has_filter()) {
      ASSIGN_OR_RETURN(
          model::RowFilter f,
          CompileRowFilter(req_->filter(), FilterOptionsFor(table_->schema, impl_->NextSeed())));
      filter_.emplace(std::move(f));
    } else {
      filter_.emplace(model::RowFilter::PassAll());
    }
    spec_ = filter_->pushdown().ToReadSpec();
    kinds_.emplace(table_->schema);
    if (filter_->pushdown().outputs_nothing) rows_ = model::RowSet();
    reversed_ = req_->reversed();
    return Status();
  }

  StepResult Step() {
    if (cancelled_.load(std::memory_order_relaxed)) {
      return Fail(absl::CancelledError("ReadRows cancelled by the client"));
    }
    if (!initialized_) {
      initialized_ = true;
      Status s = Init();
      if (!s.ok()) return Fail(s);
    }
    // Work of this step: rows read, and scans or point reads opened (a RowSet of many absent
    // keys reads no rows, but each key costs a lookup).
    size_t scanned = 0, work = 0;
    const int64_t returned_before = rows_returned_;
    while (!done_ && !chunker_.HasFullResponse() &&
           work < impl_->options().read_rows_per_step &&
           static_cast<size_t>(rows_returned_ - returned_before) <
               impl_->options().read_response_rows) {
      ++work;
      Status s = NextRow(&scanned);
      if (!s.ok()) return Fail(s);
    }
    if (done_ && !chunker_finished_) {
      chunker_finished_ = true;
      if (req_->request_stats_view() == v2::ReadRowsRequest::REQUEST_STATS_FULL) {
        v2::RequestStats stats = Stats();
        chunker_.Finish(&stats);
      } else {
        chunker_.Finish(nullptr);
      }
    }
    if (!done_ && !chunker_.HasFullResponse()) {
      // The step's budget ran out with a part-filled response (send it: the client gets rows
      // early) or none (tell the client how far the scan got, if it wants to know; else just
      // let other work run and continue).
      if (chunker_.empty()) {
        if (!send_last_scanned_ || scanned == 0 || last_scanned_key_.empty()) {
          return StepResult::kYield;
        }
        chunker_.AddLastScannedRowKey(last_scanned_key_);
      }
    }
    if (chunker_.empty()) {  // done and nothing left to send
      Finish(grpc::Status::OK);
      return StepResult::kWaiting;
    }
    response_ = chunker_.TakeResponse();
    if (done_ && chunker_.empty()) {
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      StartWrite(&response_);
    }
    return StepResult::kWaiting;
  }

  // Reads one row from the scan (or moves to the next tablet or range), filters it and adds it
  // to the chunker. Sets done_ at the end or at the row limit.
  Status NextRow(size_t* scanned) {
    const model::Row* row = nullptr;
    if (point_row_.has_value()) {
      row = &*point_row_;
    } else if (iter_ != nullptr && iter_->Valid()) {
      row = &iter_->row();
    } else {
      if (iter_ != nullptr) {
        Status s = iter_->status();
        iter_.reset();
        if (!s.ok()) return EngineError(*table_, s);
      }
      return OpenNext();
    }
    ++*scanned;
    ++rows_seen_;
    cells_seen_ += static_cast<int64_t>(row->cells.size());
    last_scanned_key_ = row->key;
    model::Row frow;
    Status s = ToFilterRow(*row, *kinds_, &frow);
    if (point_row_.has_value()) {
      point_row_.reset();
    } else {
      iter_->Next();
    }
    RETURN_IF_ERROR(s);
    if (!filter_->IsPassAll()) {
      filter_->Apply(&frow);
      RestoreStoredOrder(*kinds_, &frow);
    }
    if (frow.cells.empty()) return Status();
    ++rows_returned_;
    cells_returned_ += static_cast<int64_t>(frow.cells.size());
    chunker_.AddRow(std::move(frow));
    if (limit_ > 0 && rows_returned_ >= limit_) done_ = true;
    return Status();
  }

  // Opens the scan of the next (range, tablet) pair in scan order; done_ when none is left.
  // A range of one key is read with ReadRow (bloom filters, no iterator).
  Status OpenNext() {
    while (tablet_pos_ >= tablets_.size()) {
      if (range_pos_ >= rows_.ranges().size()) {
        done_ = true;
        return Status();
      }
      current_range_ = reversed_ ? rows_.ranges().size() - 1 - range_pos_ : range_pos_;
      ++range_pos_;
      const model::RowRange& r = rows_.ranges()[current_range_];
      tablets_.clear();
      for (size_t i = TabletIndexFor(*table_, r.start); i < table_->tablets.size(); ++i) {
        if (!r.end.empty() && table_->tablets[i].start_row >= r.end) break;
        tablets_.push_back(i);
      }
      if (reversed_) std::reverse(tablets_.begin(), tablets_.end());
      tablet_pos_ = 0;
    }
    const TabletRef& t = table_->tablets[tablets_[tablet_pos_++]];
    const model::RowRange& r = rows_.ranges()[current_range_];
    if (r.IsSingleKey()) {
      StatusOr<std::optional<model::Row>> row = impl_->engine()->ReadRow(t.id, r.start, spec_);
      if (!row.ok()) return EngineError(*table_, row.status());
      point_row_ = *std::move(row);
      return Status();
    }
    tablet::ScanOptions options;
    options.reversed = reversed_;
    if (filter_->IsPassAll() && limit_ > 0) {
      options.limit = static_cast<uint64_t>(limit_ - rows_returned_);
    }
    StatusOr<std::unique_ptr<tablet::RowIterator>> it =
        impl_->engine()->Scan(t.id, r, spec_, options);
    if (!it.ok()) return EngineError(*table_, it.status());
    iter_ = *std::move(it);
    return Status();
  }

  v2::RequestStats Stats() const {
    v2::RequestStats stats;
    v2::FullReadStatsView* full = stats.mutable_full_read_stats_view();
    v2::ReadIterationStats* it = full->mutable_read_iteration_stats();
    it->set_rows_seen_count(rows_seen_);
    it->set_rows_returned_count(rows_returned_);
    it->set_cells_seen_count(cells_seen_);
    it->set_cells_returned_count(cells_returned_);
    const int64_t micros = impl_->clock()->MonotonicMicros() - start_micros_;
    auto* latency = full->mutable_request_latency_stats()->mutable_frontend_server_latency();
    latency->set_seconds(micros / 1'000'000);
    latency->set_nanos(static_cast<int32_t>((micros % 1'000'000) * 1000));
    return stats;
  }

  DataService::Impl* const impl_;
  const v2::ReadRowsRequest* const req_;
  std::atomic<bool> cancelled_{false};
  bool send_last_scanned_ = false;

  // Scan state; touched only by steps (one at a time).
  bool initialized_ = false;
  bool done_ = false;
  bool chunker_finished_ = false;
  TablePtr table_;
  model::RowSet rows_;  // its ranges are visited backwards when reversed_
  bool reversed_ = false;
  int64_t limit_ = 0;  // 0 = none
  std::optional<model::RowFilter> filter_;
  std::optional<KindCache> kinds_;
  model::ReadSpec spec_;
  size_t range_pos_ = 0;      // ranges started so far
  size_t current_range_ = 0;  // index into rows_.ranges()
  std::vector<size_t> tablets_;  // tablets of the current range, in scan order
  size_t tablet_pos_ = 0;
  std::unique_ptr<tablet::RowIterator> iter_;
  std::optional<model::Row> point_row_;  // the row of a single-key range, until consumed
  std::string last_scanned_key_;
  ReadRowsChunker chunker_;
  v2::ReadRowsResponse response_;  // the write in flight

  const int64_t start_micros_;
  int64_t rows_seen_ = 0, rows_returned_ = 0, cells_seen_ = 0, cells_returned_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// DataService

DataService::DataService(TableCatalog* catalog, Clock* clock, Executor* executor,
                         DataServiceOptions options)
    : impl_(std::make_unique<Impl>(catalog, clock, executor, options)) {}

DataService::~DataService() = default;

tablet::RowLocks* DataService::row_locks() const { return impl_->row_locks(); }

grpc::ServerWriteReactor<v2::ReadRowsResponse>* DataService::ReadRows(
    grpc::CallbackServerContext* context, const v2::ReadRowsRequest* request) {
  return new ReadRowsReactor(impl_.get(), context, request);
}

grpc::ServerWriteReactor<v2::SampleRowKeysResponse>* DataService::SampleRowKeys(
    grpc::CallbackServerContext* context, const v2::SampleRowKeysRequest* request) {
  Impl* impl = impl_.get();
  return new ListWriter<v2::SampleRowKeysResponse>(
      impl, [impl, request](std::vector<v2::SampleRowKeysResponse>* out) {
        return impl->SampleRowKeys(*request, out);
      });
}

grpc::ServerUnaryReactor* DataService::MutateRow(grpc::CallbackServerContext* context,
                                                 const v2::MutateRowRequest* request,
                                                 v2::MutateRowResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Impl* impl = impl_.get();
  if (impl->options().inline_writes) {
    reactor->Finish(ToGrpcStatus(impl->MutateRow(*request)));
  } else {
    impl->Run(
        [impl, request, reactor] { reactor->Finish(ToGrpcStatus(impl->MutateRow(*request))); });
  }
  return reactor;
}

grpc::ServerWriteReactor<v2::MutateRowsResponse>* DataService::MutateRows(
    grpc::CallbackServerContext* context, const v2::MutateRowsRequest* request) {
  return new MutateRowsReactor(impl_.get(), request);
}

grpc::ServerUnaryReactor* DataService::CheckAndMutateRow(
    grpc::CallbackServerContext* context, const v2::CheckAndMutateRowRequest* request,
    v2::CheckAndMutateRowResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Impl* impl = impl_.get();
  impl->Run([impl, request, response, reactor] {
    StatusOr<bool> matched = impl->CheckAndMutateRow(*request);
    if (matched.ok()) response->set_predicate_matched(*matched);
    reactor->Finish(ToGrpcStatus(matched.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* DataService::PingAndWarm(grpc::CallbackServerContext* context,
                                                   const v2::PingAndWarmRequest* request,
                                                   v2::PingAndWarmResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Nothing to warm from an instance name alone; the checks are cheap enough to run here. A node
  // that does not serve says so here too, so a client's channel priming sees it.
  const DataServiceOptions& options = impl_->options();
  Status serving = options.serving_check ? options.serving_check() : Status();
  reactor->Finish(ToGrpcStatus(serving.ok() ? ValidateInstanceName(request->name()) : serving));
  return reactor;
}

grpc::ServerUnaryReactor* DataService::ReadModifyWriteRow(
    grpc::CallbackServerContext* context, const v2::ReadModifyWriteRowRequest* request,
    v2::ReadModifyWriteRowResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Impl* impl = impl_.get();
  impl->Run([impl, request, response, reactor] {
    reactor->Finish(ToGrpcStatus(impl->ReadModifyWriteRow(*request, response)));
  });
  return reactor;
}

}  // namespace tessera::server
