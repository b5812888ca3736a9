#include "tessera/cli/ycsb_bigtable_db.h"

#include <chrono>
#include <utility>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "tessera/cli/cli_flags.h"

namespace tessera::cli::ycsb {
namespace {

namespace v2 = ::google::bigtable::v2;
namespace admin = ::google::bigtable::admin::v2;

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return Status();
  return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

std::chrono::system_clock::time_point Deadline(std::chrono::milliseconds timeout) {
  return std::chrono::system_clock::now() + timeout;
}

class BigtableDb final : public YcsbDb {
 public:
  BigtableDb(std::shared_ptr<grpc::Channel> channel, const BigtableTarget& target, int fields,
             std::chrono::milliseconds rpc_timeout)
      : stub_(v2::Bigtable::NewStub(std::move(channel))),
        table_name_(target.TableName()),
        family_(target.family),
        rpc_timeout_(rpc_timeout) {
    for (int f = 0; f < fields; f++) qualifiers_.push_back(StrCat("field", f));

    read_.set_table_name(table_name_);
    read_.set_rows_limit(1);
    read_.mutable_filter()->set_cells_per_column_limit_filter(1);
    read_.mutable_rows()->add_row_keys();

    scan_.set_table_name(table_name_);
    scan_.mutable_filter()->set_cells_per_column_limit_filter(1);
    scan_.mutable_rows()->add_row_ranges();

    write_.set_table_name(table_name_);
    batch_.set_table_name(table_name_);
    ping_.set_name(target.InstanceName());
  }

  StatusOr<int> Read(std::string_view key) override {
    read_.mutable_rows()->set_row_keys(0, std::string(key));
    int cells = 0;
    RETURN_IF_ERROR(RunReadRows(read_, &cells, nullptr));
    return cells;
  }

  StatusOr<int> Scan(std::string_view start_key, int max_rows) override {
    scan_.mutable_rows()->mutable_row_ranges(0)->set_start_key_closed(std::string(start_key));
    scan_.set_rows_limit(max_rows);
    int rows = 0;
    RETURN_IF_ERROR(RunReadRows(scan_, nullptr, &rows));
    return rows;
  }

  Status Write(std::string_view key, std::span<const FieldWrite> fields) override {
    write_.set_row_key(std::string(key));
    write_.clear_mutations();
    AddSetCells(fields, NowMillisInMicros(), write_.mutable_mutations());
    grpc::ClientContext context;
    context.set_deadline(Deadline(rpc_timeout_));
    v2::MutateRowResponse response;
    return FromGrpc(stub_->MutateRow(&context, write_, &response));
  }

  std::vector<Status> WriteBatch(std::span<const RowWrite> rows) override {
    const int64_t now = NowMillisInMicros();
    batch_.clear_entries();
    for (const RowWrite& row : rows) {
      v2::MutateRowsRequest::Entry* entry = batch_.add_entries();
      entry->set_row_key(std::string(row.key));
      AddSetCells(row.fields, now, entry->mutable_mutations());
    }
    std::vector<Status> statuses(rows.size());
    std::vector<bool> answered(rows.size(), false);
    grpc::ClientContext context;
    context.set_deadline(Deadline(rpc_timeout_));
    std::unique_ptr<grpc::ClientReader<v2::MutateRowsResponse>> reader =
        stub_->MutateRows(&context, batch_);
    v2::MutateRowsResponse response;
    Status bad_answer;
    while (reader->Read(&response)) {
      for (const v2::MutateRowsResponse::Entry& e : response.entries()) {
        if (e.index() < 0 || static_cast<size_t>(e.index()) >= rows.size()) {
          bad_answer = absl::InternalError(
              StrCat("MutateRows answered for entry ", e.index(), " of ", rows.size()));
          continue;
        }
        answered[e.index()] = true;
        statuses[e.index()] =
            Status(static_cast<absl::StatusCode>(e.status().code()), e.status().message());
      }
    }
    Status stream = FromGrpc(reader->Finish());
    if (stream.ok() && !bad_answer.ok()) stream = bad_answer;
    for (size_t i = 0; i < rows.size(); i++) {
      if (!stream.ok()) {
        // A failed stream leaves entries without an answer; they may or may not be written.
        if (!answered[i] || statuses[i].ok()) statuses[i] = stream;
      } else if (!answered[i]) {
        statuses[i] = absl::InternalError("MutateRows ended without a status for this entry");
      }
    }
    return statuses;
  }

  Status Ping() override {
    grpc::ClientContext context;
    context.set_deadline(Deadline(rpc_timeout_));
    v2::PingAndWarmResponse response;
    return FromGrpc(stub_->PingAndWarm(&context, ping_, &response));
  }

 private:
  // Milliseconds since the epoch, in microseconds: what a MILLIS-granularity table accepts.
  static int64_t NowMillisInMicros() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::milliseconds>(now).count() * 1000;
  }

  void AddSetCells(std::span<const FieldWrite> fields, int64_t timestamp,
                   google::protobuf::RepeatedPtrField<v2::Mutation>* out) const {
    for (const FieldWrite& f : fields) {
      v2::Mutation::SetCell* cell = out->Add()->mutable_set_cell();
      cell->set_family_name(family_);
      cell->set_column_qualifier(qualifiers_[f.index]);
      cell->set_timestamp_micros(timestamp);
      cell->set_value(std::string(f.value));
    }
  }

  // Runs one ReadRows and counts what it returns: the cells of committed rows into *cells and
  // the committed rows into *rows (either may be null).
  Status RunReadRows(const v2::ReadRowsRequest& request, int* cells, int* rows) {
    grpc::ClientContext context;
    context.set_deadline(Deadline(rpc_timeout_));
    std::unique_ptr<grpc::ClientReader<v2::ReadRowsResponse>> reader =
        stub_->ReadRows(&context, request);
    int committed_cells = 0;
    int committed_rows = 0;
    int row_cells = 0;
    while (reader->Read(&response_)) {
      for (const v2::ReadRowsResponse::CellChunk& chunk : response_.chunks()) {
        if (chunk.reset_row()) {
          row_cells = 0;
          continue;
        }
        if (chunk.value_size() == 0) row_cells++;  // the last chunk of a cell
        if (chunk.commit_row()) {
          committed_cells += row_cells;
          committed_rows++;
          row_cells = 0;
        }
      }
    }
    RETURN_IF_ERROR(FromGrpc(reader->Finish()));
    if (cells != nullptr) *cells = committed_cells;
    if (rows != nullptr) *rows = committed_rows;
    return Status();
  }

  const std::unique_ptr<v2::Bigtable::Stub> stub_;
  const std::string table_name_;
  const std::string family_;
  const std::chrono::milliseconds rpc_timeout_;
  std::vector<std::string> qualifiers_;  // "field0", "field1", ...
  // Requests and a response reused from call to call.
  v2::ReadRowsRequest read_;
  v2::ReadRowsRequest scan_;
  v2::ReadRowsResponse response_;
  v2::MutateRowRequest write_;
  v2::MutateRowsRequest batch_;
  v2::PingAndWarmRequest ping_;
};

}  // namespace

std::string BigtableTarget::InstanceName() const {
  return StrCat("projects/", project, "/instances/", instance);
}

std::string BigtableTarget::TableName() const { return StrCat(InstanceName(), "/tables/", table); }

ChannelPool::ChannelPool(std::vector<std::string> endpoints, int per_endpoint)
    : endpoints_(std::move(endpoints)), per_endpoint_(per_endpoint) {
  for (const std::string& endpoint : endpoints_) {
    for (int i = 0; i < per_endpoint_; i++) {
      grpc::ChannelArguments args;
      // Without a local subchannel pool, channels with equal arguments share one connection.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("tessera.bench.channel_index", i);
      args.SetMaxReceiveMessageSize(-1);
      args.SetMaxSendMessageSize(-1);
      channels_.push_back(NewChannel(endpoint, args));
    }
  }
}

size_t ChannelPool::Index(int i) const {
  const size_t n = endpoints_.size();
  const size_t k = static_cast<size_t>(per_endpoint_);
  return (i % n) * k + (i / n) % k;
}

Status ChannelPool::WaitConnected(std::chrono::milliseconds timeout) {
  const auto deadline = Deadline(timeout);
  for (size_t i = 0; i < channels_.size(); i++) {
    if (!channels_[i]->WaitForConnected(deadline)) {
      const size_t k = static_cast<size_t>(per_endpoint_);
      return absl::UnavailableError(StrCat("cannot connect to ", endpoints_[i / k], " within ",
                                           timeout.count(), " ms (channel ", i % k, ")"));
    }
  }
  return Status();
}

Status EnsureTable(const std::shared_ptr<grpc::Channel>& channel, const BigtableTarget& target,
                   const std::vector<std::string>& splits, std::chrono::milliseconds timeout) {
  std::unique_ptr<admin::BigtableTableAdmin::Stub> stub =
      admin::BigtableTableAdmin::NewStub(channel);
  {
    grpc::ClientContext context;
    context.set_deadline(Deadline(timeout));
    admin::GetTableRequest request;
    request.set_name(target.TableName());
    request.set_view(admin::Table::SCHEMA_VIEW);
    admin::Table table;
    const grpc::Status s = stub->GetTable(&context, request, &table);
    if (s.ok()) {
      if (table.column_families().contains(target.family)) return Status();
      return absl::FailedPreconditionError(StrCat("table ", target.TableName(),
                                                  " exists without family \"", target.family,
                                                  "\"; choose another --table or --family"));
    }
    if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
      return Annotate(FromGrpc(s), StrCat("GetTable ", target.TableName()));
    }
  }
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  admin::CreateTableRequest request;
  request.set_parent(target.InstanceName());
  request.set_table_id(target.table);
  admin::ColumnFamily& family =
      (*request.mutable_table()->mutable_column_families())[target.family];
  family.mutable_gc_rule()->set_max_num_versions(1);
  for (const std::string& key : splits) request.add_initial_splits()->set_key(key);
  admin::Table created;
  const grpc::Status s = stub->CreateTable(&context, request, &created);
  if (s.ok() || s.error_code() == grpc::StatusCode::ALREADY_EXISTS) return Status();
  return Annotate(FromGrpc(s), StrCat("CreateTable ", target.TableName()));
}

std::unique_ptr<YcsbDb> NewBigtableDb(std::shared_ptr<grpc::Channel> channel,
                                      const BigtableTarget& target, int fields,
                                      std::chrono::milliseconds rpc_timeout) {
  return std::make_unique<BigtableDb>(std::move(channel), target, fields, rpc_timeout);
}

}  // namespace tessera::cli::ycsb
