// The distributed store on simulated time (docs/replication.md, "How it will be tested"):
// three replicated nodes, a table created through one of them, writes and reads through every
// node's coordinator. Checked: a write through any node reads back through every other and
// lies on every replica; a primary's crash moves its tablets to another replica without losing
// an acknowledged write, and the stall is measured; and runs of concurrent clients under loss,
// partitions, crashes, pauses and clock drift are linearizable per row with no acknowledged
// write lost (history.h). Every test prints `replay with TESSERA_SEED=<n>` on failure.
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.pb.h"
#include "google/bigtable/v2/data.pb.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"
#include "tessera/catalog/metadata_table.h"
#include "tessera/catalog/ring_store.h"
#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/consistency_token.h"
#include "tessera/replication/consistency_tokens.h"
#include "tessera/replication/coordinator.h"
#include "tessera/server/row_filter_proto.h"
#include "tessera/testing/history.h"
#include "tessera/testing/sim_cluster.h"
#include "tessera/testing/sim_table_calls.h"
#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::testing {
namespace {

namespace admin = ::google::bigtable::admin::v2;
namespace v2 = ::google::bigtable::v2;
using replication::Coordinator;
using replication::AccessOptions;
using replication::ReadLevel;

constexpr int64_t kMs = 1000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr char kInstance[] = "projects/p/instances/i";
constexpr const char* kTable = kSimTable;
constexpr int64_t kCellTs = 1000;  // every register write: the newest applied wins

SimClusterOptions Options(uint64_t seed) {
  SimClusterOptions o;
  o.seed = seed;
  o.replicated = true;
  return o;
}

admin::CreateTableRequest CreateRequest() {
  admin::CreateTableRequest r;
  r.set_parent(kInstance);
  r.set_table_id("t");
  (*r.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(1);
  r.add_initial_splits()->set_key("m");
  return r;
}

// Every node's view of its replicas, for a failure's message.
std::string DescribeReplicas(const SimCluster& c) {
  std::string out;
  for (int i = 0; i < c.size(); ++i) {
    if (c.core(i) == nullptr || c.core(i)->replicated() == nullptr) {
      out += StrCat("node ", i, ": down\n");
      continue;
    }
    for (const replication::TabletReplicaState& t : c.core(i)->replicated()->replicas()->States()) {
      out += StrCat("node ", i, " tablet ", t.tablet_id, ": config epoch ", t.config_epoch,
                    " promised ", t.promised_epoch, " joined ", t.joined_epoch,
                    t.primary ? " PRIMARY" : "", " last ", t.last_sequence);
      for (const auto& p : t.peers) {
        out += StrCat(" [", p.endpoint, " acked ", p.acknowledged, p.answering ? "" : " silent",
                      p.leased ? " leased" : "", p.needs_rebuild ? " REBUILD" : "", "]");
      }
      out += "\n";
    }
  }
  return out;
}

// Starts the cluster and makes the table through node 1.
void StartWithTable(SimCluster& c) {
  ASSERT_TRUE(c.Start().ok());
  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(CreateRequest()).ok());
  ASSERT_TRUE(c.RunUntil([&] { return Configured(c); }, 5 * kSecond));
}

Status Write(SimCluster& c, int i, const std::string& key, const std::string& value) {
  Coordinator* co = CoordinatorOf(c, i);
  if (co == nullptr) return absl::UnavailableError("node down");
  model::RowMutation m(key);
  m.SetCell("cf", "q", kCellTs, value);
  std::optional<Status> s = RunCall<Status>(c, [&](std::function<void(Status)> done) {
    co->Mutate(TableAt(c, i), m, AccessOptions(), std::move(done));
  });
  return s.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// The value of `key` through node i at `level`: nullopt when absent.
StatusOr<std::optional<std::string>> Read(SimCluster& c, int i, const std::string& key,
                                          ReadLevel level = ReadLevel::kPrimary) {
  Coordinator* co = CoordinatorOf(c, i);
  if (co == nullptr) return absl::UnavailableError("node down");
  replication::TableSnapshot t = TableAt(c, i);
  AccessOptions o;
  o.read_level = level;
  std::optional<StatusOr<replication::ReadPage>> page =
      RunCall<StatusOr<replication::ReadPage>>(
          c, [&](std::function<void(StatusOr<replication::ReadPage>)> done) {
            co->Read(t, t->TabletIndexFor(key), {model::RowRange::SingleKey(key)}, nullptr, 0,
                     false, o, std::move(done));
          });
  if (!page.has_value()) return absl::DeadlineExceededError("the simulation ran out");
  if (!page->ok()) return page->status();
  if ((*page)->rows.empty()) return std::optional<std::string>();
  return std::optional<std::string>((*page)->rows[0].cells[0].value);
}

TEST(SimReplicationTest, AWriteThroughOneNodeReadsBackThroughEveryNodeAndLiesOnEveryReplica) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  // Rows in both tablets, through each node.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Write(c, i, StrCat("a", i), StrCat("v", i)).ok());
    ASSERT_TRUE(Write(c, i, StrCat("z", i), StrCat("w", i)).ok());
  }
  for (int reader = 0; reader < 3; ++reader) {
    for (int i = 0; i < 3; ++i) {
      auto a = Read(c, reader, StrCat("a", i));
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_EQ(a->value_or("absent"), StrCat("v", i)) << "through node " << reader;
      auto z = Read(c, reader, StrCat("z", i));
      ASSERT_TRUE(z.ok()) << z.status();
      EXPECT_EQ(z->value_or("absent"), StrCat("w", i));
    }
  }
  // RF 3 of 3 nodes: once the streams are quiet, every node holds every row itself.
  c.RunFor(1 * kSecond);
  for (int node = 0; node < 3; ++node) {
    for (int i = 0; i < 3; ++i) {
      auto a = Read(c, node, StrCat("a", i), ReadLevel::kOne);
      ASSERT_TRUE(a.ok()) << a.status();
      EXPECT_EQ(a->value_or("absent"), StrCat("v", i)) << "on node " << node;
    }
  }
}

// Stopping a coordinator ends its retries: a write waiting to try again (here refused by its
// own node, the primary, for want of a quorum) finishes at Stop with Unavailable, instead of
// leaving a task on the executor that would run once the node is gone (a server's replica
// threads outlive its store). A try on its way to a peer then fails and is not tried again.
TEST(SimReplicationTest, StoppingACoordinatorFinishesTheOperationsWaitingToRetry) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  const replication::TableSnapshot table = TableAt(c, 0);
  const std::string keys[] = {"a1", "z1"};  // both tablets
  std::optional<catalog::TabletConfig> config = c.core(0)->replicated()->replicas()->GetConfig(
      table->tablets[table->TabletIndexFor(keys[0])].id);
  ASSERT_TRUE(config.has_value());
  int primary = -1;
  for (int i = 0; i < c.size(); ++i) {
    if (config->primary_endpoint() == SimCluster::Endpoint(i)) primary = i;
  }
  ASSERT_GE(primary, 0) << config->primary_endpoint();
  for (int i = 0; i < c.size(); ++i) {
    if (i != primary) ASSERT_TRUE(c.Crash(i).ok());
  }
  c.RunFor(5 * kSecond);  // the primary finds its replicas gone: it refuses writes at QUORUM
  Coordinator* co = CoordinatorOf(c, primary);
  ASSERT_NE(co, nullptr);
  std::vector<std::optional<Status>> outcomes(2);
  for (int k = 0; k < 2; ++k) {
    model::RowMutation m(keys[k]);
    m.SetCell("cf", "q", kCellTs, "v");
    co->Mutate(TableAt(c, primary), m, AccessOptions(),
               [&outcomes, k](Status s) { outcomes[k] = s; });
  }
  c.RunFor(300 * kMs);  // tries, refused or unanswered, and waits between them
  ASSERT_FALSE(outcomes[0].has_value()) << *outcomes[0];
  ASSERT_FALSE(outcomes[1].has_value()) << *outcomes[1];
  co->Stop();
  ASSERT_TRUE(outcomes[0].has_value()) << "a write waiting to retry outlived Stop";
  EXPECT_TRUE(absl::IsUnavailable(*outcomes[0])) << *outcomes[0];
  EXPECT_NE(outcomes[0]->message().find("stopping"), std::string_view::npos) << *outcomes[0];
  c.RunFor(2 * kSecond);
  ASSERT_TRUE(outcomes[1].has_value()) << keys[1] << " never finished";
  EXPECT_TRUE(absl::IsUnavailable(*outcomes[1]) || absl::IsDeadlineExceeded(*outcomes[1]))
      << *outcomes[1];
}

// Tablet index of `key` in `table`.
size_t TabletIndex(const replication::TableSnapshot& table, const std::string& key) {
  return table->TabletIndexFor(key);
}

TEST(SimReplicationTest, ABatchAcrossTwoTabletsAnswersEachEntryAndABadOneFailsAlone) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  // Through each node in turn, so batches reach primaries here and elsewhere: per tablet (split
  // at "m") one batch of three rows, the middle one of the second tablet of a family the table
  // does not have.
  for (int via = 0; via < 3; ++via) {
    Coordinator* co = CoordinatorOf(c, via);
    replication::TableSnapshot table = TableAt(c, via);
    ASSERT_NE(co, nullptr);
    for (const std::string& prefix : {std::string("b"), std::string("x")}) {
      std::vector<model::RowMutation> batch;
      for (int k = 0; k < 3; ++k) {
        model::RowMutation m(StrCat(prefix, via, "-", k));
        const bool bad = prefix == "x" && k == 1;
        m.SetCell(bad ? "nope" : "cf", "q", kCellTs, StrCat("v", via, k));
        batch.push_back(std::move(m));
      }
      std::optional<std::vector<Status>> statuses = RunCall<std::vector<Status>>(
          c, [&](std::function<void(std::vector<Status>)> done) {
            co->MutateBatch(table, TabletIndex(table, prefix), batch, AccessOptions(),
                            std::move(done));
          });
      ASSERT_TRUE(statuses.has_value());
      ASSERT_EQ(statuses->size(), 3u);
      for (int k = 0; k < 3; ++k) {
        if (prefix == "x" && k == 1) {
          EXPECT_EQ((*statuses)[k].code(), absl::StatusCode::kInvalidArgument) << (*statuses)[k];
        } else {
          EXPECT_TRUE((*statuses)[k].ok()) << "via " << via << " " << prefix << k << ": "
                                           << (*statuses)[k];
        }
      }
    }
  }
  // Every good row reads back through every node; the bad one is absent.
  for (int reader = 0; reader < 3; ++reader) {
    for (int via = 0; via < 3; ++via) {
      for (const std::string& prefix : {std::string("b"), std::string("x")}) {
        for (int k = 0; k < 3; ++k) {
          auto v = Read(c, reader, StrCat(prefix, via, "-", k));
          ASSERT_TRUE(v.ok()) << v.status();
          const bool bad = prefix == "x" && k == 1;
          EXPECT_EQ(v->value_or("absent"), bad ? "absent" : StrCat("v", via, k))
              << prefix << via << "-" << k << " through node " << reader;
        }
      }
    }
  }
}

TEST(SimReplicationTest, APrimaryCrashMovesItsTabletsWithoutLosingAnAcknowledgedWrite) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  replication::TableSnapshot t = TableAt(c, 0);
  const uint64_t tablet = t->tablets[0].id;
  auto config = c.core(0)->replicated()->replicas()->GetConfig(tablet);
  ASSERT_TRUE(config.has_value());
  int primary = -1;
  for (int i = 0; i < 3; ++i) {
    if (SimCluster::Endpoint(i) == config->primary_endpoint()) primary = i;
  }
  ASSERT_GE(primary, 0);
  const int writer = (primary + 1) % 3;
  // Acknowledged writes before the crash.
  std::vector<std::string> acked;
  for (int k = 0; k < 20; ++k) {
    ASSERT_TRUE(Write(c, writer, StrCat("b", k), StrCat("x", k)).ok());
    acked.push_back(StrCat("b", k));
  }
  const int64_t crashed_at = c.now_us();
  ASSERT_TRUE(c.Crash(primary).ok());
  // Writes keep going through the writer; the first to succeed ends the stall.
  int64_t resumed_at = 0;
  for (int k = 20; k < 200 && resumed_at == 0; ++k) {
    const int64_t before = c.now_us();
    Status s = Write(c, writer, StrCat("b", k), StrCat("x", k));
    if (s.ok()) {
      resumed_at = c.now_us();
      acked.push_back(StrCat("b", k));
    } else if (c.now_us() == before) {
      c.RunFor(50 * kMs);
    }
  }
  ASSERT_GT(resumed_at, 0) << "writes never resumed";
  const int64_t stall_ms = (resumed_at - crashed_at) / kMs;
  std::printf("[ stall ] writes to a crashed primary's tablet resumed after %lld ms\n",
              static_cast<long long>(stall_ms));
  // Session TTL (2 s) + the master's step + the seal's lease wait (2 s) + retries.
  EXPECT_LT(stall_ms, 8000);
  auto moved = c.core(writer)->replicated()->replicas()->GetConfig(tablet);
  ASSERT_TRUE(moved.has_value());
  EXPECT_GT(moved->epoch, config->epoch);
  EXPECT_NE(moved->primary_endpoint(), config->primary_endpoint());
  for (const std::string& key : acked) {
    auto v = Read(c, writer, key);
    ASSERT_TRUE(v.ok()) << key << ": " << v.status();
    EXPECT_TRUE(v->has_value()) << key << " was acknowledged and is lost";
  }
  // The crashed node comes back as a replica and catches up.
  ASSERT_TRUE(c.Restart(primary).ok());
  ASSERT_TRUE(Write(c, writer, "after", "restart").ok());
  c.RunFor(2 * kSecond);
  auto v = Read(c, primary, "after", ReadLevel::kOne);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->value_or("absent"), "restart");
}

Status WriteAt(SimCluster& c, int i, const std::string& key, replication::WriteLevel level) {
  Coordinator* co = CoordinatorOf(c, i);
  model::RowMutation m(key);
  m.SetCell("cf", "q", kCellTs, "v");
  AccessOptions o;
  o.write_level = level;
  std::optional<Status> s = RunCall<Status>(c, [&](std::function<void(Status)> done) {
    co->Mutate(TableAt(c, i), m, o, std::move(done));
  });
  return s.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// --- A replica that was away (docs/replication.md): hints beyond the in-memory retention ---

// Node i's state of `tablet`, or null.
std::optional<replication::TabletReplicaState> StateAt(const SimCluster& c, int i,
                                                       uint64_t tablet) {
  if (c.core(i) == nullptr || c.core(i)->replicated() == nullptr) return std::nullopt;
  for (const auto& s : c.core(i)->replicated()->replicas()->States()) {
    if (s.tablet_id == tablet) return s;
  }
  return std::nullopt;
}

struct AwayRun {
  uint64_t tablet = 0;
  int primary = -1;
  int away = -1;    // a replica that is not the primary
  int writer = -1;  // the third node
};

// Starts 3 nodes whose primaries keep only a few KiB in memory, finds tablet 0's roles, crashes
// its `away` replica and writes `rows` rows of 200 bytes to the tablet through the third node.
// Tablet 0 of the table and its roles: its primary, a replica to send away, the third node.
void FindRoles(SimCluster& c, AwayRun* run) {
  run->tablet = TableAt(c, 0)->tablets[0].id;
  auto config = c.core(0)->replicated()->replicas()->GetConfig(run->tablet);
  ASSERT_TRUE(config.has_value());
  for (int i = 0; i < c.size(); ++i) {
    if (SimCluster::Endpoint(i) == config->primary_endpoint()) run->primary = i;
  }
  ASSERT_GE(run->primary, 0);
  run->away = (run->primary + 1) % c.size();
  run->writer = (run->primary + 2) % c.size();
}

void StartAndWriteWhileAway(SimCluster& c, int rows, AwayRun* run) {
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  ASSERT_NO_FATAL_FAILURE(FindRoles(c, run));
  ASSERT_TRUE(Write(c, run->writer, "a-first", "before").ok());
  c.RunFor(1 * kSecond);
  ASSERT_TRUE(c.Crash(run->away).ok());
  for (int k = 0; k < rows; ++k) {
    ASSERT_TRUE(Write(c, run->writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26)).ok())
        << k;
  }
  auto p = StateAt(c, run->primary, run->tablet);
  ASSERT_TRUE(p.has_value());
  EXPECT_LE(p->retained_bytes, 4096u + 512u);  // one mutation may pass the bound
}

// Restarts the away replica and runs until it holds the primary's last sequence; says whether
// the primary marked it for a rebuild (or copied it) on the way.
bool CatchUp(SimCluster& c, const AwayRun& run, bool* rebuilt, int64_t limit_us) {
  EXPECT_TRUE(c.Restart(run.away).ok());
  const std::string away = SimCluster::Endpoint(run.away);
  return c.RunUntil(
      [&] {
        auto p = StateAt(c, run.primary, run.tablet);
        if (!p.has_value()) return false;
        for (const auto& peer : p->peers) {
          if (peer.endpoint == away && (peer.needs_rebuild || peer.copying)) *rebuilt = true;
        }
        StatusOr<replication::ReplicaPosition> at =
            c.core(run.away)->replicated()->replicas()->Position(run.tablet);
        return at.ok() && at->last_sequence == p->last_sequence;
      },
      limit_us);
}

void ExpectEveryRowOn(SimCluster& c, int node, int rows) {
  for (int k = 0; k < rows; ++k) {
    auto v = Read(c, node, StrCat("a", 1000 + k), ReadLevel::kOne);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->value_or("absent"), std::string(200, 'a' + k % 26)) << "row " << k;
  }
}

SimClusterOptions SmallRetention(uint64_t seed) {
  SimClusterOptions o = Options(seed);
  o.replica.retained_bytes_per_tablet = 4096;
  return o;
}

TEST(SimReplicationTest, AReplicaThatWasAwayCatchesUpFromTheHintLogWithoutARebuild) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = SmallRetention(seed);
  // Slow enough to see the throttle: a burst of one 8 KiB batch, then 32 KiB/s.
  o.replica.hint_delivery_bytes_per_s = 32 << 10;
  o.replica.max_batch_bytes = 8 << 10;
  SimCluster c(o);
  constexpr int kRows = 200;  // ~ 50 KiB of mutations, a dozen times what memory keeps
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartAndWriteWhileAway(c, kRows, &run));
  c.RunFor(200 * kMs);  // a tick writes what was spilled
  auto p = StateAt(c, run.primary, run.tablet);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->hint_records, static_cast<uint64_t>(kRows / 2)) << DescribeReplicas(c);
  EXPECT_GT(p->hint_bytes, 20u << 10);
  // The hint files are in the primary's data folder.
  StatusOr<std::vector<std::string>> files = c.fs(run.primary)->GetChildren(
      StrCat("/node", run.primary, "/hints"));
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_FALSE(files->empty());

  const int64_t back_at = c.now_us();
  bool rebuilt = false;
  ASSERT_TRUE(CatchUp(c, run, &rebuilt, 30 * kSecond)) << DescribeReplicas(c);
  EXPECT_FALSE(rebuilt) << DescribeReplicas(c);
  // ~ 50 KiB at 32 KiB/s after an 8 KiB burst: more than a second, less than a few.
  const int64_t took_ms = (c.now_us() - back_at) / kMs;
  std::printf("[ hints ] %d rows caught up from the hint log in %lld ms\n", kRows,
              static_cast<long long>(took_ms));
  EXPECT_GE(took_ms, 1000);
  EXPECT_LE(took_ms, 10000);
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRowOn(c, run.away, kRows));
  // Delivered and acknowledged: the hints go.
  EXPECT_TRUE(c.RunUntil(
      [&] {
        auto s = StateAt(c, run.primary, run.tablet);
        return s.has_value() && s->hint_records == 0;
      },
      5 * kSecond))
      << StateAt(c, run.primary, run.tablet)->hint_records << " hints left";
}

TEST(SimReplicationTest, APrimarysHintLogIsThereAgainAfterItRestarts) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(SmallRetention(seed));
  constexpr int kRows = 60;
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartAndWriteWhileAway(c, kRows, &run));
  c.RunFor(200 * kMs);
  const uint64_t hinted = StateAt(c, run.primary, run.tablet)->hint_records;
  ASSERT_GT(hinted, 0u);
  ASSERT_TRUE(c.Crash(run.primary).ok());  // every hint was synced: the crash keeps them
  ASSERT_TRUE(c.Restart(run.primary).ok());
  auto p = StateAt(c, run.primary, run.tablet);
  ASSERT_TRUE(p.has_value());
  EXPECT_GE(p->hint_records, hinted) << DescribeReplicas(c);
}

TEST(SimReplicationTest, AReplicaAwayAcrossAFailoverCatchesUpFromTheNewPrimarysHints) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(SmallRetention(seed));
  constexpr int kRows = 100;  // ~ 25 KiB, six times what memory keeps
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartAndWriteWhileAway(c, kRows, &run));
  c.RunFor(200 * kMs);  // a tick writes what was spilled
  // The other replica kept what the away one lacks: the primary said in each batch that one
  // member held only what it had before it went.
  auto w = StateAt(c, run.writer, run.tablet);
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(w->primary);
  EXPECT_LE(w->retained_bytes, 4096u + 512u);
  EXPECT_GT(w->hint_records, static_cast<uint64_t>(kRows / 2)) << DescribeReplicas(c);

  // The primary dies and the away replica comes back: the master makes the writer's node the
  // primary, which brings the returning one up to date from its own hint log.
  ASSERT_TRUE(c.Crash(run.primary).ok());
  ASSERT_TRUE(c.Restart(run.away).ok());
  const std::string away = SimCluster::Endpoint(run.away);
  bool rebuilt = false;
  ASSERT_TRUE(c.RunUntil(
      [&] {
        auto p = StateAt(c, run.writer, run.tablet);
        if (!p.has_value() || !p->primary) return false;
        for (const auto& peer : p->peers) {
          if (peer.endpoint == away && (peer.needs_rebuild || peer.copying)) rebuilt = true;
        }
        StatusOr<replication::ReplicaPosition> at =
            c.core(run.away)->replicated()->replicas()->Position(run.tablet);
        return at.ok() && at->last_sequence == p->last_sequence;
      },
      60 * kSecond))
      << DescribeReplicas(c);
  EXPECT_FALSE(rebuilt) << DescribeReplicas(c);
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRowOn(c, run.away, kRows));
}

TEST(SimReplicationTest, AReplicaAwayLongerThanTheHintWindowIsRebuilt) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = SmallRetention(seed);
  o.replica.hint_window_us = 5 * kSecond;
  SimCluster c(o);
  constexpr int kRows = 100;
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartAndWriteWhileAway(c, kRows, &run));
  c.RunFor(200 * kMs);
  auto p = StateAt(c, run.primary, run.tablet);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->hint_records, 0u);
  c.RunFor(6 * kSecond);  // past the window: the hints are dropped
  p = StateAt(c, run.primary, run.tablet);
  EXPECT_EQ(p->hint_records, 0u);
  bool rebuilt = false;
  ASSERT_TRUE(CatchUp(c, run, &rebuilt, 30 * kSecond)) << DescribeReplicas(c);
  EXPECT_TRUE(rebuilt) << DescribeReplicas(c);
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRowOn(c, run.away, kRows));
}

TEST(SimReplicationTest, ARebuildStreamsNoFasterThanTheStreamThroughputWhichChangesAtRunTime) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = SmallRetention(seed);
  o.replica.hint_window_us = 5 * kSecond;
  o.replica.stream_bytes_per_s = 4000;  // the copy of 100 rows of 200 bytes needs > 5 s
  SimCluster c(o);
  constexpr int kRows = 100;
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartAndWriteWhileAway(c, kRows, &run));
  c.RunFor(6 * kSecond);  // past the window: the away replica will need a copy
  replication::ReplicaNode* primary = c.core(run.primary)->replicated()->replicas();
  const replication::StreamStats before = primary->Streams();
  ASSERT_TRUE(c.Restart(run.away).ok());
  auto caught_up = [&] {
    auto p = StateAt(c, run.primary, run.tablet);
    StatusOr<replication::ReplicaPosition> at =
        c.core(run.away)->replicated()->replicas()->Position(run.tablet);
    return p.has_value() && at.ok() && at->last_sequence == p->last_sequence;
  };
  ASSERT_TRUE(c.RunUntil([&] { return primary->Streams().sending == 1; }, 5 * kSecond))
      << DescribeReplicas(c);
  c.RunFor(3 * kSecond);
  EXPECT_FALSE(caught_up()) << "the copy went faster than 4000 bytes/s";
  EXPECT_EQ(primary->Streams().sending, 1u);
  EXPECT_EQ(primary->stream_bytes_per_second(), 4000);
  primary->SetStreamBytesPerSecond(0);  // unthrottled from now on
  ASSERT_TRUE(c.RunUntil(caught_up, 1 * kSecond)) << DescribeReplicas(c);
  ASSERT_TRUE(c.RunUntil([&] { return primary->Streams().sending == 0; }, 1 * kSecond));
  const replication::StreamStats after = primary->Streams();
  EXPECT_EQ(after.sending, 0u);
  EXPECT_EQ(after.copies_done_total, before.copies_done_total + 1);
  EXPECT_GT(after.sent_bytes_total, before.sent_bytes_total + kRows * 200);
  EXPECT_EQ(c.core(run.away)->replicated()->replicas()->Streams().received_bytes_total,
            after.sent_bytes_total - before.sent_bytes_total);
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRowOn(c, run.away, kRows));
}

// --- Repair (docs/repair.md) ---

StatusOr<replication::TabletRepairReport> Repair(SimCluster& c, int primary, uint64_t tablet) {
  using Report = StatusOr<replication::TabletRepairReport>;
  std::optional<Report> r = RunCall<Report>(c, [&](std::function<void(Report)> done) {
    c.core(primary)->replicated()->replicas()->RepairTablet(tablet, 10 * kSecond, std::move(done));
  });
  return r.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// Each replica's outcome, "endpoint:outcome" in endpoint order, for the failure message.
std::string Outcomes(const replication::TabletRepairReport& r) {
  std::string out;
  for (const auto& replica : r.replicas) {
    out += StrCat(replica.endpoint, ":", replication::RepairOutcomeName(replica.outcome), " ",
                  replica.message, "; ");
  }
  return out;
}

void ExpectEveryReplica(const replication::TabletRepairReport& r, replication::RepairOutcome o) {
  ASSERT_EQ(r.replicas.size(), 2u);
  for (const auto& replica : r.replicas) EXPECT_EQ(replica.outcome, o) << Outcomes(r);
}

TEST(SimReplicationTest, RepairRebuildsAReplicaThatLostItsDataAndComparesWhileWritesGoOn) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  constexpr int kRows = 50;
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  ASSERT_NO_FATAL_FAILURE(FindRoles(c, &run));
  for (int k = 0; k < kRows; ++k) {
    ASSERT_TRUE(Write(c, run.writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26)).ok());
  }
  c.RunFor(1 * kSecond);

  // Every copy agrees.
  StatusOr<replication::TabletRepairReport> r = Repair(c, run.primary, run.tablet);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->sequence, static_cast<uint64_t>(kRows));
  EXPECT_EQ(r->primary.rows, static_cast<uint64_t>(kRows));
  ASSERT_NO_FATAL_FAILURE(ExpectEveryReplica(*r, replication::RepairOutcome::kConsistent));
  EXPECT_EQ(r->replicas[0].rows, static_cast<uint64_t>(kRows));

  // Compared while writes go on: each replica is compared at the sequence the primary chose
  // (it waits for it, or the primary tries a newer one), and still agrees.
  Coordinator* co = CoordinatorOf(c, run.primary);
  for (int k = 0; k < 20; ++k) {
    model::RowMutation m(StrCat("b", k));
    m.SetCell("cf", "q", kCellTs, "during");
    co->Mutate(TableAt(c, run.primary), m, AccessOptions(), [](Status) {});
  }
  r = Repair(c, run.primary, run.tablet);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_NO_FATAL_FAILURE(ExpectEveryReplica(*r, replication::RepairOutcome::kConsistent));

  // A replica loses its data under the protocol's feet (a disk replaced): the repair finds it,
  // a rebuild streams it the tablet, and the next repair finds every copy equal again.
  c.RunFor(1 * kSecond);
  ASSERT_TRUE(c.core(run.away)->engine()->TruncateTablet(run.tablet).ok());
  r = Repair(c, run.primary, run.tablet);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string away = SimCluster::Endpoint(run.away);
  for (const auto& replica : r->replicas) {
    EXPECT_EQ(replica.outcome, replica.endpoint == away ? replication::RepairOutcome::kRebuilding
                                                        : replication::RepairOutcome::kConsistent)
        << Outcomes(*r);
  }
  ASSERT_TRUE(c.RunUntil(
      [&] {
        auto p = StateAt(c, run.primary, run.tablet);
        if (!p.has_value()) return false;
        for (const auto& peer : p->peers) {
          if (peer.needs_rebuild || peer.copying) return false;
        }
        return true;
      },
      10 * kSecond))
      << DescribeReplicas(c);
  r = Repair(c, run.primary, run.tablet);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_NO_FATAL_FAILURE(ExpectEveryReplica(*r, replication::RepairOutcome::kConsistent));
  ASSERT_NO_FATAL_FAILURE(ExpectEveryRowOn(c, run.away, kRows));
  const replication::RepairStats stats = c.core(run.primary)->replicated()->replicas()->Repairs();
  EXPECT_EQ(stats.in_progress, 0u);
  EXPECT_GT(stats.hashed_bytes_total, 4u * kRows * 200);
}

// --- Decommission (docs/repair.md) ---

// Every configuration node i's replicas know, by tablet.
std::map<uint64_t, catalog::TabletConfig> Configs(const SimCluster& c, int i) {
  std::map<uint64_t, catalog::TabletConfig> out;
  replication::ReplicaNode* replicas = c.core(i)->replicated()->replicas();
  for (const auto& t : replicas->States()) {
    if (auto config = replicas->GetConfig(t.tablet_id)) out[t.tablet_id] = *config;
  }
  return out;
}

// Write(), retried on UNAVAILABLE (a write in flight when its tablet's epoch is sealed, as in a
// failover) as Bigtable clients retry an idempotent mutation; `retried` counts the retries.
Status WriteRetrying(SimCluster& c, int i, const std::string& key, const std::string& value,
                     int* retried) {
  Status s;
  for (int attempt = 0; attempt < 5; ++attempt) {
    s = Write(c, i, key, value);
    if (!absl::IsUnavailable(s)) break;
    ++*retried;
  }
  return s;
}

// Every tablet's configuration (as node `observer` knows it) settled without `gone`: no
// replica there, none awaiting a rebuild, and `leaving` names no tablet any more.
bool SettledWithout(const SimCluster& c, int observer, int leaving) {
  if (!c.core(leaving)->TabletsHeld().empty()) return false;
  for (const auto& [id, config] : Configs(c, observer)) {
    if (!config.needs_rebuild.empty() || config.IndexOf(SimCluster::Endpoint(leaving)) >= 0) {
      return false;
    }
  }
  return true;
}

// Each cluster tablet's primary finds every other copy consistent, and rows a1000.. read back.
void ExpectConsistentWithRows(SimCluster& c, int observer, int rows) {
  for (const auto& [id, config] : Configs(c, observer)) {
    EXPECT_EQ(config.replicas.size(), 3u);
    if (!catalog::IsClusterTabletId(id)) continue;
    int primary = -1;
    for (int i = 0; i < c.size(); ++i) {
      if (SimCluster::Endpoint(i) == config.primary_endpoint()) primary = i;
    }
    ASSERT_GE(primary, 0);
    StatusOr<replication::TabletRepairReport> r = Repair(c, primary, id);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_NO_FATAL_FAILURE(ExpectEveryReplica(*r, replication::RepairOutcome::kConsistent));
  }
  for (int k = 0; k < rows; ++k) {
    auto v = Read(c, observer, StrCat("a", 1000 + k));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->value_or("absent"), std::string(200, 'a' + k % 26)) << "row " << k;
  }
}

TEST(SimReplicationTest, ADecommissionedNodeHandsEveryReplicaOnWhileWritesGoOn) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = Options(seed);
  o.nodes = 4;
  SimCluster c(o);
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(FindRoles(c, &run));
  const int leaving = run.primary;  // the harder case: it leads tablet 0
  const int writer = (leaving + 1) % 4;
  const std::string gone = SimCluster::Endpoint(leaving);
  constexpr int kRows = 40;
  for (int k = 0; k < kRows; ++k) {
    ASSERT_TRUE(Write(c, writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26)).ok());
  }
  const size_t held = c.core(leaving)->TabletsHeld().size();
  ASSERT_GE(held, 1u);

  ASSERT_TRUE(c.core(leaving)->BeginDecommission().ok());
  // Writes go on while the replicas move. One in flight when its tablet's epoch is sealed gets
  // UNAVAILABLE, as in a failover, and is retried as Bigtable clients retry an idempotent
  // mutation.
  int retried = 0;
  for (int k = kRows; k < kRows + 20; ++k) {
    Status s =
        WriteRetrying(c, writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26), &retried);
    ASSERT_TRUE(s.ok()) << k << ": " << s;
  }
  EXPECT_LE(retried, 4) << "more than one retry per moving tablet";
  ASSERT_TRUE(c.RunUntil([&] { return SettledWithout(c, writer, leaving); }, 60 * kSecond))
      << DescribeReplicas(c);
  // Every tablet is on three nodes that stay, each holding the same cells as its primary.
  ASSERT_NO_FATAL_FAILURE(ExpectConsistentWithRows(c, writer, kRows + 20));
  // The node leaves the ring and stops serving.
  ASSERT_TRUE(c.core(leaving)->FinishDecommission().ok());
  EXPECT_TRUE(c.core(leaving)->drained());
  StatusOr<catalog::ClusterView> view = c.core(writer)->ring()->Read();
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->tokens.count(gone), 0u);
  EXPECT_TRUE(view->leaving.empty());
}

TEST(SimReplicationTest, ADecommissionWaitsForACrashedReplicaThatStaysAndLosesNothing) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = Options(seed);
  o.nodes = 4;
  SimCluster c(o);
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  AwayRun run;
  ASSERT_NO_FATAL_FAILURE(FindRoles(c, &run));
  const int leaving = run.primary;  // leads tablet 0
  auto config = c.core(leaving)->replicated()->replicas()->GetConfig(run.tablet);
  ASSERT_TRUE(config.has_value());
  int stayer = -1;  // a replica of tablet 0 that stays: it crashes during the move
  for (int i = 0; i < 4; ++i) {
    if (i != leaving && config->IndexOf(SimCluster::Endpoint(i)) >= 0) stayer = i;
  }
  ASSERT_GE(stayer, 0);
  int writer = 0;
  while (writer == leaving || writer == stayer) ++writer;
  constexpr int kRows = 30;
  for (int k = 0; k < kRows; ++k) {
    ASSERT_TRUE(Write(c, writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26)).ok());
  }
  ASSERT_TRUE(c.core(leaving)->BeginDecommission().ok());
  ASSERT_TRUE(c.Crash(stayer).ok());
  // Only one of tablet 0's staying replicas lives, too few to take the leaving primary's place:
  // the move cannot complete, and the writes go on at QUORUM through the leaving primary and
  // the other one.
  c.RunFor(3 * kSecond);
  auto now = c.core(writer)->replicated()->replicas()->GetConfig(run.tablet);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->epoch, config->epoch) << DescribeReplicas(c);
  EXPECT_GE(now->IndexOf(SimCluster::Endpoint(leaving)), 0);
  int retried = 0;
  for (int k = kRows; k < kRows + 10; ++k) {
    Status s =
        WriteRetrying(c, writer, StrCat("a", 1000 + k), std::string(200, 'a' + k % 26), &retried);
    ASSERT_TRUE(s.ok()) << k << ": " << s;
  }
  EXPECT_EQ(retried, 0);
  // It comes back: the move goes on, and nothing acknowledged is lost.
  ASSERT_TRUE(c.Restart(stayer).ok());
  ASSERT_TRUE(c.RunUntil([&] { return SettledWithout(c, writer, leaving); }, 60 * kSecond))
      << DescribeReplicas(c);
  ASSERT_NO_FATAL_FAILURE(ExpectConsistentWithRows(c, writer, kRows + 10));
}

TEST(SimReplicationTest, ConsistencyLevelsCountTheReplicasThatAnswer) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  using replication::WriteLevel;
  for (WriteLevel level : {WriteLevel::kOne, WriteLevel::kQuorum, WriteLevel::kAll}) {
    EXPECT_TRUE(WriteAt(c, 0, "a", level).ok()) << WriteLevelName(level);
  }
  // One replica cut off (not a primary: the primaries stay where they are).
  auto config = c.core(0)->replicated()->replicas()->GetConfig(TableAt(c, 0)->tablets[0].id);
  int away = -1;
  for (int i = 0; i < 3 && away < 0; ++i) {
    if (SimCluster::Endpoint(i) != config->primary_endpoint()) away = i;
  }
  const int via = config->IndexOf(SimCluster::Endpoint((away + 1) % 3)) >= 0 ? (away + 1) % 3 : 0;
  c.Partition({{away}});
  c.RunFor(2 * kSecond);  // the primary notices the silent replica
  EXPECT_TRUE(WriteAt(c, via, "a", WriteLevel::kOne).ok());
  EXPECT_TRUE(WriteAt(c, via, "a", WriteLevel::kQuorum).ok());
  Status all = WriteAt(c, via, "a", WriteLevel::kAll);
  EXPECT_FALSE(all.ok());
  EXPECT_TRUE(absl::IsUnavailable(all) || absl::IsDeadlineExceeded(all)) << all;
  EXPECT_NE(std::string(all.message()).find("tablet"), std::string::npos) << all;
  // The client's deadline bounds the retries, and its end is said as such, with the cause.
  {
    model::RowMutation m("a");
    m.SetCell("cf", "q", kCellTs, "v");
    AccessOptions o;
    o.write_level = WriteLevel::kAll;
    o.timeout_us = 300 * kMs;
    const int64_t start = c.now_us();
    std::optional<Status> s = RunCall<Status>(c, [&](std::function<void(Status)> done) {
      CoordinatorOf(c, via)->Mutate(TableAt(c, via), m, o, std::move(done));
    });
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(absl::IsDeadlineExceeded(*s)) << *s;
    EXPECT_NE(std::string(s->message()).find("replicas"), std::string::npos) << *s;
    EXPECT_LE(c.now_us() - start, 400 * kMs);
  }
  c.Heal();
  c.RunFor(2 * kSecond);
  EXPECT_TRUE(WriteAt(c, via, "a", WriteLevel::kAll).ok());
}

TEST(SimReplicationTest, ATablesOwnWriteLevelIsItsDefaultAndARequestsLevelWins) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_TRUE(c.Start().ok());
  admin::CreateTableRequest create = CreateRequest();
  create.mutable_table()->mutable_tessera_options()->set_write_consistency("all");
  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(create).ok());
  ASSERT_TRUE(c.RunUntil([&] { return Configured(c); }, 5 * kSecond));
  auto config = c.core(0)->replicated()->replicas()->GetConfig(TableAt(c, 0)->tablets[0].id);
  int away = -1;
  for (int i = 0; i < 3 && away < 0; ++i) {
    if (SimCluster::Endpoint(i) != config->primary_endpoint()) away = i;
  }
  const int via = (away + 1) % 3;
  ASSERT_TRUE(Write(c, via, "a", "1").ok());  // every replica answers: ALL is met
  c.Partition({{away}});
  c.RunFor(2 * kSecond);
  // The table's ALL cannot be met with a replica cut off; the request's ONE overrides it.
  EXPECT_FALSE(Write(c, via, "a", "2").ok());
  EXPECT_TRUE(WriteAt(c, via, "a", replication::WriteLevel::kOne).ok());
}

TEST(SimReplicationTest, QuorumReadsAnswerWhileThePrimaryIsDownAndSeeEveryAcknowledgedWrite) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  const uint64_t tablet = TableAt(c, 0)->tablets[0].id;  // rows before "m"
  auto config = c.core(0)->replicated()->replicas()->GetConfig(tablet);
  ASSERT_TRUE(config.has_value());
  int primary = -1;
  for (int i = 0; i < c.size(); ++i) {
    if (SimCluster::Endpoint(i) == config->primary_endpoint()) primary = i;
  }
  ASSERT_GE(primary, 0);
  const int reader = (primary + 1) % c.size();
  for (int k = 0; k < 20; ++k) {
    ASSERT_TRUE(Write(c, reader, StrCat("b", k), StrCat("x", k)).ok());
  }
  ASSERT_TRUE(c.Crash(primary).ok());
  // Well inside the session TTL: no failover yet, so a read at the primary would wait; a read
  // at QUORUM is served by the two live replicas and sees every acknowledged write.
  const int64_t crashed_at = c.now_us();
  for (int k = 0; k < 20; ++k) {
    auto v = Read(c, reader, StrCat("b", k), ReadLevel::kQuorum);
    ASSERT_TRUE(v.ok()) << "b" << k << ": " << v.status();
    EXPECT_EQ(v->value_or("absent"), StrCat("x", k));
  }
  EXPECT_LT(c.now_us() - crashed_at, 1 * kSecond);
  auto still = c.core(reader)->replicated()->replicas()->GetConfig(tablet);
  ASSERT_TRUE(still.has_value());
  EXPECT_EQ(still->epoch, config->epoch) << "the reads were meant to run before the failover";
}

// ---------------------------------------------------------------------------------------------
// Consistency tokens (replication/consistency_tokens.h) through any node.

StatusOr<std::string> GenerateToken(SimCluster& c, int i) {
  replication::ConsistencyTokens* tokens = c.core(i)->replicated()->tokens();
  std::optional<StatusOr<std::string>> token =
      RunCall<StatusOr<std::string>>(c, [&](std::function<void(StatusOr<std::string>)> done) {
        tokens->Generate(TableAt(c, i), std::move(done));
      });
  return token.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

StatusOr<bool> CheckToken(SimCluster& c, int i, const std::string& token) {
  replication::ConsistencyTokens* tokens = c.core(i)->replicated()->tokens();
  std::optional<StatusOr<bool>> consistent =
      RunCall<StatusOr<bool>>(c, [&](std::function<void(StatusOr<bool>)> done) {
        tokens->Check(TableAt(c, i), token, std::move(done));
      });
  return consistent.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// Checks through node i until the token is consistent or `limit_us` has passed.
bool BecomesConsistent(SimCluster& c, int i, const std::string& token, int64_t limit_us) {
  const int64_t end = c.now_us() + limit_us;
  while (c.now_us() < end) {
    StatusOr<bool> consistent = CheckToken(c, i, token);
    if (consistent.ok() && *consistent) return true;
    c.RunFor(100 * kMs);
  }
  return false;
}

// The node that is the primary of no tablet of the table (2 tablets on 3 nodes: one is).
int NotAPrimary(const SimCluster& c) {
  for (int i = 0; i < c.size(); ++i) {
    bool primary = false;
    for (const catalog::TabletRef& tablet : TableAt(c, 0)->tablets) {
      auto config = c.core(0)->replicated()->replicas()->GetConfig(tablet.id);
      primary = primary || config->primary_endpoint() == SimCluster::Endpoint(i);
    }
    if (!primary) return i;
  }
  return -1;
}

TEST(SimReplicationTest, ATokenIsConsistentOnceEveryReplicaHasWhatWasAcknowledgedBeforeIt) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  const int away = NotAPrimary(c);
  ASSERT_GE(away, 0);
  const int writer = (away + 1) % 3;
  const int checker = (away + 2) % 3;
  // Cut off, the replica misses writes to both tablets that a quorum acknowledges.
  c.Partition({{away}});
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(Write(c, writer, StrCat("a", k), "v").ok());
    ASSERT_TRUE(Write(c, writer, StrCat("z", k), "v").ok());
  }
  StatusOr<std::string> token = GenerateToken(c, checker);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->substr(0, 2), "2:");
  for (int k = 0; k < 10; ++k) {
    StatusOr<bool> consistent = CheckToken(c, writer, *token);
    ASSERT_TRUE(consistent.ok()) << consistent.status();
    EXPECT_FALSE(*consistent) << "node " << away << " is cut off\n" << DescribeReplicas(c);
    c.RunFor(200 * kMs);
  }
  // Healed, the replica catches up and the token is reached, through every node.
  c.Heal();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(BecomesConsistent(c, i, *token, 10 * kSecond)) << "through node " << i << "\n"
                                                               << DescribeReplicas(c);
  }
  // A token taken after further writes is reached too.
  ASSERT_TRUE(Write(c, away, "a9", "v").ok());
  StatusOr<std::string> later = GenerateToken(c, away);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_NE(*later, *token);
  EXPECT_TRUE(BecomesConsistent(c, writer, *later, 10 * kSecond)) << DescribeReplicas(c);
  // Every replica answers, but a sequence none has applied yet is not reached: two beyond the
  // first tablet's, reached by its next two writes.
  StatusOr<replication::ConsistencyToken> ahead = replication::ConsistencyToken::Decode(*later);
  ASSERT_TRUE(ahead.ok()) << ahead.status();
  const uint64_t first_tablet = TableAt(c, 0)->tablets[0].id;
  for (replication::TokenTablet& t : ahead->tablets) {
    if (t.tablet_id == first_tablet) t.sequence += 2;
  }
  StatusOr<bool> consistent = CheckToken(c, checker, ahead->Encode());
  ASSERT_TRUE(consistent.ok()) << consistent.status();
  EXPECT_FALSE(*consistent);
  ASSERT_TRUE(Write(c, writer, "a10", "v").ok());
  c.RunFor(1 * kSecond);
  consistent = CheckToken(c, checker, ahead->Encode());
  ASSERT_TRUE(consistent.ok()) << consistent.status();
  EXPECT_FALSE(*consistent) << "one of the two writes is made";
  ASSERT_TRUE(Write(c, writer, "a11", "v").ok());
  EXPECT_TRUE(BecomesConsistent(c, checker, ahead->Encode(), 10 * kSecond)) << DescribeReplicas(c);
}

TEST(SimReplicationTest, ATokenTakenBeforeAFailoverIsReachedByTheNewConfiguration) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  const uint64_t tablet = TableAt(c, 0)->tablets[0].id;
  const auto config = c.core(0)->replicated()->replicas()->GetConfig(tablet);
  int primary = 0;
  while (SimCluster::Endpoint(primary) != config->primary_endpoint()) ++primary;
  const int writer = (primary + 1) % 3;
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(Write(c, writer, StrCat("b", k), "v").ok());
  StatusOr<std::string> token = GenerateToken(c, writer);
  ASSERT_TRUE(token.ok()) << token.status();
  // The primary dies; its tablet moves on to a new epoch. Its replica set still names the dead
  // node, which does not answer: not consistent until it is back and has caught up.
  ASSERT_TRUE(c.Crash(primary).ok());
  ASSERT_TRUE(c.RunUntil(
      [&] {
        auto now = c.core(writer)->replicated()->replicas()->GetConfig(tablet);
        return now.has_value() && now->epoch > config->epoch;
      },
      20 * kSecond));
  StatusOr<bool> consistent = CheckToken(c, writer, *token);
  ASSERT_TRUE(consistent.ok()) << consistent.status();
  EXPECT_FALSE(*consistent);
  ASSERT_TRUE(c.Restart(primary).ok());
  EXPECT_TRUE(BecomesConsistent(c, (primary + 2) % 3, *token, 10 * kSecond)) << DescribeReplicas(c);
}

TEST(SimReplicationTest, ATokenOfAnotherTableOrOfADeletedTableIsRefused) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  StatusOr<std::string> token = GenerateToken(c, 0);
  ASSERT_TRUE(token.ok()) << token.status();
  StatusOr<replication::ConsistencyToken> decoded = replication::ConsistencyToken::Decode(*token);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->table_name, kTable);
  EXPECT_EQ(decoded->tablets.size(), 2u);
  replication::ConsistencyToken other = *decoded;
  other.table_name = "projects/p/instances/i/tables/other";
  StatusOr<bool> foreign = CheckToken(c, 1, other.Encode());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kInvalidArgument) << foreign.status();
  EXPECT_NE(foreign.status().message().find("tables/other"), std::string::npos) << foreign.status();
  // The same table deleted and made again: the token's tablets are gone.
  const uint64_t old_tablet = TableAt(c, 2)->tablets[0].id;
  admin::DeleteTableRequest drop;
  drop.set_name(kTable);
  ASSERT_TRUE(c.core(1)->admin()->DoDeleteTable(drop).ok());
  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(CreateRequest()).ok());
  ASSERT_TRUE(c.RunUntil(
      [&] {
        replication::TableSnapshot t = TableAt(c, 2);
        return t != nullptr && t->tablets[0].id != old_tablet;
      },
      5 * kSecond));
  StatusOr<bool> gone = CheckToken(c, 2, *token);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
}

// ---------------------------------------------------------------------------------------------
// The tablet map in METADATA.

// `table` as node i's locator finds it through METADATA.
StatusOr<replication::TableSnapshot> LocateAt(SimCluster& c, int i,
                                              const std::string& table = kSimTable) {
  Coordinator* co = CoordinatorOf(c, i);
  replication::TableSnapshot known = TableAt(c, i, table);
  if (co == nullptr || known == nullptr) return absl::UnavailableError("node down or table unknown");
  std::optional<StatusOr<replication::TableSnapshot>> r =
      RunCall<StatusOr<replication::TableSnapshot>>(
          c, [&](std::function<void(StatusOr<replication::TableSnapshot>)> done) {
            co->locator()->Locate(*known, 5 * kSecond, std::move(done));
          });
  return r.value_or(absl::DeadlineExceededError("the simulation ran out"));
}

// A lookup whose METADATA rows are not whole waits to read them again; stopping the
// coordinator (the node is going) answers it rather than leaving its retry to run later on an
// executor that outlives the locator.
TEST(SimReplicationTest, StoppingACoordinatorAnswersTheLookupsWaitingToReadMetadataAgain) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  Coordinator* co = CoordinatorOf(c, 1);
  ASSERT_NE(co, nullptr);
  // An incarnation of the table that METADATA has no rows for.
  catalog::TableInfo unknown = *TableAt(c, 1);
  unknown.tablet_prefix += 1000;
  std::optional<StatusOr<replication::TableSnapshot>> found;
  co->locator()->Locate(unknown, 5 * kSecond,
                        [&found](StatusOr<replication::TableSnapshot> t) { found = std::move(t); });
  c.RunFor(300 * kMs);  // reads, finds no rows, waits, reads again
  ASSERT_FALSE(found.has_value()) << found->status();
  ASSERT_GE(co->locator()->stats().incomplete, 1u);
  co->Stop();
  ASSERT_TRUE(found.has_value()) << "a lookup waiting to read again outlived Stop";
  EXPECT_TRUE(absl::IsUnavailable(found->status())) << found->status();
  EXPECT_NE(found->status().message().find("stopping"), std::string_view::npos) << found->status();
  // Stopped, a lookup that fails is answered at once, with its own error.
  found.reset();
  co->locator()->Locate(unknown, 5 * kSecond,
                        [&found](StatusOr<replication::TableSnapshot> t) { found = std::move(t); });
  c.RunFor(300 * kMs);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(absl::IsUnavailable(found->status())) << found->status();
  EXPECT_EQ(found->status().message().find("stopping"), std::string_view::npos) << found->status();
}

int NodeOf(const std::string& endpoint) {
  for (int i = 0; i < 3; ++i) {
    if (SimCluster::Endpoint(i) == endpoint) return i;
  }
  return -1;
}

TEST(SimReplicationTest, TabletsAreLocatedThroughMetadataWhichFailsOverLikeAnyTablet) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  // Every node finds the table's two tablets (split at "m") in METADATA, as its catalog has them.
  for (int i = 0; i < 3; ++i) {
    StatusOr<replication::TableSnapshot> t = LocateAt(c, i);
    ASSERT_TRUE(t.ok()) << i << ": " << t.status();
    ASSERT_EQ((*t)->tablets.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ((*t)->tablets[k].id, TableAt(c, i)->tablets[k].id);
      EXPECT_EQ((*t)->tablets[k].end_row, TableAt(c, i)->tablets[k].end_row);
    }
  }
  uint64_t written = 0;
  for (int i = 0; i < 3; ++i) written += c.core(i)->replicated()->metadata_sync()->stats().rows_written;
  EXPECT_EQ(written, 2u) << "one METADATA row per tablet, written once by the master";
  // METADATA's own tablet: its configuration is the root, in the lock service.
  replication::TableSnapshot meta = TableAt(c, 0, std::string(catalog::kMetadataTable));
  ASSERT_NE(meta, nullptr);
  auto root = c.core(0)->replicated()->replicas()->GetConfig(meta->tablets[0].id);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->replicas.size(), 3u);
  const int meta_primary = NodeOf(root->primary_endpoint());
  ASSERT_GE(meta_primary, 0);
  // With METADATA's primary gone, a node that has the table cached keeps writing, and a node
  // that starts again with nothing cached finds the tablets at once, from a live replica of
  // METADATA (lookups read at ONE), without waiting for METADATA's failover.
  ASSERT_TRUE(c.Crash(meta_primary).ok());
  const int cached = (meta_primary + 1) % 3;
  const int fresh = (meta_primary + 2) % 3;
  ASSERT_TRUE(c.Crash(fresh).ok());
  ASSERT_TRUE(c.Restart(fresh).ok());
  ASSERT_TRUE(c.RunUntil([&] { return CoordinatorOf(c, fresh) != nullptr &&
                                      TableAt(c, fresh) != nullptr; }, 10 * kSecond));
  EXPECT_EQ(CoordinatorOf(c, fresh)->locator()->stats().hits, 0u);
  StatusOr<replication::TableSnapshot> found = LocateAt(c, fresh);
  for (int k = 0; k < 10 && !found.ok(); ++k) found = LocateAt(c, fresh);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ((*found)->tablets.size(), 2u);
  const uint64_t hits = CoordinatorOf(c, cached)->locator()->stats().hits;
  ASSERT_TRUE(LocateAt(c, cached).ok());
  EXPECT_EQ(CoordinatorOf(c, cached)->locator()->stats().hits, hits + 1);
  // METADATA itself fails over like any tablet.
  EXPECT_TRUE(c.RunUntil(
      [&] {
        auto moved = c.core(cached)->replicated()->replicas()->GetConfig(meta->tablets[0].id);
        return moved.has_value() &&
               moved->primary_endpoint() != SimCluster::Endpoint(meta_primary);
      },
      30 * kSecond));
}

TEST(SimReplicationTest, ADeletedTableLeavesMetadataAndARecreatedOneIsFoundUnderItsNewTablets) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimCluster c(Options(seed));
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  ASSERT_TRUE(LocateAt(c, 2).ok());
  admin::DeleteTableRequest del;
  del.set_name(kSimTable);
  ASSERT_TRUE(c.core(0)->admin()->DoDeleteTable(del).ok());
  admin::CreateTableRequest again = CreateRequest();
  again.add_initial_splits()->set_key("t");  // three tablets now
  ASSERT_TRUE(c.RunUntil([&] { return TableAt(c, 1) == nullptr; }, 5 * kSecond));
  ASSERT_TRUE(c.core(1)->admin()->DoCreateTable(again).ok());
  ASSERT_TRUE(c.RunUntil([&] { return Configured(c) && TableAt(c, 2)->tablets.size() == 3; },
                         10 * kSecond));
  StatusOr<replication::TableSnapshot> t = LocateAt(c, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->tablets.size(), 3u);
  EXPECT_EQ((*t)->tablets[2].id, TableAt(c, 2)->tablets[2].id);
  EXPECT_TRUE(Write(c, 2, "u", "v").ok());
}

TEST(SimReplicationTest, ALookupAndItsOperationShareTheClientsDeadline) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed));
  SimClusterOptions o = Options(seed);
  o.nodes = 4;  // METADATA has 3 replicas: one node must read it over the network
  SimCluster c(o);
  ASSERT_NO_FATAL_FAILURE(StartWithTable(c));
  replication::TableSnapshot meta = TableAt(c, 0, std::string(catalog::kMetadataTable));
  ASSERT_NE(meta, nullptr);
  std::optional<catalog::TabletConfig> root =
      c.core(0)->replicated()->replicas()->GetConfig(meta->tablets[0].id);
  ASSERT_TRUE(root.has_value());
  int far = -1;
  for (int i = 0; i < c.size(); ++i) {
    const std::vector<std::string>& r = root->replicas;
    if (std::find(r.begin(), r.end(), SimCluster::Endpoint(i)) == r.end()) far = i;
  }
  ASSERT_GE(far, 0) << "every node holds METADATA";
  // A row whose tablet `far` does not lead, so the write is forwarded too.
  replication::TableSnapshot table = TableAt(c, far);
  std::string row;
  for (const std::string key : {"a", "z"}) {
    auto config = c.core(far)->replicated()->replicas()->GetConfig(table->TabletFor(key).id);
    ASSERT_TRUE(config.has_value());
    if (config->primary_endpoint() != SimCluster::Endpoint(far)) row = key;
  }
  ASSERT_FALSE(row.empty());
  // 100 ms each way, no jitter: the lookup at ONE takes 200 ms, the write forwarded to its
  // primary and replicated from there about 400 ms.
  c.network().SetOptions({.loss = 0, .latency_us = 100 * kMs, .jitter_us = 0});
  auto write = [&](int64_t timeout_us, int64_t* took_us) {
    model::RowMutation m(row);
    m.SetCell("cf", "q", kCellTs, "v");
    AccessOptions options;
    options.timeout_us = timeout_us;
    const int64_t start = c.now_us();
    std::optional<Status> s = RunCall<Status>(c, [&](std::function<void(Status)> done) {
      c.core(far)->access()->MutateAsync(table, m, options, nullptr, std::move(done));
    });
    *took_us = c.now_us() - start;
    return s.value_or(absl::UnknownError("the simulation ran out"));
  };
  ASSERT_EQ(CoordinatorOf(c, far)->locator()->stats().reads, 0u);
  // 500 ms is enough for the write alone but not for the lookup and the write: the write gets
  // only what the lookup left (with the whole 500 ms it would be acknowledged at about 600).
  int64_t took = 0;
  Status first = write(500 * kMs, &took);
  EXPECT_TRUE(absl::IsDeadlineExceeded(first)) << first;
  EXPECT_LE(took, 510 * kMs);
  EXPECT_EQ(CoordinatorOf(c, far)->locator()->stats().reads, 1u);
  // Cached, the lookup is free, and the same deadline is enough (once the first write, which
  // its primary may still be replicating, is done).
  c.RunFor(kSecond);
  Status second = write(500 * kMs, &took);
  EXPECT_TRUE(second.ok()) << second;
  EXPECT_GE(took, 300 * kMs);
  EXPECT_LE(took, 500 * kMs);
}

// ---------------------------------------------------------------------------------------------
// Concurrent clients under faults, checked for linearizability.

// The predicate "the newest cell of cf:q is `value`", compiled as a server compiles it (so a
// coordinator can send it on).
std::shared_ptr<model::RowFilter> ValueIs(const std::string& value) {
  v2::RowFilter f;
  auto* chain = f.mutable_chain();
  chain->add_filters()->set_cells_per_column_limit_filter(1);
  chain->add_filters()->set_value_regex_filter(value);  // values are [a-z0-9-]: no quoting
  auto compiled = server::CompileRowFilter(f, server::FilterOptionsFor(model::TableSchema(), 1));
  return std::make_shared<model::RowFilter>(*std::move(compiled));
}

struct Workload {
  SimCluster* c;
  History* history;
  Random random;
  int64_t end_us;
  int in_flight = 0;
  std::vector<std::string> registers = {"ka", "kq", "kz"};  // both tablets (split at "m")
  std::vector<std::string> counters = {"cb", "cn"};
  int next_value = 0;
};

ClientOutcome OutcomeOf(const Status& s, bool is_read) {
  if (s.ok()) return ClientOutcome::kOk;
  if (is_read) return ClientOutcome::kFailed;
  // Refused before anything ran, or a bad request: certainly not applied.
  if (absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsFailedPrecondition(s)) {
    return ClientOutcome::kFailed;
  }
  return std::string(s.message()).find("may have been applied") == std::string::npos &&
                 absl::IsUnavailable(s)
             ? ClientOutcome::kFailed
             : ClientOutcome::kIndeterminate;
}

void ClientOpAt(Workload* w, int client, Coordinator* co, replication::TableSnapshot table,
                const AccessOptions& o);

// One client: issues an operation through a random live node, and the next when it is answered.
void ClientStep(Workload* w, int client) {
  SimCluster& c = *w->c;
  if (c.now_us() >= w->end_us) return;
  std::vector<int> live;
  for (int i = 0; i < c.size(); ++i) {
    if (CoordinatorOf(c, i) != nullptr && TableAt(c, i) != nullptr) live.push_back(i);
  }
  auto again = [w, client](int64_t delay_us) {
    w->c->Schedule(delay_us, [w, client] { ClientStep(w, client); });
  };
  if (live.empty()) {
    again(100 * kMs);
    return;
  }
  const int node = live[w->random.Uniform(live.size())];
  Coordinator* co = CoordinatorOf(c, node);
  AccessOptions o;
  o.timeout_us = 2 * kSecond;
  // Where the tablets are: METADATA, through the node's locator (cached after the first time).
  co->locator()->Locate(
      *TableAt(c, node), o.timeout_us,
      [w, client, node, co, o, again](StatusOr<replication::TableSnapshot> table) {
        if (!table.ok() || CoordinatorOf(*w->c, node) != co) {
          again(50 * kMs);
          return;
        }
        ClientOpAt(w, client, co, *std::move(table), o);
      });
}

// One client operation through `co`, on the tablets `table` names.
void ClientOpAt(Workload* w, int client, Coordinator* co, replication::TableSnapshot table,
                const AccessOptions& o) {
  SimCluster& c = *w->c;
  auto again = [w, client](int64_t delay_us) {
    w->c->Schedule(delay_us, [w, client] { ClientStep(w, client); });
  };
  const int kind = static_cast<int>(w->random.Uniform(10));
  History* h = w->history;
  ++w->in_flight;
  auto finish = [w, client, again](int id, ClientResult r) {
    w->history->Complete(id, std::move(r), w->c->now_us());
    --w->in_flight;
    again(static_cast<int64_t>(w->random.Uniform(20)) * kMs);
  };
  if (kind == 2) {  // write two registers in one batch: one MutateBatch per tablet
    const size_t first = w->random.Uniform(w->registers.size());
    const size_t second = (first + 1 + w->random.Uniform(w->registers.size() - 1)) %
                          w->registers.size();
    struct Group {
      std::vector<int> ids;
      std::vector<model::RowMutation> mutations;
    };
    std::map<size_t, Group> by_tablet;
    for (size_t r : {first, second}) {
      const std::string& key = w->registers[r];
      const std::string value = StrCat("c", client, "-", w->next_value++);
      Group& g = by_tablet[table->TabletIndexFor(key)];
      g.ids.push_back(h->Invoke(client, ClientOp::Write(key, value), c.now_us()));
      model::RowMutation m(key);
      m.SetCell("cf", "q", kCellTs, value);
      g.mutations.push_back(std::move(m));
    }
    // The client goes on once every tablet answered.
    auto left = std::make_shared<size_t>(by_tablet.size());
    for (auto& [tablet, g] : by_tablet) {
      co->MutateBatch(table, tablet, std::move(g.mutations), o,
                      [w, client, again, left, ids = g.ids](std::vector<Status> statuses) {
                        for (size_t k = 0; k < ids.size(); ++k) {
                          const Status& s = statuses[k];
                          w->history->Complete(
                              ids[k],
                              s.ok() ? ClientResult::Ok()
                                     : ClientResult{OutcomeOf(s, false), std::nullopt, false},
                              w->c->now_us());
                        }
                        if (--*left > 0) return;
                        --w->in_flight;
                        again(static_cast<int64_t>(w->random.Uniform(20)) * kMs);
                      });
    }
  } else if (kind < 3) {  // write a register
    const std::string key = w->registers[w->random.Uniform(w->registers.size())];
    const std::string value = StrCat("c", client, "-", w->next_value++);
    const int id = h->Invoke(client, ClientOp::Write(key, value), c.now_us());
    model::RowMutation m(key);
    m.SetCell("cf", "q", kCellTs, value);
    co->Mutate(table, std::move(m), o, [finish, id](Status s) {
      finish(id, s.ok() ? ClientResult::Ok()
                        : ClientResult{OutcomeOf(s, false), std::nullopt, false});
    });
  } else if (kind < 6) {  // read a register or a counter
    const bool counter = w->random.Uniform(3) == 0;
    const std::string key = counter ? w->counters[w->random.Uniform(w->counters.size())]
                                    : w->registers[w->random.Uniform(w->registers.size())];
    const int id = h->Invoke(client, ClientOp::Read(key), c.now_us());
    const size_t tablet = table->TabletIndexFor(key);
    // Half at the primary, half at QUORUM: both must be linearizable.
    AccessOptions read_options = o;
    if (w->random.Uniform(2) == 0) read_options.read_level = ReadLevel::kQuorum;
    co->Read(table, tablet, {model::RowRange::SingleKey(key)}, nullptr, 0, false, read_options,
             [finish, id](StatusOr<replication::ReadPage> page) {
               if (!page.ok()) {
                 finish(id, ClientResult::Failed());
                 return;
               }
               RegisterValue v;
               if (!page->rows.empty()) v = page->rows[0].cells[0].value;
               finish(id, ClientResult::Seen(std::move(v)));
             });
  } else if (kind < 8) {  // increment a counter
    const std::string key = w->counters[w->random.Uniform(w->counters.size())];
    const int id = h->Invoke(client, ClientOp::Increment(key, 1), c.now_us());
    replication::ReadModifyWriteRule rule;
    rule.family = "cf";
    rule.qualifier = rule.stored_qualifier = "q";
    rule.kind = replication::ReadModifyWriteRule::Kind::kIncrement;
    rule.increment_amount = 1;
    co->ReadModifyWrite(table, key, {rule}, c.now_us(), 1 << 20, o,
                        [finish, id](StatusOr<model::Row> row) {
                          if (!row.ok()) {
                            finish(id, ClientResult{OutcomeOf(row.status(), false), std::nullopt, false});
                            return;
                          }
                          finish(id, ClientResult::Incremented(static_cast<int64_t>(
                                         DecodeBigEndian64(row->cells[0].value.data()))));
                        });
  } else {  // check-and-set a register
    const std::string key = w->registers[w->random.Uniform(w->registers.size())];
    const std::string value = StrCat("c", client, "-", w->next_value++);
    // Expect the value some client wrote last, or absent.
    std::optional<std::string> expected;
    if (w->random.Uniform(4) != 0) {
      expected = StrCat("c", w->random.Uniform(4), "-",
                        w->next_value > 2 ? w->random.Uniform(static_cast<uint64_t>(w->next_value)) : 0);
    }
    const int id = h->Invoke(client, ClientOp::CheckAndSet(key, expected, value), c.now_us());
    model::RowMutation set(key);
    set.SetCell("cf", "q", kCellTs, value);
    // Expected absent: "any cell" must not match, and the write goes with no match.
    const bool absent = !expected.has_value();
    co->CheckAndMutate(
        table, key, absent ? nullptr : ValueIs(*expected),
        absent ? model::RowMutation(key) : set, absent ? set : model::RowMutation(key), o,
        [finish, id, absent](StatusOr<bool> matched) {
          if (!matched.ok()) {
            finish(id, ClientResult{OutcomeOf(matched.status(), false), std::nullopt, false});
            return;
          }
          finish(id, ClientResult::Matched(absent ? !*matched : *matched));
        });
  }
}

// A run of `seconds` with 4 clients and faults drawn from the seed. Returns the check.
CheckResult RunWorkload(uint64_t seed, int64_t seconds, std::string* trace) {
  SimClusterOptions o = Options(seed);
  // Every other seed keeps 1 KiB in memory per tablet: a replica that was away, or lags,
  // is sent what it missed from the hint log, under the same faults and checks.
  if (seed % 2 == 1) o.replica.retained_bytes_per_tablet = 1024;
  SimCluster c(o);
  StartWithTable(c);
  if (::testing::Test::HasFatalFailure()) return CheckResult();
  History history;
  Workload w{&c, &history, Env{.seed = seed}.NewRandom("workload"), c.now_us() + seconds * kSecond};
  for (int client = 0; client < 4; ++client) {
    c.Schedule(0, [&w, client] { ClientStep(&w, client); });
  }
  // Faults: one at a time, each healed before the next.
  Random faults = Env{.seed = seed}.NewRandom("faults");
  for (int i = 0; i < c.size(); ++i) {
    // Clock rates within +-4 %: any two differ by less than the 10 % the leases allow for.
    c.SetClockDrift(i, static_cast<int64_t>(faults.Uniform(2000)) * kMs,
                    0.96 + 0.08 * static_cast<double>(faults.Uniform(1000)) / 1000.0);
  }
  while (c.now_us() < w.end_us) {
    const int node = static_cast<int>(faults.Uniform(static_cast<uint64_t>(c.size())));
    const int64_t length = (500 + static_cast<int64_t>(faults.Uniform(3000))) * kMs;
    switch (faults.Uniform(5)) {
      case 0:
        *trace += StrCat("crash ", node, " at ", c.now_us() / kMs, " ms; ");
        if (c.Crash(node).ok()) {
          c.RunFor(length);
          (void)c.Restart(node);
        }
        break;
      case 1:
        *trace += StrCat("isolate ", node, " at ", c.now_us() / kMs, " ms; ");
        c.Partition({{node}});
        c.RunFor(length);
        c.Heal();
        break;
      case 2:
        *trace += StrCat("pause ", node, " at ", c.now_us() / kMs, " ms; ");
        (void)c.Pause(node, length);
        c.RunFor(length);
        break;
      case 3:
        *trace += StrCat("loss 5% at ", c.now_us() / kMs, " ms; ");
        c.SetLoss(0.05);
        c.RunFor(length);
        c.SetLoss(0);
        break;
      default:
        c.RunFor(length);
        break;
    }
    c.RunFor(500 * kMs);
  }
  // Quiet: every client's last operation ends.
  c.RunUntil([&] { return w.in_flight == 0; }, 30 * kSecond);
  c.RunFor(3 * kSecond);
  std::map<std::string, RegisterValue> finals;
  std::vector<std::string> keys = w.registers;
  keys.insert(keys.end(), w.counters.begin(), w.counters.end());
  for (const std::string& key : keys) {
    StatusOr<std::optional<std::string>> v = absl::UnavailableError("not read");
    for (int attempt = 0; attempt < 20 && !v.ok(); ++attempt) {
      v = Read(c, attempt % c.size(), key);
      if (!v.ok()) c.RunFor(500 * kMs);
    }
    if (!v.ok()) {
      *trace += StrCat("final read of ", key, " failed: ", v.status().ToString(), "\n",
                       DescribeReplicas(c));
      CheckResult r;
      r.verdict = CheckResult::Verdict::kInconclusive;
      r.explanation = *trace;
      return r;
    }
    finals[key] = *v;
  }
  int ok = 0, failed = 0, unknown = 0;
  for (const HistoryEntry& e : history.Entries()) {
    if (!e.result.has_value() || e.result->outcome == ClientOutcome::kIndeterminate) {
      ++unknown;
    } else if (e.result->outcome == ClientOutcome::kOk) {
      ++ok;
    } else {
      ++failed;
    }
  }
  std::printf("[ history ] seed %llu: %d ok, %d failed, %d indeterminate; faults: %s\n",
              static_cast<unsigned long long>(seed), ok, failed, unknown, trace->c_str());
  CheckResult r = CheckNoLostWrites(history, finals, c.now_us() + 1);
  if (!r.ok()) *trace += "\n" + history.Dump();
  return r;
}

TEST(SimReplicationTest, ConcurrentClientsUnderFaultsSeeALinearizableStoreAndLoseNothing) {
  // Hundreds of runs: only warnings are worth reading (TESSERA_SIM_LOG=1: everything, to
  // replay one seed).
  spdlog::set_level((std::getenv("TESSERA_SIM_LOG") ? spdlog::level::debug : spdlog::level::warn));
  const uint64_t first = TestSeed();
  const char* env = std::getenv("TESSERA_SIM_SEEDS");
  const int seeds = env != nullptr ? std::atoi(env) : 300;  // make soak: thousands
  for (int k = 0; k < seeds; ++k) {
    const uint64_t seed = first + static_cast<uint64_t>(k);
    SCOPED_TRACE(StrCat("replay with TESSERA_SEED=", seed, " TESSERA_SIM_SEEDS=1"));
    std::string trace;
    CheckResult r = RunWorkload(seed, 20, &trace);
    ASSERT_TRUE(r.ok()) << r.explanation << "\nfaults: " << trace;
  }
}

}  // namespace
}  // namespace tessera::testing
