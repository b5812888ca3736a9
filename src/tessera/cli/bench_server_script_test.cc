// scripts/bench_server.sh end to end, with tiny sizes: both servers start, every workload runs
// without error against each, and the script prints the run, ratio and memory lines that
// `make bench` reports. Slow (it starts five servers); skipped, loudly, without the emulator.
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/bench_script_testing.h"
#include "tessera/testing/test_servers.h"

namespace tessera::cli {
namespace {

TEST(BenchServerScriptTest, ComparesBothServersOnEveryWorkload) {
  const std::string emulator = testing::EmulatorPath();
  if (access(emulator.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED: no cbtemulator at " << emulator;
  }
  const std::string out_file = ::testing::TempDir() + "/bench_server_script_test.jsonl";
  std::vector<nlohmann::json> lines;
  std::string out;
  RunBenchScript("bench_server.sh",
                 {"TESSERA_CBTEMULATOR=" + emulator, "BENCH_RECORDS=300", "BENCH_OPERATIONS=200",
                  "BENCH_DURATION_S=5", "BENCH_THREADS=2", "BENCH_MEMCHECK_ROWS=1000",
                  "BENCH_SERVER_OUT=" + out_file},
                 std::chrono::minutes(4), &lines, &out);
  if (HasFatalFailure()) return;

  std::map<std::string, std::set<std::string>> runs;  // server -> workloads
  std::map<std::string, std::set<std::string>> ratios;  // tessera server -> workloads
  std::map<std::string, int> memory;  // phase -> lines
  for (const nlohmann::json& j : lines) {
    const std::string line = j.dump();
    const std::string kind = j["kind"];
    if (kind == "run") {
      ExpectCleanRun(j);
      EXPECT_GT(j["rss_mb"].get<double>(), 1) << line;
      runs[j["server"]].insert(j["workload"]);
    } else if (kind == "ratio") {
      EXPECT_GT(j["throughput_tessera_over_emulator"].get<double>(), 0) << line;
      ratios[j["server"]].insert(j["workload"]);
    } else if (kind == "memory") {
      EXPECT_GT(j["rss_mb"].get<double>(), 1) << line;
      memory[j["phase"]]++;
    }
  }
  const std::set<std::string> all = {"load", "A", "B", "C", "D", "E", "F", "ping"};
  EXPECT_EQ(runs["tessera"], all) << out;
  EXPECT_EQ(runs["tessera-periodic"], all) << out;  // --sync periodic
  EXPECT_EQ(runs["emulator"], all) << out;
  EXPECT_EQ(ratios["tessera"], all) << out;
  EXPECT_EQ(ratios["tessera-periodic"], all) << out;
  EXPECT_EQ(memory["after_workloads"], 3) << out;
  EXPECT_EQ(memory["memcheck"], 2) << out;
}

}  // namespace
}  // namespace tessera::cli
