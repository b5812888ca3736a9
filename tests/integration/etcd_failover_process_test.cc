// Issue 9's etcd failover, with real processes: three etcd members, two `tessera serve` nodes,
// Bigtable writes and reads every 100 ms while the etcd member the nodes talk to (the leader)
// is killed. Part of the cluster_process_test binary (main() in cluster_process_test.cc).
#include <chrono>
#include <thread>

#include "cluster_test_fixture.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"

namespace tessera::integration {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using namespace cluster_testing;  // NOLINT: the fixture and its helpers

// Issue 9: one etcd was a single point of failure. With three etcd members, killing the one the
// nodes talk to (the leader, too: the worst case) changes nothing for clients.
class ThreeEtcdClusterTest : public ClusterTest {
 protected:
  // A keepalive sent while the members elect a new leader is answered once they have one, so a
  // session survives when the election ends before its local deadline: at worst 2/3 of a TTL
  // after the kill (keepalives go every TTL/3). The test etcd elects within twice its 500 ms
  // election timeout; a 2 s TTL left 333 ms for a loaded machine's scheduling and lost a session
  // about once in 15 runs beside two busy cores. 3 s leaves a whole second.
  ThreeEtcdClusterTest() {
    etcd_members_ = 3;
    session_ttl_ms_ = 3000;
  }
};

TEST_F(ThreeEtcdClusterTest, KillingOneEtcdMemberChangesNothingForClients) {
  // Nodes talk to the first member of their list that answers: put the leader first.
  StatusOr<int> leader = etcd_->LeaderMember();
  ASSERT_TRUE(leader.ok()) << leader.status();
  lock_service_ = "etcd://" + etcd_->member_endpoint(*leader);
  for (int i = 0; i < etcd_->members(); ++i) {
    if (i != *leader) lock_service_ += "," + etcd_->member_endpoint(i);
  }
  StartCluster(2);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  auto admin_of = [&](size_t i) {
    return admin::BigtableTableAdmin::NewStub(nodes_[i]->NewChannel());
  };
  auto create_table = [&](size_t i, const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    admin::CreateTableRequest req;
    req.set_parent(kInstance);
    req.set_table_id(id);
    (*req.mutable_table()->mutable_column_families())["cf"];
    admin::Table created;
    return admin_of(i)->CreateTable(&ctx, req, &created);
  };
  auto has_table = [&](size_t i, const std::string& id) {
    grpc::ClientContext ctx;
    admin::GetTableRequest req;
    req.set_name(StrCat(kInstance, "/tables/", id));
    admin::Table t;
    return admin_of(i)->GetTable(&ctx, req, &t).ok();
  };
  {
    grpc::Status s = create_table(0, "t");
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(WaitFor([&] { return has_table(1, "t"); }, milliseconds(10'000)));
  const std::string master = MasterAsSeenBy(*nodes_[0]);

  std::vector<std::unique_ptr<google::bigtable::v2::Bigtable::Stub>> data;
  for (auto& node : nodes_) data.push_back(google::bigtable::v2::Bigtable::NewStub(node->NewChannel()));
  // One write and one read back on each node; every one must succeed.
  int round = 0;
  auto write_and_read = [&]() -> std::string {
    ++round;
    for (size_t i = 0; i < data.size(); ++i) {
      const std::string row = StrCat("row-", round);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      google::bigtable::v2::MutateRowRequest req;
      req.set_table_name(StrCat(kInstance, "/tables/t"));
      req.set_row_key(row);
      auto* set = req.add_mutations()->mutable_set_cell();
      set->set_family_name("cf");
      set->set_column_qualifier("q");
      set->set_timestamp_micros(-1);
      set->set_value(StrCat("v", round));
      google::bigtable::v2::MutateRowResponse resp;
      grpc::Status w = data[i]->MutateRow(&ctx, req, &resp);
      if (!w.ok()) return StrCat("write to ", nodes_[i]->endpoint(), ": ", w.error_message());
      google::bigtable::v2::ReadRowsRequest read;
      read.set_table_name(StrCat(kInstance, "/tables/t"));
      read.mutable_rows()->add_row_keys(row);
      std::vector<model::Row> rows;
      Status r = ReadAllRows(data[i].get(), read, &rows, std::chrono::seconds(5));
      if (!r.ok()) return StrCat("read from ", nodes_[i]->endpoint(), ": ", r.ToString());
      if (rows.size() != 1) return StrCat("read from ", nodes_[i]->endpoint(), ": no row");
    }
    return "";
  };
  ASSERT_EQ(write_and_read(), "");

  etcd_->KillMember(*leader);
  const auto killed_at = Clock::now();
  // Three session TTLs: were keepalives not reaching a live member, every session would expire.
  int failures = 0;
  while (Clock::now() - killed_at < milliseconds(3 * session_ttl_ms_)) {
    const std::string failed = write_and_read();
    if (!failed.empty()) {
      ++failures;
      ADD_FAILURE() << "after the etcd member died: " << failed;
    }
    for (auto& node : nodes_) {
      auto status = GetStatus(*node);
      EXPECT_TRUE(status.ok() && status->serving()) << node->endpoint() << " stopped serving";
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::printf("etcd leader killed: %d rounds of writes and reads on both nodes, %d failed\n",
              round - 1, failures);
  // The lock service still works through the survivors: a schema change on node 1 (a Txn) and
  // its arrival on node 0 (its watch, resumed on a live member).
  {
    grpc::Status s = create_table(1, "t2");
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_TRUE(WaitFor([&] { return has_table(0, "t2"); }, milliseconds(10'000)))
      << "node 0's schema watch did not move to a live etcd member";
  EXPECT_EQ(MasterAsSeenBy(*nodes_[0]), master);
  // No session was lost.
  for (auto& node : nodes_) {
    const std::string log = FullLog(*node);
    EXPECT_EQ(Count(log, "lost its lock-service session"), 0u) << log;
  }
}

}  // namespace
}  // namespace tessera::integration
