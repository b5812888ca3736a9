// The Bigtable table-admin service (google.bigtable.admin.v2.BigtableTableAdmin) over the
// catalog::TableCatalog: CreateTable (families, GC rules, initial splits, Tessera's table
// options: placement and consistency levels), ListTables (views,
// paging), GetTable, UpdateTable (deletion_protection), DeleteTable, ModifyColumnFamilies (create,
// update GC rule, drop — a dropped family's data is gone for good), DropRowRange (a prefix or
// every row), GenerateConsistencyToken / CheckConsistency. Methods not declared here answer
// UNIMPLEMENTED naming the RPC (the server's fallback, unimplemented_service.h).
//
// Errors use the codes production Bigtable uses: NOT_FOUND for a missing table or family,
// ALREADY_EXISTS, FAILED_PRECONDITION for deletion protection, INVALID_ARGUMENT for bad names,
// rules and requests — each message names what is wrong.
//
// Changes of table definitions (CreateTable, DeleteTable, UpdateTable, ModifyColumnFamilies) go
// to a catalog::TableDefinitions: the catalog itself in single-node mode, the ClusterSchema
// (decided in the lock service, mirrored into the catalog) in cluster mode. Reads and row
// operations (GetTable, ListTables, DropRowRange, consistency tokens) use the local catalog.
//
// Consistency tokens (docs/replication.md, "Consistency tokens"; replication/
// consistency_token.h): a replicated table's token names each tablet's primary's last
// sequence, and CheckConsistency asks every replica (replication::ConsistencyTokens). A table
// that is not replicated (a single node, or a node's own table) gets a version-1 token, which
// is consistent at once, as is every version-1 token.
//
// Thread-safety: the handlers run concurrently; all state is in the catalog (and the
// definitions). Handlers run on the executor given to Register and block on engine I/O (schema
// changes are rare and small) and, in cluster mode, on the lock service and other nodes.
#pragma once

#include <functional>
#include <string>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "tessera/catalog/ring_store.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/catalog/table_definitions.h"
#include "tessera/catalog/table_placement.h"
#include "tessera/replication/consistency_tokens.h"
#include "tessera/replication/table_access.h"
#include "tessera/rpc/server.h"
#include "tessera/server/access_control.h"
#include "tessera/util/executor.h"

namespace tessera::server {

// What CreateTable resolves a new table's placement against (catalog/table_placement.h).
struct PlacementDefaults {
  // The node's default for tables that name none (`tessera serve --placement`): a strategy
  // alone or a whole policy.
  std::string placement = std::string(catalog::kDefaultPlacement);
  // The cluster's live nodes and ring tokens, now (the node's catalog::RingStore). Unset: this
  // node alone, with no token (a service built without a cluster, as in unit tests).
  std::function<StatusOr<catalog::ClusterView>()> cluster;
};

class AdminService final {
 public:
  using Admin = ::google::bigtable::admin::v2::BigtableTableAdmin;

  // All must outlive the service. `access` is the one the data service uses, so that
  // DropRowRange's row deletes are ordered with CheckAndMutateRow / ReadModifyWriteRow.
  // `definitions` decides table changes; nullptr means the catalog (single-node mode). In
  // cluster mode it is the ClusterSchema that mirrors into `catalog`, and DropRowRange of all
  // data deletes row by row through `access` instead of truncating this node's tablets.
  // `serving_check` is asked before every gRPC call (not before the Do* methods); a non-OK
  // status is the call's answer (a cluster node answers Unavailable while it has no
  // lock-service session). Unset: always serving.
  // `tokens`, set on a node whose tables are replicated, gives the node's ConsistencyTokens,
  // or null while replication has not begun (the token calls then answer Unavailable). With
  // it, the token calls wait for other nodes: call the Do* methods from a thread that may
  // block, never from a task of the executor the replication runs on. Unset: no replication.
  // `placement` gives CreateTable the defaults and the cluster that a new table's
  // tessera_options.placement is resolved against.
  AdminService(catalog::TableCatalog* catalog, replication::TableAccess* access,
               catalog::TableDefinitions* definitions = nullptr,
               std::function<Status()> serving_check = nullptr,
               std::function<replication::ConsistencyTokens*()> tokens = nullptr,
               PlacementDefaults placement = {})
      : catalog_(catalog),
        access_(access),
        definitions_(definitions != nullptr ? definitions : catalog),
        cluster_mode_(definitions != nullptr),
        serving_check_(std::move(serving_check)),
        tokens_(std::move(tokens)),
        placement_(std::move(placement)) {}

  // With --auth: ListTables leaves out the tables the call's principal holds nothing on (the
  // AuthGate checks every other method before it runs). Null (the default): no filtering.
  // Call before Register; `access` must outlive the service.
  void set_access_control(const AccessControl* access) { access_control_ = access; }

  // Registers every method of BigtableTableAdmin; the handlers run on `executor`, since they
  // wait for the engine, the lock service and other nodes.
  void Register(rpc::Services* services, Executor* executor);

  rpc::UnaryReactor* CreateTable(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::CreateTableRequest* request,
      ::google::bigtable::admin::v2::Table* response);
  rpc::UnaryReactor* ListTables(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::ListTablesRequest* request,
      ::google::bigtable::admin::v2::ListTablesResponse* response);
  rpc::UnaryReactor* GetTable(rpc::ServerContext* context,
                                     const ::google::bigtable::admin::v2::GetTableRequest* request,
                                     ::google::bigtable::admin::v2::Table* response);
  rpc::UnaryReactor* UpdateTable(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::UpdateTableRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* DeleteTable(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::DeleteTableRequest* request,
      ::google::protobuf::Empty* response);
  rpc::UnaryReactor* ModifyColumnFamilies(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::ModifyColumnFamiliesRequest* request,
      ::google::bigtable::admin::v2::Table* response);
  rpc::UnaryReactor* DropRowRange(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::DropRowRangeRequest* request,
      ::google::protobuf::Empty* response);
  rpc::UnaryReactor* GenerateConsistencyToken(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::GenerateConsistencyTokenRequest* request,
      ::google::bigtable::admin::v2::GenerateConsistencyTokenResponse* response);
  rpc::UnaryReactor* CheckConsistency(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::CheckConsistencyRequest* request,
      ::google::bigtable::admin::v2::CheckConsistencyResponse* response);

  // The handlers' logic, callable without gRPC (tests, the shell's embedded mode).
  StatusOr<::google::bigtable::admin::v2::Table> DoCreateTable(
      const ::google::bigtable::admin::v2::CreateTableRequest& request);
  // `principal`: with access control, only the tables it may read.
  StatusOr<::google::bigtable::admin::v2::ListTablesResponse> DoListTables(
      const ::google::bigtable::admin::v2::ListTablesRequest& request,
      std::string_view principal = "");
  StatusOr<::google::bigtable::admin::v2::Table> DoGetTable(
      const ::google::bigtable::admin::v2::GetTableRequest& request);
  StatusOr<::google::longrunning::Operation> DoUpdateTable(
      const ::google::bigtable::admin::v2::UpdateTableRequest& request);
  Status DoDeleteTable(const ::google::bigtable::admin::v2::DeleteTableRequest& request);
  StatusOr<::google::bigtable::admin::v2::Table> DoModifyColumnFamilies(
      const ::google::bigtable::admin::v2::ModifyColumnFamiliesRequest& request);
  Status DoDropRowRange(const ::google::bigtable::admin::v2::DropRowRangeRequest& request);
  StatusOr<::google::bigtable::admin::v2::GenerateConsistencyTokenResponse>
  DoGenerateConsistencyToken(
      const ::google::bigtable::admin::v2::GenerateConsistencyTokenRequest& request);
  StatusOr<::google::bigtable::admin::v2::CheckConsistencyResponse> DoCheckConsistency(
      const ::google::bigtable::admin::v2::CheckConsistencyRequest& request);

 private:
  Status CheckServing() const;
  const AccessControl* access_control_ = nullptr;
  // The ConsistencyTokens for `table` when its tablets are replicated; null when they are not
  // (version-1 tokens). Unavailable while the node's replication has not begun.
  StatusOr<replication::ConsistencyTokens*> TokensFor(const catalog::TableInfo& table) const;
  // CreateTable's tessera_options, checked and resolved into `schema->options`; the ring's
  // tokens are added to `splits` for a ring table.
  Status ResolveTableOptions(const ::tessera::v1::TableOptions& options, model::TableSchema* schema,
                             std::vector<std::string>* splits) const;

  catalog::TableCatalog* const catalog_;
  replication::TableAccess* const access_;
  catalog::TableDefinitions* const definitions_;
  const bool cluster_mode_;  // definitions were given: DropRowRange goes through access_ only
  const std::function<Status()> serving_check_;
  const std::function<replication::ConsistencyTokens*()> tokens_;
  const PlacementDefaults placement_;
};

}  // namespace tessera::server
