// Issue 13's nodetool commands that act across a cluster, with real processes: three `tessera
// serve` with etcd at RF 3.
//   * `snapshot` taken while a client writes, then `restore` into a new table and into the
//     table itself: the restored table must be exactly the table at the snapshot — for each
//     tablet, the writes up to one point of the client's sequence and none after it.
//   * `repair` while a client writes: every replica of both tablets compared with its
//     primary's copy at one sequence and found consistent; exit 0, JSON for scripts.
//   * `decommission` of one node of four: every replica it held moves to the others, which
//     then hold every row (a repair finds each copy consistent), and it leaves the ring.
//   * `drain` of a node: it refuses data calls, its tablets get other primaries, and writes
//     through the other nodes go on after a short stall (measured and printed).
// Part of the cluster_process_test binary (main() in cluster_process_test.cc).
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::integration {
namespace {

using namespace cluster_testing;  // NOLINT: the fixture and its helpers

class NodeAdminClusterTest : public ClusterTest {};

// Every row of `table` through `node`: key -> its cells' values (one cell per row here).
StatusOr<std::map<std::string, std::string>> ReadAll(const ServerProcess& node,
                                                     const std::string& table) {
  auto stub = google::bigtable::v2::Bigtable::NewStub(node.NewChannel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  google::bigtable::v2::ReadRowsRequest req;
  req.set_table_name(table);
  auto reader = stub->ReadRows(&ctx, req);
  google::bigtable::v2::ReadRowsResponse resp;
  std::map<std::string, std::string> rows;
  std::string key;
  while (reader->Read(&resp)) {
    for (const auto& chunk : resp.chunks()) {
      if (!chunk.row_key().empty()) key = chunk.row_key();
      rows[key] += chunk.value();
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return rows;
}

// Row i of the load: alternately in the two tablets of r (split at "m").
std::string LoadKey(int i) { return StrCat(i % 2 == 0 ? "a" : "n", 100000 + i); }

TEST_F(NodeAdminClusterTest, RestoreGivesTheTableAtTheSnapshotWhileWritesGoOn) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);  // family cf keeping one version; split at "m"
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*nodes_[1], "deleted", "x").ok(); }, milliseconds(15'000)));
  {  // a row written and deleted before the snapshot is not restored
    auto stub = google::bigtable::v2::Bigtable::NewStub(nodes_[1]->NewChannel());
    grpc::ClientContext ctx;
    google::bigtable::v2::MutateRowRequest req;
    req.set_table_name(kTableName);
    req.set_row_key("deleted");
    req.add_mutations()->mutable_delete_from_row();
    google::bigtable::v2::MutateRowResponse resp;
    ASSERT_TRUE(stub->MutateRow(&ctx, req, &resp).ok());
  }

  // A client writes rows 0, 1, 2, ... one after the other through node 1.
  std::atomic<int> acked{0}, started{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    auto stub = google::bigtable::v2::Bigtable::NewStub(nodes_[1]->NewChannel());
    for (int i = 0; i < 5000 && !stop.load(); ++i) {
      started.store(i + 1);
      grpc::Status s = WriteRow(*stub, LoadKey(i), StrCat("v", i));
      if (!s.ok()) {
        ADD_FAILURE() << "write " << i << ": " << s.error_message();
        return;
      }
      acked.store(i + 1);
    }
  });
  ASSERT_TRUE(WaitFor([&] { return acked.load() >= 60; }, milliseconds(20'000)));
  const int acked_before = acked.load();
  std::string out;
  // `tessera admin <args>` with a deadline of a minute per node.
  const auto admin = [](const std::string& args) {
    return StrCat(g_tessera_binary, " admin ", args, " --timeout-ms 60000");
  };
  int rc = RunCommand(
      StrCat(g_tessera_binary, " admin snapshot --table r --tag s1 --addr ", nodes_[0]->endpoint()),
      &out);
  const int started_after = started.load();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(Count(out, "snapshot \"s1\" of projects/p/instances/i/tables/r: 2 tablets"), 3u) << out;
  // Taking it again under the same tag is refused.
  std::string again;
  EXPECT_EQ(RunCommand(StrCat(g_tessera_binary, " admin snapshot --table r --tag s1 --addr ",
                              nodes_[0]->endpoint()),
                       &again),
            1)
      << again;
  EXPECT_NE(again.find("already exists"), std::string::npos) << again;
  ASSERT_TRUE(WaitFor([&] { return acked.load() >= started_after + 40; }, milliseconds(20'000)));
  stop.store(true);
  writer.join();

  out.clear();
  ASSERT_EQ(RunCommand(StrCat(g_tessera_binary, " admin listsnapshots --json --addr ",
                              nodes_[2]->endpoint()),
                       &out),
            0)
      << out;
  const nlohmann::json listed = nlohmann::json::parse(out);
  ASSERT_EQ(listed.size(), 3u) << out;  // one snapshot on each node (RF 3)
  for (const nlohmann::json& s : listed) EXPECT_EQ(s["tablets"].size(), 2u) << out;

  // Into a new table: made like r, holding exactly r at the snapshot.
  out.clear();
  ASSERT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin restore --table r --tag s1 --target r2 --addr ",
                        nodes_[2]->endpoint()),
                 &out),
      0)
      << out;
  EXPECT_NE(out.find("restored snapshot \"s1\" of projects/p/instances/i/tables/r into "
                     "projects/p/instances/i/tables/r2: 2 tablets"),
            std::string::npos)
      << out;
  StatusOr<std::map<std::string, std::string>> restored =
      ReadAll(*nodes_[0], "projects/p/instances/i/tables/r2");
  ASSERT_TRUE(restored.ok()) << restored.status();
  // Each tablet's rows are a prefix of the client's writes to it: every write acknowledged
  // before the snapshot began, none that started after it returned.
  std::map<char, int> per_tablet;  // 'a', 'n': rows restored
  for (const auto& [key, value] : *restored) {
    ASSERT_NE(key, "deleted");
    const int i = std::stoi(key.substr(1)) - 100000;
    EXPECT_EQ(value, StrCat("v", i)) << key;
    ++per_tablet[key[0]];
  }
  int total = 0;
  for (char tablet : {'a', 'n'}) {
    for (int j = 0; j < per_tablet[tablet]; ++j) {
      const int i = 2 * j + (tablet == 'a' ? 0 : 1);
      EXPECT_EQ(restored->count(LoadKey(i)), 1u) << "a gap at row " << i;
    }
    total += per_tablet[tablet];
  }
  EXPECT_GE(total, acked_before);
  EXPECT_LE(total, started_after);
  std::printf("restored %d rows: %d acknowledged before the snapshot, %d started by its end\n",
              total, acked_before, started_after);

  // A target that exists is refused.
  out.clear();
  EXPECT_EQ(RunCommand(admin(StrCat("restore --table r --tag s1 --target r2 --addr ",
                                    nodes_[0]->endpoint())),
                       &out),
            1);
  EXPECT_NE(out.find("already exists"), std::string::npos) << out;

  // Into r itself: the writes after the snapshot are gone, r is r2 again.
  out.clear();
  ASSERT_EQ(
      RunCommand(admin(StrCat("restore --table r --tag s1 --addr ", nodes_[1]->endpoint())), &out),
      0)
      << out;
  StatusOr<std::map<std::string, std::string>> back = ReadAll(*nodes_[2], kTableName);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *restored);

  out.clear();
  ASSERT_EQ(
      RunCommand(admin(StrCat("clearsnapshot --tag s1 --addr ", nodes_[0]->endpoint())), &out), 0)
      << out;
  EXPECT_EQ(Count(out, "removed 2 snapshot files"), 3u) << out;
  out.clear();
  ASSERT_EQ(RunCommand(admin(StrCat("listsnapshots --addr ", nodes_[0]->endpoint())), &out), 0);
  EXPECT_NE(out.find("There are no snapshots"), std::string::npos) << out;
}

TEST_F(NodeAdminClusterTest, RepairFindsEveryReplicaConsistentWhileWritesGoOn) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);  // two tablets, split at "m"
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*nodes_[1], "first", "1").ok(); }, milliseconds(15'000)));
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    auto stub = google::bigtable::v2::Bigtable::NewStub(nodes_[1]->NewChannel());
    for (int i = 0; i < 20000 && !stop.load(); ++i) {
      if (!WriteRow(*stub, LoadKey(i), StrCat("v", i)).ok()) return;
      acked.store(i + 1);
    }
  });
  ASSERT_TRUE(WaitFor([&] { return acked.load() >= 100; }, milliseconds(20'000)));
  std::string out;
  const int rc = RunCommand(StrCat(g_tessera_binary, " admin repair --table r --addr ",
                                   nodes_[2]->endpoint(), " --timeout-ms 60000"),
                            &out);
  const int acked_during = acked.load();
  stop.store(true);
  writer.join();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(Count(out, "  consistent\n"), 4u) << out;  // 2 tablets, 2 replicas beside each primary
  EXPECT_NE(out.find("Repaired 2 tablets: 4 replicas (4 consistent)"), std::string::npos) << out;
  EXPECT_GT(acked_during, 100) << "the writes went on";

  // --json: one answer per node, the tablets each one is the primary of.
  out.clear();
  ASSERT_EQ(RunCommand(StrCat(g_tessera_binary, " admin repair --json --addr ",
                              nodes_[0]->endpoint(), " --timeout-ms 60000"),
                       &out),
            0)
      << out;
  const nlohmann::json answers = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(answers.is_array()) << out;
  ASSERT_EQ(answers.size(), 3u) << out;
  size_t tablets = 0;
  for (const nlohmann::json& node : answers) {
    if (!node.contains("tablets")) continue;
    for (const nlohmann::json& t : node["tablets"]) {
      ++tablets;
      ASSERT_TRUE(t.contains("replicas")) << t.dump();
      for (const nlohmann::json& r : t["replicas"]) EXPECT_EQ(r["result"], "consistent") << out;
    }
  }
  EXPECT_GE(tablets, 3u) << out;  // r's two, METADATA's one (every table)

  // A table nobody knows: the nodes say so, and the command fails.
  out.clear();
  EXPECT_EQ(RunCommand(StrCat(g_tessera_binary, " admin repair --table nosuch --addr ",
                              nodes_[0]->endpoint()),
                       &out),
            1)
      << out;
  // Three nodes, RF 3: no node can leave, and nothing moves.
  out.clear();
  EXPECT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin decommission --addr ", nodes_[2]->endpoint()),
                 &out),
      1)
      << out;
  EXPECT_NE(out.find("too few other live nodes (2)"), std::string::npos) << out;
  EXPECT_TRUE(WriteRow(*nodes_[2], "still-serving", "1").ok());
}

TEST_F(NodeAdminClusterTest, ADecommissionedNodeHandsItsReplicasOnAndLeavesTheRing) {
  StartCluster(4);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);  // RF 3 of 4 nodes, split at "m"
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*nodes_[0], "first", "1").ok(); }, milliseconds(15'000)));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(WriteRow(*nodes_[0], LoadKey(i), StrCat("v", i)).ok());
  const std::string gone = nodes_[3]->endpoint();
  std::string out;
  const int rc = RunCommand(
      StrCat(g_tessera_binary, " admin decommission --timeout-ms 120000 --addr ", gone), &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("decommissioned " + gone), std::string::npos) << out;

  // No tablet names it; the others hold every row, each copy as its primary's.
  out.clear();
  ASSERT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin tablets --json --addr ", nodes_[0]->endpoint()),
                 &out),
      0)
      << out;
  EXPECT_EQ(out.find(gone), std::string::npos) << out;
  out.clear();
  ASSERT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin ring --addr ", nodes_[0]->endpoint()), &out), 0)
      << out;
  {  // gossip still knows the node (down) until removenode, but it holds no token
    const size_t at = out.find(gone);
    ASSERT_NE(at, std::string::npos) << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_EQ(line.substr(line.size() - 2), " -") << "its token is gone: " << out;
  }
  StatusOr<std::map<std::string, std::string>> rows = ReadAll(*nodes_[1], kTableName);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->size(), 101u);
  grpc::Status refused = WriteRow(*nodes_[3], "refused", "x");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  nodes_[3]->Kill();  // the operator stops it
  out.clear();
  EXPECT_EQ(RunCommand(StrCat(g_tessera_binary, " admin repair --table r --addr ",
                              nodes_[0]->endpoint(), " --timeout-ms 60000"),
                       &out),
            0)
      << out;
  EXPECT_EQ(Count(out, "  consistent\n"), 4u) << out;
}

TEST_F(NodeAdminClusterTest, ADrainedNodeStopsServingAndWritesGoOnElsewhere) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*nodes_[0], "before", "1").ok(); }, milliseconds(15'000)));
  // The node leading the tablet from "m" is drained; the writes go through another.
  std::string out;
  ASSERT_EQ(RunCommand(StrCat(g_tessera_binary, " admin tablets --json --table r --addr ",
                              nodes_[0]->endpoint()),
                       &out),
            0)
      << out;
  std::string leader;
  const nlohmann::json tablets = nlohmann::json::parse(out);
  for (const nlohmann::json& t : tablets["tablets"]) {
    if (t["end_row"] == "") leader = t["primary"].get<std::string>();
  }
  size_t victim = nodes_.size(), other = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->endpoint() == leader) victim = i;
  }
  ASSERT_LT(victim, nodes_.size()) << "no primary for the tablet from \"m\": " << out;
  other = (victim + 1) % nodes_.size();
  out.clear();
  const auto drain_began = std::chrono::steady_clock::now();
  ASSERT_EQ(RunCommand(StrCat(g_tessera_binary, " admin drain --addr ", nodes_[victim]->endpoint()),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("drained " + nodes_[victim]->endpoint()), std::string::npos) << out;
  const auto drained_at = std::chrono::steady_clock::now();

  grpc::Status refused = WriteRow(*nodes_[victim], "refused", "x");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_NE(refused.error_message().find("drained"), std::string::npos) << refused.error_message();

  // The first write to the drained node's tablet waits for its new primary.
  auto stub = google::bigtable::v2::Bigtable::NewStub(nodes_[other]->NewChannel());
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*stub, "z-after", "2").ok(); }, milliseconds(20'000)));
  const auto resumed = std::chrono::steady_clock::now();
  std::printf(
      "drain took %.2f s; writes to the drained primary's tablet went on %.2f s after "
      "it began\n",
      std::chrono::duration<double>(drained_at - drain_began).count(),
      std::chrono::duration<double>(resumed - drain_began).count());
  for (int i = 0; i < 20; ++i) {
    grpc::Status s = WriteRow(*stub, StrCat(i % 2 == 0 ? "a" : "z", i), "v");
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  StatusOr<std::string> read = ReadRow(*nodes_[other], "z-after");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "2");
  EXPECT_TRUE(
      WaitFor([&] { return LivenessOf(*nodes_[other], nodes_[victim]->endpoint()) != "up"; },
              milliseconds(10'000)));
  out.clear();
  ASSERT_EQ(
      RunCommand(StrCat(g_tessera_binary, " admin info --json --addr ", nodes_[victim]->endpoint()),
                 &out),
      0)
      << out;
  const nlohmann::json info = nlohmann::json::parse(out);
  EXPECT_EQ(info["drained"], true) << out;
  EXPECT_EQ(info["serving"], false) << out;
}

}  // namespace
}  // namespace tessera::integration
