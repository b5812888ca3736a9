// Data centres and racks on simulated time (docs/replication.md, "Where dc and rack come
// from"): six replicated nodes, dc1 {r1, r2, r3} and dc2 {r1, r2, r3}, a table placed 2 + 2
// (`tablets:dc1=2,dc2=2`). Checked: every tablet has two replicas in each DC on distinct
// racks; a read at ONE goes to a replica in the coordinator's DC and keeps answering when the
// primary is cut off; LOCAL_QUORUM counts the replicas of the *coordinator's* DC (a dc2
// coordinator's write is acknowledged with dc1's second replica cut off, a dc1 coordinator's
// is refused), and with dc2 cut off LOCAL_QUORUM from dc1 is acknowledged while QUORUM is
// refused naming how many replicas answer. Every test prints `replay with TESSERA_SEED=<n>`
// on failure.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.pb.h"
#include "gtest/gtest.h"
#include "tessera/replication/coordinator.h"
#include "tessera/testing/sim_cluster.h"
#include "tessera/testing/sim_table_calls.h"
#include "tessera/util/random.h"

namespace tessera::testing {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using replication::AccessOptions;
using replication::Coordinator;
using replication::ReadLevel;
using replication::WriteLevel;

constexpr int64_t kMs = 1000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr const char* kTable = kSimTable;
constexpr int kNodes = 6;

SimClusterOptions Options(uint64_t seed) {
  SimClusterOptions o;
  o.seed = seed;
  o.nodes = kNodes;
  o.replicated = true;
  o.places = {{"dc1", "r1"}, {"dc1", "r2"}, {"dc1", "r3"},
              {"dc2", "r1"}, {"dc2", "r2"}, {"dc2", "r3"}};
  return o;
}

std::string DcOf(int node) { return node < 3 ? "dc1" : "dc2"; }

int IndexOf(const std::string& endpoint) {
  for (int i = 0; i < kNodes; ++i) {
    if (SimCluster::Endpoint(i) == endpoint) return i;
  }
  return -1;
}

Status WriteAt(SimCluster& c, int i, const std::string& key, WriteLevel level,
               int64_t timeout_us = 0) {
  model::RowMutation m(key);
  m.SetCell("cf", "q", 1000, "v");
  AccessOptions o;
  o.write_level = level;
  o.timeout_us = timeout_us;
  std::optional<Status> s = RunCall<Status>(c, [&](std::function<void(Status)> done) {
    CoordinatorOf(c, i)->Mutate(TableAt(c, i), m, o, std::move(done));
  });
  return s.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// The value of `key` through node i at `level` ("absent" when it has none).
StatusOr<std::string> Read(SimCluster& c, int i, const std::string& key, ReadLevel level,
                           int64_t timeout_us = 0) {
  replication::TableSnapshot t = TableAt(c, i);
  AccessOptions o;
  o.read_level = level;
  o.timeout_us = timeout_us;
  std::optional<StatusOr<replication::ReadPage>> page =
      RunCall<StatusOr<replication::ReadPage>>(
          c, [&](std::function<void(StatusOr<replication::ReadPage>)> done) {
            CoordinatorOf(c, i)->Read(t, t->TabletIndexFor(key),
                                      {model::RowRange::SingleKey(key)}, nullptr, 0, false, o,
                                      std::move(done));
          });
  if (!page.has_value()) return absl::DeadlineExceededError("the simulation ran out");
  if (!page->ok()) return page->status();
  if ((*page)->rows.empty()) return std::string("absent");
  return (*page)->rows[0].cells[0].value;
}

TEST(SimDcTest, ReplicasSpanDcsOnDistinctRacksAndLevelsCountTheCoordinatorsDc) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  admin::CreateTableRequest create;
  create.set_parent("projects/p/instances/i");
  create.set_table_id("t");
  (*create.mutable_table()->mutable_column_families())["cf"]
      .mutable_gc_rule()
      ->set_max_num_versions(1);
  create.mutable_table()->mutable_tessera_options()->set_placement("tablets:dc1=2,dc2=2");
  for (const char* split : {"d", "h", "m", "r", "w"}) create.add_initial_splits()->set_key(split);
  auto created = c.core(1)->admin()->DoCreateTable(create);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(c.RunUntil([&] { return Configured(c); }, 10 * kSecond));

  // Placement: 2 + 2 on distinct racks; remember a tablet led from dc1.
  replication::TableSnapshot t = TableAt(c, 0);
  ASSERT_EQ(t->tablets.size(), 6u);
  std::optional<catalog::TabletConfig> chosen;
  std::string key;
  for (const catalog::TabletRef& tablet : t->tablets) {
    auto config = c.core(0)->replicated()->replicas()->GetConfig(tablet.id);
    ASSERT_TRUE(config.has_value());
    ASSERT_EQ(config->replicas.size(), 4u);
    std::map<std::string, std::set<int>> racks;  // dc -> node indexes (racks are i % 3)
    for (const std::string& e : config->replicas) {
      const int i = IndexOf(e);
      ASSERT_GE(i, 0) << e;
      racks[DcOf(i)].insert(i % 3);
    }
    EXPECT_EQ(racks["dc1"].size(), 2u) << "tablet " << tablet.id;
    EXPECT_EQ(racks["dc2"].size(), 2u) << "tablet " << tablet.id;
    if (!chosen.has_value() && DcOf(IndexOf(config->primary_endpoint())) == "dc1") {
      chosen = config;
      key = tablet.start_row + "a";  // inside [start, end): the splits are single letters
    }
  }
  ASSERT_TRUE(chosen.has_value()) << "no tablet is led from dc1";
  // P the primary, R dc1's other replica, X dc1's node without one; Y dc2's without one.
  const int p = IndexOf(chosen->primary_endpoint());
  int r = -1, x = -1, y = -1;
  for (int i = 0; i < kNodes; ++i) {
    const bool holds = chosen->IndexOf(SimCluster::Endpoint(i)) >= 0;
    if (DcOf(i) == "dc1" && holds && i != p) r = i;
    if (DcOf(i) == "dc1" && !holds) x = i;
    if (DcOf(i) == "dc2" && !holds) y = i;
  }
  ASSERT_TRUE(r >= 0 && x >= 0 && y >= 0);
  ASSERT_TRUE(WriteAt(c, x, key, WriteLevel::kAll).ok());

  // ONE: with the primary cut off, a dc2 node without a replica reads from dc2, and a dc1 one
  // from R; the default (primary) read cannot answer.
  c.Partition({{p}});
  for (int via : {y, x, r}) {
    StatusOr<std::string> v = Read(c, via, key, ReadLevel::kOne, 3 * kSecond);
    ASSERT_TRUE(v.ok()) << "through node " << via << ": " << v.status();
    EXPECT_EQ(*v, "v") << "through node " << via;
  }
  EXPECT_FALSE(Read(c, y, key, ReadLevel::kPrimary, 1 * kSecond).ok());
  c.Heal();

  // LOCAL_QUORUM is the coordinator's DC: with R cut off, dc1 has one replica that answers.
  c.Partition({{r}});
  c.RunFor(2 * kSecond);  // the primary notices the silent replica
  Status local_dc1 = WriteAt(c, x, key, WriteLevel::kLocalQuorum, 1 * kSecond);
  EXPECT_FALSE(local_dc1.ok());
  EXPECT_NE(std::string(local_dc1.message()).find("1 of 2 replicas in dc1 answer"),
            std::string::npos)
      << local_dc1;
  EXPECT_TRUE(WriteAt(c, y, key, WriteLevel::kLocalQuorum, 3 * kSecond).ok());
  EXPECT_TRUE(WriteAt(c, x, key, WriteLevel::kQuorum, 3 * kSecond).ok());  // 3 of 4
  c.Heal();

  // dc2 cut off: LOCAL_QUORUM from dc1 is acknowledged, QUORUM is refused.
  c.Partition({{3, 4, 5}});
  c.RunFor(2 * kSecond);
  EXPECT_TRUE(WriteAt(c, x, key, WriteLevel::kLocalQuorum, 3 * kSecond).ok());
  Status quorum = WriteAt(c, x, key, WriteLevel::kQuorum, 1 * kSecond);
  EXPECT_TRUE(absl::IsUnavailable(quorum) || absl::IsDeadlineExceeded(quorum)) << quorum;
  EXPECT_NE(std::string(quorum.message()).find("2 of 4 replicas answer; quorum needs 3"),
            std::string::npos)
      << quorum;
  c.Heal();
  c.RunFor(2 * kSecond);
  EXPECT_TRUE(WriteAt(c, x, key, WriteLevel::kAll, 5 * kSecond).ok());
}

}  // namespace
}  // namespace tessera::testing
