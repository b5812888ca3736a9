#include "tessera/cli/ycsb_report.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::cli::ycsb {
namespace {

WorkloadResult SampleResult() {
  WorkloadResult r;
  r.workload = "A";
  r.ops = 1000;
  r.seconds = 2;
  r.errors = 3;
  OpStats& read = r.by_type[static_cast<int>(OpType::kRead)];
  read.calls = 500;
  read.errors = 1;
  for (int i = 1; i <= 499; i++) read.latency.Record(i * 1000);
  OpStats& update = r.by_type[static_cast<int>(OpType::kUpdate)];
  update.calls = 500;
  update.errors = 2;
  for (int i = 0; i < 498; i++) update.latency.Record(2000000);
  r.errors_by_kind = {{"UNAVAILABLE", 3}};
  r.error_examples = {{"UNAVAILABLE", "UPDATE user1: UNAVAILABLE: gone"}};
  return r;
}

const WorkloadSpec& SpecA() { return AllWorkloads()[1]; }

TEST(ReportTest, JsonCarriesEveryField) {
  RunOptions options;
  options.threads = 8;
  const ReportContext context{"127.0.0.1:9", &SpecA(), &options};
  const std::string line = FormatJson(SampleResult(), context);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["workload"], "A");
  EXPECT_EQ(j["endpoint"], "127.0.0.1:9");
  EXPECT_EQ(j["distribution"], "zipfian");
  EXPECT_EQ(j["threads"], 8);
  EXPECT_EQ(j["ops"], 1000);
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(j["throughput"].get<double>(), 500);
  EXPECT_EQ(j["errors"], 3);
  EXPECT_EQ(j["stopped_early"], false);
  const auto& read = j["ops_by_type"]["READ"];
  EXPECT_EQ(read["calls"], 500);
  EXPECT_EQ(read["errors"], 1);
  EXPECT_NEAR(read["p50_us"].get<double>(), 250, 2);
  EXPECT_NEAR(read["p99_us"].get<double>(), 495, 4);
  EXPECT_NEAR(read["p999_us"].get<double>(), 499, 4);
  EXPECT_DOUBLE_EQ(read["max_us"].get<double>(), 499);
  EXPECT_DOUBLE_EQ(j["ops_by_type"]["UPDATE"]["p50_us"].get<double>(), 2000);
  EXPECT_FALSE(j["ops_by_type"].contains("SCAN"));
  EXPECT_EQ(j["errors_by_kind"]["UNAVAILABLE"], 3);
  EXPECT_EQ(j["error_examples"]["UNAVAILABLE"], "UPDATE user1: UNAVAILABLE: gone");
}

TEST(ReportTest, TextNamesTypesAndErrors) {
  RunOptions options;
  const ReportContext context{"127.0.0.1:9", &SpecA(), &options};
  const std::string text = FormatText(SampleResult(), context);
  EXPECT_NE(text.find("workload A"), std::string::npos) << text;
  EXPECT_NE(text.find("500 ops/s"), std::string::npos) << text;
  EXPECT_NE(text.find("READ"), std::string::npos) << text;
  EXPECT_NE(text.find("UPDATE"), std::string::npos) << text;
  EXPECT_NE(text.find("error UNAVAILABLE x3"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::cli::ycsb
