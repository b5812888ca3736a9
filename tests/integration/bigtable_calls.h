// Test-only: single Bigtable calls against table r of instance projects/p/instances/i (family
// cf, one version kept, two tablets split at "m"), as the cluster process tests make them
// (replication_process_test.cc, chaos_process_test.cc): a one-cell write, a one-row read, the
// table's creation, and which failures a Bigtable client retries.
//
// The Stub overloads reuse the caller's channel (a load of thousands of calls); the
// ServerProcess overloads open a fresh channel per call (a handful of checks).
//
// Thread-safety: every function may be called from any thread; stubs are gRPC's (thread-safe).
#pragma once

#include <chrono>
#include <string>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server_process.h"
#include "tessera/util/status.h"

namespace tessera::integration {

inline constexpr char kTableName[] = "projects/p/instances/i/tables/r";
inline constexpr std::chrono::milliseconds kCallTimeout{3000};

// Sets cf:q of `key` in table `table_name` (a full name) to `value` at timestamp 1000 (a fixed
// timestamp: repeating the write changes nothing, so a client may retry it).
inline grpc::Status WriteCell(google::bigtable::v2::Bigtable::Stub& stub,
                              const std::string& table_name, const std::string& key,
                              const std::string& value, const std::string& app_profile,
                              std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  google::bigtable::v2::MutateRowRequest req;
  req.set_table_name(table_name);
  req.set_app_profile_id(app_profile);
  req.set_row_key(key);
  auto* set = req.add_mutations()->mutable_set_cell();
  set->set_family_name("cf");
  set->set_column_qualifier("q");
  set->set_timestamp_micros(1000);
  set->set_value(value);
  google::bigtable::v2::MutateRowResponse resp;
  return stub.MutateRow(&ctx, req, &resp);
}

// WriteCell in table r.
inline grpc::Status WriteRow(google::bigtable::v2::Bigtable::Stub& stub, const std::string& key,
                             const std::string& value, const std::string& app_profile = "",
                             std::chrono::milliseconds timeout = kCallTimeout) {
  return WriteCell(stub, kTableName, key, value, app_profile, timeout);
}

inline grpc::Status WriteRow(const ServerProcess& node, const std::string& key,
                             const std::string& value, const std::string& app_profile = "") {
  auto stub = google::bigtable::v2::Bigtable::NewStub(node.NewChannel());
  return WriteRow(*stub, key, value, app_profile);
}

// The value of `key` in table `table_name` (its cells' values concatenated), "" when the row
// is absent; the status when the read failed.
inline StatusOr<std::string> ReadCells(google::bigtable::v2::Bigtable::Stub& stub,
                                       const std::string& table_name, const std::string& key,
                                       const std::string& app_profile,
                                       std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  google::bigtable::v2::ReadRowsRequest req;
  req.set_table_name(table_name);
  req.set_app_profile_id(app_profile);
  req.mutable_rows()->add_row_keys(key);
  auto reader = stub.ReadRows(&ctx, req);
  google::bigtable::v2::ReadRowsResponse resp;
  std::string value;
  while (reader->Read(&resp)) {
    for (const auto& chunk : resp.chunks()) value += chunk.value();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return value;
}

// ReadCells in table r (one cell per row there).
inline StatusOr<std::string> ReadRow(google::bigtable::v2::Bigtable::Stub& stub,
                                     const std::string& key, const std::string& app_profile = "",
                                     std::chrono::milliseconds timeout = kCallTimeout) {
  return ReadCells(stub, kTableName, key, app_profile, timeout);
}

inline StatusOr<std::string> ReadRow(const ServerProcess& node, const std::string& key,
                                     const std::string& app_profile = "") {
  auto stub = google::bigtable::v2::Bigtable::NewStub(node.NewChannel());
  return ReadRow(*stub, key, app_profile);
}

// Table r (family cf, one version kept) in two tablets split at "m", made through `node`.
inline grpc::Status CreateTableR(const ServerProcess& node) {
  auto stub = google::bigtable::admin::v2::BigtableTableAdmin::NewStub(node.NewChannel());
  grpc::ClientContext ctx;
  google::bigtable::admin::v2::CreateTableRequest req;
  req.set_parent("projects/p/instances/i");
  req.set_table_id("r");
  (*req.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(
      1);
  req.add_initial_splits()->set_key("m");
  google::bigtable::admin::v2::Table created;
  return stub->CreateTable(&ctx, req, &created);
}

// What the Bigtable clients retry, on another node, for an idempotent call.
inline bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace tessera::integration
