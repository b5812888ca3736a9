#include "tessera/client/bigtable_client.h"
#include "tessera/rpc/bearer_token.h"
#include "tessera/rpc/tls.h"
#include "tessera/util/coding.h"

#include <algorithm>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "google/bigtable/v2/feature_flags.pb.h"

namespace tessera::client {
namespace {

// The API's limit on mutations in one MutateRows request.
constexpr size_t kMaxMutationsPerBulkRequest = 100'000;
// ListTables pages followed at most (a server that keeps returning tokens is broken).
constexpr int kMaxListPages = 100'000;

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

Status FromRpcStatus(const google::rpc::Status& s) {
  return Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

std::string Str(std::string_view s) { return std::string(s); }

// base64url with padding, as the Go client sends the bigtable-features header.
std::string Base64Url(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (in.size() - i == 1) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (in.size() - i == 2) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// What this client understands, announced on ReadRows: reversed scans (the emulator refuses
// them otherwise) and last_scanned_row_key-only responses (RowMerger accepts them).
const std::string& FeatureFlagsHeader() {
  static const std::string* const header = [] {
    btv2::FeatureFlags flags;
    flags.set_reverse_scans(true);
    flags.set_last_scanned_row_responses(true);
    return new std::string(Base64Url(flags.SerializeAsString()));
  }();
  return *header;
}

btadmin::ColumnFamily ToColumnFamily(const FamilySpec& spec) {
  btadmin::ColumnFamily family;
  *family.mutable_gc_rule() = spec.gc_rule;
  if (spec.super_columns || spec.time_sorted) {
    family.mutable_tessera_options()->set_super_columns(spec.super_columns);
    family.mutable_tessera_options()->set_time_sorted(spec.time_sorted);
  }
  return family;
}

void AppendRowProto(const btv2::Row& in, model::Row* out) {
  out->key = in.key();
  for (const btv2::Family& family : in.families()) {
    for (const btv2::Column& column : family.columns()) {
      for (const btv2::Cell& cell : column.cells()) {
        model::Cell c;
        c.family = family.name();
        c.qualifier = column.qualifier();
        c.timestamp_micros = cell.timestamp_micros();
        c.value = cell.value();
        c.labels.assign(cell.labels().begin(), cell.labels().end());
        out->cells.push_back(std::move(c));
      }
    }
  }
}

}  // namespace

// ---- RowReader ----

struct RowReader::Stream {
  grpc::ClientContext context;  // outlives `reader`
  std::unique_ptr<grpc::ClientReader<btv2::ReadRowsResponse>> reader;
  RowMerger merger;
  Status error;             // sticky: returned once rows before it are taken
  bool finished = false;    // reader->Finish() was called
  bool cancelled = false;

  explicit Stream(bool reversed) : merger(reversed) {}

  // Ends the RPC if it is still open; returns its status.
  grpc::Status FinishRpc() {
    if (finished) return grpc::Status::OK;
    finished = true;
    btv2::ReadRowsResponse ignored;
    if (cancelled || !error.ok()) {
      context.TryCancel();
      // Bounded by the cancellation: Read() returns false once the call is cancelled.
      while (reader->Read(&ignored)) {
      }
    }
    return reader->Finish();
  }
};

RowReader::RowReader(std::unique_ptr<Stream> stream) : stream_(std::move(stream)) {}

RowReader::~RowReader() {
  if (stream_ != nullptr && !stream_->finished) {
    stream_->cancelled = true;
    (void)stream_->FinishRpc();
  }
}

void RowReader::Cancel() {
  if (stream_->finished) return;
  stream_->cancelled = true;
  (void)stream_->FinishRpc();
}

void RowReader::TryCancel() { stream_->context.TryCancel(); }

StatusOr<bool> RowReader::Next(model::Row* row) {
  Stream& s = *stream_;
  if (s.cancelled) return false;
  while (!s.merger.HasRow()) {
    if (!s.error.ok()) return s.error;
    if (s.finished) return false;
    btv2::ReadRowsResponse response;
    if (!s.reader->Read(&response)) {
      const grpc::Status rpc = s.FinishRpc();
      if (s.cancelled) return false;
      if (!rpc.ok()) {
        s.error = FromGrpc(rpc);
        continue;
      }
      s.error = s.merger.Finish();
      continue;
    }
    s.error = s.merger.Add(response);
    if (!s.error.ok()) (void)s.FinishRpc();
  }
  *row = s.merger.TakeRow();
  return true;
}

// ---- BigtableClient ----

StatusOr<std::unique_ptr<BigtableClient>> BigtableClient::Create(ClientOptions options) {
  if (options.endpoint.empty()) return absl::InvalidArgumentError("client: empty endpoint");
  if (options.project.empty() || options.instance.empty()) {
    return absl::InvalidArgumentError("client: empty project or instance name");
  }
  if (options.admin_timeout.count() <= 0 || options.mutate_timeout.count() <= 0 ||
      options.read_timeout.count() <= 0) {
    return absl::InvalidArgumentError("client: timeouts must be positive");
  }
  if (options.max_receive_message_bytes <= 0) {
    return absl::InvalidArgumentError("client: max_receive_message_bytes must be positive");
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  args.SetMaxSendMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel = rpc::CreateChannelWithToken(
      options.endpoint, rpc::ClientCredentialsFor(options.tls_ca_pem), args, options.token);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(StrCat("client: cannot make a channel to ", options.endpoint));
  }
  auto data = btv2::Bigtable::NewStub(channel);
  auto admin = btadmin::BigtableTableAdmin::NewStub(channel);
  return std::unique_ptr<BigtableClient>(
      new BigtableClient(std::move(options), std::move(data), std::move(admin)));
}

BigtableClient::BigtableClient(ClientOptions options, std::unique_ptr<btv2::Bigtable::Stub> data,
                               std::unique_ptr<btadmin::BigtableTableAdmin::Stub> admin)
    : options_(std::move(options)),
      instance_name_(StrCat("projects/", options_.project, "/instances/", options_.instance)),
      data_(std::move(data)),
      admin_(std::move(admin)) {}

BigtableClient::~BigtableClient() = default;

std::string BigtableClient::TableName(std::string_view table_id) const {
  return StrCat(instance_name_, "/tables/", table_id);
}

void BigtableClient::SetDeadline(grpc::ClientContext* context,
                                 std::chrono::milliseconds default_timeout,
                                 const CallOptions& call) const {
  std::chrono::milliseconds timeout = call.timeout.value_or(default_timeout);
  if (timeout.count() <= 0) timeout = default_timeout;
  context->set_deadline(std::chrono::system_clock::now() + timeout);
}

// ---- admin ----

Status BigtableClient::CreateTable(std::string_view table_id,
                                   const std::vector<FamilySpec>& families,
                                   const std::vector<std::string>& split_keys,
                                   const CallOptions& call) {
  return CreateTable(table_id, families, split_keys, ::tessera::v1::TableOptions(), call);
}

Status BigtableClient::CreateTable(std::string_view table_id,
                                   const std::vector<FamilySpec>& families,
                                   const std::vector<std::string>& split_keys,
                                   const ::tessera::v1::TableOptions& tessera_options,
                                   const CallOptions& call) {
  btadmin::CreateTableRequest request;
  request.set_parent(instance_name_);
  request.set_table_id(Str(table_id));
  if (tessera_options.ByteSizeLong() > 0) {
    *request.mutable_table()->mutable_tessera_options() = tessera_options;
  }
  auto& column_families = *request.mutable_table()->mutable_column_families();
  for (const FamilySpec& family : families) {
    if (column_families.count(family.name) != 0) {
      return absl::InvalidArgumentError(
          StrCat("CreateTable: family \"", family.name, "\" given twice"));
    }
    column_families[family.name] = ToColumnFamily(family);
  }
  for (const std::string& key : split_keys) request.add_initial_splits()->set_key(key);
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  btadmin::Table response;
  return FromGrpc(admin_->CreateTable(&context, request, &response));
}

StatusOr<std::vector<std::string>> BigtableClient::ListTables(const CallOptions& call) {
  const std::string prefix = StrCat(instance_name_, "/tables/");
  std::vector<std::string> ids;
  std::string page_token;
  for (int page = 0;; ++page) {
    if (page == kMaxListPages) {
      return absl::InternalError("ListTables: the server kept returning page tokens");
    }
    btadmin::ListTablesRequest request;
    request.set_parent(instance_name_);
    request.set_view(btadmin::Table::NAME_ONLY);
    request.set_page_token(page_token);
    grpc::ClientContext context;
    SetDeadline(&context, options_.admin_timeout, call);
    btadmin::ListTablesResponse response;
    RETURN_IF_ERROR(FromGrpc(admin_->ListTables(&context, request, &response)));
    for (const btadmin::Table& table : response.tables()) {
      const std::string& name = table.name();
      ids.push_back(name.starts_with(prefix) ? name.substr(prefix.size()) : name);
    }
    if (response.next_page_token().empty()) break;
    page_token = response.next_page_token();
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

StatusOr<btadmin::Table> BigtableClient::GetTable(std::string_view table_id,
                                                  const CallOptions& call) {
  btadmin::GetTableRequest request;
  request.set_name(TableName(table_id));
  request.set_view(btadmin::Table::SCHEMA_VIEW);
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  btadmin::Table response;
  RETURN_IF_ERROR(FromGrpc(admin_->GetTable(&context, request, &response)));
  return response;
}

Status BigtableClient::DeleteTable(std::string_view table_id, const CallOptions& call) {
  btadmin::DeleteTableRequest request;
  request.set_name(TableName(table_id));
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  google::protobuf::Empty response;
  return FromGrpc(admin_->DeleteTable(&context, request, &response));
}

StatusOr<btadmin::Table> BigtableClient::ModifyColumnFamilies(
    std::string_view table_id,
    const std::vector<btadmin::ModifyColumnFamiliesRequest::Modification>& modifications,
    const CallOptions& call) {
  btadmin::ModifyColumnFamiliesRequest request;
  request.set_name(TableName(table_id));
  for (const auto& m : modifications) *request.add_modifications() = m;
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  btadmin::Table response;
  RETURN_IF_ERROR(FromGrpc(admin_->ModifyColumnFamilies(&context, request, &response)));
  return response;
}

Status BigtableClient::CreateFamily(std::string_view table_id, const FamilySpec& family,
                                    const CallOptions& call) {
  btadmin::ModifyColumnFamiliesRequest::Modification m;
  m.set_id(family.name);
  *m.mutable_create() = ToColumnFamily(family);
  return ModifyColumnFamilies(table_id, {m}, call).status();
}

Status BigtableClient::UpdateGcRule(std::string_view table_id, std::string_view family,
                                    const btadmin::GcRule& rule, const CallOptions& call) {
  btadmin::ModifyColumnFamiliesRequest::Modification m;
  m.set_id(Str(family));
  *m.mutable_update()->mutable_gc_rule() = rule;
  m.mutable_update_mask()->add_paths("gc_rule");
  return ModifyColumnFamilies(table_id, {m}, call).status();
}

Status BigtableClient::DropFamily(std::string_view table_id, std::string_view family,
                                  const CallOptions& call) {
  btadmin::ModifyColumnFamiliesRequest::Modification m;
  m.set_id(Str(family));
  m.set_drop(true);
  return ModifyColumnFamilies(table_id, {m}, call).status();
}

Status BigtableClient::DropRowsWithPrefix(std::string_view table_id, std::string_view prefix,
                                          const CallOptions& call) {
  if (prefix.empty()) {
    return absl::InvalidArgumentError(
        "DropRowRange: empty row key prefix (use DropAllRows to delete every row)");
  }
  btadmin::DropRowRangeRequest request;
  request.set_name(TableName(table_id));
  request.set_row_key_prefix(Str(prefix));
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  google::protobuf::Empty response;
  return FromGrpc(admin_->DropRowRange(&context, request, &response));
}

Status BigtableClient::DropAllRows(std::string_view table_id, const CallOptions& call) {
  btadmin::DropRowRangeRequest request;
  request.set_name(TableName(table_id));
  request.set_delete_all_data_from_table(true);
  grpc::ClientContext context;
  SetDeadline(&context, options_.admin_timeout, call);
  google::protobuf::Empty response;
  return FromGrpc(admin_->DropRowRange(&context, request, &response));
}

// ---- data ----

Status BigtableClient::MutateRow(std::string_view table_id, std::string_view row_key,
                                 const std::vector<btv2::Mutation>& mutations,
                                 const CallOptions& call) {
  btv2::MutateRowRequest request;
  request.set_table_name(TableName(table_id));
  request.set_row_key(Str(row_key));
  for (const btv2::Mutation& m : mutations) *request.add_mutations() = m;
  grpc::ClientContext context;
  SetDeadline(&context, options_.mutate_timeout, call);
  btv2::MutateRowResponse response;
  return FromGrpc(data_->MutateRow(&context, request, &response));
}

Status BigtableClient::MutateRowsBatch(const std::string& table_name,
                                       const std::vector<BulkEntry>& entries, size_t begin,
                                       size_t end, const CallOptions& call,
                                       std::vector<Status>* statuses) {
  btv2::MutateRowsRequest request;
  request.set_table_name(table_name);
  for (size_t i = begin; i < end; ++i) {
    btv2::MutateRowsRequest::Entry* entry = request.add_entries();
    entry->set_row_key(entries[i].row_key);
    for (const btv2::Mutation& m : entries[i].mutations) *entry->add_mutations() = m;
  }
  grpc::ClientContext context;
  SetDeadline(&context, options_.mutate_timeout, call);
  std::unique_ptr<grpc::ClientReader<btv2::MutateRowsResponse>> reader =
      data_->MutateRows(&context, request);
  std::vector<bool> reported(end - begin, false);
  size_t reported_count = 0;
  Status protocol_error;
  btv2::MutateRowsResponse response;
  while (reader->Read(&response)) {
    for (const auto& entry : response.entries()) {
      if (entry.index() < 0 || static_cast<size_t>(entry.index()) >= end - begin) {
        protocol_error = absl::InternalError(
            StrCat("MutateRows: the server reported entry index ", entry.index(), " of ",
                   end - begin));
        continue;
      }
      const size_t i = static_cast<size_t>(entry.index());
      if (!reported[i]) ++reported_count;
      reported[i] = true;
      (*statuses)[begin + i] = FromRpcStatus(entry.status());
    }
  }
  const Status rpc = FromGrpc(reader->Finish());
  if (!rpc.ok() && reported_count == 0) return rpc;
  for (size_t i = 0; i < reported.size(); ++i) {
    if (reported[i]) continue;
    if (!rpc.ok()) {
      (*statuses)[begin + i] = rpc;
    } else if (!protocol_error.ok()) {
      (*statuses)[begin + i] = protocol_error;
    } else {
      (*statuses)[begin + i] =
          absl::InternalError("MutateRows: the stream ended without a status for this entry");
    }
  }
  return absl::OkStatus();
}

StatusOr<std::vector<Status>> BigtableClient::MutateRows(std::string_view table_id,
                                                         const std::vector<BulkEntry>& entries,
                                                         const CallOptions& call) {
  std::vector<Status> statuses(entries.size());
  const std::string table_name = TableName(table_id);
  size_t begin = 0;
  bool first = true;
  while (begin < entries.size()) {
    // Take entries while they fit in one request; an oversized entry goes alone (the server
    // then names the problem).
    size_t end = begin;
    size_t mutations = 0;
    while (end < entries.size() &&
           (end == begin ||
            mutations + entries[end].mutations.size() <= kMaxMutationsPerBulkRequest)) {
      mutations += entries[end].mutations.size();
      ++end;
    }
    const Status s = MutateRowsBatch(table_name, entries, begin, end, call, &statuses);
    if (!s.ok()) {
      if (first) return s;
      for (size_t i = begin; i < end; ++i) statuses[i] = s;
    }
    first = false;
    begin = end;
  }
  return statuses;
}

std::unique_ptr<RowReader> BigtableClient::ReadRows(std::string_view table_id,
                                                    const ReadRowsOptions& options,
                                                    const CallOptions& call) {
  auto stream = std::make_unique<RowReader::Stream>(options.reversed);
  if (options.limit < 0) {
    stream->error = absl::InvalidArgumentError(
        StrCat("ReadRows: negative rows limit ", options.limit));
    stream->finished = true;
    return std::unique_ptr<RowReader>(new RowReader(std::move(stream)));
  }
  btv2::ReadRowsRequest request;
  request.set_table_name(TableName(table_id));
  *request.mutable_rows() = options.rows;
  if (options.filter.has_value()) *request.mutable_filter() = *options.filter;
  request.set_rows_limit(options.limit);
  request.set_reversed(options.reversed);
  SetDeadline(&stream->context, options_.read_timeout, call);
  stream->context.AddMetadata("bigtable-features", FeatureFlagsHeader());
  stream->reader = data_->ReadRows(&stream->context, request);
  return std::unique_ptr<RowReader>(new RowReader(std::move(stream)));
}

Status BigtableClient::ReadRows(std::string_view table_id, const ReadRowsOptions& options,
                                const std::function<bool(model::Row&&)>& on_row,
                                const CallOptions& call) {
  std::unique_ptr<RowReader> reader = ReadRows(table_id, options, call);
  model::Row row;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, reader->Next(&row));
    if (!more) return absl::OkStatus();
    if (!on_row(std::move(row))) {
      reader->Cancel();
      return absl::OkStatus();
    }
    row = model::Row();
  }
}

StatusOr<std::optional<model::Row>> BigtableClient::ReadRow(
    std::string_view table_id, std::string_view row_key,
    const std::optional<btv2::RowFilter>& filter, const CallOptions& call) {
  ReadRowsOptions options;
  options.rows.add_row_keys(Str(row_key));
  options.limit = 1;
  options.filter = filter;
  std::unique_ptr<RowReader> reader = ReadRows(table_id, options, call);
  model::Row row;
  ASSIGN_OR_RETURN(const bool found, reader->Next(&row));
  if (!found) return std::optional<model::Row>();
  if (row.key != row_key) {
    return absl::InternalError("ReadRow: the server returned a different row than asked for");
  }
  // Drain the stream so that its end-of-stream checks run.
  model::Row extra;
  ASSIGN_OR_RETURN(const bool more, reader->Next(&extra));
  if (more) return absl::InternalError("ReadRow: the server returned more than one row");
  return std::optional<model::Row>(std::move(row));
}

StatusOr<bool> BigtableClient::CheckAndMutateRow(
    std::string_view table_id, std::string_view row_key,
    const std::optional<btv2::RowFilter>& predicate,
    const std::vector<btv2::Mutation>& true_mutations,
    const std::vector<btv2::Mutation>& false_mutations, const CallOptions& call) {
  btv2::CheckAndMutateRowRequest request;
  request.set_table_name(TableName(table_id));
  request.set_row_key(Str(row_key));
  if (predicate.has_value()) *request.mutable_predicate_filter() = *predicate;
  for (const auto& m : true_mutations) *request.add_true_mutations() = m;
  for (const auto& m : false_mutations) *request.add_false_mutations() = m;
  grpc::ClientContext context;
  SetDeadline(&context, options_.mutate_timeout, call);
  btv2::CheckAndMutateRowResponse response;
  RETURN_IF_ERROR(FromGrpc(data_->CheckAndMutateRow(&context, request, &response)));
  return response.predicate_matched();
}

StatusOr<model::Row> BigtableClient::ReadModifyWriteRow(
    std::string_view table_id, std::string_view row_key,
    const std::vector<btv2::ReadModifyWriteRule>& rules, const CallOptions& call) {
  btv2::ReadModifyWriteRowRequest request;
  request.set_table_name(TableName(table_id));
  request.set_row_key(Str(row_key));
  for (const auto& rule : rules) *request.add_rules() = rule;
  grpc::ClientContext context;
  SetDeadline(&context, options_.mutate_timeout, call);
  btv2::ReadModifyWriteRowResponse response;
  RETURN_IF_ERROR(FromGrpc(data_->ReadModifyWriteRow(&context, request, &response)));
  model::Row row;
  AppendRowProto(response.row(), &row);
  if (row.key.empty()) row.key = Str(row_key);
  return row;
}

StatusOr<std::vector<RowKeySample>> BigtableClient::SampleRowKeys(std::string_view table_id,
                                                                  const CallOptions& call) {
  btv2::SampleRowKeysRequest request;
  request.set_table_name(TableName(table_id));
  grpc::ClientContext context;
  SetDeadline(&context, options_.read_timeout, call);
  std::unique_ptr<grpc::ClientReader<btv2::SampleRowKeysResponse>> reader =
      data_->SampleRowKeys(&context, request);
  std::vector<RowKeySample> samples;
  btv2::SampleRowKeysResponse response;
  while (reader->Read(&response)) {
    samples.push_back(RowKeySample{response.row_key(), response.offset_bytes()});
  }
  RETURN_IF_ERROR(FromGrpc(reader->Finish()));
  return samples;
}

// ---- building requests ----

btv2::Mutation SetCellMutation(std::string_view family, std::string_view qualifier,
                               std::string_view value, int64_t timestamp_micros) {
  btv2::Mutation m;
  btv2::Mutation::SetCell* set = m.mutable_set_cell();
  set->set_family_name(Str(family));
  set->set_column_qualifier(Str(qualifier));
  set->set_value(Str(value));
  set->set_timestamp_micros(timestamp_micros);
  return m;
}

btv2::Mutation DeleteColumnMutation(std::string_view family, std::string_view qualifier) {
  btv2::Mutation m;
  m.mutable_delete_from_column()->set_family_name(Str(family));
  m.mutable_delete_from_column()->set_column_qualifier(Str(qualifier));
  return m;
}

btv2::Mutation DeleteFamilyMutation(std::string_view family) {
  btv2::Mutation m;
  m.mutable_delete_from_family()->set_family_name(Str(family));
  return m;
}

btv2::Mutation DeleteRowMutation() {
  btv2::Mutation m;
  m.mutable_delete_from_row();
  return m;
}

btv2::ReadModifyWriteRule AppendRule(std::string_view family, std::string_view qualifier,
                                     std::string_view suffix) {
  btv2::ReadModifyWriteRule rule;
  rule.set_family_name(Str(family));
  rule.set_column_qualifier(Str(qualifier));
  rule.set_append_value(Str(suffix));
  return rule;
}

btv2::ReadModifyWriteRule IncrementRule(std::string_view family, std::string_view qualifier,
                                        int64_t amount) {
  btv2::ReadModifyWriteRule rule;
  rule.set_family_name(Str(family));
  rule.set_column_qualifier(Str(qualifier));
  rule.set_increment_amount(amount);
  return rule;
}

btv2::RowSet RowKeysSet(const std::vector<std::string>& keys) {
  btv2::RowSet set;
  for (const std::string& key : keys) set.add_row_keys(key);
  return set;
}

btv2::RowSet RowRangeSet(std::string_view start_closed, std::string_view end_open) {
  btv2::RowSet set;
  btv2::RowRange* range = set.add_row_ranges();
  range->set_start_key_closed(Str(start_closed));
  if (!end_open.empty()) range->set_end_key_open(Str(end_open));
  return set;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<uint8_t>(s.back()) == 0xff) s.pop_back();
  if (s.empty()) return s;
  s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
  return s;
}

btv2::RowSet RowPrefixSet(std::string_view prefix) {
  return RowRangeSet(prefix, PrefixSuccessor(prefix));
}

std::string RegexEscape(std::string_view literal) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(literal.size() * 2);
  for (char ch : literal) {
    const auto c = static_cast<uint8_t>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
      out += ch;
    } else if (c > 0x20 && c < 0x7f) {
      out += '\\';
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusOr<int64_t> DecodeBigEndianInt64(std::string_view bytes) {
  if (bytes.size() != 8) {
    return absl::InvalidArgumentError(
        StrCat("expected an 8-byte big-endian integer, got ", bytes.size(), " bytes"));
  }
  return static_cast<int64_t>(DecodeBigEndian64(bytes.data()));
}

std::string EncodeBigEndianInt64(int64_t value) {
  return BigEndian64String(static_cast<uint64_t>(value));
}

}  // namespace tessera::client
