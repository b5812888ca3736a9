// Disk-full tests on MemFileSystem::SetSpaceLimit: writes fail with ResourceExhausted and a clear
// message once the disk is full; flushes and compactions that run out of space lose nothing; with
// space back, a reopened engine has every acknowledged write.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"
#include "tests/engine_test_util.h"
#include "tests/reference_model.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::Row;
using model::RowMutation;
using model::RowRange;
using tablet::Engine;
using tablet::EngineOptions;
using tablet::TabletDescriptor;
using tablet::TabletId;

constexpr TabletId kTablet = 3;

bool MentionsSpace(const Status& s) {
  const std::string m(s.message());
  return m.find("space") != std::string::npos || m.find("full") != std::string::npos;
}

class DiskFullTest : public ::testing::Test {
 protected:
  DiskFullTest() : model_(&clock_), rnd_(seed_) {
    options_.dir = "/full";
    options_.memtable_bytes = 16 << 10;
    options_.commit_log_segment_bytes = 16 << 10;
    options_.block_size = 1024;
    options_.compression = tablet::Compression::kNone;  // data takes the space it says
    options_.compaction_bytes_per_second = 0;
    options_.size_tier_min_files = 3;
    options_.level0_compaction_files = 3;
    env_.fs = &fs_;
    env_.clock = &clock_;
    model_.SetFamily("f", GcRule::None());
  }

  void SetUp() override {
    SilenceExpectedErrorLogs();
    ASSERT_NO_FATAL_FAILURE(Open());
    TabletDescriptor d;
    d.table = "full";
    d.schema = MakeSchema("full", {{"f", GcRule::None()}});
    ASSERT_TRUE(engine_->CreateTablet(kTablet, d).ok());
  }

  void Open() {
    StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
  }

  RowMutation NextWrite() {
    RowMutation m(fmt::format("row{:04d}", rnd_.Uniform(300)));
    const int64_t ts = next_++;
    m.SetCell("f", fmt::format("q{}", rnd_.Uniform(3)), ts,
              fmt::format("{}:{}", ts, std::string(400, 'd')));
    return m;
  }

  // Applies `m`; on OK the model gets it too.
  Status Write(const RowMutation& m) {
    Status s = engine_->Apply(kTablet, m);
    if (s.ok()) model_.Apply(m);
    return s;
  }

  // Writes until a write fails (at most `max` writes) and returns the failure.
  Status WriteUntilFull(int max) {
    for (int i = 0; i < max; ++i) {
      Status s = Write(NextWrite());
      if (!s.ok()) return s;
    }
    return Status();
  }

  // Closes (the result does not matter: the disk may still be full), gives the disk room again,
  // reopens and compares everything with the model.
  void ReopenWithSpaceAndCheck() {
    if (engine_) {
      (void)engine_->Close();
      engine_.reset();
    }
    fs_.SetSpaceLimit(0);
    ASSERT_NO_FATAL_FAILURE(Open());
    ASSERT_NO_FATAL_FAILURE(CheckAll());
    // And it takes writes again.
    for (int i = 0; i < 20; ++i) {
      Status s = Write(NextWrite());
      ASSERT_TRUE(s.ok()) << s;
    }
    ASSERT_TRUE(engine_->Flush(kTablet).ok());
    ASSERT_TRUE(engine_->CompactTablet(kTablet).ok());
    ASSERT_NO_FATAL_FAILURE(CheckAll());
  }

  void CheckAll() {
    StatusOr<std::vector<Row>> rows = ScanAll(*engine_, kTablet, RowRange{});
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_TRUE(model_.CheckScan(RowRange{}, {}, 0, *rows));
  }

  const uint64_t seed_ = TestSeed();
  ::testing::ScopedTrace trace_{__FILE__, __LINE__,
                                fmt::format("seed={} (replay with TESSERA_SEED={})", seed_, seed_)};
  MemFileSystem fs_;
  ManualClock clock_;
  EngineOptions options_;
  Env env_;
  std::unique_ptr<Engine> engine_;
  ReferenceModel model_;
  Random rnd_;
  int64_t next_ = 1;
};

TEST_F(DiskFullTest, WritesFailWithResourceExhaustedAndNothingAcknowledgedIsLost) {
  fs_.SetSpaceLimit(fs_.TotalBytesForTesting() + (256 << 10));
  Status s = WriteUntilFull(5000);
  ASSERT_FALSE(s.ok()) << "5000 writes of ~400 bytes fit in 256 KiB?";
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(MentionsSpace(s)) << "unclear message: " << s;
  // Still full: the next write fails the same way, and reads keep working meanwhile.
  Status again = Write(NextWrite());
  EXPECT_FALSE(again.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(again)) << again;
  ASSERT_NO_FATAL_FAILURE(CheckAll());
  ASSERT_NO_FATAL_FAILURE(ReopenWithSpaceAndCheck());
}

TEST_F(DiskFullTest, WritesAfterSpaceIsFreedAreKept) {
  fs_.SetSpaceLimit(fs_.TotalBytesForTesting() + (128 << 10));
  Status s = WriteUntilFull(5000);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  // With room again the engine may take writes at once or stay failed until reopened (the error
  // is sticky); either way an acknowledged write must survive.
  fs_.SetSpaceLimit(0);
  int acknowledged = 0;
  for (int i = 0; i < 10; ++i) acknowledged += Write(NextWrite()).ok() ? 1 : 0;
  RecordProperty("writes_acknowledged_after_space_freed", acknowledged);
  ASSERT_NO_FATAL_FAILURE(CheckAll());
  ASSERT_NO_FATAL_FAILURE(ReopenWithSpaceAndCheck());
}

TEST_F(DiskFullTest, FailedFlushLosesNothing) {
  options_.memtable_bytes = 1 << 20;  // flush only when asked
  engine_.reset();
  ASSERT_NO_FATAL_FAILURE(Open());
  for (int i = 0; i < 200; ++i) {
    Status s = Write(NextWrite());
    ASSERT_TRUE(s.ok()) << s;
  }
  // Room for a few more log records, not for an SSTable of all the data.
  fs_.SetSpaceLimit(fs_.TotalBytesForTesting() + 4096);
  Status s = engine_->Flush(kTablet);
  ASSERT_FALSE(s.ok()) << "the flush fit in 4 KiB";
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(MentionsSpace(s)) << s;
  // The data is still readable from memory.
  ASSERT_NO_FATAL_FAILURE(CheckAll());
  ASSERT_NO_FATAL_FAILURE(ReopenWithSpaceAndCheck());
}

TEST_F(DiskFullTest, FailedCompactionLosesNothing) {
  options_.size_tier_min_files = 100;  // keep the four files apart until CompactTablet
  options_.level0_compaction_files = 100;
  options_.level0_stop_files = 100;
  engine_.reset();
  ASSERT_NO_FATAL_FAILURE(Open());
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 40; ++i) {
      Status s = Write(NextWrite());
      ASSERT_TRUE(s.ok()) << s;
    }
    ASSERT_TRUE(engine_->Flush(kTablet).ok());
  }
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  ASSERT_GE(engine_->GetStats().sstable_files, 2u);
  fs_.SetSpaceLimit(fs_.TotalBytesForTesting() + 2048);
  Status s = engine_->CompactTablet(kTablet);
  ASSERT_FALSE(s.ok()) << "a major compaction fit in 2 KiB";
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  ASSERT_NO_FATAL_FAILURE(CheckAll());
  ASSERT_NO_FATAL_FAILURE(ReopenWithSpaceAndCheck());
}

TEST_F(DiskFullTest, FullDiskAtOpen) {
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Write(NextWrite()).ok());
  ASSERT_TRUE(engine_->Close().ok());
  engine_.reset();
  // Not a byte to spare: opening may fail (with ResourceExhausted), but must not damage
  // anything.
  fs_.SetSpaceLimit(fs_.TotalBytesForTesting());
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
  if (!engine.ok()) {
    EXPECT_TRUE(absl::IsResourceExhausted(engine.status())) << engine.status();
  } else {
    engine_ = std::move(*engine);
    ASSERT_NO_FATAL_FAILURE(CheckAll());
  }
  ASSERT_NO_FATAL_FAILURE(ReopenWithSpaceAndCheck());
}

}  // namespace
}  // namespace tessera::test
