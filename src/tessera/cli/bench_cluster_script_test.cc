// scripts/bench_cluster.sh end to end, with tiny sizes: one node, then a 3-node cluster twice
// (the client spread over the nodes, then on one node); every workload runs without error, every
// tablet is on RF replicas, and the script prints the run, tablets and ratio lines that `make
// bench` reports. Slow (it starts seven servers and two etcds); skipped, loudly, without etcd.
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/bench_script_testing.h"
#include "tessera/testing/etcd_test_server.h"

namespace tessera::cli {
namespace {

TEST(BenchClusterScriptTest, ComparesTheClusterWithOneNodeOnLoadAAndC) {
  const std::string etcd = testing::EtcdTestServer::BinaryPath();
  if (access(etcd.c_str(), X_OK) != 0) GTEST_SKIP() << "SKIPPED: no etcd at " << etcd;
  const std::string out_file = ::testing::TempDir() + "/bench_cluster_script_test.jsonl";
  std::vector<nlohmann::json> lines;
  std::string out;
  RunBenchScript("bench_cluster.sh",
                 {"ETCD=" + etcd, "BENCH_RECORDS=300", "BENCH_OPERATIONS=200", "BENCH_DURATION_S=5",
                  "BENCH_THREADS=3", "BENCH_CLUSTER_OUT=" + out_file},
                 std::chrono::minutes(5), &lines, &out);
  if (HasFatalFailure()) return;

  const std::map<std::string, int> rf = {{"1node", 1}, {"3node-spread", 3}, {"3node-one", 3}};
  std::map<std::string, std::set<std::string>> runs;    // setup -> workloads
  std::map<std::string, std::set<std::string>> ratios;  // setup -> workloads
  std::set<std::string> tablets;                        // setups
  for (const nlohmann::json& j : lines) {
    const std::string line = j.dump();
    const std::string kind = j["kind"];
    if (kind == "run") {
      ExpectCleanRun(j);
      EXPECT_EQ(j["rf"], rf.at(j["setup"])) << line;
      EXPECT_EQ(j["nodes"], rf.at(j["setup"])) << line;
      runs[j["setup"]].insert(j["workload"]);
    } else if (kind == "tablets") {
      ASSERT_EQ(j["tablets"].size(), 3u) << line;
      for (const nlohmann::json& t : j["tablets"]) {
        EXPECT_EQ(t["replicas"].size(), static_cast<size_t>(rf.at(j["setup"]))) << line;
      }
      tablets.insert(j["setup"]);
    } else if (kind == "ratio") {
      EXPECT_GT(j["throughput_ratio"].get<double>(), 0) << line;
      EXPECT_GT(j["p99_ratio_worst"].get<double>(), 0) << line;
      ratios[j["setup"]].insert(j["workload"]);
    }
  }
  const std::set<std::string> all = {"load", "A", "C"};
  for (const auto& [setup, unused] : rf) {
    EXPECT_EQ(runs[setup], all) << setup << "\n" << out;
    EXPECT_EQ(tablets.count(setup), 1u) << setup << "\n" << out;
  }
  EXPECT_EQ(ratios["3node-spread"], all) << out;
  EXPECT_EQ(ratios["3node-one"], all) << out;
  EXPECT_EQ(ratios.count("1node"), 0u) << out;
}

}  // namespace
}  // namespace tessera::cli
