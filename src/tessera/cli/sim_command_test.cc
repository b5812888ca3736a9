#include "tessera/cli/sim_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tessera/testing/scenarios.h"
#include "tessera/util/version.h"

namespace tessera::cli {
namespace {

using tessera::testing::EstimateScenarioBytes;
using tessera::testing::Scenario;
using tessera::testing::ScenarioOptions;
using ::testing::HasSubstr;

struct Result {
  int code;
  std::string out, err;
};

Result RunSim(std::vector<std::string> args) {
  args.insert(args.begin(), "sim");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  int code = RunSimCommand(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(SimCommandTest, JsonHasEveryFieldWithNullsWhereNotApplicable) {
  Result r = RunSim(
      {"--scenario", "join", "--nodes", "8,12", "--seed", "3", "--json", "--measure-rounds", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  for (const char* key :
       {"scenario", "nodes", "detect_median_s", "detect_p99_s", "false_convictions_per_hour",
        "converge_rounds", "gossip_bytes_per_node_per_s", "seed"}) {
    EXPECT_TRUE(lines[0].contains(key)) << key;
  }
  EXPECT_EQ(lines[0]["scenario"], "join");
  EXPECT_EQ(lines[0]["nodes"], 8);
  EXPECT_EQ(lines[1]["nodes"], 12);
  EXPECT_EQ(lines[0]["seed"], 3);
  EXPECT_TRUE(lines[0]["detect_median_s"].is_null());
  EXPECT_TRUE(lines[0]["false_convictions_per_hour"].is_null());
  EXPECT_TRUE(lines[0]["converge_rounds"].is_number_integer());
  EXPECT_GT(lines[0]["gossip_bytes_per_node_per_s"].get<double>(), 0);
  EXPECT_EQ(lines[0]["interval_ms"], 200);
  EXPECT_EQ(lines[0]["model"], "exponential");
}

TEST(SimCommandTest, PaperSettingsAndOverrides) {
  Result r = RunSim({"--scenario", "crash", "--nodes", "10", "--paper", "--trials", "1", "--json",
                     "--measure-rounds", "20"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["interval_ms"], 1000);
  EXPECT_EQ(lines[0]["phi"], 5.0);
  EXPECT_TRUE(lines[0]["detect_median_s"].is_number());
  EXPECT_EQ(lines[0]["missed_detections"], 0);

  r = RunSim({"--scenario", "crash", "--nodes", "10", "--paper", "--interval-ms", "500", "--phi",
              "3", "--model", "normal", "--trials", "1", "--json", "--measure-rounds", "20"});
  ASSERT_EQ(r.code, 0) << r.err;
  lines = JsonLines(r.out);
  EXPECT_EQ(lines[0]["interval_ms"], 500);
  EXPECT_EQ(lines[0]["phi"], 3.0);
  EXPECT_EQ(lines[0]["model"], "normal");
}

TEST(SimCommandTest, SameSeedSameFigures) {
  std::vector<std::string> args = {
      "--scenario",    "partition", "--nodes",          "10", "--seed", "9", "--json",
      "--partition-s", "10",        "--measure-rounds", "10"};
  Result a = RunSim(args);
  Result b = RunSim(args);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(SimCommandTest, TableByDefault) {
  Result r =
      RunSim({"--scenario", "loss", "--nodes", "5", "--duration-s", "30", "--measure-rounds", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("scenario"));
  EXPECT_THAT(r.out, HasSubstr("bytes/n/s"));
  EXPECT_THAT(r.out, HasSubstr("loss "));
  EXPECT_THAT(r.out, HasSubstr("1.0%"));  // the loss scenario's default loss
}

// Usage errors exit 2, as every `tessera` command (issue 9: CLI11's 105, 106, 109 leaked out).
TEST(SimCommandTest, BadFlagsExitTwo) {
  EXPECT_EQ(RunSim({"--scenario", "bogus"}).code, 2);
  EXPECT_EQ(RunSim({}).code, 2);  // --scenario is required
  EXPECT_EQ(RunSim({"--scenario", "crash", "--nodes", "1"}).code, 2);
  EXPECT_EQ(RunSim({"--scenario", "crash", "--nodes", "x"}).code, 2);
  EXPECT_EQ(RunSim({"--scenario", "crash", "--loss", "2"}).code, 2);
  EXPECT_EQ(RunSim({"--scenario", "crash", "--phi", "-1"}).code, 2);
  EXPECT_EQ(RunSim({"--scenario", "crash", "--no-such-flag"}).code, 2);
}

TEST(SimCommandTest, VersionNamesTheCommit) {
  Result r = RunSim({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, VersionLine("tessera sim") + "\n");
  EXPECT_THAT(r.out, HasSubstr("(commit "));
}

// Issue 9: `--nodes 3000` died of std::bad_alloc under a 1.5 GB limit; the estimate says so first.
TEST(SimCommandTest, MemoryEstimateGrowsWithNodesSquaredAndTheRunsLength) {
  ScenarioOptions o;
  o.scenario = Scenario::kCrash;
  o.nodes = 3000;
  EXPECT_GT(EstimateScenarioBytes(o), uint64_t{3} << 30);  // far above 1.5 GB
  o.nodes = 100;
  const uint64_t hundred = EstimateScenarioBytes(o);
  EXPECT_LT(hundred, uint64_t{100} << 20);
  o.nodes = 200;
  EXPECT_GT(EstimateScenarioBytes(o), 3 * (hundred - (uint64_t{32} << 20)));
  o.nodes = 100;
  o.scenario = Scenario::kLoss;  // an hour of rounds fills every detector window
  EXPECT_GT(EstimateScenarioBytes(o), hundred);
}

TEST(SimCommandTest, HelpSucceeds) {
  Result r = RunSim({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--scenario"));
  EXPECT_THAT(r.out, HasSubstr("--paper"));
}

}  // namespace
}  // namespace tessera::cli
