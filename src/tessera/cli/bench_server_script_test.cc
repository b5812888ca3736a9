// scripts/bench_server.sh end to end, with tiny sizes: both servers start, every workload runs
// without error against each, and the script prints the run, ratio and memory lines that
// `make bench` reports. Slow (it starts four servers); skipped, loudly, without the emulator.
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/testing/test_servers.h"

namespace tessera::cli {
namespace {

TEST(BenchServerScriptTest, ComparesBothServersOnEveryWorkload) {
  const std::string emulator = testing::EmulatorPath();
  if (access(emulator.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED: no cbtemulator at " << emulator;
  }
  const std::string out_file = ::testing::TempDir() + "/bench_server_script_test.jsonl";
  StatusOr<testing::ProcessResult> r = testing::RunProcess(
      {"/bin/bash", TESSERA_SOURCE_DIR "/scripts/bench_server.sh"}, "",
      {"TESSERA=" TESSERA_BINARY_PATH, "TESSERA_NO_BUILD=1", "TESSERA_CBTEMULATOR=" + emulator,
       "BENCH_RECORDS=300", "BENCH_OPERATIONS=200", "BENCH_DURATION_S=5", "BENCH_THREADS=2",
       "BENCH_MEMCHECK_ROWS=1000", "BENCH_SERVER_OUT=" + out_file},
      std::chrono::minutes(4));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->err << r->out;

  std::map<std::string, std::set<std::string>> runs;  // server -> workloads
  std::set<std::string> ratios;
  std::map<std::string, int> memory;  // phase -> lines
  std::istringstream lines(r->out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string kind = j["kind"];
    if (kind == "run") {
      EXPECT_EQ(j["errors"], 0) << line;
      EXPECT_GT(j["ops"].get<int>(), 0) << line;
      EXPECT_GT(j["throughput"].get<double>(), 0) << line;
      EXPECT_GE(j["server_cpu_us_per_op"].get<double>(), 0) << line;
      EXPECT_GT(j["rss_mb"].get<double>(), 1) << line;
      runs[j["server"]].insert(j["workload"]);
    } else if (kind == "ratio") {
      EXPECT_GT(j["throughput_tessera_over_emulator"].get<double>(), 0) << line;
      ratios.insert(j["workload"]);
    } else if (kind == "memory") {
      EXPECT_GT(j["rss_mb"].get<double>(), 1) << line;
      memory[j["phase"]]++;
    }
  }
  const std::set<std::string> all = {"load", "A", "B", "C", "D", "E", "F"};
  EXPECT_EQ(runs["tessera"], all) << r->out;
  EXPECT_EQ(runs["emulator"], all) << r->out;
  EXPECT_EQ(ratios, all) << r->out;
  EXPECT_EQ(memory["after_workloads"], 2) << r->out;
  EXPECT_EQ(memory["memcheck"], 2) << r->out;
}

}  // namespace
}  // namespace tessera::cli
