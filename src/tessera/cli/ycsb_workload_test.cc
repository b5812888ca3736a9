#include "tessera/cli/ycsb_workload.h"

#include <map>

#include "gtest/gtest.h"

namespace tessera::cli::ycsb {
namespace {

TEST(WorkloadListTest, ParsesNamesInOrderIgnoringCase) {
  StatusOr<std::vector<WorkloadSpec>> w = ParseWorkloadList("load,a,C,f");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->size(), 4u);
  EXPECT_EQ((*w)[0].name, "load");
  EXPECT_TRUE((*w)[0].load);
  EXPECT_EQ((*w)[1].name, "A");
  EXPECT_EQ((*w)[2].name, "C");
  EXPECT_EQ((*w)[3].name, "F");
  EXPECT_EQ(ParseWorkloadList("LOAD")->front().name, "load");
}

TEST(WorkloadListTest, RejectsUnknownAndEmptyNames) {
  StatusOr<std::vector<WorkloadSpec>> w = ParseWorkloadList("A,G");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("\"G\""), std::string::npos) << w.status();
  EXPECT_FALSE(ParseWorkloadList("A,,B").ok());
  EXPECT_FALSE(ParseWorkloadList("").ok());
  EXPECT_FALSE(ParseWorkloadList("A,").ok());
}

TEST(WorkloadListTest, DefinitionsAreYcsbs) {
  std::map<std::string_view, const WorkloadSpec*> by_name;
  for (const WorkloadSpec& w : AllWorkloads()) by_name[w.name] = &w;
  ASSERT_EQ(by_name.size(), 8u);
  EXPECT_EQ(by_name["A"]->read, 0.5);
  EXPECT_EQ(by_name["A"]->update, 0.5);
  EXPECT_EQ(by_name["B"]->read, 0.95);
  EXPECT_EQ(by_name["C"]->read, 1.0);
  EXPECT_EQ(by_name["D"]->insert, 0.05);
  EXPECT_EQ(by_name["D"]->distribution, Distribution::kLatest);
  EXPECT_EQ(by_name["E"]->scan, 0.95);
  EXPECT_EQ(by_name["E"]->distribution, Distribution::kZipfian);
  EXPECT_EQ(by_name["F"]->read_modify_write, 0.5);
  EXPECT_EQ(by_name["ping"]->ping, 1.0);  // ours, not YCSB's
  EXPECT_EQ(by_name["ping"]->read, 0.0);
}

TEST(DistributionTest, Parses) {
  EXPECT_EQ(*ParseDistribution("uniform"), Distribution::kUniform);
  EXPECT_EQ(*ParseDistribution("zipfian"), Distribution::kZipfian);
  EXPECT_EQ(*ParseDistribution("latest"), Distribution::kLatest);
  EXPECT_EQ(ParseDistribution("hotspot").status().code(), absl::StatusCode::kInvalidArgument);
}

// Each workload's operations come in its proportions.
TEST(OperationChooserTest, MixesMatchTheWorkloads) {
  constexpr int kDraws = 200000;
  for (const WorkloadSpec& w : AllWorkloads()) {
    if (w.load) continue;
    OperationChooser chooser(w);
    Random rng(17);
    std::map<OpType, int> counts;
    for (int i = 0; i < kDraws; i++) counts[chooser.Next(&rng)]++;
    auto share = [&](OpType t) { return counts[t] / double(kDraws); };
    EXPECT_NEAR(share(OpType::kRead), w.read, 0.005) << w.name;
    EXPECT_NEAR(share(OpType::kUpdate), w.update, 0.005) << w.name;
    EXPECT_NEAR(share(OpType::kInsert), w.insert, 0.005) << w.name;
    EXPECT_NEAR(share(OpType::kScan), w.scan, 0.005) << w.name;
    EXPECT_NEAR(share(OpType::kReadModifyWrite), w.read_modify_write, 0.005) << w.name;
    EXPECT_NEAR(share(OpType::kPing), w.ping, 0.005) << w.name;
  }
}

TEST(KeyChooserTest, ChoosesOnlyRecordsThatExist) {
  AcknowledgedCounter inserts(1000);
  for (Distribution d : {Distribution::kUniform, Distribution::kZipfian}) {
    // Room for 5000 new records that do not exist (yet).
    KeyChooser chooser(d, 1000, 5000, &inserts, 0);
    Random rng(23);
    for (int i = 0; i < 20000; i++) ASSERT_LT(chooser.Next(&rng), 1000u) << DistributionName(d);
  }
  // Once inserts are acknowledged, they are chosen too.
  for (int i = 0; i < 5000; i++) inserts.Acknowledge(inserts.Next());
  KeyChooser uniform(Distribution::kUniform, 1000, 5000, &inserts, 0);
  Random rng(29);
  uint64_t above = 0;
  for (int i = 0; i < 20000; i++) above += uniform.Next(&rng) >= 1000;
  EXPECT_NEAR(above / 20000.0, 5000.0 / 6000.0, 0.02);
}

TEST(KeyChooserTest, LatestFollowsInserts) {
  AcknowledgedCounter inserts(500);
  KeyChooser chooser(Distribution::kLatest, 500, 0, &inserts,
                     ZipfianGenerator::Zeta(0, 500, ZipfianGenerator::kZipfianConstant));
  Random rng(31);
  for (int i = 0; i < 200; i++) inserts.Acknowledge(inserts.Next());
  std::map<uint64_t, int> counts;
  for (int i = 0; i < 20000; i++) {
    const uint64_t k = chooser.Next(&rng);
    ASSERT_LE(k, 699u);
    counts[k]++;
  }
  EXPECT_GT(counts[699], counts[499] * 5);
}

}  // namespace
}  // namespace tessera::cli::ycsb
