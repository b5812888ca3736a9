#include "tessera/cli/ycsb_driver.h"

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace tessera::cli::ycsb {
namespace {

// An in-memory store shared by the FakeDbs of all threads: row key -> field index -> value.
// Optionally fails every n-th write.
class FakeStore {
 public:
  explicit FakeStore(int fail_every_nth_write = 0) : fail_every_(fail_every_nth_write) {}

  Status Write(std::string_view key, std::span<const FieldWrite> fields) {
    absl::MutexLock lock(&mu_);
    if (fail_every_ > 0 && ++writes_ % fail_every_ == 0) {
      return absl::UnavailableError("injected failure");
    }
    auto& row = rows_[std::string(key)];
    for (const FieldWrite& f : fields) row[f.index] = std::string(f.value);
    return Status();
  }
  int Read(std::string_view key) {
    absl::MutexLock lock(&mu_);
    auto it = rows_.find(std::string(key));
    return it == rows_.end() ? 0 : static_cast<int>(it->second.size());
  }
  int Scan(std::string_view start, int max_rows) {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (auto it = rows_.lower_bound(std::string(start)); it != rows_.end() && n < max_rows; ++it)
      n++;
    return n;
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return rows_.size();
  }
  size_t FieldsOf(const std::string& key) {
    absl::MutexLock lock(&mu_);
    return rows_[key].size();
  }

  std::atomic<uint64_t> pings{0};

 private:
  absl::Mutex mu_;
  std::map<std::string, std::map<int, std::string>> rows_ ABSL_GUARDED_BY(mu_);
  const int fail_every_;
  uint64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
};

class FakeDb : public YcsbDb {
 public:
  explicit FakeDb(FakeStore* store) : store_(store) {}
  StatusOr<int> Read(std::string_view key) override { return store_->Read(key); }
  StatusOr<int> Scan(std::string_view start, int max_rows) override {
    return store_->Scan(start, max_rows);
  }
  Status Write(std::string_view key, std::span<const FieldWrite> fields) override {
    return store_->Write(key, fields);
  }
  std::vector<Status> WriteBatch(std::span<const RowWrite> rows) override {
    std::vector<Status> out;
    for (const RowWrite& r : rows) out.push_back(store_->Write(r.key, r.fields));
    return out;
  }
  Status Ping() override {
    store_->pings.fetch_add(1, std::memory_order_relaxed);
    return Status();
  }

 private:
  FakeStore* store_;
};

YcsbDbFactory FactoryFor(FakeStore* store) {
  return
      [store](int) -> StatusOr<std::unique_ptr<YcsbDb>> { return std::make_unique<FakeDb>(store); };
}

const WorkloadSpec& Spec(std::string_view name) {
  for (const WorkloadSpec& w : AllWorkloads()) {
    if (w.name == name) return w;
  }
  ADD_FAILURE() << name;
  return AllWorkloads().front();
}

RunOptions SmallRun() {
  RunOptions o;
  o.records = 2000;
  o.operations = 4000;
  o.threads = 4;
  o.fields = 3;
  o.value_size = 20;
  o.max_scan_length = 10;
  o.batch_size = 64;
  return o;
}

uint64_t Calls(const WorkloadResult& r, OpType t) { return r.stats(t).calls; }

TEST(DriverTest, LoadWritesEveryRecordOnceWithAllFields) {
  FakeStore store;
  AcknowledgedCounter inserts(2000);
  const RunOptions o = SmallRun();
  StatusOr<WorkloadResult> r = RunWorkload(Spec("load"), o, FactoryFor(&store), &inserts);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ops, 2000u);
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(Calls(*r, OpType::kBatchInsert), (2000u + 63) / 64);
  EXPECT_EQ(r->stats(OpType::kBatchInsert).latency.count(), Calls(*r, OpType::kBatchInsert));
  EXPECT_EQ(store.size(), 2000u);
  EXPECT_EQ(store.FieldsOf(KeyName(0)), 3u);
  EXPECT_EQ(store.FieldsOf(KeyName(1999)), 3u);
  EXPECT_GT(r->seconds, 0);
  EXPECT_GT(r->throughput(), 0);
}

// Every transactional workload after a load: the exact number of transactions, the mix of
// calls, and no errors (every chosen record exists).
TEST(DriverTest, WorkloadsRunTheirMixWithoutErrors) {
  FakeStore store;
  AcknowledgedCounter inserts(2000);
  const RunOptions o = SmallRun();
  ASSERT_TRUE(RunWorkload(Spec("load"), o, FactoryFor(&store), &inserts).ok());
  for (std::string_view name : {"A", "B", "C", "D", "E", "F"}) {
    StatusOr<WorkloadResult> r = RunWorkload(Spec(name), o, FactoryFor(&store), &inserts);
    ASSERT_TRUE(r.ok()) << r.status();
    SCOPED_TRACE(std::string(name));
    EXPECT_EQ(r->ops, 4000u);
    EXPECT_EQ(r->errors, 0u) << (r->error_examples.empty() ? ""
                                                           : r->error_examples.begin()->second);
    const WorkloadSpec& w = Spec(name);
    const double n = 4000;
    // Shares within 5 points of the workload's (4000 draws: 3 standard deviations is 2.4).
    EXPECT_NEAR(Calls(*r, OpType::kUpdate) / n, w.update + w.read_modify_write, 0.05);
    EXPECT_NEAR(Calls(*r, OpType::kInsert) / n, w.insert, 0.05);
    EXPECT_NEAR(Calls(*r, OpType::kScan) / n, w.scan, 0.05);
    EXPECT_NEAR(Calls(*r, OpType::kReadModifyWrite) / n, w.read_modify_write, 0.05);
    // A read-modify-write's read counts as a read, as in YCSB.
    EXPECT_NEAR(Calls(*r, OpType::kRead) / n, w.read + w.read_modify_write, 0.05);
    EXPECT_EQ(Calls(*r, OpType::kBatchInsert), 0u);
  }
  EXPECT_EQ(store.pings.load(), 0u);
  // D and E inserted new records with every field, and Last() covers them.
  EXPECT_GT(inserts.Last(), 2000u);
  EXPECT_EQ(store.size(), inserts.Last() + 1);
  EXPECT_EQ(store.FieldsOf(KeyName(inserts.Last())), 3u);
}

// ping makes its calls and nothing else: no record is read or written.
TEST(DriverTest, PingOnlyPings) {
  FakeStore store;
  AcknowledgedCounter inserts(2000);
  StatusOr<WorkloadResult> r = RunWorkload(Spec("ping"), SmallRun(), FactoryFor(&store), &inserts);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ops, 4000u);
  EXPECT_EQ(r->errors, 0u);
  EXPECT_EQ(Calls(*r, OpType::kPing), 4000u);
  EXPECT_EQ(store.pings.load(), 4000u);
  EXPECT_EQ(Calls(*r, OpType::kRead) + Calls(*r, OpType::kUpdate) + Calls(*r, OpType::kScan), 0u);
  EXPECT_EQ(store.size(), 0u);
}

TEST(DriverTest, FailedCallsAreCountedByKind) {
  FakeStore store(/*fail_every_nth_write=*/10);
  AcknowledgedCounter inserts(1000);
  RunOptions o = SmallRun();
  o.records = 1000;
  o.max_errors = 1000000;
  StatusOr<WorkloadResult> load = RunWorkload(Spec("load"), o, FactoryFor(&store), &inserts);
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load->errors, 100u);  // rows
  EXPECT_EQ(load->errors_by_kind.at("UNAVAILABLE"), 100u);
  EXPECT_NE(load->error_examples.at("UNAVAILABLE").find("injected failure"), std::string::npos);
  EXPECT_EQ(store.size(), 900u);

  // Reads of the rows the load failed to write find nothing: ROW_NOT_FOUND.
  StatusOr<WorkloadResult> c = RunWorkload(Spec("C"), o, FactoryFor(&store), &inserts);
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->errors, 0u);
  EXPECT_EQ(c->errors, c->errors_by_kind.at("ROW_NOT_FOUND"));
  EXPECT_EQ(c->stats(OpType::kRead).errors, c->errors);
  EXPECT_EQ(c->stats(OpType::kRead).latency.count(), c->ops - c->errors);

  // A: a tenth of the updates fail.
  StatusOr<WorkloadResult> a = RunWorkload(Spec("A"), o, FactoryFor(&store), &inserts);
  ASSERT_TRUE(a.ok());
  EXPECT_NEAR(a->stats(OpType::kUpdate).errors, a->stats(OpType::kUpdate).calls / 10.0, 2);
}

TEST(DriverTest, StopsAtMaxErrors) {
  FakeStore empty;  // nothing loaded: every read misses
  AcknowledgedCounter inserts(1000);
  RunOptions o = SmallRun();
  o.records = 1000;
  o.operations = 1000000;
  o.max_errors = 50;
  StatusOr<WorkloadResult> r = RunWorkload(Spec("C"), o, FactoryFor(&empty), &inserts);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->stopped_early);
  EXPECT_GE(r->errors, 50u);
  EXPECT_LT(r->ops, 1000u);  // each thread stops at its next check
}

TEST(DriverTest, DurationBoundsARun) {
  FakeStore store;
  AcknowledgedCounter inserts(100);
  RunOptions o = SmallRun();
  o.records = 100;
  ASSERT_TRUE(RunWorkload(Spec("load"), o, FactoryFor(&store), &inserts).ok());
  o.operations = 0;
  o.duration_s = 0.2;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<WorkloadResult> r = RunWorkload(Spec("B"), o, FactoryFor(&store), &inserts);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->ops, 0u);
  EXPECT_EQ(r->errors, 0u);
  EXPECT_GE(r->seconds, 0.2);
  EXPECT_LT(took, 5.0);
}

TEST(DriverTest, BadOptionsAreRejected) {
  FakeStore store;
  AcknowledgedCounter inserts(10);
  RunOptions o = SmallRun();
  o.records = 10;
  o.threads = 0;
  EXPECT_EQ(RunWorkload(Spec("A"), o, FactoryFor(&store), &inserts).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = SmallRun();
  o.operations = 0;
  EXPECT_NE(ValidateRunOptions(o).message().find("duration"), std::string::npos);
  o = SmallRun();
  o.fields = 10;
  o.batch_size = 20000;
  EXPECT_NE(ValidateRunOptions(o).message().find("100000"), std::string::npos);
  o = SmallRun();
  o.value_size = 0;
  EXPECT_FALSE(ValidateRunOptions(o).ok());
}

TEST(DriverTest, FactoryFailureFailsTheRun) {
  AcknowledgedCounter inserts(10);
  RunOptions o = SmallRun();
  o.records = 10;
  YcsbDbFactory failing = [](int) -> StatusOr<std::unique_ptr<YcsbDb>> {
    return absl::UnavailableError("no store");
  };
  EXPECT_EQ(RunWorkload(Spec("A"), o, failing, &inserts).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::cli::ycsb
