// Two data centres with real processes (issue 11: "6 nodes in 2 DCs × 3 racks: replicas on
// distinct racks and in both DCs; LOCAL_QUORUM acknowledges with the local DC alone"): etcd
// and six `tessera serve` on 127.0.0.1, dc1 {r1, r2, r3} and dc2 {r1, r2, r3}.
//
// Tables are placed with 2 replicas per DC (`tablets:dc1=2,dc2=2`, `ring:rack:dc1=2,dc2=2`):
// 2 of 3 racks must be chosen in each DC, so "distinct racks" is a real constraint (with 3 per
// DC every node would hold every tablet), and a QUORUM (3 of 4) needs both DCs while a
// LOCAL_QUORUM (2 of dc1's 2) does not. `tessera admin tablets --json` and `admin ring --json`
// show where the replicas are. Then every dc2 node is stopped (SIGSTOP): writes of a tablet
// whose primary is in dc1, coordinated by a dc1 node, are acknowledged at LOCAL_QUORUM,
// refused at QUORUM naming how many replicas answer, and read back at ONE from dc1.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::integration {
namespace {

namespace admin = ::google::bigtable::admin::v2;
namespace v2 = ::google::bigtable::v2;
using namespace cluster_testing;  // NOLINT: the fixture and its helpers
using std::chrono::milliseconds;

struct Place {
  std::string dc, rack;
};
const Place kLayout[] = {{"dc1", "r1"}, {"dc1", "r2"}, {"dc1", "r3"},
                         {"dc2", "r1"}, {"dc2", "r2"}, {"dc2", "r3"}};
constexpr int kNodes = 6;

std::string TablePath(const std::string& id) { return StrCat(kInstance, "/tables/", id); }

grpc::Status CreateTable(const ServerProcess& node, const std::string& id,
                         const std::string& placement, const std::vector<std::string>& splits) {
  auto stub = admin::BigtableTableAdmin::NewStub(node.NewChannel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  admin::CreateTableRequest req;
  req.set_parent(kInstance);
  req.set_table_id(id);
  (*req.mutable_table()->mutable_column_families())["cf"].mutable_gc_rule()->set_max_num_versions(1);
  req.mutable_table()->mutable_tessera_options()->set_placement(placement);
  for (const std::string& s : splits) req.add_initial_splits()->set_key(s);
  admin::Table created;
  return stub->CreateTable(&ctx, req, &created);
}

grpc::Status WriteRow(const ServerProcess& node, const std::string& table, const std::string& key,
                      const std::string& value, const std::string& app_profile,
                      milliseconds deadline) {
  auto stub = v2::Bigtable::NewStub(node.NewChannel());
  return WriteCell(*stub, TablePath(table), key, value, app_profile, deadline);
}

StatusOr<std::string> ReadRow(const ServerProcess& node, const std::string& table,
                              const std::string& key, const std::string& app_profile) {
  auto stub = v2::Bigtable::NewStub(node.NewChannel());
  return ReadCells(*stub, TablePath(table), key, app_profile, std::chrono::seconds(3));
}

// SIGCONTs the stopped nodes when the test leaves, however it leaves.
class Resume {
 public:
  ~Resume() {
    for (pid_t pid : pids) kill(pid, SIGCONT);
  }
  std::vector<pid_t> pids;
};

class DcTest : public ClusterTest {
 protected:
  // Node i on kLayout[i]; node 0 alone, the others seeded by it.
  void StartDcs() {
    for (int i = 0; i < kNodes; ++i) {
      auto node = Launch("c1", i == 0 ? "" : nodes_[0]->endpoint(),
                         {"--dc", kLayout[i].dc, "--rack", kLayout[i].rack});
      ASSERT_TRUE(node.ok()) << node.status();
      place_[(*node)->endpoint()] = kLayout[i];
      nodes_.push_back(std::move(*node));
    }
  }

  // `tessera admin <what> --json` through node 0; null when it fails or does not parse.
  nlohmann::json AdminJson(const std::string& what) {
    std::string out;
    const int rc = RunCommand(
        StrCat(g_tessera_binary, " admin ", what, " --json --addr ", nodes_[0]->endpoint()),
        &out);
    last_output_ = StrCat("exit ", rc, ":\n", out);
    if (rc != 0) return nullptr;
    nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? nullptr : j;
  }

  // The table's tablets once each has `rf` replicas and an acting primary (null on timeout).
  nlohmann::json PlacedTablets(const std::string& table, size_t tablets, size_t rf) {
    nlohmann::json last;
    WaitFor(
        [&] {
          nlohmann::json j = AdminJson(StrCat("tablets --table ", table));
          if (j.is_null() || j["tablets"].size() != tablets) return false;
          for (const nlohmann::json& t : j["tablets"]) {
            if (t["replicas"].size() != rf || !t["primary_acting"].get<bool>()) return false;
          }
          last = j["tablets"];
          return true;
        },
        milliseconds(20'000));
    return last;
  }

  // Every tablet: `per_dc` replicas in each DC, on distinct racks there.
  void ExpectSpread(const nlohmann::json& tablets, int per_dc) {
    for (const nlohmann::json& t : tablets) {
      std::map<std::string, std::set<std::string>> racks;  // dc -> racks used
      std::map<std::string, int> count;
      for (const nlohmann::json& r : t["replicas"]) {
        const Place& p = place_.at(r["endpoint"].get<std::string>());
        racks[p.dc].insert(p.rack);
        ++count[p.dc];
      }
      EXPECT_EQ(count["dc1"], per_dc) << t;
      EXPECT_EQ(count["dc2"], per_dc) << t;
      EXPECT_EQ(racks["dc1"].size(), static_cast<size_t>(count["dc1"])) << "racks repeat: " << t;
      EXPECT_EQ(racks["dc2"].size(), static_cast<size_t>(count["dc2"])) << "racks repeat: " << t;
    }
  }

  std::map<std::string, Place> place_;  // endpoint -> where it was started
  std::string last_output_;             // of the last AdminJson, for failures
};

TEST_F(DcTest, ReplicasSpanBothDcsOnDistinctRacksAndLocalQuorumNeedsOnlyTheLocalDc) {
  const auto start = std::chrono::steady_clock::now();
  StartDcs();
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(30'000)));

  // --- Placement: a `tablets` table of 6 tablets and a ring table, 2 + 2 each. ---
  {
    const grpc::Status s =
        CreateTable(*nodes_[0], "dct", "tablets:dc1=2,dc2=2", {"d", "h", "l", "p", "t"});
    ASSERT_TRUE(s.ok()) << s.error_message();
    const grpc::Status r = CreateTable(*nodes_[1], "dcr", "ring:rack:dc1=2,dc2=2", {});
    ASSERT_TRUE(r.ok()) << r.error_message();
  }
  const nlohmann::json tablets = PlacedTablets("dct", 6, 4);
  ASSERT_FALSE(tablets.is_null()) << "dct never had 6 tablets of 4 replicas with primaries; last: "
                                 << last_output_;
  ExpectSpread(tablets, 2);
  // The ring table: cut at the six tokens (7 tablets: the wrap-around is two).
  const nlohmann::json ring_tablets = PlacedTablets("dcr", 7, 4);
  ASSERT_FALSE(ring_tablets.is_null()) << "dcr never had 7 tablets of 4 replicas; last: " << last_output_;
  ExpectSpread(ring_tablets, 2);
  // METADATA, which every node reads to find tablets, has a whole copy in each DC, so that
  // either alone can still locate every tablet.
  const nlohmann::json meta =
      PlacedTablets("projects/__tessera/instances/__tessera/tables/METADATA", 1, 6);
  ASSERT_FALSE(meta.is_null()) << "METADATA never had one tablet of 6 replicas; last: "
                               << last_output_;
  ExpectSpread(meta, 3);
  {
    const nlohmann::json ring = AdminJson("ring");
    ASSERT_FALSE(ring.is_null());
    ASSERT_EQ(ring["nodes"].size(), static_cast<size_t>(kNodes)) << ring;
    for (const nlohmann::json& n : ring["nodes"]) {
      const Place& p = place_.at(n["endpoint"].get<std::string>());
      EXPECT_EQ(n["dc"], p.dc) << n;
      EXPECT_EQ(n["rack"], p.rack) << n;
      EXPECT_FALSE(n["token"].is_null()) << n;
    }
  }

  // --- A tablet led from dc1, and a dc1 node that holds no replica of it. ---
  const nlohmann::json* chosen = nullptr;
  for (const nlohmann::json& t : tablets) {
    if (place_.at(t["primary"].get<std::string>()).dc == "dc1") {
      chosen = &t;
      break;
    }
  }
  ASSERT_NE(chosen, nullptr) << "no tablet of dct is led from dc1: " << tablets;
  std::set<std::string> holders;
  for (const nlohmann::json& r : (*chosen)["replicas"]) {
    holders.insert(r["endpoint"].get<std::string>());
  }
  const ServerProcess* via = nullptr;
  for (int i = 0; i < 3; ++i) {
    if (holders.count(nodes_[i]->endpoint()) == 0) via = nodes_[i].get();
  }
  ASSERT_NE(via, nullptr);
  const std::string start_row = (*chosen)["start_row"].get<std::string>();
  const std::string prefix = start_row.empty() ? "a" : start_row + "a";
  std::printf("[ dc ] tablet %s [%s, %s) primary %s; writes through %s (dc1, no replica)\n",
              (*chosen)["tablet_id"].get<std::string>().c_str(), start_row.c_str(),
              (*chosen)["end_row"].get<std::string>().c_str(),
              (*chosen)["primary"].get<std::string>().c_str(), via->endpoint().c_str());
  // Both levels work while every node runs (the first write waits for the configurations).
  ASSERT_TRUE(WaitFor(
      [&] { return WriteRow(*via, "dct", prefix + "0", "v0", "quorum", milliseconds(3000)).ok(); },
      milliseconds(15'000)));
  {
    const grpc::Status s = WriteRow(*via, "dct", prefix + "1", "v1", "local_quorum",
                                    milliseconds(3000));
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // --- dc2 stops. ---
  Resume resume;
  for (int i = 3; i < kNodes; ++i) {
    ASSERT_EQ(kill(nodes_[i]->pid(), SIGSTOP), 0);
    resume.pids.push_back(nodes_[i]->pid());
  }
  // QUORUM (3 of 4) is refused once the primary has seen dc2 stop answering (its calls time
  // out within about a second), naming how many replicas answer.
  grpc::Status refused;
  const bool noticed = WaitFor(
      [&] {
        refused = WriteRow(*via, "dct", prefix + "q", "x", "quorum", milliseconds(1500));
        return !refused.ok() &&
               refused.error_message().find("replicas answer") != std::string::npos;
      },
      milliseconds(10'000));
  ASSERT_TRUE(noticed) << "last QUORUM write: " << refused.error_code() << " "
                       << refused.error_message();
  for (int k = 0; k < 2; ++k) {
    const grpc::Status s =
        WriteRow(*via, "dct", StrCat(prefix, "q", k), "x", "quorum", milliseconds(1500));
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_code() << " " << s.error_message();
    EXPECT_NE(s.error_message().find("2 of 4 replicas answer; quorum needs 3"), std::string::npos)
        << s.error_message();
  }
  std::printf("[ dc ] QUORUM with dc2 stopped: %s\n", refused.error_message().c_str());
  // LOCAL_QUORUM (2 of dc1's 2) is acknowledged by dc1 alone, through a node without a
  // replica and through the primary itself.
  const ServerProcess* primary = nullptr;
  for (int i = 0; i < 3; ++i) {
    if (nodes_[i]->endpoint() == (*chosen)["primary"].get<std::string>()) {
      primary = nodes_[i].get();
    }
  }
  ASSERT_NE(primary, nullptr);
  double slowest_ms = 0;
  for (int k = 0; k < 10; ++k) {
    const ServerProcess& node = k % 2 == 0 ? *via : *primary;
    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status s = WriteRow(node, "dct", StrCat(prefix, "l", k), StrCat("l", k),
                                    "local_quorum", milliseconds(3000));
    slowest_ms = std::max(slowest_ms, std::chrono::duration<double, std::milli>(
                                          std::chrono::steady_clock::now() - t0)
                                          .count());
    EXPECT_TRUE(s.ok()) << "LOCAL_QUORUM write " << k << " through " << node.endpoint() << ": "
                        << s.error_code() << " " << s.error_message();
  }
  std::printf("[ dc ] 10 LOCAL_QUORUM writes with dc2 stopped, slowest %.1f ms\n", slowest_ms);
  // A read at ONE through the node without a replica: the nearest live one, in dc1, has them.
  for (int k = 0; k < 10; ++k) {
    StatusOr<std::string> v = ReadRow(*via, "dct", StrCat(prefix, "l", k), "one");
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(*v, StrCat("l", k));
  }

  // --- dc2 runs again: QUORUM works again once its replicas answer. ---
  for (pid_t pid : resume.pids) ASSERT_EQ(kill(pid, SIGCONT), 0);
  resume.pids.clear();
  grpc::Status again;
  EXPECT_TRUE(WaitFor(
      [&] {
        again = WriteRow(*via, "dct", prefix + "z", "z", "quorum", milliseconds(2000));
        return again.ok();
      },
      milliseconds(20'000)))
      << again.error_code() << " " << again.error_message();
  std::printf("[ dc ] the whole test took %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace
}  // namespace tessera::integration
