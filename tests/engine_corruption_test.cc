// Corruption tests: an engine directory on MemFileSystem is written (some rows flushed into an
// SSTable, more rows only in the commit log), closed, damaged in one way, and reopened. One case
// per outcome; whatever happens, the engine never crashes and never returns wrong data, and a
// DataLoss error names the damaged file (and, for logs, an offset).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/coding.h"
#include "tessera/util/mem_file_system.h"
#include "tests/engine_test_util.h"

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

constexpr TabletId kTablet = 1;
constexpr int kFlushedRows = 200;
constexpr int kLogRows = 50;
constexpr size_t kLogHeaderSize = 9;  // masked crc32c(4) length(4) type(1), log_format.h

std::string FlushedRow(int i) { return fmt::format("row{:03d}", i); }
std::string LogRow(int i) { return fmt::format("log{:03d}", i); }
std::string ValueOf(std::string_view row) {
  return StrCat("value-of-", row, "-", std::string(40, 'v'));
}

// The framing of a log file (commit log or manifest): where each record starts and its length.
struct Frame {
  uint64_t offset = 0;
  uint32_t length = 0;
};

std::vector<Frame> ParseFrames(std::string_view contents) {
  std::vector<Frame> frames;
  uint64_t pos = 0;
  while (pos + kLogHeaderSize <= contents.size()) {
    const uint32_t length = DecodeFixed32(contents.data() + pos + 4);
    if (pos + kLogHeaderSize + length > contents.size()) break;
    frames.push_back({pos, length});
    pos += kLogHeaderSize + length;
  }
  return frames;
}

bool Contains(const Status& s, std::string_view part) {
  return std::string(s.message()).find(part) != std::string::npos;
}

class CorruptionTest : public ::testing::Test {
 protected:
  CorruptionTest() {
    options_.dir = "/cdb";
    options_.compression = tablet::Compression::kNone;  // so a flipped bit lands where aimed
    options_.block_size = 1024;
    options_.memtable_bytes = 1 << 20;  // flush only when asked
    options_.commit_log_segment_bytes = 1 << 20;
    options_.compaction_bytes_per_second = 0;
    env_.fs = &fs_;
    env_.clock = &clock_;
  }

  void SetUp() override {
    SilenceExpectedErrorLogs();
    std::unique_ptr<Engine> engine = OpenOrDie();
    ASSERT_TRUE(engine);
    TabletDescriptor d;
    d.table = "corrupt";
    d.schema = MakeSchema("corrupt", {{"f", GcRule::None()}});
    ASSERT_TRUE(engine->CreateTablet(kTablet, d).ok());
    for (int i = 0; i < kFlushedRows; ++i)
      ASSERT_NO_FATAL_FAILURE(Write(engine.get(), FlushedRow(i)));
    ASSERT_TRUE(engine->Flush(kTablet).ok());
    for (int i = 0; i < kLogRows; ++i) ASSERT_NO_FATAL_FAILURE(Write(engine.get(), LogRow(i)));
    ASSERT_TRUE(engine->Close().ok());
  }

  std::unique_ptr<Engine> OpenOrDie() {
    StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? std::move(*engine) : nullptr;
  }

  void Write(Engine* engine, const std::string& row) {
    RowMutation m(row);
    m.SetCell("f", "q", 1000, ValueOf(row));
    m.SetCell("f", "r", 2000, ValueOf(row) + "-r");
    Status s = engine->Apply(kTablet, m);
    ASSERT_TRUE(s.ok()) << s;
  }

  // OK when the row is there with the right cells; the read's error otherwise; a test failure
  // when the engine returns wrong data.
  Status CheckRow(Engine* engine, const std::string& row, bool must_exist = true) {
    StatusOr<std::optional<Row>> got = engine->ReadRow(kTablet, row, {});
    if (!got.ok()) return got.status();
    if (!got->has_value()) {
      if (must_exist) ADD_FAILURE() << "row " << row << " missing (no error reported)";
      return Status();
    }
    const Row expected{row,
                       {{"f", "q", 1000, ValueOf(row)}, {"f", "r", 2000, ValueOf(row) + "-r"}}};
    EXPECT_EQ(expected, **got) << "wrong data for row " << row;
    return Status();
  }

  std::vector<std::string> Files(std::string_view prefix, std::string_view suffix = "") {
    std::vector<std::string> out;
    for (const std::string& path : ListFilesRecursive(&fs_, options_.dir)) {
      std::string_view name = Basename(path);
      if (name.starts_with(prefix) && name.ends_with(suffix)) out.push_back(path);
    }
    return out;
  }

  std::string AllFiles() {
    std::string out;
    for (const std::string& path : ListFilesRecursive(&fs_, options_.dir)) {
      out += StrCat(path, " (", fs_.GetFileSize(path).value_or(0), " bytes)\n");
    }
    return out;
  }

  // The commit-log segment holding the most records, and its frames.
  std::string BusiestSegment(std::vector<Frame>* frames) {
    std::string best;
    for (const std::string& path : Files("commitlog-", ".log")) {
      std::vector<Frame> f = ParseFrames(ReadFileToString(&fs_, path).value());
      if (best.empty() || f.size() > frames->size()) {
        best = path;
        *frames = std::move(f);
      }
    }
    return best;
  }

  MemFileSystem fs_;
  ManualClock clock_;
  EngineOptions options_;
  Env env_;
};

TEST_F(CorruptionTest, Baseline) {
  std::unique_ptr<Engine> engine = OpenOrDie();
  ASSERT_TRUE(engine);
  for (int i = 0; i < kFlushedRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), FlushedRow(i)).ok());
  for (int i = 0; i < kLogRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), LogRow(i)).ok());
  EXPECT_FALSE(Files("", ".sst").empty()) << AllFiles();
  EXPECT_FALSE(Files("commitlog-", ".log").empty()) << AllFiles();
  EXPECT_FALSE(Files("MANIFEST-").empty()) << AllFiles();
}

TEST_F(CorruptionTest, BitFlipInMiddleOfCommitLogIsDataLoss) {
  std::vector<Frame> frames;
  const std::string segment = BusiestSegment(&frames);
  ASSERT_FALSE(segment.empty()) << AllFiles();
  ASSERT_GE(frames.size(), 10u) << segment;
  const Frame& victim = frames[frames.size() / 2];
  ASSERT_TRUE(
      fs_.FlipBitForTesting(segment, victim.offset + kLogHeaderSize + victim.length / 2, 3).ok());
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
  RecordProperty("open_error", engine.status().ToString());
  ASSERT_FALSE(engine.ok()) << "Open succeeded despite a corrupt commit-log record";
  EXPECT_TRUE(absl::IsDataLoss(engine.status())) << engine.status();
  EXPECT_TRUE(Contains(engine.status(), Basename(segment))) << engine.status();
  EXPECT_TRUE(Contains(engine.status(), "offset")) << engine.status();
  EXPECT_TRUE(Contains(engine.status(), StrCat(victim.offset))) << engine.status();
}

TEST_F(CorruptionTest, TornCommitLogTailIsCutOff) {
  std::vector<Frame> frames;
  const std::string segment = BusiestSegment(&frames);
  ASSERT_FALSE(segment.empty()) << AllFiles();
  ASSERT_FALSE(frames.empty());
  // The segment with the unflushed rows is the newest one.
  const std::vector<std::string> segments = Files("commitlog-", ".log");
  ASSERT_EQ(segments.back(), segment) << AllFiles();
  const Frame& last = frames.back();
  ASSERT_TRUE(
      fs_.TruncateForTesting(segment, last.offset + (kLogHeaderSize + last.length) / 2).ok());
  {
    std::unique_ptr<Engine> engine = OpenOrDie();
    ASSERT_TRUE(engine);
    for (int i = 0; i < kFlushedRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), FlushedRow(i)).ok());
    // Every record before the torn one is there; the torn one (the last write) is gone or whole.
    for (int i = 0; i + 1 < kLogRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), LogRow(i)).ok());
    EXPECT_TRUE(CheckRow(engine.get(), LogRow(kLogRows - 1), /*must_exist=*/false).ok());
    // The engine keeps working after cutting the tail.
    ASSERT_NO_FATAL_FAILURE(Write(engine.get(), "after-torn-tail"));
    ASSERT_TRUE(engine->Close().ok());
  }
  std::unique_ptr<Engine> engine = OpenOrDie();
  ASSERT_TRUE(engine);
  EXPECT_TRUE(CheckRow(engine.get(), "after-torn-tail").ok());
  for (int i = 0; i + 1 < kLogRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), LogRow(i)).ok());
}

TEST_F(CorruptionTest, BitFlipInSSTableDataBlockIsDataLossOnRead) {
  const std::vector<std::string> tables = Files("", ".sst");
  ASSERT_EQ(1u, tables.size()) << AllFiles();
  // Data blocks come first and hold at least 1 KiB: offset 300 is inside the first one.
  ASSERT_TRUE(fs_.FlipBitForTesting(tables[0], 300, 5).ok());
  StatusOr<std::unique_ptr<Engine>> opened = Engine::Open(options_, env_);
  if (!opened.ok()) {
    EXPECT_TRUE(absl::IsDataLoss(opened.status())) << opened.status();
    EXPECT_TRUE(Contains(opened.status(), Basename(tables[0]))) << opened.status();
    return;
  }
  std::unique_ptr<Engine> engine = std::move(*opened);
  int errors = 0;
  for (int i = 0; i < kFlushedRows; ++i) {
    Status s = CheckRow(engine.get(), FlushedRow(i));
    if (s.ok()) continue;
    if (errors++ == 0) RecordProperty("first_read_error", s.ToString());
    EXPECT_TRUE(absl::IsDataLoss(s)) << FlushedRow(i) << ": " << s;
    EXPECT_TRUE(Contains(s, Basename(tables[0]))) << FlushedRow(i) << ": " << s;
  }
  EXPECT_GT(errors, 0) << "no read noticed the damaged block";
  EXPECT_LT(errors, kFlushedRows) << "one damaged block made every row unreadable";
  // Rows only in the log are not affected.
  for (int i = 0; i < kLogRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), LogRow(i)).ok());
  // A scan over the damaged block reports the error rather than skipping the rows.
  StatusOr<std::vector<Row>> rows = ScanAll(*engine, kTablet, RowRange{});
  ASSERT_FALSE(rows.ok()) << "scan returned " << rows->size() << " rows";
  EXPECT_TRUE(absl::IsDataLoss(rows.status())) << rows.status();
  EXPECT_TRUE(Contains(rows.status(), Basename(tables[0]))) << rows.status();
}

TEST_F(CorruptionTest, TruncatedSSTableIsDataLoss) {
  const std::vector<std::string> tables = Files("", ".sst");
  ASSERT_EQ(1u, tables.size()) << AllFiles();
  const uint64_t size = fs_.GetFileSize(tables[0]).value();
  ASSERT_TRUE(fs_.TruncateForTesting(tables[0], size / 2).ok());
  StatusOr<std::unique_ptr<Engine>> opened = Engine::Open(options_, env_);
  Status error = opened.status();
  if (opened.ok()) {
    std::unique_ptr<Engine> engine = std::move(*opened);
    error = CheckRow(engine.get(), FlushedRow(0));
    ASSERT_FALSE(error.ok()) << "read from a truncated table succeeded";
    for (int i = 0; i < kLogRows; ++i) EXPECT_TRUE(CheckRow(engine.get(), LogRow(i)).ok());
  }
  RecordProperty("error", error.ToString());
  EXPECT_TRUE(absl::IsDataLoss(error)) << error;
  EXPECT_TRUE(Contains(error, Basename(tables[0]))) << error;
}

TEST_F(CorruptionTest, BitFlipInSSTableFooterIsDataLoss) {
  const std::vector<std::string> tables = Files("", ".sst");
  ASSERT_EQ(1u, tables.size()) << AllFiles();
  const uint64_t size = fs_.GetFileSize(tables[0]).value();
  // Inside the footer's handles (the footer is the last 128 bytes), then the magic number.
  for (uint64_t from_end : {120, 4}) {
    SCOPED_TRACE(fmt::format("{} bytes from the end", from_end));
    ASSERT_TRUE(fs_.FlipBitForTesting(tables[0], size - from_end, 2).ok());
    StatusOr<std::unique_ptr<Engine>> opened = Engine::Open(options_, env_);
    Status error = opened.status();
    if (opened.ok()) {
      std::unique_ptr<Engine> engine = std::move(*opened);
      error = CheckRow(engine.get(), FlushedRow(0));
      ASSERT_FALSE(error.ok()) << "read through a damaged footer succeeded";
    }
    RecordProperty(fmt::format("error_{}", from_end), error.ToString());
    EXPECT_TRUE(absl::IsDataLoss(error)) << error;
    EXPECT_TRUE(Contains(error, Basename(tables[0]))) << error;
    ASSERT_TRUE(fs_.FlipBitForTesting(tables[0], size - from_end, 2).ok());  // repair
  }
  // Repaired: everything is back.
  std::unique_ptr<Engine> engine = OpenOrDie();
  ASSERT_TRUE(engine);
  EXPECT_TRUE(CheckRow(engine.get(), FlushedRow(0)).ok());
}

TEST_F(CorruptionTest, BitFlipInManifestIsDataLoss) {
  const std::vector<std::string> manifests = Files("MANIFEST-");
  ASSERT_EQ(1u, manifests.size()) << AllFiles();
  const std::vector<Frame> frames = ParseFrames(ReadFileToString(&fs_, manifests[0]).value());
  // Damage a record that is not the last (a bad last record reads as a torn tail).
  ASSERT_GE(frames.size(), 2u) << "the manifest has " << frames.size() << " records";
  const Frame& victim = frames[0];
  ASSERT_TRUE(
      fs_.FlipBitForTesting(manifests[0], victim.offset + kLogHeaderSize + victim.length / 2, 1)
          .ok());
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
  RecordProperty("open_error", engine.status().ToString());
  ASSERT_FALSE(engine.ok()) << "Open succeeded with a corrupt manifest";
  EXPECT_TRUE(absl::IsDataLoss(engine.status())) << engine.status();
  EXPECT_TRUE(Contains(engine.status(), Basename(manifests[0]))) << engine.status();
}

TEST_F(CorruptionTest, MissingCurrentIsAClearError) {
  const std::vector<std::string> current = Files("CURRENT");
  ASSERT_EQ(1u, current.size()) << AllFiles();
  ASSERT_TRUE(fs_.RemoveFile(current[0]).ok());
  // The directory still holds a manifest, tables and a commit log: opening it as a new, empty
  // engine would silently lose all of it. Expected: an error naming CURRENT.
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env_);
  RecordProperty("open_error", engine.status().ToString());
  ASSERT_FALSE(engine.ok()) << "Open succeeded without CURRENT; tablets: "
                            << (*engine)->ListTablets().size();
  EXPECT_TRUE(absl::IsDataLoss(engine.status()) || absl::IsNotFound(engine.status()) ||
              absl::IsFailedPrecondition(engine.status()))
      << engine.status();
  EXPECT_TRUE(Contains(engine.status(), "CURRENT")) << engine.status();
  // Nothing was destroyed by the failed open: putting CURRENT back restores everything.
  ASSERT_TRUE(WriteStringToFile(&fs_, current[0], StrCat(Basename(Files("MANIFEST-")[0]), "\n"),
                                /*sync=*/true)
                  .ok());
  std::unique_ptr<Engine> reopened = OpenOrDie();
  ASSERT_TRUE(reopened);
  for (int i = 0; i < kFlushedRows; i += 17)
    EXPECT_TRUE(CheckRow(reopened.get(), FlushedRow(i)).ok());
  for (int i = 0; i < kLogRows; i += 7) EXPECT_TRUE(CheckRow(reopened.get(), LogRow(i)).ok());
}

}  // namespace
}  // namespace tessera::test
