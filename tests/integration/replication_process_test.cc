// The distributed store with real processes (docs/replication.md, "How it will be tested"):
// etcd and three `tessera serve` on 127.0.0.1. A table made through node 0 is written through
// node 1 and read through node 2; killing (kill -9) a node under writes loses no acknowledged
// row, and a client that retries UNAVAILABLE and DEADLINE_EXCEEDED on another node within a
// 10 s budget sees every write succeed; the longest stall it saw is printed. `tessera admin
// tablets` shows each tablet's replicas, primary and lag. A consistency token taken through
// one node is reached through another.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::integration {
namespace {

namespace admin = ::google::bigtable::admin::v2;
namespace v2 = ::google::bigtable::v2;
using namespace cluster_testing;  // NOLINT: the fixture and its helpers
using Clock = std::chrono::steady_clock;

TEST_F(ClusterTest, RowsWrittenThroughOneNodeAreReadThroughAnotherAndSurviveAKilledNode) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, std::chrono::milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // The first write waits for the tablets' configurations to reach the nodes.
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*nodes_[1], "first", "1").ok(); },
                      std::chrono::milliseconds(15'000)))
      << FullLog(*nodes_[1]);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto v = ReadRow(*nodes_[i], "first");
    ASSERT_TRUE(v.ok()) << "through node " << i << ": " << v.status();
    EXPECT_EQ(*v, "1") << "through node " << i;
  }
  // Writes through every node, a kill -9 of node 0 in the middle.
  std::vector<std::string> acked;
  double longest_stall_s = 0;
  int failed = 0;
  for (int k = 0; k < 300; ++k) {
    if (k == 100) nodes_[0]->Kill();
    const std::string key = StrCat(k % 2 == 0 ? "a" : "z", k);
    const auto start = Clock::now();
    bool ok = false;
    for (int attempt = 0; !ok && Clock::now() - start < std::chrono::seconds(10); ++attempt) {
      // A client of the Bigtable libraries tries another node on UNAVAILABLE.
      const size_t via = k >= 100 ? 1 + (k + attempt) % 2 : (k + attempt) % 3;
      grpc::Status s = WriteRow(*nodes_[via], key, StrCat("v", k));
      ok = s.ok();
      if (!ok && !Retryable(s)) {
        ADD_FAILURE() << key << " through node " << via << ": " << s.error_message();
        break;
      }
      if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    longest_stall_s = std::max(
        longest_stall_s, std::chrono::duration<double>(Clock::now() - start).count());
    if (ok) {
      acked.push_back(key);
    } else {
      ++failed;
    }
  }
  std::printf("[ stall ] longest write through a killed node's cluster: %.2f s; %d of 300 "
              "writes failed within 10 s\n",
              longest_stall_s, failed);
  EXPECT_EQ(failed, 0);
  // Every acknowledged write reads back through both survivors.
  for (const std::string& key : acked) {
    for (size_t i = 1; i < nodes_.size(); ++i) {
      StatusOr<std::string> v = absl::UnavailableError("not read");
      ASSERT_TRUE(WaitFor(
          [&] {
            v = ReadRow(*nodes_[i], key);
            return v.ok();
          },
          std::chrono::milliseconds(10'000)))
          << key << " through node " << i << ": " << v.status() << "\n"
          << FullLog(*nodes_[i]);
      EXPECT_FALSE(v->empty()) << key << " was acknowledged and is lost (node " << i << ")";
    }
  }
}

// `tessera admin tablets` through node 1 of the cluster: both tablets of r, each on the three
// nodes with one primary, every replica caught up once writes are quiet; --json parses.
TEST_F(ClusterTest, AdminTabletsShowsEveryTabletsReplicasPrimaryAndLag) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, std::chrono::milliseconds(20'000)));
  const grpc::Status created = CreateTableR(*nodes_[0]);
  ASSERT_TRUE(created.ok()) << created.error_message();
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*nodes_[1], "a", "1").ok(); },
                      std::chrono::milliseconds(15'000)))
      << FullLog(*nodes_[1]);
  for (const char* key : {"b", "n", "z"}) ASSERT_TRUE(WriteRow(*nodes_[2], key, "2").ok()) << key;
  std::this_thread::sleep_for(std::chrono::seconds(1));

  const std::string command =
      StrCat(g_tessera_binary, " admin tablets --table r --addr ", nodes_[1]->endpoint());
  // The followers catch up within the quiet second; a loaded machine gets a few more.
  std::string out;
  int exit_code = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        out.clear();
        exit_code = RunCommand(command, &out);
        return exit_code == 0 && Count(out, " lag 0") == 4;  // two followers per tablet
      },
      std::chrono::milliseconds(10'000)))
      << "exit " << exit_code << "\n"
      << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("2 tablets of 1 table in projects/p/instances/i, from 3 of 3 nodes"),
            std::string::npos)
      << out;
  EXPECT_EQ(Count(out, "lag ?"), 0u) << out;

  out.clear();
  ASSERT_EQ(RunCommand(command + " --json", &out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_EQ(j["tablets"].size(), 2u) << out;
  EXPECT_EQ(j["tablets"][0]["end_row"], "m");
  EXPECT_EQ(j["tablets"][1]["start_row"], "m");
  for (const nlohmann::json& t : j["tablets"]) {
    EXPECT_EQ(t["table"], kTableName);
    EXPECT_TRUE(t["primary_acting"].get<bool>()) << t;
    ASSERT_EQ(t["replicas"].size(), 3u) << t;
    int primaries = 0;
    for (const nlohmann::json& r : t["replicas"]) {
      primaries += r["primary"].get<bool>() ? 1 : 0;
      EXPECT_EQ(r["lag"], 0) << t;
      EXPECT_TRUE(r["answering"].get<bool>()) << t;
    }
    EXPECT_EQ(primaries, 1) << t;
  }
  // `admin status` counts them: six replicas over three nodes, two primaries.
  out.clear();
  ASSERT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin status --json --addr ", nodes_[0]->endpoint()),
                 &out),
      0)
      << out;
  const nlohmann::json status = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(status.is_discarded()) << out;
  int tablets = 0, primaries = 0;
  for (const nlohmann::json& n : status["nodes"]) {
    tablets += n["tablets"].get<int>();
    primaries += n["primaries"].get<int>();
  }
  // Table r's six replicas and two primaries, and METADATA's one tablet on all three nodes.
  EXPECT_EQ(tablets, 9) << out;
  EXPECT_EQ(primaries, 3) << out;

  // The tablet map: one METADATA row per tablet of r, readable through any node (its first
  // tablet's row: the tablet id, 16 hex digits, and an empty start row); clients may not
  // write it.
  const std::string metadata = "projects/__tessera/instances/__tessera/tables/METADATA";
  std::string first_row = std::string(kTableName) + std::string("\0\x01", 2) + "m";
  std::string last_row = std::string(kTableName) + std::string("\0\x02", 2);
  auto stub = v2::Bigtable::NewStub(nodes_[2]->NewChannel());
  StatusOr<std::string> cells = ReadCells(*stub, metadata, first_row, "", kCallTimeout);
  ASSERT_TRUE(cells.ok()) << cells.status();
  EXPECT_EQ(cells->size(), 16u) << *cells;
  cells = ReadCells(*stub, metadata, last_row, "", kCallTimeout);
  ASSERT_TRUE(cells.ok()) << cells.status();
  EXPECT_EQ(cells->size(), 16u + 1u) << *cells;  // its id and its start row, "m"
  const grpc::Status refused = WriteCell(*stub, metadata, "x", "y", "", kCallTimeout);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error_message();
}

// The Bigtable admin API's consistency tokens across the cluster: written through node 0, a
// token taken through node 1 is reached, checked through node 2, once every replica of both
// tablets has the writes; a token that does not parse is refused by name.
TEST_F(ClusterTest, AConsistencyTokenTakenThroughOneNodeIsReachedThroughAnother) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, std::chrono::milliseconds(20'000)));
  const grpc::Status created = CreateTableR(*nodes_[0]);
  ASSERT_TRUE(created.ok()) << created.error_message();
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*nodes_[0], "a", "1").ok(); },
                      std::chrono::milliseconds(15'000)))
      << FullLog(*nodes_[0]);
  for (int k = 0; k < 20; ++k) {
    const std::string key = StrCat(k % 2 == 0 ? "b" : "x", k);
    ASSERT_TRUE(WriteRow(*nodes_[0], key, "2").ok()) << key;
  }

  admin::GenerateConsistencyTokenRequest generate;
  generate.set_name(kTableName);
  admin::GenerateConsistencyTokenResponse token;
  {
    auto stub = admin::BigtableTableAdmin::NewStub(nodes_[1]->NewChannel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    const grpc::Status s = stub->GenerateConsistencyToken(&ctx, generate, &token);
    ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << FullLog(*nodes_[1]);
  }
  EXPECT_EQ(token.consistency_token().substr(0, 2), "2:") << token.consistency_token();

  auto check = [&](const std::string& text, admin::CheckConsistencyResponse* response) {
    auto stub = admin::BigtableTableAdmin::NewStub(nodes_[2]->NewChannel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    admin::CheckConsistencyRequest request;
    request.set_name(kTableName);
    request.set_consistency_token(text);
    return stub->CheckConsistency(&ctx, request, response);
  };
  grpc::Status last;
  ASSERT_TRUE(WaitFor(
      [&] {
        admin::CheckConsistencyResponse response;
        last = check(token.consistency_token(), &response);
        return last.ok() && response.consistent();
      },
      std::chrono::milliseconds(10'000)))
      << last.error_message() << "\n"
      << FullLog(*nodes_[2]);

  admin::CheckConsistencyResponse response;
  const grpc::Status garbled = check("2:%%%", &response);
  EXPECT_EQ(garbled.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << garbled.error_message();
  EXPECT_NE(garbled.error_message().find("\"2:%%%\""), std::string::npos)
      << garbled.error_message();
  // A token of the previous version (one node) stays "already consistent".
  const grpc::Status old = check("tessera-consistency-7", &response);
  ASSERT_TRUE(old.ok()) << old.error_message();
  EXPECT_TRUE(response.consistent());
}

}  // namespace
}  // namespace tessera::integration

namespace tessera::integration {
namespace {

// Consistency levels chosen per request through app profiles: a profile made through node 0
// (its levels in the description, as `cbt createappprofile` can give them) and the built-in
// ids; with one node of three killed, ALL writes fail while ONE and QUORUM work, and an
// unknown profile is NOT_FOUND.
TEST_F(ClusterTest, AppProfilesChooseTheConsistencyLevelOfEachRequest) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, std::chrono::milliseconds(20'000)));
  ASSERT_TRUE(CreateTableR(*nodes_[0]).ok());
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*nodes_[1], "a", "1").ok(); },
                      std::chrono::milliseconds(15'000)))
      << FullLog(*nodes_[1]);
  {
    auto stub = admin::BigtableInstanceAdmin::NewStub(nodes_[0]->NewChannel());
    grpc::ClientContext ctx;
    admin::CreateAppProfileRequest req;
    req.set_parent("projects/p/instances/i");
    req.set_app_profile_id("strict");
    req.mutable_app_profile()->set_description("audit log: write_consistency=all");
    req.mutable_app_profile()->mutable_multi_cluster_routing_use_any();
    admin::AppProfile created;
    const grpc::Status s = stub->CreateAppProfile(&ctx, req, &created);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // Every node knows the profile (the lock service), all replicas answer: ALL succeeds.
  for (int k = 0; k < 3; ++k) {
    grpc::Status s;
    ASSERT_TRUE(WaitFor([&] { return (s = WriteRow(*nodes_[k], "b", "2", "strict")).ok(); },
                        std::chrono::milliseconds(10'000)))
        << "through node " << k << ": " << s.error_message();
  }
  const grpc::Status unknown = WriteRow(*nodes_[1], "b", "3", "nosuch");
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND) << unknown.error_message();
  EXPECT_NE(unknown.error_message().find("nosuch"), std::string::npos) << unknown.error_message();
  EXPECT_EQ(ReadRow(*nodes_[2], "b", "nosuch").status().code(), absl::StatusCode::kNotFound);

  nodes_[2]->Kill();
  // ALL cannot be acknowledged with a replica gone; the answer says so within the deadline.
  grpc::Status all;
  ASSERT_TRUE(WaitFor(
      [&] {
        all = WriteRow(*nodes_[0], "c", "4", "strict");
        return !all.ok();
      },
      std::chrono::milliseconds(15'000)));
  EXPECT_TRUE(Retryable(all)) << all.error_message();
  // ONE and QUORUM keep working (after the failover of node 2's tablets), and a QUORUM read
  // through the other node sees what was acknowledged.
  for (const char* profile : {"one", "quorum"}) {
    grpc::Status s;
    ASSERT_TRUE(WaitFor([&] { return (s = WriteRow(*nodes_[0], "d", profile, profile)).ok(); },
                        std::chrono::milliseconds(15'000)))
        << profile << ": " << s.error_message();
  }
  StatusOr<std::string> v;
  ASSERT_TRUE(WaitFor(
      [&] {
        v = ReadRow(*nodes_[1], "d", "quorum");
        return v.ok() && *v == "quorum";
      },
      std::chrono::milliseconds(10'000)))
      << (v.ok() ? *v : v.status().ToString());
  v = ReadRow(*nodes_[1], "b", "quorum");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "2");
}

}  // namespace
}  // namespace tessera::integration
