#include "tessera/replication/hint_store.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::replication {
namespace {

constexpr uint64_t kTablet = 0x0000000700000001ull;
constexpr int64_t kSecond = 1'000'000;

class HintStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HintLogOptions o;
    o.dir = "/hints";
    o.segment_bytes = 430;  // three 100-byte mutations per segment
    log_ = *HintLog::Open(&fs_, o);
  }
  std::unique_ptr<HintStore> Store(HintStoreOptions o = {}) {
    return std::make_unique<HintStore>(log_.get(), &clock_, o);
  }
  void SpillRun(HintStore* store, uint64_t first, int count) {
    for (int i = 0; i < count; ++i) {
      const uint64_t s = first + static_cast<uint64_t>(i);
      store->Spill(kTablet, s, s, clock_.NowMicros(), std::string(100, 'x'));
    }
  }
  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<HintLog> log_;
};

TEST_F(HintStoreTest, PendingHintsAreHeldAndReadBeforeAndAfterTheyReachTheDisk) {
  auto store = Store();
  SpillRun(store.get(), 11, 5);
  EXPECT_TRUE(store->Holds(kTablet, 11));
  EXPECT_TRUE(store->Holds(kTablet, 15));
  EXPECT_FALSE(store->Holds(kTablet, 16));
  EXPECT_EQ(store->Stats(kTablet).records, 5u);
  EXPECT_EQ(log_->total_bytes(), 0u);
  ASSERT_EQ(store->Read(kTablet, 13, 150)->size(), 2u);  // 13 and 14 pass 150 bytes
  store->Flush();
  EXPECT_EQ(log_->Stats().at(kTablet).last, 15u);
  EXPECT_TRUE(store->Holds(kTablet, 12));
  StatusOr<std::vector<HintRecord>> got = store->Read(kTablet, 12, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->front().first, 12u);
  EXPECT_EQ(got->back().last, 15u);
  // What follows goes after it on disk; a run that does not follow replaces it.
  SpillRun(store.get(), 16, 1);
  store->Flush();
  EXPECT_EQ(log_->Stats().at(kTablet).last, 16u);
  SpillRun(store.get(), 30, 1);
  store->Flush();
  EXPECT_EQ(log_->Stats().at(kTablet).first, 30u);
  EXPECT_FALSE(store->Holds(kTablet, 16));
}

TEST_F(HintStoreTest, DropsWhatEveryoneHasAndWhatIsOlderThanTheWindow) {
  HintStoreOptions o;
  o.window_us = 10 * kSecond;
  auto store = Store(o);
  SpillRun(store.get(), 1, 6);  // two segments
  store->Flush();
  clock_.Advance(6 * kSecond);
  SpillRun(store.get(), 7, 3);  // pending, newer
  store->DropThrough(kTablet, 3);
  EXPECT_FALSE(store->Holds(kTablet, 3));
  EXPECT_TRUE(store->Holds(kTablet, 4));
  clock_.Advance(5 * kSecond);  // 1..6 are 11 s old, 7..9 5 s
  store->Maintain();
  EXPECT_FALSE(store->Holds(kTablet, 6));
  EXPECT_TRUE(store->Holds(kTablet, 7));
  clock_.Advance(6 * kSecond);
  store->Maintain();
  EXPECT_FALSE(store->Holds(kTablet, 9));
  EXPECT_EQ(store->Stats(kTablet).records, 0u);
}

TEST_F(HintStoreTest, KeepsTheLogUnderItsSize) {
  HintStoreOptions o;
  o.max_bytes = 500;
  auto store = Store(o);
  SpillRun(store.get(), 1, 9);
  store->Flush();
  store->Maintain();
  EXPECT_LE(log_->total_bytes(), 500u);
  EXPECT_FALSE(store->Holds(kTablet, 1));
  EXPECT_TRUE(store->Holds(kTablet, 9));
}

TEST_F(HintStoreTest, TheDeliveryBudgetRefillsAtItsRate) {
  HintStoreOptions o;
  o.delivery_bytes_per_s = 1000;
  o.burst_bytes = 2000;
  auto store = Store(o);
  EXPECT_EQ(store->TakeBudget(1500), 1500u);
  EXPECT_EQ(store->TakeBudget(1500), 500u);
  EXPECT_EQ(store->TakeBudget(1500), 0u);
  store->Settle(500, 700);  // read more than it took: owed
  clock_.Advance(kSecond / 2);
  EXPECT_EQ(store->TakeBudget(1500), 300u);
  clock_.Advance(10 * kSecond);
  EXPECT_EQ(store->TakeBudget(5000), 2000u);  // at most a burst
  HintStoreOptions unthrottled;
  unthrottled.delivery_bytes_per_s = 0;
  EXPECT_EQ(Store(unthrottled)->TakeBudget(12345), 12345u);
}

TEST_F(HintStoreTest, ARebuildDropsEveryHintOfTheTablet) {
  auto store = Store();
  SpillRun(store.get(), 1, 4);
  store->Flush();
  SpillRun(store.get(), 5, 1);
  store->DropTablet(kTablet);
  EXPECT_FALSE(store->Holds(kTablet, 1));
  EXPECT_FALSE(store->Holds(kTablet, 5));
  EXPECT_TRUE(log_->Stats().empty());
}

}  // namespace
}  // namespace tessera::replication
