#include "tessera/replication/hint_log.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::replication {
namespace {

constexpr uint64_t kTablet = 0x0000000700000001ull;
constexpr uint64_t kOther = 0x0000000700000002ull;
constexpr char kDir[] = "/data/hints";

HintRecord Rec(uint64_t tablet, uint64_t first, uint64_t n, int64_t at_us, size_t bytes = 100) {
  return HintRecord{tablet, first, first + n - 1, at_us,
                    std::string(bytes, static_cast<char>('a' + first % 26))};
}

class HintLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<HintLog> OpenLog(uint64_t segment_bytes = 1000) {
    HintLogOptions o;
    o.dir = kDir;
    o.segment_bytes = segment_bytes;
    StatusOr<std::unique_ptr<HintLog>> log = HintLog::Open(&fs_, o);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }
  // Appends records of `tablet` holding sequences first.. one at a time, `count` of them, each
  // of one sequence, written at at_us.
  void AppendRun(HintLog* log, uint64_t tablet, uint64_t first, int count, int64_t at_us) {
    for (int i = 0; i < count; ++i) {
      HintRecord r = Rec(tablet, first + static_cast<uint64_t>(i), 1, at_us);
      ASSERT_TRUE(log->Append(tablet, std::span<const HintRecord>(&r, 1)).ok());
    }
  }
  std::vector<std::string> Files() {
    std::vector<std::string> names = *fs_.GetChildren(kDir);
    std::sort(names.begin(), names.end());
    return names;
  }
  MemFileSystem fs_;
};

TEST_F(HintLogTest, ReadsBackWhatWasAppendedFromAnySequenceInOrder) {
  auto log = OpenLog();
  std::vector<HintRecord> batch = {Rec(kTablet, 5, 3, 10), Rec(kTablet, 8, 1, 11),
                                   Rec(kTablet, 9, 2, 12)};
  ASSERT_TRUE(log->Append(kTablet, batch).ok());
  // From the record holding sequence 6 (5..7): all three.
  StatusOr<std::vector<HintRecord>> got = log->Read(kTablet, 6, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].first, 5u);
  EXPECT_EQ((*got)[1].first, 8u);
  EXPECT_EQ((*got)[2].last, 10u);
  EXPECT_EQ((*got)[2].appended_at_us, 12);
  EXPECT_EQ((*got)[2].mutation, batch[2].mutation);
  // A byte budget stops after the record that passes it, but always gives one.
  got = log->Read(kTablet, 8, 1);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].first, 8u);
  EXPECT_TRUE(absl::IsNotFound(log->Read(kTablet, 4, 100).status()));
  EXPECT_TRUE(absl::IsNotFound(log->Read(kTablet, 11, 100).status()));
  EXPECT_TRUE(absl::IsNotFound(log->Read(kOther, 5, 100).status()));
  HintTabletStats s = log->Stats().at(kTablet);
  EXPECT_EQ(s.first, 5u);
  EXPECT_EQ(s.last, 10u);
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.bytes, log->total_bytes());
}

TEST_F(HintLogTest, RefusesAGapAnOverlapAndARecordOfAnotherTablet) {
  auto log = OpenLog();
  AppendRun(log.get(), kTablet, 1, 3, 0);
  HintRecord gap = Rec(kTablet, 5, 1, 0);
  Status s = log->Append(kTablet, std::span<const HintRecord>(&gap, 1));
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("through sequence 3"), std::string_view::npos) << s;
  HintRecord overlap = Rec(kTablet, 3, 1, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(log->Append(kTablet, std::span<const HintRecord>(&overlap, 1))));
  HintRecord other = Rec(kOther, 4, 1, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(log->Append(kTablet, std::span<const HintRecord>(&other, 1))));
  EXPECT_EQ(log->Stats().at(kTablet).last, 3u);
}

TEST_F(HintLogTest, SpansSegmentsAndDropsWholeSegmentsBelowASequence) {
  auto log = OpenLog(/*segment_bytes=*/430);  // 3 records of 140 bytes per segment
  AppendRun(log.get(), kTablet, 1, 10, 0);
  ASSERT_GE(Files().size(), 3u);
  StatusOr<std::vector<HintRecord>> all = log->Read(kTablet, 1, 1 << 20);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 10u);
  for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ((*all)[i].first, i + 1);
  // Through 4: the segment of 1..3 goes; the one holding 4..6 stays whole.
  ASSERT_TRUE(log->DropThrough(kTablet, 4).ok());
  EXPECT_EQ(log->Stats().at(kTablet).first, 4u);
  EXPECT_TRUE(absl::IsNotFound(log->Read(kTablet, 3, 100).status()));
  ASSERT_TRUE(log->DropThrough(kTablet, 10).ok());
  EXPECT_TRUE(log->Stats().empty());
  EXPECT_TRUE(Files().empty());
  EXPECT_EQ(log->total_bytes(), 0u);
  // Emptied, the tablet takes any first sequence again.
  AppendRun(log.get(), kTablet, 50, 1, 0);
  EXPECT_EQ(log->Stats().at(kTablet).first, 50u);
}

TEST_F(HintLogTest, DropsSegmentsOlderThanTheWindow) {
  auto log = OpenLog(430);
  AppendRun(log.get(), kTablet, 1, 3, /*at_us=*/100);  // one full segment
  AppendRun(log.get(), kTablet, 4, 3, /*at_us=*/200);
  AppendRun(log.get(), kOther, 1, 2, /*at_us=*/150);
  ASSERT_TRUE(log->DropWrittenBefore(101).ok());
  EXPECT_EQ(log->Stats().at(kTablet).first, 4u);
  EXPECT_EQ(log->Stats().at(kOther).first, 1u);
  ASSERT_TRUE(log->DropWrittenBefore(201).ok());
  EXPECT_TRUE(log->Stats().empty());
}

TEST_F(HintLogTest, DropsTheOldestSegmentsAcrossTabletsToStayUnderTheSize) {
  auto log = OpenLog(430);
  AppendRun(log.get(), kTablet, 1, 3, 100);  // oldest
  AppendRun(log.get(), kOther, 1, 3, 200);
  AppendRun(log.get(), kTablet, 4, 3, 300);
  const uint64_t total = log->total_bytes();
  const uint64_t one = log->Stats().at(kOther).bytes;
  ASSERT_TRUE(log->DropToSize(total - 1).ok());
  EXPECT_EQ(log->Stats().at(kTablet).first, 4u);  // its oldest segment went first
  EXPECT_EQ(log->Stats().at(kOther).first, 1u);
  ASSERT_TRUE(log->DropToSize(total - 2 * one).ok());
  EXPECT_FALSE(log->Stats().contains(kOther));
  EXPECT_LE(log->total_bytes(), total - 2 * one);
  ASSERT_TRUE(log->DropTablet(kTablet).ok());
  EXPECT_TRUE(Files().empty());
}

TEST_F(HintLogTest, ReopensWithWhatItHeldAndAppendsAfterIt) {
  {
    auto log = OpenLog(430);
    AppendRun(log.get(), kTablet, 1, 7, 5);
    AppendRun(log.get(), kOther, 3, 2, 6);
  }
  fs_.SimulateCrash();  // everything was synced
  auto log = OpenLog(430);
  auto stats = log->Stats();
  EXPECT_EQ(stats.at(kTablet).first, 1u);
  EXPECT_EQ(stats.at(kTablet).last, 7u);
  EXPECT_EQ(stats.at(kOther).records, 2u);
  AppendRun(log.get(), kTablet, 8, 2, 7);
  StatusOr<std::vector<HintRecord>> got = log->Read(kTablet, 6, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 4u);
  EXPECT_EQ(got->back().first, 9u);
  EXPECT_EQ(got->back().appended_at_us, 7);
}

TEST_F(HintLogTest, ATornTailIsCutOffNotAnError) {
  {
    auto log = OpenLog(1 << 20);
    AppendRun(log.get(), kTablet, 1, 3, 0);
  }
  const std::string path = std::string(kDir) + "/" + Files().front();
  const uint64_t size = *fs_.GetFileSize(path);
  ASSERT_TRUE(fs_.TruncateForTesting(path, size - 10).ok());  // the last record cut short
  auto log = OpenLog(1 << 20);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->Stats().at(kTablet).last, 2u);
  // It goes on right after what survived.
  AppendRun(log.get(), kTablet, 3, 1, 0);
  EXPECT_EQ(log->Read(kTablet, 3, 100)->front().first, 3u);
}

TEST_F(HintLogTest, ABadChecksumOnTheLastRecordIsATornTail) {
  {
    auto log = OpenLog(1 << 20);
    AppendRun(log.get(), kTablet, 1, 3, 0);
  }
  const std::string path = std::string(kDir) + "/" + Files().front();
  const uint64_t size = *fs_.GetFileSize(path);
  ASSERT_TRUE(fs_.FlipBitForTesting(path, size - 1, 0).ok());
  auto log = OpenLog(1 << 20);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->Stats().at(kTablet).last, 2u);
}

TEST_F(HintLogTest, ACorruptMiddleIsDataLossNamingFileAndOffset) {
  {
    auto log = OpenLog(1 << 20);
    AppendRun(log.get(), kTablet, 1, 3, 0);
  }
  const std::string path = std::string(kDir) + "/" + Files().front();
  // The second record starts after the 16-byte header and the first record (8 + 32 + 100).
  ASSERT_TRUE(fs_.FlipBitForTesting(path, 16 + 140 + 50, 3).ok());
  HintLogOptions o;
  o.dir = kDir;
  StatusOr<std::unique_ptr<HintLog>> log = HintLog::Open(&fs_, o);
  ASSERT_TRUE(absl::IsDataLoss(log.status())) << log.status();
  EXPECT_NE(log.status().message().find(path), std::string_view::npos) << log.status();
  EXPECT_NE(log.status().message().find("offset 156"), std::string_view::npos) << log.status();
}

TEST_F(HintLogTest, AFileOfAnotherVersionIsDataLoss) {
  {
    auto log = OpenLog();
    AppendRun(log.get(), kTablet, 1, 1, 0);
  }
  const std::string path = std::string(kDir) + "/" + Files().front();
  ASSERT_TRUE(fs_.FlipBitForTesting(path, 2, 1).ok());  // the magic
  HintLogOptions o;
  o.dir = kDir;
  StatusOr<std::unique_ptr<HintLog>> log = HintLog::Open(&fs_, o);
  EXPECT_TRUE(absl::IsDataLoss(log.status())) << log.status();
}

TEST_F(HintLogTest, ACrashLosesOnlyAnUnfinishedAppend) {
  auto log = OpenLog(430);
  AppendRun(log.get(), kTablet, 1, 4, 0);
  fs_.FailAfterOps(1);  // the next append fails part way
  std::vector<HintRecord> batch = {Rec(kTablet, 5, 1, 0), Rec(kTablet, 6, 1, 0),
                                   Rec(kTablet, 7, 1, 0)};
  EXPECT_FALSE(log->Append(kTablet, batch).ok());
  fs_.FailAfterOps(-1);
  log.reset();
  fs_.SimulateCrash();
  log = OpenLog(430);
  ASSERT_NE(log, nullptr);
  const HintTabletStats s = log->Stats().at(kTablet);
  EXPECT_EQ(s.first, 1u);
  EXPECT_GE(s.last, 4u);
  StatusOr<std::vector<HintRecord>> got = log->Read(kTablet, 1, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->back().last, s.last);
}

TEST_F(HintLogTest, RefusesAnEmptyDirectory) {
  EXPECT_TRUE(absl::IsInvalidArgument(HintLog::Open(&fs_, HintLogOptions()).status()));
}

}  // namespace
}  // namespace tessera::replication
