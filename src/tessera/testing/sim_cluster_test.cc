// Three whole nodes on simulated time (sim_cluster.h): a table created, changed and deleted
// through one node's admin logic reaches every node's catalog; a crashed node catches up when
// it restarts; data written through a node's TableAccess reads back, also after a crash; the
// same seed replays the same run. Each test prints `replay with TESSERA_SEED=<n>` on failure.
#include "tessera/testing/sim_cluster.h"

#include <string>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.pb.h"
#include "gtest/gtest.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/table_access.h"
#include "tessera/util/random.h"

namespace tessera::testing {
namespace {

namespace admin = ::google::bigtable::admin::v2;

constexpr int64_t kMs = 1000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kTable[] = "projects/p/instances/i/tables/t";

SimClusterOptions Options(uint64_t seed) {
  SimClusterOptions o;
  o.seed = seed;
  return o;
}

admin::CreateTableRequest CreateRequest() {
  admin::CreateTableRequest r;
  r.set_parent(kInstance);
  r.set_table_id("t");
  auto& families = *r.mutable_table()->mutable_column_families();
  families["cf1"].mutable_gc_rule()->set_max_num_versions(2);
  families["cf2"].mutable_gc_rule()->mutable_max_age()->set_seconds(3600);
  r.add_initial_splits()->set_key("g");
  r.add_initial_splits()->set_key("p");
  return r;
}

// Adds family "cf3", sets cf1's rule to one version and drops cf2.
admin::ModifyColumnFamiliesRequest ModifyRequest() {
  admin::ModifyColumnFamiliesRequest r;
  r.set_name(kTable);
  auto* add = r.add_modifications();
  add->set_id("cf3");
  add->mutable_create()->mutable_gc_rule()->set_max_num_versions(5);
  auto* update = r.add_modifications();
  update->set_id("cf1");
  update->mutable_update()->mutable_gc_rule()->set_max_num_versions(1);
  auto* drop = r.add_modifications();
  drop->set_id("cf2");
  drop->set_drop(true);
  return r;
}

admin::DeleteTableRequest DeleteRequest() {
  admin::DeleteTableRequest r;
  r.set_name(kTable);
  return r;
}

// What node `i`'s own catalog holds of kTable: its schema version, families with their GC
// rules, and tablet boundaries; "absent" without it, "down" for a crashed node.
std::string Describe(const SimCluster& c, int i) {
  if (c.core(i) == nullptr) return "down";
  auto t = c.core(i)->catalog()->GetTable(kTable);
  if (!t.ok()) return "absent";
  std::string s = StrCat("v", (*t)->schema.version);
  for (const auto& [name, family] : (*t)->schema.families) {
    s += StrCat(" ", name, "[", family.gc_rule.ToString(), "]");
  }
  s += " splits";
  for (size_t k = 1; k < (*t)->tablets.size(); ++k) s += " " + (*t)->tablets[k].start_row;
  return s;
}

// The ids of node `i`'s tablets of kTable; empty without it.
std::vector<uint64_t> TabletIds(const SimCluster& c, int i) {
  std::vector<uint64_t> ids;
  if (c.core(i) == nullptr) return ids;
  auto t = c.core(i)->catalog()->GetTable(kTable);
  if (t.ok()) {
    for (const auto& tablet : (*t)->tablets) ids.push_back(tablet.id);
  }
  return ids;
}

// True when every node that is up describes kTable as `want` and, holding it, calls its
// tablets by the same ids (catalog/tablet_id.h).
bool AllSee(const SimCluster& c, const std::string& want) {
  std::vector<uint64_t> ids;
  for (int i = 0; i < c.size(); ++i) {
    if (c.core(i) == nullptr) continue;
    if (Describe(c, i) != want) return false;
    std::vector<uint64_t> here = TabletIds(c, i);
    if (ids.empty()) ids = here;
    if (here != ids) return false;
  }
  return true;
}

std::string AllDescriptions(const SimCluster& c) {
  std::string s;
  for (int i = 0; i < c.size(); ++i) s += StrCat("\n  node ", i, ": ", Describe(c, i));
  return s;
}

TEST(SimClusterTest, ThreeNodesStartAndServe) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  int masters = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(c.serving(i)) << i;
    masters += c.core(i)->node()->is_master() ? 1 : 0;
    // The shared lock service makes the schema the cluster's on every node.
    EXPECT_NE(c.core(i)->cluster_definitions(), nullptr) << i;
  }
  EXPECT_EQ(masters, 1);
}

TEST(SimClusterTest, ATableCreatedChangedAndDeletedOnOneNodeReachesEveryNode) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());

  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(CreateRequest()).ok());
  // The node that made the change reads its own write at once. Its tablets are named by the
  // schema record's create revision, on every node.
  auto made = c.core(1)->catalog()->GetTable(kTable);
  ASSERT_TRUE(made.ok()) << made.status();
  const uint64_t prefix = (*made)->tablet_prefix;
  EXPECT_GT(prefix, 0u);
  EXPECT_LT(prefix, catalog::kLocalPrefixBit);
  EXPECT_EQ(TabletIds(c, 1), (std::vector<uint64_t>{catalog::MakeTabletId(prefix, 0),
                                                    catalog::MakeTabletId(prefix, 1),
                                                    catalog::MakeTabletId(prefix, 2)}));
  const std::string created = "v1 cf1[versions() > 2] cf2[age() > 1h] splits g p";
  EXPECT_EQ(Describe(c, 1), created);
  EXPECT_TRUE(c.RunUntil([&] { return AllSee(c, created); }, 2 * kSecond)) << AllDescriptions(c);

  ASSERT_TRUE(c.core(2)->admin()->DoModifyColumnFamilies(ModifyRequest()).ok());
  const std::string modified = "v2 cf1[versions() > 1] cf3[versions() > 5] splits g p";
  EXPECT_TRUE(c.RunUntil([&] { return AllSee(c, modified); }, 2 * kSecond)) << AllDescriptions(c);

  ASSERT_TRUE(c.core(0)->admin()->DoDeleteTable(DeleteRequest()).ok());
  EXPECT_TRUE(c.RunUntil([&] { return AllSee(c, "absent"); }, 2 * kSecond)) << AllDescriptions(c);
}

TEST(SimClusterTest, ACrashedNodeCatchesUpWithChangesMadeWhileItWasDown) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  ASSERT_TRUE(c.core(0)->admin()->DoCreateTable(CreateRequest()).ok());
  const std::string created = "v1 cf1[versions() > 2] cf2[age() > 1h] splits g p";
  ASSERT_TRUE(c.RunUntil([&] { return AllSee(c, created); }, 2 * kSecond)) << AllDescriptions(c);

  ASSERT_TRUE(c.Crash(2).ok());
  EXPECT_EQ(c.core(2), nullptr);
  ASSERT_TRUE(c.core(0)->admin()->DoModifyColumnFamilies(ModifyRequest()).ok());
  c.RunFor(1 * kSecond);
  const std::string modified = "v2 cf1[versions() > 1] cf3[versions() > 5] splits g p";
  EXPECT_TRUE(AllSee(c, modified)) << AllDescriptions(c);

  ASSERT_TRUE(c.Restart(2).ok());
  // It registered and attached the mirror, whose listing reconciled its catalog.
  EXPECT_TRUE(c.serving(2));
  EXPECT_EQ(Describe(c, 2), modified);
  // And it follows later changes again.
  ASSERT_TRUE(c.core(1)->admin()->DoDeleteTable(DeleteRequest()).ok());
  EXPECT_TRUE(c.RunUntil([&] { return AllSee(c, "absent"); }, 2 * kSecond)) << AllDescriptions(c);
}

// The node that is master, -1 for none, -2 for more than one.
int Master(const SimCluster& c) {
  int master = -1;
  for (int i = 0; i < c.size(); ++i) {
    if (c.core(i) != nullptr && c.core(i)->node()->is_master()) {
      if (master != -1) return -2;
      master = i;
    }
  }
  return master;
}

TEST(SimClusterTest, ACrashedMastersLockIsTakenOverOnlyWhenItsSessionRunsOut) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions options = Options(seed);
  SimCluster c(options);
  ASSERT_TRUE(c.Start().ok());
  c.RunFor(1 * kSecond);
  const int old_master = Master(c);
  ASSERT_GE(old_master, 0);
  const int64_t crashed_at = c.now_us();
  ASSERT_TRUE(c.Crash(old_master).ok());
  // A dead process does not close its session: the lock stays with it for the TTL.
  const int64_t ttl_us = options.node.session_ttl_ms * kMs;
  c.RunFor(ttl_us / 2);
  EXPECT_EQ(Master(c), -1);
  ASSERT_TRUE(c.RunUntil([&] { return Master(c) >= 0; }, 2 * ttl_us));
  const int64_t took = c.now_us() - crashed_at;
  EXPECT_GE(took, ttl_us);
  // The expiry check runs every 10 ms, and the watch on the lock wakes the others at once.
  EXPECT_LE(took, ttl_us + 100 * kMs);
  EXPECT_NE(Master(c), old_master);
  // The restarted node is a new incarnation and competes again; there is still one master.
  ASSERT_TRUE(c.Restart(old_master).ok());
  c.RunFor(1 * kSecond);
  EXPECT_GE(Master(c), 0);
}

// Writes row `key` with one cell in cf1 through node `i`'s TableAccess.
Status Write(const SimCluster& c, int i, const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(auto table, c.core(i)->catalog()->GetTable(kTable));
  model::RowMutation m(key);
  m.SetCell("cf1", "q", 1000 * kMs, value);
  return c.core(i)->access()->Mutate(*table, m, replication::AccessOptions());
}

// Every row of kTable through node `i`'s TableAccess, as "key=value" of each row's first cell.
StatusOr<std::vector<std::string>> ReadAll(const SimCluster& c, int i) {
  ASSIGN_OR_RETURN(auto table, c.core(i)->catalog()->GetTable(kTable));
  replication::ReadRequest request;
  request.rows = model::RowSet::All();
  ASSIGN_OR_RETURN(auto stream, c.core(i)->access()->Read(table, std::move(request), replication::AccessOptions()));
  std::vector<std::string> rows;
  model::Row row;
  while (!stream->done()) {
    ASSIGN_OR_RETURN(replication::ReadStep step, stream->Step(&row));
    if (step == replication::ReadStep::kEnd) break;
    if (step == replication::ReadStep::kRow) rows.push_back(row.key + "=" + row.cells[0].value);
  }
  return rows;
}

TEST(SimClusterTest, DataWrittenThroughANodesTableAccessReadsBackThereAlsoAfterACrash) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(CreateRequest()).ok());
  ASSERT_TRUE(c.RunUntil([&] { return Describe(c, 0) != "absent"; }, 2 * kSecond));

  // One row in each tablet (split at "g" and "p").
  const std::vector<std::string> want = {"apple=1", "kiwi=2", "zucchini=3"};
  for (const std::string& kv : want) {
    const size_t eq = kv.find('=');
    ASSERT_TRUE(Write(c, 0, kv.substr(0, eq), kv.substr(eq + 1)).ok()) << kv;
  }
  StatusOr<std::vector<std::string>> rows = ReadAll(c, 0);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, want);

  // Every acknowledged write was synced (batch mode): the crash keeps them all.
  ASSERT_TRUE(c.Crash(0).ok());
  ASSERT_TRUE(c.Restart(0).ok());
  rows = ReadAll(c, 0);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, want);
  // Data is per node in this issue: the other nodes have the table but not the rows.
  rows = ReadAll(c, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->empty());
}

// The partition cuts gossip only: the lock service is the cluster's, so the schema still
// reaches the node on the other side while its peers see it down.
TEST(SimClusterTest, ASchemaChangeCrossesAGossipPartitionThroughTheLockService) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  c.Partition({{0, 1}, {2}});
  c.RunFor(10 * kSecond);
  auto liveness_of_2 = [&]() -> std::string {
    std::optional<cluster::PeerView> seen =
        c.core(0)->node()->gossiper()->ViewOf(SimCluster::Endpoint(2));
    return seen.has_value() ? cluster::LivenessName(seen->liveness) : "unknown";
  };
  const std::string down = cluster::LivenessName(cluster::Liveness::kDown);
  const std::string up = cluster::LivenessName(cluster::Liveness::kUp);
  EXPECT_EQ(liveness_of_2(), down);
  ASSERT_TRUE(c.core(0)->admin()->DoCreateTable(CreateRequest()).ok());
  const std::string created = "v1 cf1[versions() > 2] cf2[age() > 1h] splits g p";
  EXPECT_TRUE(c.RunUntil([&] { return AllSee(c, created); }, 2 * kSecond)) << AllDescriptions(c);
  c.Heal();
  c.RunFor(5 * kSecond);
  EXPECT_EQ(liveness_of_2(), up);
}

// One run's observations: when each node first saw each step of the schema's story, how many
// tasks ran and messages moved.
std::string Trace(uint64_t seed) {
  SimClusterOptions options = Options(seed);
  options.network.loss = 0.05;  // lost messages, so that the seed shapes the run
  SimCluster c(options);
  std::string trace;
  auto note = [&](const std::string& what) {
    trace +=
        StrCat(c.now_us(), " ", what, " tasks=", c.tasks_run(),
               " sent=", c.network().messages_sent(), " lost=", c.network().messages_lost(), "\n");
  };
  if (Status s = c.Start(); !s.ok()) return StrCat("start failed: ", s);
  note("started");
  // Records the time each node first describes the table as `want`.
  auto follow = [&](const std::string& want) {
    std::vector<bool> seen(c.size(), false);
    c.RunUntil(
        [&] {
          bool all = true;
          for (int i = 0; i < c.size(); ++i) {
            if (!seen[i] && Describe(c, i) == want) {
              seen[i] = true;
              note(StrCat("node ", i, " sees ", want));
            }
            all = all && seen[i];
          }
          return all;
        },
        2 * kSecond);
  };
  if (!c.core(1)->admin()->DoCreateTable(CreateRequest()).ok()) return "create failed";
  follow("v1 cf1[versions() > 2] cf2[age() > 1h] splits g p");
  c.SetClockDrift(2, 50 * kMs, 1.01);
  if (!c.Crash(2).ok()) return "crash failed";
  if (!c.core(0)->admin()->DoModifyColumnFamilies(ModifyRequest()).ok()) return "modify failed";
  c.RunFor(500 * kMs);
  note("modified");
  if (!c.Restart(2).ok()) return "restart failed";
  note("restarted");
  follow("v2 cf1[versions() > 1] cf3[versions() > 5] splits g p");
  if (!c.Pause(1, 300 * kMs).ok()) return "pause failed";
  c.RunFor(1 * kSecond);
  note("resumed");
  return trace;
}

TEST(SimClusterTest, TheSameSeedReplaysTheSameRun) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  const std::string first = Trace(seed);
  EXPECT_NE(first.find("node 2 sees v2"), std::string::npos) << first;
  EXPECT_EQ(first, Trace(seed));
}

}  // namespace
}  // namespace tessera::testing
