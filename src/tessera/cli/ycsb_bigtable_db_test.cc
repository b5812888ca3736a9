// BigtableDb and the driver end to end against real servers: the official emulator and, when
// built, `tessera serve` (each skipped, loudly, when it is not available).
#include "tessera/cli/ycsb_bigtable_db.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/testing/test_servers.h"

namespace tessera::cli::ycsb {
namespace {

using namespace std::chrono_literals;

class BigtableDbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<testing::TestServer>> server =
        testing::TestServer::Start(GetParam(), TESSERA_BINARY_PATH);
    if (server.status().code() == absl::StatusCode::kNotFound) {
      GTEST_SKIP() << "SKIPPED: backend " << GetParam() << " unavailable: " << server.status();
    }
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    target_ = {server_->endpoint(), "p", "i", "usertable", "cf"};
    pool_ = std::make_unique<ChannelPool>(std::vector<std::string>{target_.endpoint}, 2);
    ASSERT_TRUE(pool_->WaitConnected(10s).ok());
  }

  YcsbDbFactory Factory(int fields) {
    return [this, fields](int thread) -> StatusOr<std::unique_ptr<YcsbDb>> {
      return NewBigtableDb(pool_->Get(thread), target_, fields, 10s);
    };
  }

  std::unique_ptr<testing::TestServer> server_;
  BigtableTarget target_;
  std::unique_ptr<ChannelPool> pool_;
};

TEST_P(BigtableDbTest, ReadScanWriteAndBatch) {
  ASSERT_TRUE(EnsureTable(pool_->Get(0), target_, {"user5"}, 10s).ok());
  ASSERT_TRUE(EnsureTable(pool_->Get(0), target_, {}, 10s).ok());  // exists: fine
  std::unique_ptr<YcsbDb> db = NewBigtableDb(pool_->Get(0), target_, 3, 10s);

  EXPECT_EQ(*db->Read("user1"), 0);
  const FieldWrite fields[] = {{0, "a"}, {2, "c"}};
  ASSERT_TRUE(db->Write("user1", fields).ok());
  EXPECT_EQ(*db->Read("user1"), 2);
  // Another version of a field: still one cell per field.
  const FieldWrite again[] = {{0, "a2"}};
  ASSERT_TRUE(db->Write("user1", again).ok());
  EXPECT_EQ(*db->Read("user1"), 2);

  const FieldWrite all[] = {{0, "x"}, {1, "y"}, {2, "z"}};
  const RowWrite rows[] = {{"user2", all}, {"user3", all}, {"user7", all}};
  const std::vector<Status> statuses = db->WriteBatch(rows);
  ASSERT_EQ(statuses.size(), 3u);
  for (const Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(*db->Read("user7"), 3);

  EXPECT_EQ(*db->Scan("user1", 100), 4);
  EXPECT_EQ(*db->Scan("user2", 2), 2);
  EXPECT_EQ(*db->Scan("user4", 100), 1);
  EXPECT_EQ(*db->Scan("user8", 100), 0);
}

TEST_P(BigtableDbTest, ErrorsArriveAsStatuses) {
  BigtableTarget missing = target_;
  missing.table = "no_such_table";
  std::unique_ptr<YcsbDb> db = NewBigtableDb(pool_->Get(0), missing, 1, 10s);
  EXPECT_FALSE(db->Read("k").ok());
  const FieldWrite f[] = {{0, "v"}};
  EXPECT_FALSE(db->Write("k", f).ok());
  const RowWrite rows[] = {{"k1", f}, {"k2", f}};
  for (const Status& s : db->WriteBatch(rows)) EXPECT_FALSE(s.ok());

  // A table without the family asked for is refused by name.
  ASSERT_TRUE(EnsureTable(pool_->Get(0), target_, {}, 10s).ok());
  BigtableTarget other_family = target_;
  other_family.family = "other";
  const Status s = EnsureTable(pool_->Get(0), other_family, {}, 10s);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("other"), std::string::npos) << s;
}

// Every workload, small, with no error.
TEST_P(BigtableDbTest, AllWorkloadsRunCleanly) {
  ASSERT_TRUE(EnsureTable(pool_->Get(0), target_, {}, 10s).ok());
  RunOptions o;
  o.records = 500;
  o.operations = 400;
  o.threads = 4;
  o.fields = 4;
  o.value_size = 50;
  o.max_scan_length = 20;
  o.batch_size = 50;
  AcknowledgedCounter inserts(o.records);
  for (const WorkloadSpec& spec : AllWorkloads()) {
    StatusOr<WorkloadResult> r = RunWorkload(spec, o, Factory(o.fields), &inserts);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->errors, 0u) << spec.name << ": "
                             << (r->error_examples.empty() ? ""
                                                           : r->error_examples.begin()->second);
    EXPECT_EQ(r->ops, spec.load ? o.records : o.operations) << spec.name;
  }
  std::unique_ptr<YcsbDb> db = NewBigtableDb(pool_->Get(0), target_, o.fields, 10s);
  EXPECT_EQ(*db->Read(KeyName(0)), 4);
  EXPECT_EQ(*db->Read(KeyName(inserts.Last())), 4);
}

// Thread t talks to endpoint t mod N, and an endpoint's threads take its channels in turn.
TEST(ChannelPoolTest, ThreadsSpreadOverTheEndpointsInTurn) {
  const ChannelPool pool({"127.0.0.1:1", "127.0.0.1:2"}, 2);
  EXPECT_EQ(pool.size(), 4);
  EXPECT_EQ(pool.EndpointOf(0), "127.0.0.1:1");
  EXPECT_EQ(pool.EndpointOf(1), "127.0.0.1:2");
  EXPECT_EQ(pool.EndpointOf(2), "127.0.0.1:1");
  EXPECT_EQ(pool.EndpointOf(7), "127.0.0.1:2");
  EXPECT_NE(pool.Get(0), pool.Get(1));
  EXPECT_NE(pool.Get(0), pool.Get(2));  // the endpoint's second channel
  EXPECT_EQ(pool.Get(0), pool.Get(4));
  EXPECT_EQ(pool.Get(3), pool.Get(7));
}

// Nothing listens on port 1: the error names the endpoint that could not be reached.
TEST(ChannelPoolTest, AnUnreachableEndpointIsNamed) {
  ChannelPool pool({"127.0.0.1:1"}, 1);
  const Status s = pool.WaitConnected(200ms);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("127.0.0.1:1"), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(Backends, BigtableDbTest, ::testing::Values("emulator", "serve"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tessera::cli::ycsb
