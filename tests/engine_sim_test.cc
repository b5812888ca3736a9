// The engine on a SimExecutor (docs/simulation.md): its flushes, compactions and periodic sync
// are tasks that run only when the simulation runs them, on simulated time, and Close cancels
// the ones that have not started.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/util/sim_executor.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::GcRule;

tablet::TabletDescriptor Descriptor() {
  tablet::TabletDescriptor d;
  d.table = "t";
  d.schema = MakeSchema("t", {{"cf", GcRule::None()}});
  return d;
}

std::string RowKey(int i) { return fmt::format("r{:04d}", i); }

class EngineSimTest : public EngineTestBase {
 protected:
  EngineSimTest() : EngineTestBase("/db"), sim_(&clock_) { env_.executor = &sim_; }
  ~EngineSimTest() override { engine_.reset(); }  // before the executor goes

  // Rows [from, to) of one 1 KiB cell: 64 of them fill a test memtable (64 KiB).
  void Fill(int from, int to) {
    for (int i = from; i < to; ++i) Put(1, RowKey(i), "cf", "q", 1000, std::string(1024, 'v'));
  }
  bool Has(int i) {
    auto row = engine_->ReadRow(1, RowKey(i), model::ReadSpec{});
    EXPECT_TRUE(row.ok()) << row.status();
    return row.ok() && row->has_value();
  }
  // The process dies: what was not synced is gone, and the engine never closes.
  void CrashAndReopen() {
    fs_.SimulateCrash();
    engine_.reset();  // its Close writes to file objects from before the crash: lost
    ASSERT_NO_FATAL_FAILURE(Open());
  }

  SimExecutor sim_;
};

TEST_F(EngineSimTest, FlushesRunOnlyWhenTheSimulationRunsThem) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  Fill(0, 200);
  EXPECT_EQ(engine_->GetStats().flushes, 0u);
  EXPECT_EQ(engine_->GetStats().sstable_files, 0u);
  ASSERT_GT(sim_.pending(), 0u);
  sim_.RunReady();
  EXPECT_GE(engine_->GetStats().flushes, 2u);
  EXPECT_GE(engine_->GetStats().sstable_files, 1u);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(Has(i)) << i;
}

TEST_F(EngineSimTest, PeriodicSyncIsATimerOnSimulatedTime) {
  options_.sync_mode = tablet::SyncMode::kPeriodic;
  options_.periodic_sync_interval_ms = 10;
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  Fill(0, 1);
  sim_.RunFor(5'000);  // half an interval: not synced yet
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_FALSE(Has(0)) << "acknowledged within the interval, lost by the crash as documented";
  Fill(1, 2);
  sim_.RunFor(10'000);  // one interval: the syncer's timer fires
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_TRUE(Has(1));
}

TEST_F(EngineSimTest, CloseCancelsBackgroundWorkThatHasNotStarted) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  Fill(0, 200);
  ASSERT_GT(sim_.pending(), 0u);
  ASSERT_TRUE(engine_->Close().ok());  // returns at once: nothing waits for the simulation
  EXPECT_EQ(sim_.pending(), 0u);
  engine_.reset();
  ASSERT_NO_FATAL_FAILURE(Open());  // the commit log holds what was never flushed
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(Has(i)) << i;
}

}  // namespace
}  // namespace tessera::test
