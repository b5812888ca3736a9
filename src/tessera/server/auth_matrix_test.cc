// The access-control matrix of docs/auth.md, through a real server with --auth in this
// process: principals (a file admin, a table reader, a family-limited writer, a table admin, a
// principal without grants, no token, an unknown token) × RPCs of the data, table-admin,
// instance-admin and Tessera admin services, each with the code it must get. Then: ListTables
// shows each principal what it holds something on, a revoke applies at once, and a refused
// MutateRows entry fails alone.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/server/server.h"
#include "tessera/v1/access_admin.grpc.pb.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::server {
namespace {

namespace v2 = ::google::bigtable::v2;
namespace admin = ::google::bigtable::admin::v2;
namespace v1 = ::tessera::v1;
using Code = grpc::StatusCode;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kT1[] = "projects/p/instances/i/tables/t1";
constexpr char kT2[] = "projects/p/instances/i/tables/t2";
constexpr char kRootToken[] = "root-token-0123456789abcdef";

class AuthMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/auth_matrix_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string tokens = dir_ + "/tokens";
    std::ofstream(tokens) << "root " << kRootToken << " admin\n";
    std::filesystem::permissions(
        tokens, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.http_listen = "";
    options.engine.dir = dir_ + "/data";
    options.worker_threads = 2;
    options.auth = true;
    options.auth_tokens_file = tokens;
    auto server = Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());

    // Tables t1 (cf1, cf2) and t2 (cf1), by the file's admin.
    for (const char* id : {"t1", "t2"}) {
      admin::CreateTableRequest create;
      create.set_parent(kInstance);
      create.set_table_id(id);
      (*create.mutable_table()->mutable_column_families())["cf1"];
      if (std::string(id) == "t1") (*create.mutable_table()->mutable_column_families())["cf2"];
      admin::Table table;
      auto ctx = Context(kRootToken);
      ASSERT_TRUE(TableAdmin()->CreateTable(ctx.get(), create, &table).ok());
    }
    // The principals, their tokens and grants.
    for (const char* p : {"reader", "cfwriter", "tadmin", "nobody"}) tokens_[p] = AddToken(p);
    Grant("reader", "read", kT1);
    Grant("cfwriter", "read,write", std::string(kT1) + "/families/cf1");
    Grant("tadmin", "admin", kT1);
    tokens_["root"] = kRootToken;
    tokens_["(none)"] = "";
    tokens_["(unknown)"] = "not-a-token-anyone-has";
  }
  void TearDown() override {
    if (server_ != nullptr) ASSERT_TRUE(server_->Shutdown().ok());
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& token) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
    return ctx;
  }
  std::unique_ptr<v2::Bigtable::Stub> Data() { return v2::Bigtable::NewStub(channel_); }
  std::unique_ptr<admin::BigtableTableAdmin::Stub> TableAdmin() {
    return admin::BigtableTableAdmin::NewStub(channel_);
  }
  std::unique_ptr<v1::AccessAdmin::Stub> Access() { return v1::AccessAdmin::NewStub(channel_); }

  std::string AddToken(const std::string& principal) {
    v1::AddTokenRequest request;
    request.set_principal(principal);
    v1::AddTokenResponse response;
    auto ctx = Context(kRootToken);
    grpc::Status s = Access()->AddToken(ctx.get(), request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.token();
  }
  grpc::Status ChangeGrant(bool grant, const std::string& principal, const std::string& permissions,
                           const std::string& resource) {
    v1::GrantRequest request;
    request.set_principal(principal);
    request.set_permissions(permissions);
    request.set_resource(resource);
    v1::GrantResponse response;
    auto ctx = Context(kRootToken);
    return grant ? Access()->Grant(ctx.get(), request, &response)
                 : Access()->Revoke(ctx.get(), request, &response);
  }
  void Grant(const std::string& principal, const std::string& permissions,
             const std::string& resource) {
    grpc::Status s = ChangeGrant(true, principal, permissions, resource);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // ReadRows of `table`, filtered to `family` unless empty: the call's code.
  Code Read(const std::string& token, const std::string& table, const std::string& family) {
    v2::ReadRowsRequest request;
    request.set_table_name(table);
    if (!family.empty()) request.mutable_filter()->set_family_name_regex_filter(family);
    auto ctx = Context(token);
    auto reader = Data()->ReadRows(ctx.get(), request);
    v2::ReadRowsResponse response;
    while (reader->Read(&response)) {
    }
    return reader->Finish().error_code();
  }
  v2::Mutation Set(const std::string& family) {
    v2::Mutation m;
    m.mutable_set_cell()->set_family_name(family);
    m.mutable_set_cell()->set_column_qualifier("q");
    m.mutable_set_cell()->set_value("v");
    m.mutable_set_cell()->set_timestamp_micros(1000);
    return m;
  }
  Code MutateOne(const std::string& token, const v2::Mutation& m) {
    v2::MutateRowRequest request;
    request.set_table_name(kT1);
    request.set_row_key("r1");
    *request.add_mutations() = m;
    v2::MutateRowResponse response;
    auto ctx = Context(token);
    return Data()->MutateRow(ctx.get(), request, &response).error_code();
  }
  // MutateRows of t1 with an entry on cf1 and one on cf2: the call's code, then each entry's.
  std::vector<int> MutateTwo(const std::string& token) {
    v2::MutateRowsRequest request;
    request.set_table_name(kT1);
    for (const char* family : {"cf1", "cf2"}) {
      v2::MutateRowsRequest::Entry* e = request.add_entries();
      e->set_row_key(std::string("row-") + family);
      *e->add_mutations() = Set(family);
    }
    auto ctx = Context(token);
    auto reader = Data()->MutateRows(ctx.get(), request);
    std::vector<int> codes(3, -1);
    v2::MutateRowsResponse response;
    while (reader->Read(&response)) {
      for (const auto& e : response.entries()) codes[1 + e.index()] = e.status().code();
    }
    codes[0] = reader->Finish().error_code();
    return codes;
  }

  std::string dir_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(AuthMatrixTest, EveryPrincipalGetsTheCodeDocsAuthMdPromises) {
  struct Rpc {
    std::string name;
    std::function<Code(const std::string& principal, const std::string& token)> call;
  };
  const std::vector<Rpc> rpcs = {
      {"ReadRows t1", [&](auto&, auto& t) { return Read(t, kT1, ""); }},
      {"ReadRows t1 cf1", [&](auto&, auto& t) { return Read(t, kT1, "cf1"); }},
      {"ReadRows t2", [&](auto&, auto& t) { return Read(t, kT2, ""); }},
      {"SampleRowKeys t1",
       [&](auto&, auto& t) {
         v2::SampleRowKeysRequest request;
         request.set_table_name(kT1);
         auto ctx = Context(t);
         auto reader = Data()->SampleRowKeys(ctx.get(), request);
         v2::SampleRowKeysResponse response;
         while (reader->Read(&response)) {
         }
         return reader->Finish().error_code();
       }},
      {"MutateRow cf1", [&](auto&, auto& t) { return MutateOne(t, Set("cf1")); }},
      {"MutateRow cf2", [&](auto&, auto& t) { return MutateOne(t, Set("cf2")); }},
      {"MutateRow DeleteFromRow",
       [&](auto&, auto& t) {
         v2::Mutation m;
         m.mutable_delete_from_row();
         return MutateOne(t, m);
       }},
      {"CheckAndMutate cf1",
       [&](auto&, auto& t) {
         v2::CheckAndMutateRowRequest request;
         request.set_table_name(kT1);
         request.set_row_key("r1");
         request.mutable_predicate_filter()->set_family_name_regex_filter("cf1");
         *request.add_true_mutations() = Set("cf1");
         v2::CheckAndMutateRowResponse response;
         auto ctx = Context(t);
         return Data()->CheckAndMutateRow(ctx.get(), request, &response).error_code();
       }},
      {"ReadModifyWrite cf1",
       [&](auto&, auto& t) {
         v2::ReadModifyWriteRowRequest request;
         request.set_table_name(kT1);
         request.set_row_key("r2");
         auto* rule = request.add_rules();
         rule->set_family_name("cf1");
         rule->set_column_qualifier("n");
         rule->set_append_value("x");
         v2::ReadModifyWriteRowResponse response;
         auto ctx = Context(t);
         return Data()->ReadModifyWriteRow(ctx.get(), request, &response).error_code();
       }},
      {"PingAndWarm",
       [&](auto&, auto& t) {
         v2::PingAndWarmRequest request;
         request.set_name(kInstance);
         v2::PingAndWarmResponse response;
         auto ctx = Context(t);
         return Data()->PingAndWarm(ctx.get(), request, &response).error_code();
       }},
      {"CreateTable",
       [&](auto& p, auto& t) {
         admin::CreateTableRequest request;
         request.set_parent(kInstance);
         request.set_table_id("new_" + std::to_string(std::hash<std::string>()(p) % 100000));
         admin::Table table;
         auto ctx = Context(t);
         return TableAdmin()->CreateTable(ctx.get(), request, &table).error_code();
       }},
      {"GetTable t1",
       [&](auto&, auto& t) {
         admin::GetTableRequest request;
         request.set_name(kT1);
         admin::Table table;
         auto ctx = Context(t);
         return TableAdmin()->GetTable(ctx.get(), request, &table).error_code();
       }},
      {"ModifyColumnFamilies t1",
       [&](auto&, auto& t) {
         admin::ModifyColumnFamiliesRequest request;
         request.set_name(kT1);
         auto* m = request.add_modifications();
         m->set_id("cf2");
         m->mutable_update()->mutable_gc_rule()->set_max_num_versions(5);
         admin::Table table;
         auto ctx = Context(t);
         return TableAdmin()->ModifyColumnFamilies(ctx.get(), request, &table).error_code();
       }},
      {"DropRowRange t2",
       [&](auto&, auto& t) {
         admin::DropRowRangeRequest request;
         request.set_name(kT2);
         request.set_row_key_prefix("zzz");
         google::protobuf::Empty empty;
         auto ctx = Context(t);
         return TableAdmin()->DropRowRange(ctx.get(), request, &empty).error_code();
       }},
      {"GetInstance",
       [&](auto&, auto& t) {
         admin::GetInstanceRequest request;
         request.set_name(kInstance);
         admin::Instance instance;
         auto ctx = Context(t);
         return admin::BigtableInstanceAdmin::NewStub(channel_)
             ->GetInstance(ctx.get(), request, &instance)
             .error_code();
       }},
      {"NodeAdmin GetNodeInfo",
       [&](auto&, auto& t) {
         v1::NodeInfo info;
         auto ctx = Context(t);
         return v1::NodeAdmin::NewStub(channel_)
             ->GetNodeInfo(ctx.get(), v1::GetNodeInfoRequest(), &info)
             .error_code();
       }},
      {"AccessAdmin ListPrincipals",
       [&](auto&, auto& t) {
         v1::ListPrincipalsResponse response;
         auto ctx = Context(t);
         return Access()
             ->ListPrincipals(ctx.get(), v1::ListPrincipalsRequest(), &response)
             .error_code();
       }},
  };
  // One letter per RPC, in the order above: O = OK, P = PERMISSION_DENIED,
  // U = UNAUTHENTICATED.
  const std::map<std::string, std::string> expected = {
      //            ReadRows t1, t1 cf1, t2; SampleRowKeys; MutateRow cf1, cf2, row;
      //            CheckAndMutate; RMW; Ping; CreateTable; GetTable; Modify; Drop; GetInstance;
      //            NodeAdmin; AccessAdmin
      {"root", /*      */ "OOO"
                          "O"
                          "OOO"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"
                          "O"},
      {"reader", /*    */ "OOP"
                          "O"
                          "PPP"
                          "P"
                          "P"
                          "O"
                          "P"
                          "O"
                          "P"
                          "P"
                          "O"
                          "P"
                          "P"},
      {"cfwriter", /*  */ "POP"
                          "P"
                          "OPP"
                          "O"
                          "O"
                          "O"
                          "P"
                          "O"
                          "P"
                          "P"
                          "O"
                          "P"
                          "P"},
      {"tadmin", /*    */ "PPP"
                          "P"
                          "PPP"
                          "P"
                          "P"
                          "O"
                          "P"
                          "O"
                          "O"
                          "P"
                          "O"
                          "P"
                          "P"},
      {"nobody", /*    */ "PPP"
                          "P"
                          "PPP"
                          "P"
                          "P"
                          "O"
                          "P"
                          "P"
                          "P"
                          "P"
                          "O"
                          "P"
                          "P"},
      {"(none)", /*    */ "UUU"
                          "U"
                          "UUU"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"},
      {"(unknown)", /* */ "UUU"
                          "U"
                          "UUU"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"
                          "U"},
  };
  const std::map<Code, char> letter = {
      {Code::OK, 'O'}, {Code::PERMISSION_DENIED, 'P'}, {Code::UNAUTHENTICATED, 'U'}};
  int cells = 0;
  for (const auto& [principal, want] : expected) {
    ASSERT_EQ(want.size(), rpcs.size()) << principal;
    std::string got;
    for (const Rpc& rpc : rpcs) {
      const Code code = rpc.call(principal, tokens_.at(principal));
      got += letter.contains(code) ? letter.at(code) : '?';
      ++cells;
    }
    EXPECT_EQ(got, want) << principal << " (RPCs in order: ReadRows t1, t1 cf1, t2, "
                         << "SampleRowKeys, MutateRow cf1, cf2, DeleteFromRow, CheckAndMutate, "
                         << "RMW, Ping, CreateTable, GetTable, Modify, DropRowRange, "
                         << "GetInstance, NodeAdmin, AccessAdmin)";
  }
  EXPECT_EQ(cells, 7 * 17);
}

TEST_F(AuthMatrixTest, ARefusedMutateRowsEntryFailsAlone) {
  EXPECT_EQ(MutateTwo(tokens_["cfwriter"]),
            (std::vector<int>{0, 0, static_cast<int>(Code::PERMISSION_DENIED)}));
  EXPECT_EQ(MutateTwo(tokens_["root"]), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(MutateTwo(tokens_["reader"]),
            (std::vector<int>{0, static_cast<int>(Code::PERMISSION_DENIED),
                              static_cast<int>(Code::PERMISSION_DENIED)}));
}

TEST_F(AuthMatrixTest, ListTablesShowsWhatAPrincipalHoldsSomethingOn) {
  auto list = [&](const std::string& principal) {
    admin::ListTablesRequest request;
    request.set_parent(kInstance);
    admin::ListTablesResponse response;
    auto ctx = Context(tokens_.at(principal));
    grpc::Status s = TableAdmin()->ListTables(ctx.get(), request, &response);
    EXPECT_TRUE(s.ok()) << principal << ": " << s.error_message();
    std::set<std::string> names;
    for (const auto& t : response.tables()) names.insert(t.name());
    return names;
  };
  EXPECT_EQ(list("root"), (std::set<std::string>{kT1, kT2}));
  EXPECT_EQ(list("reader"), (std::set<std::string>{kT1}));
  EXPECT_EQ(list("cfwriter"), (std::set<std::string>{kT1}));  // a family grant shows the table
  EXPECT_EQ(list("nobody"), (std::set<std::string>{}));
}

TEST_F(AuthMatrixTest, GrantsAndRevokesApplyToTheNextCall) {
  const std::string& reader = tokens_["reader"];
  EXPECT_EQ(Read(reader, kT2, ""), Code::PERMISSION_DENIED);
  Grant("reader", "read", kInstance);
  EXPECT_EQ(Read(reader, kT2, ""), Code::OK);  // an instance grant covers its tables
  ASSERT_TRUE(ChangeGrant(false, "reader", "read", kInstance).ok());
  ASSERT_TRUE(ChangeGrant(false, "reader", "read", kT1).ok());
  EXPECT_EQ(Read(reader, kT1, ""), Code::PERMISSION_DENIED);
  grpc::Status again = ChangeGrant(false, "reader", "read", kT1);
  EXPECT_EQ(again.error_code(), Code::NOT_FOUND) << again.error_message();
  grpc::Status bad = ChangeGrant(true, "reader", "delete", kT1);
  EXPECT_EQ(bad.error_code(), Code::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("delete"), std::string::npos);
  // Tokens removed stop working at once.
  v1::RemoveTokensRequest request;
  request.set_principal("reader");
  v1::RemoveTokensResponse response;
  auto ctx = Context(kRootToken);
  ASSERT_TRUE(Access()->RemoveTokens(ctx.get(), request, &response).ok());
  EXPECT_EQ(response.removed(), 1);
  EXPECT_EQ(Read(reader, kT1, ""), Code::UNAUTHENTICATED);
}

TEST_F(AuthMatrixTest, RefusalsNameThePrincipalThePermissionAndTheResource) {
  v2::MutateRowRequest request;
  request.set_table_name(kT1);
  request.set_row_key("r1");
  *request.add_mutations() = Set("cf2");
  v2::MutateRowResponse response;
  auto ctx = Context(tokens_["cfwriter"]);
  grpc::Status s = Data()->MutateRow(ctx.get(), request, &response);
  EXPECT_EQ(s.error_code(), Code::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "principal cfwriter lacks write on projects/p/instances/i/tables/t1/families/cf2");
  auto none = Context("");
  s = Data()->MutateRow(none.get(), request, &response);
  EXPECT_EQ(s.error_code(), Code::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("bearer token"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace tessera::server
