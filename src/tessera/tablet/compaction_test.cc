#include "tessera/tablet/compaction.h"

#include <gtest/gtest.h>

namespace tessera::tablet {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(PickSizeTieredRunTest, NeedsEnoughSimilarFiles) {
  EXPECT_TRUE(PickSizeTieredRun({}, 4, 32, 2.0).empty());
  EXPECT_TRUE(PickSizeTieredRun({10 * kMiB, 10 * kMiB, 10 * kMiB}, 4, 32, 2.0).empty());
  EXPECT_EQ((std::vector<size_t>{0, 1, 2, 3}),
            PickSizeTieredRun({10 * kMiB, 11 * kMiB, 12 * kMiB, 13 * kMiB}, 4, 32, 2.0));
}

TEST(PickSizeTieredRunTest, NeverMergesAHugeFileWithSmallOnes) {
  // Newest first: four small files, then a huge one.
  auto run = PickSizeTieredRun({4 * kMiB, 4 * kMiB, 5 * kMiB, 4 * kMiB, 1000 * kMiB}, 4, 32, 2.0);
  EXPECT_EQ((std::vector<size_t>{0, 1, 2, 3}), run);
}

TEST(PickSizeTieredRunTest, RunsAreAdjacentInAge) {
  // Similar sizes separated by a different one do not form one run.
  EXPECT_TRUE(
      PickSizeTieredRun({8 * kMiB, 8 * kMiB, 100 * kMiB, 8 * kMiB, 8 * kMiB}, 4, 32, 2.0).empty());
}

TEST(PickSizeTieredRunTest, TinyFilesAlwaysMergeAndRunIsCapped) {
  std::vector<uint64_t> sizes = {100, 5000, 70000, 10, 300000, 2};
  EXPECT_EQ(6u, PickSizeTieredRun(sizes, 4, 32, 2.0).size());
  EXPECT_EQ(4u, PickSizeTieredRun(sizes, 4, 4, 2.0).size());
}

}  // namespace
}  // namespace tessera::tablet
