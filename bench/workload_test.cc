#include "workload.h"

#include <algorithm>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "kv_adapter.h"
#include "lz4.h"

namespace tessera::bench {
namespace {

TEST(MakeKeyTest, ZeroPaddedDecimalInNumericOrder) {
  EXPECT_EQ(MakeKey(0), "0000000000000000");
  EXPECT_EQ(MakeKey(42), "0000000000000042");
  EXPECT_EQ(MakeKey(9999999999999999ull), "9999999999999999");
  EXPECT_LT(MakeKey(9), MakeKey(10));
  EXPECT_LT(MakeKey(999), MakeKey(1000));
}

TEST(ValueGeneratorTest, DeterministicAndHalfCompressible) {
  ValueGenerator a(7, 100), b(7, 100), c(8, 100);
  std::string block;
  for (int i = 0; i < 41; i++) {  // ~ one 4 KiB block of values
    std::string_view va = a.Next(100);
    ASSERT_EQ(va.size(), 100u);
    EXPECT_EQ(va, b.Next(100));
    block.append(va);
  }
  EXPECT_NE(block.substr(0, 100), c.Next(100));

  std::string compressed(LZ4_compressBound(block.size()), '\0');
  const int size =
      LZ4_compress_default(block.data(), compressed.data(), block.size(), compressed.size());
  ASSERT_GT(size, 0);
  const double ratio = static_cast<double>(size) / block.size();
  EXPECT_GT(ratio, 0.40);
  EXPECT_LT(ratio, 0.65);
}

TEST(BenchmarkTableTest, NamesAreKnown) {
  for (const char* name : {"fillseq", "fillrandom", "overwrite", "readrandom", "readmissing",
                           "seekrandom", "readseq", "fillsync"}) {
    EXPECT_NE(FindBenchmark(name), nullptr) << name;
  }
  EXPECT_EQ(FindBenchmark("nope"), nullptr);
  EXPECT_TRUE(FindBenchmark("fillsync")->sync);
  EXPECT_FALSE(FindBenchmark("readseq")->writes());
}

TEST(KeySetTest, CountsDistinctKeys) {
  KeySet keys(130);
  EXPECT_EQ(keys.size(), 0u);
  for (uint64_t k : {0, 5, 63, 64, 129, 5, 64}) keys.Add(k);
  EXPECT_EQ(keys.size(), 5u);
}

TEST(AmplificationTest, FiguresOverUserBytes) {
  Amplification a;
  a.user_bytes_written = 400;
  a.live_user_bytes = 100;
  a.file_writes = FileWrites{600, 200};
  a.disk_bytes = 150;
  EXPECT_DOUBLE_EQ(a.write_amplification(), 1.5);
  EXPECT_DOUBLE_EQ(*a.compaction_write_amplification(), 0.5);
  EXPECT_DOUBLE_EQ(a.space_amplification(), 1.5);
  a.file_writes.compaction_bytes.reset();
  EXPECT_FALSE(a.compaction_write_amplification().has_value());
  EXPECT_DOUBLE_EQ(Amplification().write_amplification(), 0);  // nothing put: 0, not NaN
}

TEST(LevelDbStatsTest, SumsTheWriteColumn) {
  const std::string stats =
      "                               Compactions\n"
      "Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n"
      "--------------------------------------------------\n"
      "  0        2        4         0        0         9\n"
      "  1        5       10         1       12        11\n";
  EXPECT_EQ(LevelDbStatsWrittenBytes(stats), 20u * 1048576);
  EXPECT_EQ(LevelDbStatsWrittenBytes(""), 0u);
}

// Every benchmark on every engine compiled in, small: checks the adapters and the counts.
class EngineWorkloadTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_workload_test_" + GetParam() + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  StatusOr<std::unique_ptr<KvAdapter>> Open(bool sync) {
    KvOptions options;
    options.dir = dir_.string();
    options.sync = sync;
    options.write_buffer_bytes = 64 << 10;  // small: forces flushes to SSTables
    options.block_cache_bytes = 1 << 20;
    return OpenEngine(GetParam(), options);
  }

  std::filesystem::path dir_;
};

TEST_P(EngineWorkloadTest, EveryBenchmarkCountsWhatItDid) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    std::filesystem::remove_all(dir_);
    WorkloadOptions options;
    options.num = 2000;
    options.sync_num = 5;
    options.threads = threads;
    auto db = Open(false);
    ASSERT_TRUE(db.ok()) << db.status();

    auto run = [&](KvAdapter* kv, std::string_view name) {
      auto r = RunBenchmark(kv, *FindBenchmark(name), options);
      EXPECT_TRUE(r.ok()) << name << ": " << r.status();
      return r.ok() ? *r : BenchmarkResult();
    };
    BenchmarkResult fill = run(db->get(), "fillseq");
    EXPECT_EQ(fill.ops, 2000u);
    EXPECT_EQ(fill.bytes, 2000u * (kKeySize + options.value_size));
    EXPECT_EQ(run(db->get(), "overwrite").ops, 2000u);

    BenchmarkResult read = run(db->get(), "readrandom");
    EXPECT_EQ(read.ops, 2000u);
    EXPECT_EQ(read.note, "found 2000 of 2000");
    EXPECT_EQ(run(db->get(), "readmissing").note, "found 0 of 2000");
    BenchmarkResult seek = run(db->get(), "seekrandom");
    EXPECT_EQ(seek.ops, 2000u);
    EXPECT_GT(seek.bytes, 2000u * (kKeySize + options.value_size));  // read past the first row
    BenchmarkResult scan = run(db->get(), "readseq");
    EXPECT_EQ(scan.ops, 2000u);
    EXPECT_EQ(scan.bytes, 2000u * (kKeySize + options.value_size));
    ASSERT_TRUE((*db)->Close().ok());

    auto synced = Open(true);
    ASSERT_TRUE(synced.ok()) << synced.status();
    EXPECT_EQ(run(synced->get(), "fillsync").ops, 5u);
    EXPECT_EQ(run(synced->get(), "readseq").ops, 2000u);  // reopened: nothing lost
    ASSERT_TRUE((*synced)->Close().ok());
  }
}

TEST_P(EngineWorkloadTest, WritesToSortedFilesAreCountedAndFound) {
  auto db = Open(false);
  ASSERT_TRUE(db.ok()) << db.status();
  KeySet written(40000);
  WorkloadOptions options;
  // 4.6 MB, twice: many flushes of the 64 KiB memtable, and enough for LevelDB's whole MiB.
  options.num = 40000;
  options.written = &written;
  ASSERT_TRUE(RunBenchmark(db->get(), *FindBenchmark("fillseq"), options).ok());
  ASSERT_TRUE(RunBenchmark(db->get(), *FindBenchmark("overwrite"), options).ok());
  EXPECT_EQ(written.size(), 40000u);
  auto writes = (*db)->Written();
  ASSERT_TRUE(writes.ok()) << writes.status();
  EXPECT_GT(writes->total_bytes, 1u << 20);  // ~ the compressed data, mostly flushed
  if (writes->compaction_bytes.has_value()) {
    EXPECT_LE(*writes->compaction_bytes, writes->total_bytes);
  }
  uint64_t sorted = 0, disk = 0;
  ASSERT_TRUE(MeasureDirectory(dir_.string(), &sorted, &disk).ok());
  EXPECT_GT(sorted, 0u);
  EXPECT_GE(disk, sorted / 2);  // allocation is in blocks; sorted counts sizes
  ASSERT_TRUE((*db)->Close().ok());
  EXPECT_FALSE(MeasureDirectory((dir_ / "missing").string(), &sorted, &disk).ok());
}

TEST_P(EngineWorkloadTest, LoadDatabaseWritesEveryKeyOnce) {
  auto db = Open(false);
  ASSERT_TRUE(db.ok()) << db.status();
  WorkloadOptions options;
  options.num = 1000;
  ASSERT_TRUE(LoadDatabase(db->get(), options).ok());
  auto read = RunBenchmark(db->get(), *FindBenchmark("readrandom"), options);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->note, "found 1000 of 1000");
  auto scan = RunBenchmark(db->get(), *FindBenchmark("readseq"), options);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->ops, 1000u);
  ASSERT_TRUE((*db)->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineWorkloadTest, testing::ValuesIn(AvailableEngines()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;  // "tessera-stcs" -> "tessera_stcs"
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tessera::bench
