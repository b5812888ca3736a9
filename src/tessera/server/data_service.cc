#include "tessera/server/data_service.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/bigtable/v2/feature_flags.pb.h"
#include "tessera/catalog/metadata_table.h"
#include "tessera/model/cell_key.h"
#include "tessera/server/data_authorization.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/mutation_builder.h"
#include "tessera/server/read_rows_chunker.h"
#include "tessera/server/row_filter_proto.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace v2 = ::google::bigtable::v2;

namespace {

constexpr size_t kMaxReadModifyWriteRules = 100'000;

// The (table, tablets, schema) snapshot a request works on.
using TablePtr = std::shared_ptr<const catalog::TableInfo>;

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
v2::FeatureFlags ClientFeatures(const rpc::ServerContext* ctx) {
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

int HexDigit(char c) {
  return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
}

// The app_profile_id of the client's "x-goog-request-params" header (URL-encoded
// key=value pairs joined by '&'); "" if absent.
std::string HeaderAppProfile(const rpc::ServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("x-goog-request-params");
  if (it == md.end()) return "";
  const absl::string_view params(it->second.data(), it->second.size());
  for (absl::string_view pair : absl::StrSplit(params, '&')) {
    if (!absl::ConsumePrefix(&pair, "app_profile_id=")) continue;
    std::string id;  // percent-decoded
    for (size_t i = 0; i < pair.size(); ++i) {
      if (pair[i] == '%' && i + 2 < pair.size() && absl::ascii_isxdigit(pair[i + 1]) &&
          absl::ascii_isxdigit(pair[i + 2])) {
        id.push_back(static_cast<char>(HexDigit(pair[i + 1]) * 16 + HexDigit(pair[i + 2])));
        i += 2;
      } else {
        id.push_back(pair[i]);
      }
    }
    return id;
  }
  return "";
}

// The checks and the build of a CheckAndMutateRow: what TableAccess::CheckAndMutateAsync takes.
struct CheckAndMutateArgs {
  TablePtr table;
  replication::AccessOptions options;
  model::RowMutation on_true, on_false;
  std::shared_ptr<model::RowFilter> predicate;
};

// The checks and the build of a ReadModifyWriteRow: what TableAccess::ReadModifyWriteAsync takes.
struct ReadModifyWriteArgs {
  TablePtr table;
  replication::AccessOptions options;
  std::vector<replication::ReadModifyWriteRule> rules;
  int64_t now_micros = 0;
};

// A ReadModifyWriteRow's answer: one cell per column, columns in returned order (a family
// starts where the name changes).
void ToResponseRow(model::Row row, v2::ReadModifyWriteRowResponse* resp) {
  v2::Row* out = resp->mutable_row();
  out->set_key(std::move(row.key));
  v2::Family* family = nullptr;
  for (model::Cell& c : row.cells) {
    if (family == nullptr || family->name() != c.family) {
      family = out->add_families();
      family->set_name(c.family);
    }
    v2::Column* column = family->add_columns();
    column->set_qualifier(std::move(c.qualifier));
    v2::Cell* cell = column->add_cells();
    cell->set_timestamp_micros(c.timestamp_micros);
    cell->set_value(std::move(c.value));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Impl: what the RPCs share.

class DataService::Impl {
 public:
  Impl(catalog::TableCatalog* catalog, replication::TableAccess* access, Clock* clock,
       Executor* executor, DataServiceOptions options)
      : catalog_(catalog), access_(access), clock_(clock), executor_(executor), options_(options) {}

  catalog::TableCatalog* catalog() const { return catalog_; }
  replication::TableAccess* access() const { return access_; }
  Clock* clock() const { return clock_; }
  const DataServiceOptions& options() const { return options_; }
  bool has_executor() const { return executor_ != nullptr; }

  // Runs `fn` on the executor, or right here without one.
  void Run(std::function<void()> fn) { RunOn(executor_, std::move(fn)); }

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
      return absl::UnimplementedError(
          StrCat("authorized views are not supported by Tessera (", authorized_view_name, ")"));
    }
    if (!materialized_view_name.empty()) {
      return absl::UnimplementedError(
          StrCat("materialized views are not supported by Tessera (", materialized_view_name, ")"));
    }
    if (options_.serving_check) RETURN_IF_ERROR(options_.serving_check());
    if (table_name.empty()) return absl::InvalidArgumentError("table_name must be set");
    ASSIGN_OR_RETURN(catalog::TableName name, catalog::TableName::Parse(table_name));
    StatusOr<TablePtr> table = catalog_->GetTable(name.Full());
    if (!absl::IsNotFound(table.status()) || !options_.refresh_schema) return table;
    RETURN_IF_ERROR(options_.refresh_schema());
    return catalog_->GetTable(name.Full());
  }

  // The table a write names: as ResolveTable, and PermissionDenied for Tessera's own tables
  // (METADATA), which only the master writes.
  StatusOr<TablePtr> ResolveWritableTable(std::string_view table_name,
                                          std::string_view authorized_view_name) const {
    ASSIGN_OR_RETURN(TablePtr table, ResolveTable(table_name, authorized_view_name, ""));
    if (catalog::IsReservedInstance(table->name.instance)) {
      return absl::PermissionDeniedError(StrCat("table ", table->full_name,
                                                " is Tessera's own: clients may read it, not write it"));
    }
    return table;
  }

  // With --auth: OK when the call's principal holds `permission` on what `needs` names.
  Status Authorize(const rpc::ServerContext* ctx, const catalog::TableInfo& table,
                   Permission permission, const FamilyNeeds& needs) const {
    return AuthorizeData(options_.access_control, *ctx, table, permission, needs);
  }

  // How a request on `table` runs: its app profile's levels and the client's deadline.
  StatusOr<replication::AccessOptions> OptionsFor(const rpc::ServerContext* ctx,
                                                  const catalog::TableInfo& table,
                                                  std::string_view app_profile_id) const {
    replication::AccessOptions options;
    const std::string header_id = app_profile_id.empty() ? HeaderAppProfile(ctx) : "";
    const std::string_view id = app_profile_id.empty() ? header_id : app_profile_id;
    if (options_.profile_levels) {
      ASSIGN_OR_RETURN(catalog::TableName name, catalog::TableName::Parse(table.full_name));
      ASSIGN_OR_RETURN(ProfileLevels levels, options_.profile_levels(name.instance, id));
      options.read_level = levels.read;
      options.write_level = levels.write;
    } else if (std::optional<ProfileLevels> levels = BuiltInProfileLevels(id)) {
      options.read_level = levels->read;
      options.write_level = levels->write;
    }
    const auto deadline = ctx->deadline();
    if (deadline != std::chrono::system_clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
          deadline - std::chrono::system_clock::now());
      options.timeout_us = std::max<int64_t>(1, left.count());
    }
    return options;
  }

  // Checks and builds on the calling thread, then applies it (TableAccess::MutateAsync: on the
  // executor unless inline_writes) and gives `done` the outcome.
  void MutateRow(const rpc::ServerContext* ctx, const v2::MutateRowRequest& req,
                 std::function<void(Status)> done) {
    StatusOr<TablePtr> table = ResolveWritableTable(req.table_name(), req.authorized_view_name());
    if (!table.ok()) return done(table.status());
    if (Status allowed = Authorize(ctx, **table, kPermWrite, MutationFamilies(req.mutations()));
        !allowed.ok()) {
      return done(allowed);
    }
    StatusOr<replication::AccessOptions> options = OptionsFor(ctx, **table, req.app_profile_id());
    if (!options.ok()) return done(options.status());
    MutationBuilder builder((*table)->schema);
    StatusOr<model::RowMutation> m =
        builder.Build(req.row_key(), req.mutations(), clock_->NowMicros());
    if (!m.ok()) return done(m.status());
    access_->MutateAsync(*std::move(table), *std::move(m), *options,
                         write_executor(), std::move(done));
  }

  // One MutateRows entry's mutation, built and checked against the table's schema.
  StatusOr<model::RowMutation> BuildEntry(const catalog::TableInfo& table,
                                          const v2::MutateRowsRequest::Entry& entry,
                                          int64_t now_micros) const {
    MutationBuilder builder(table.schema);
    return builder.Build(entry.row_key(), entry.mutations(), now_micros);
  }

  // As MutateRow: checked and built on the calling thread, then applied
  // (TableAccess::CheckAndMutateAsync, ReadModifyWriteAsync) on the executor.
  void CheckAndMutateRow(const rpc::ServerContext* ctx,
                         const v2::CheckAndMutateRowRequest& req,
                         std::function<void(StatusOr<bool>)> done);
  // `done` runs once `resp` holds the row (or with the error).
  void ReadModifyWriteRow(const rpc::ServerContext* ctx,
                          const v2::ReadModifyWriteRowRequest& req,
                          v2::ReadModifyWriteRowResponse* resp, std::function<void(Status)> done);
  Status SampleRowKeys(const rpc::ServerContext* ctx, const v2::SampleRowKeysRequest& req,
                       std::vector<v2::SampleRowKeysResponse>* out);

 private:
  StatusOr<CheckAndMutateArgs> BuildCheckAndMutate(const rpc::ServerContext* ctx,
                                                   const v2::CheckAndMutateRowRequest& req);
  StatusOr<ReadModifyWriteArgs> BuildReadModifyWrite(const rpc::ServerContext* ctx,
                                                     const v2::ReadModifyWriteRowRequest& req);
  // Where a single-row write waits for this node's commit log: the executor, or the calling
  // gRPC thread with inline_writes (TableAccess's asynchronous forms, `blocking`).
  Executor* write_executor() const { return options_.inline_writes ? nullptr : executor_; }

  catalog::TableCatalog* const catalog_;
  replication::TableAccess* const access_;
  Clock* const clock_;
  Executor* const executor_;
  const DataServiceOptions options_;
  std::atomic<uint64_t> seed_counter_{0};
};

void DataService::Impl::CheckAndMutateRow(const rpc::ServerContext* ctx,
                                          const v2::CheckAndMutateRowRequest& req,
                                          std::function<void(StatusOr<bool>)> done) {
  StatusOr<CheckAndMutateArgs> args = BuildCheckAndMutate(ctx, req);
  if (!args.ok()) return done(args.status());
  access_->CheckAndMutateAsync(std::move(args->table), req.row_key(), std::move(args->predicate),
                               std::move(args->on_true), std::move(args->on_false),
                               args->options, write_executor(),
                               std::move(done));
}

StatusOr<CheckAndMutateArgs> DataService::Impl::BuildCheckAndMutate(
    const rpc::ServerContext* ctx, const v2::CheckAndMutateRowRequest& req) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveWritableTable(req.table_name(), req.authorized_view_name()));
  ASSIGN_OR_RETURN(replication::AccessOptions options,
                   OptionsFor(ctx, *table, req.app_profile_id()));
  RETURN_IF_ERROR(ValidateRowKey(req.row_key()));
  if (req.true_mutations().empty() && req.false_mutations().empty()) {
    return absl::InvalidArgumentError("No mutations provided");
  }
  for (const auto* list : {&req.true_mutations(), &req.false_mutations()}) {
    if (static_cast<size_t>(list->size()) > kMaxMutations) {
      return absl::InvalidArgumentError(
          StrCat("Too many mutations: ", list->size(), "; the maximum is ", kMaxMutations));
    }
  }
  const int64_t now = clock_->NowMicros();
  MutationBuilder builder(table->schema);
  CheckAndMutateArgs args{.table = table,
                          .options = options,
                          .on_true = model::RowMutation(req.row_key()),
                          .on_false = model::RowMutation(req.row_key()),
                          .predicate = nullptr};
  RETURN_IF_ERROR_CTX(builder.AppendTo(req.true_mutations(), now, &args.on_true),
                      "Error in field 'true_mutations'");
  RETURN_IF_ERROR_CTX(builder.AppendTo(req.false_mutations(), now, &args.on_false),
                      "Error in field 'false_mutations'");
  if (req.has_predicate_filter()) {
    ASSIGN_OR_RETURN(
        model::RowFilter f,
        CompileRowFilter(req.predicate_filter(), FilterOptionsFor(table->schema, NextSeed())));
    args.predicate = std::make_shared<model::RowFilter>(std::move(f));
  }
  RETURN_IF_ERROR(Authorize(ctx, *table, kPermRead, FilterFamilies(args.predicate.get())));
  RETURN_IF_ERROR(Authorize(
      ctx, *table, kPermWrite,
      Union(MutationFamilies(req.true_mutations()), MutationFamilies(req.false_mutations()))));
  return args;
}

void DataService::Impl::ReadModifyWriteRow(const rpc::ServerContext* ctx,
                                           const v2::ReadModifyWriteRowRequest& req,
                                           v2::ReadModifyWriteRowResponse* resp,
                                           std::function<void(Status)> done) {
  StatusOr<ReadModifyWriteArgs> args = BuildReadModifyWrite(ctx, req);
  if (!args.ok()) return done(args.status());
  access_->ReadModifyWriteAsync(
      std::move(args->table), req.row_key(), std::move(args->rules), args->now_micros,
      kMaxValueBytes, args->options, write_executor(),
      [resp, done = std::move(done)](StatusOr<model::Row> row) {
        if (!row.ok()) return done(row.status());
        ToResponseRow(*std::move(row), resp);
        done(Status());
      });
}

StatusOr<ReadModifyWriteArgs> DataService::Impl::BuildReadModifyWrite(
    const rpc::ServerContext* ctx, const v2::ReadModifyWriteRowRequest& req) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveWritableTable(req.table_name(), req.authorized_view_name()));
  ASSIGN_OR_RETURN(replication::AccessOptions options,
                   OptionsFor(ctx, *table, req.app_profile_id()));
  RETURN_IF_ERROR(ValidateRowKey(req.row_key()));
  if (req.rules().empty()) return absl::InvalidArgumentError("No rules provided");
  if (static_cast<size_t>(req.rules_size()) > kMaxReadModifyWriteRules) {
    return absl::InvalidArgumentError(StrCat("Too many rules: ", req.rules_size(),
                                             "; the maximum is ", kMaxReadModifyWriteRules));
  }
  // Validate every rule and find the stored form of its column, before taking the lock.
  MutationBuilder builder(table->schema);
  std::vector<replication::ReadModifyWriteRule> rules(req.rules_size());
  for (int i = 0; i < req.rules_size(); ++i) {
    const v2::ReadModifyWriteRule& rule = req.rules(i);
    replication::ReadModifyWriteRule& out = rules[i];
    Status s =
        builder.StoredQualifier(rule.family_name(), rule.column_qualifier(), &out.stored_qualifier);
    if (s.ok() && rule.rule_case() == v2::ReadModifyWriteRule::RULE_NOT_SET) {
      s = absl::InvalidArgumentError("rule has neither append_value nor increment_amount set");
    }
    if (s.ok() && rule.append_value().size() > kMaxValueBytes) {
      s = absl::InvalidArgumentError("append_value is larger than the maximum value size");
    }
    if (!s.ok()) {
      return Status(s.code(),
                    StrCat("Error in field 'rules' : Error in element #", i, " : ", s.message()));
    }
    out.family = rule.family_name();
    out.qualifier = rule.column_qualifier();
    if (rule.rule_case() == v2::ReadModifyWriteRule::kAppendValue) {
      out.kind = replication::ReadModifyWriteRule::Kind::kAppend;
      out.append_value = rule.append_value();
    } else {
      out.kind = replication::ReadModifyWriteRule::Kind::kIncrement;
      out.increment_amount = rule.increment_amount();
    }
  }
  FamilyNeeds needs;
  for (const v2::ReadModifyWriteRule& rule : req.rules())
    needs.families.push_back(rule.family_name());
  needs = Union(std::move(needs), FamilyNeeds());  // sorted, distinct
  RETURN_IF_ERROR(Authorize(ctx, *table, kPermRead, needs));
  RETURN_IF_ERROR(Authorize(ctx, *table, kPermWrite, needs));
  const int64_t now = ServerTimestamp(table->schema, clock_->NowMicros());
  return ReadModifyWriteArgs{.table = table,
                             .options = options,
                             .rules = std::move(rules),
                             .now_micros = now};
}

Status DataService::Impl::SampleRowKeys(const rpc::ServerContext* ctx,
                                        const v2::SampleRowKeysRequest& req,
                                        std::vector<v2::SampleRowKeysResponse>* out) {
  ASSIGN_OR_RETURN(TablePtr table, ResolveTable(req.table_name(), req.authorized_view_name(),
                                                req.materialized_view_name()));
  RETURN_IF_ERROR(
      Authorize(ctx, *table, kPermRead, FamilyNeeds{.scope = FamilyNeeds::Scope::kTable}));
  ASSIGN_OR_RETURN(
      std::vector<replication::RowKeySample> samples,
      access_->SampleRowKeys(*table, std::max<uint64_t>(1, options_.sample_every_bytes)));
  out->clear();
  for (replication::RowKeySample& s : samples) {
    v2::SampleRowKeysResponse& r = out->emplace_back();
    r.set_row_key(std::move(s.row_key));
    r.set_offset_bytes(s.offset_bytes);
  }
  return Status();
}

namespace {

// ---------------------------------------------------------------------------------------------
// Reactors.

// Writes a prepared list of responses one at a time, then finishes. `Prepare` runs on the
// executor and fills the list (or fails the call).
template <typename Response>
class ListWriter final : public rpc::WriteReactor<Response> {
 public:
  using Prepare = std::function<Status(std::vector<Response>*)>;

  ListWriter(rpc::ServerContext* ctx, DataService::Impl* impl, Prepare prepare)
      : rpc::WriteReactor<Response>(ctx), impl_(impl) {
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

// MutateRows: entries applied independently, each tablet's in one batch (TableAccess::
// MutateRows: one commit, and on a cluster one call to the tablet's primary). An entry that
// does not build fails alone. The tablets are spread over a few executor tasks so that their
// writes run, and group-commit, together; one response with a status per entry.
class MutateRowsReactor final : public rpc::WriteReactor<v2::MutateRowsResponse> {
 public:
  MutateRowsReactor(DataService::Impl* impl, rpc::ServerContext* ctx,
                    const v2::MutateRowsRequest* req)
      : rpc::WriteReactor<v2::MutateRowsResponse>(ctx), impl_(impl), ctx_(ctx), req_(req) {
    impl_->Run([this] { Start(); });
  }

  void OnDone() override { delete this; }

 private:
  // The built entries of some tablets, with their entry indexes.
  struct Slice {
    std::vector<model::RowMutation> mutations;
    std::vector<size_t> indexes;
  };

  void Start() {
    StatusOr<TablePtr> table =
        impl_->ResolveWritableTable(req_->table_name(), req_->authorized_view_name());
    if (!table.ok()) return Finish(ToGrpcStatus(table.status()));
    table_ = *std::move(table);
    StatusOr<replication::AccessOptions> options =
        impl_->OptionsFor(ctx_, *table_, req_->app_profile_id());
    if (!options.ok()) return Finish(ToGrpcStatus(options.status()));
    options_ = *std::move(options);
    const int n = req_->entries_size();
    if (n == 0) {
      return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "No entries provided"));
    }
    size_t total = 0;
    for (const auto& e : req_->entries()) total += e.mutations_size();
    if (total > kMaxMutations) {
      return Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 StrCat("Too many mutations: ", total,
                                        " in all entries; the maximum is ", kMaxMutations)));
    }
    const int64_t now_micros = impl_->clock()->NowMicros();
    statuses_.resize(n);
    // The built entries by tablet index, each tablet's in request order.
    std::map<size_t, Slice> by_tablet;
    for (int i = 0; i < n; ++i) {
      if (Status allowed = impl_->Authorize(ctx_, *table_, kPermWrite,
                                            MutationFamilies(req_->entries(i).mutations()));
          !allowed.ok()) {
        statuses_[i] = allowed;
        continue;
      }
      StatusOr<model::RowMutation> m = impl_->BuildEntry(*table_, req_->entries(i), now_micros);
      if (!m.ok()) {
        statuses_[i] = m.status();
        continue;
      }
      Slice& slice = by_tablet[table_->TabletIndexFor(m->row())];
      slice.mutations.push_back(*std::move(m));
      slice.indexes.push_back(static_cast<size_t>(i));
    }
    int tasks = 1;
    if (impl_->has_executor()) {
      tasks = std::clamp(impl_->options().mutate_rows_parallelism, 1,
                         std::max<int>(1, static_cast<int>(by_tablet.size())));
    }
    // Tablet k goes to slice k mod tasks.
    slices_.resize(tasks);
    int k = 0;
    for (auto& [index, slice] : by_tablet) {
      Slice& to = slices_[k++ % tasks];
      if (to.mutations.empty()) {
        to = std::move(slice);
        continue;
      }
      for (size_t j = 0; j < slice.mutations.size(); ++j) {
        to.mutations.push_back(std::move(slice.mutations[j]));
        to.indexes.push_back(slice.indexes[j]);
      }
    }
    pending_.store(tasks);
    // The last task to finish responds.
    for (int j = 1; j < tasks; ++j) impl_->Run([this, j] { ApplySlice(j); });
    ApplySlice(0);
  }

  // Applies slice k on this thread, a task of the executor (or the only thread without one):
  // waits for this node's commit log here, for other nodes on no thread
  // (TableAccess::MutateRowsAsync). The last slice answered responds.
  void ApplySlice(int k) {
    Slice& slice = slices_[k];
    if (slice.mutations.empty()) return SliceDone();
    impl_->access()->MutateRowsAsync(table_, std::move(slice.mutations), options_,
                                     /*blocking=*/nullptr,
                                     [this, k](std::vector<Status> statuses) {
                                       const Slice& done = slices_[k];
                                       for (size_t j = 0; j < done.indexes.size(); ++j) {
                                         statuses_[done.indexes[j]] = std::move(statuses[j]);
                                       }
                                       SliceDone();
                                     });
  }

  void SliceDone() {
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
  const rpc::ServerContext* const ctx_;
  const v2::MutateRowsRequest* const req_;
  TablePtr table_;
  replication::AccessOptions options_;
  std::vector<Slice> slices_;     // slice k applied by task k
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
class ReadRowsReactor final : public rpc::WriteReactor<v2::ReadRowsResponse> {
 public:
  ReadRowsReactor(DataService::Impl* impl, rpc::ServerContext* ctx,
                  const v2::ReadRowsRequest* req)
      : rpc::WriteReactor<v2::ReadRowsResponse>(ctx),
        impl_(impl),
        ctx_(ctx),
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
    replication::ReadRequest read;
    read.rows_limit = req_->rows_limit();
    ASSIGN_OR_RETURN(read.rows, RowSetFromProto(req_->rows()));
    if (req_->has_filter()) {
      ASSIGN_OR_RETURN(
          read.filter,
          CompileRowFilter(req_->filter(), FilterOptionsFor(table_->schema, impl_->NextSeed())));
    }
    RETURN_IF_ERROR(impl_->Authorize(ctx_, *table_, kPermRead, FilterFamilies(&read.filter)));
    read.reversed = req_->reversed();
    ASSIGN_OR_RETURN(replication::AccessOptions options,
                     impl_->OptionsFor(ctx_, *table_, req_->app_profile_id()));
    ASSIGN_OR_RETURN(stream_, impl_->access()->Read(table_, std::move(read), options));
    // A step that waits for another node returns kWait; the answer's thread goes on.
    stream_->SetWaker([this] { Schedule(); });
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
    size_t work = 0;
    const replication::ReadProgress& progress = stream_->progress();
    const int64_t seen_before = progress.rows_seen;
    const int64_t returned_before = progress.rows_returned;
    while (!done_ && !chunker_.HasFullResponse() && work < impl_->options().read_rows_per_step &&
           static_cast<size_t>(progress.rows_returned - returned_before) <
               impl_->options().read_response_rows) {
      ++work;
      StatusOr<replication::ReadStep> step = stream_->Step(&row_);
      if (!step.ok()) return Fail(step.status());
      // Touch nothing more: the waker may already be running the next step.
      if (*step == replication::ReadStep::kWait) return StepResult::kWaiting;
      if (*step == replication::ReadStep::kRow) chunker_.AddRow(std::move(row_));
      done_ = stream_->done();
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
        if (!send_last_scanned_ || progress.rows_seen == seen_before ||
            progress.last_scanned_key.empty()) {
          return StepResult::kYield;
        }
        chunker_.AddLastScannedRowKey(progress.last_scanned_key);
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

  v2::RequestStats Stats() const {
    v2::RequestStats stats;
    v2::FullReadStatsView* full = stats.mutable_full_read_stats_view();
    v2::ReadIterationStats* it = full->mutable_read_iteration_stats();
    const replication::ReadProgress& progress = stream_->progress();
    it->set_rows_seen_count(progress.rows_seen);
    it->set_rows_returned_count(progress.rows_returned);
    it->set_cells_seen_count(progress.cells_seen);
    it->set_cells_returned_count(progress.cells_returned);
    const int64_t micros = impl_->clock()->MonotonicMicros() - start_micros_;
    auto* latency = full->mutable_request_latency_stats()->mutable_frontend_server_latency();
    latency->set_seconds(micros / 1'000'000);
    latency->set_nanos(static_cast<int32_t>((micros % 1'000'000) * 1000));
    return stats;
  }

  DataService::Impl* const impl_;
  const rpc::ServerContext* const ctx_;
  const v2::ReadRowsRequest* const req_;
  std::atomic<bool> cancelled_{false};
  bool send_last_scanned_ = false;

  // Scan state; touched only by steps (one at a time).
  bool initialized_ = false;
  bool done_ = false;
  bool chunker_finished_ = false;
  TablePtr table_;
  std::unique_ptr<replication::RowStream> stream_;
  model::Row row_;  // the row a step read, until the chunker takes it
  ReadRowsChunker chunker_;
  v2::ReadRowsResponse response_;  // the write in flight

  const int64_t start_micros_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// DataService

DataService::DataService(catalog::TableCatalog* catalog, replication::TableAccess* access,
                         Clock* clock, Executor* executor, DataServiceOptions options)
    : impl_(std::make_unique<Impl>(catalog, access, clock, executor, options)) {}

DataService::~DataService() = default;

void DataService::Register(rpc::Services* services) {
  constexpr const char* kService = v2::Bigtable::service_full_name();
  services->Add(kService, "ReadRows", this, &DataService::ReadRows);
  services->Add(kService, "SampleRowKeys", this, &DataService::SampleRowKeys);
  services->Add(kService, "MutateRow", this, &DataService::MutateRow);
  services->Add(kService, "MutateRows", this, &DataService::MutateRows);
  services->Add(kService, "CheckAndMutateRow", this, &DataService::CheckAndMutateRow);
  services->Add(kService, "PingAndWarm", this, &DataService::PingAndWarm);
  services->Add(kService, "ReadModifyWriteRow", this, &DataService::ReadModifyWriteRow);
}

rpc::WriteReactor<v2::ReadRowsResponse>* DataService::ReadRows(
    rpc::ServerContext* context, const v2::ReadRowsRequest* request) {
  return new ReadRowsReactor(impl_.get(), context, request);
}

rpc::WriteReactor<v2::SampleRowKeysResponse>* DataService::SampleRowKeys(
    rpc::ServerContext* context, const v2::SampleRowKeysRequest* request) {
  Impl* impl = impl_.get();
  return new ListWriter<v2::SampleRowKeysResponse>(
      context, impl, [impl, context, request](std::vector<v2::SampleRowKeysResponse>* out) {
        return impl->SampleRowKeys(context, *request, out);
      });
}

rpc::UnaryReactor* DataService::MutateRow(rpc::ServerContext* context,
                                                 const v2::MutateRowRequest* request,
                                                 v2::MutateRowResponse* response) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  impl_->MutateRow(context, *request,
                   [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

rpc::WriteReactor<v2::MutateRowsResponse>* DataService::MutateRows(
    rpc::ServerContext* context, const v2::MutateRowsRequest* request) {
  return new MutateRowsReactor(impl_.get(), context, request);
}

rpc::UnaryReactor* DataService::CheckAndMutateRow(
    rpc::ServerContext* context, const v2::CheckAndMutateRowRequest* request,
    v2::CheckAndMutateRowResponse* response) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  impl_->CheckAndMutateRow(context, *request, [response, reactor](StatusOr<bool> matched) {
    if (matched.ok()) response->set_predicate_matched(*matched);
    reactor->Finish(ToGrpcStatus(matched.status()));
  });
  return reactor;
}

rpc::UnaryReactor* DataService::PingAndWarm(rpc::ServerContext* context,
                                                   const v2::PingAndWarmRequest* request,
                                                   v2::PingAndWarmResponse* response) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  // Nothing to warm from an instance name alone; the checks are cheap enough to run here. A node
  // that does not serve says so here too, so a client's channel priming sees it.
  const DataServiceOptions& options = impl_->options();
  Status serving = options.serving_check ? options.serving_check() : Status();
  reactor->Finish(
      ToGrpcStatus(serving.ok() ? catalog::ValidateInstanceName(request->name()) : serving));
  return reactor;
}

rpc::UnaryReactor* DataService::ReadModifyWriteRow(
    rpc::ServerContext* context, const v2::ReadModifyWriteRowRequest* request,
    v2::ReadModifyWriteRowResponse* response) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  impl_->ReadModifyWriteRow(context, *request, response,
                            [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

}  // namespace tessera::server
