#include "tessera/storage/commit_log.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include <filesystem>

#include "tessera/storage/log_test_util.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

constexpr char kDir[] = "/db/log";

struct Replayed {
  std::vector<std::string> records;
  std::vector<uint64_t> segments;
  Status status;
};

std::unique_ptr<CommitLog> OpenLog(FileSystem* fs, uint64_t segment_bytes = 128u << 20) {
  CommitLogOptions options;
  options.dir = kDir;
  options.segment_bytes = segment_bytes;
  StatusOr<std::unique_ptr<CommitLog>> log = CommitLog::Open(options, fs);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? std::move(*log) : nullptr;
}

Replayed ReplayAll(CommitLog* log) {
  Replayed out;
  out.status = log->Replay([&](uint64_t segment, std::string_view record) {
    out.records.emplace_back(record);
    out.segments.push_back(segment);
    return Status();
  });
  return out;
}

Replayed Reopen(FileSystem* fs, uint64_t segment_bytes = 128u << 20) {
  std::unique_ptr<CommitLog> log = OpenLog(fs, segment_bytes);
  if (log == nullptr) return Replayed{{}, {}, absl::InternalError("open failed")};
  return ReplayAll(log.get());
}

std::string RecordText(int i) { return StrCat("record-", i, std::string(i % 37, 'x')); }

TEST(CommitLogTest, SegmentFileNames) {
  EXPECT_EQ("commitlog-000001.log", CommitLog::SegmentFileName(1));
  EXPECT_EQ("commitlog-1234567.log", CommitLog::SegmentFileName(1234567));
  EXPECT_EQ(42u, CommitLog::ParseSegmentFileName("commitlog-000042.log"));
  EXPECT_EQ(1234567u, CommitLog::ParseSegmentFileName("commitlog-1234567.log"));
  for (const char* bad :
       {"commitlog-42.log", "commitlog-000000.log", "commitlog-00004a.log",
        "commitlog-000042.log.tmp", "MANIFEST-000001", "commitlog-.log", "commitlog-+00042.log"}) {
    EXPECT_FALSE(CommitLog::ParseSegmentFileName(bad)) << bad;
  }
}

TEST(CommitLogTest, EmptyDirectory) {
  MemFileSystem fs;
  auto log = OpenLog(&fs);
  ASSERT_NE(nullptr, log);
  EXPECT_TRUE(log->LiveSegments().empty());
  EXPECT_EQ(1u, log->current_segment());
  Replayed r = ReplayAll(log.get());
  TESSERA_ASSERT_OK(r.status);
  EXPECT_TRUE(r.records.empty());
  TESSERA_ASSERT_OK(log->Sync());  // nothing to sync
  TESSERA_ASSERT_OK(log->Close());
  EXPECT_TRUE(ReadFileToString(&fs, JoinPath(kDir, "commitlog-000001.log")).status().code() ==
              absl::StatusCode::kNotFound);
}

TEST(CommitLogTest, AddCloseReopenReplay) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs);
    for (int i = 0; i < 100; ++i) {
      StatusOr<uint64_t> seg = log->AddRecord(RecordText(i));
      TESSERA_ASSERT_OK(seg);
      EXPECT_EQ(1u, *seg);
    }
    TESSERA_ASSERT_OK(log->Close());
    EXPECT_TRUE(absl::IsFailedPrecondition(log->AddRecord("late").status()));
  }
  Replayed r = Reopen(&fs);
  TESSERA_ASSERT_OK(r.status);
  ASSERT_EQ(100u, r.records.size());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(RecordText(i), r.records[i]);
}

// A barrier: what was added before StartNewSegment is in lower segments, what follows in the
// returned one, also when the previous record was never synced.
TEST(CommitLogTest, StartNewSegmentSeparatesRecords) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs);
    StatusOr<uint64_t> first = log->StartNewSegment();  // before any write: creates segment 1
    TESSERA_ASSERT_OK(first);
    EXPECT_EQ(1u, *first);
    TESSERA_ASSERT_OK(log->AddRecord("before"));
    StatusOr<uint64_t> barrier = log->StartNewSegment();
    TESSERA_ASSERT_OK(barrier);
    EXPECT_EQ(2u, *barrier);
    EXPECT_EQ(2u, log->current_segment());
    StatusOr<uint64_t> after = log->AddRecord("after");
    TESSERA_ASSERT_OK(after);
    EXPECT_EQ(2u, *after);
    TESSERA_ASSERT_OK(log->Sync());
    fs.SimulateCrash();
  }
  Replayed r = Reopen(&fs);
  TESSERA_ASSERT_OK(r.status);
  EXPECT_EQ((std::vector<std::string>{"before", "after"}), r.records);
  EXPECT_EQ((std::vector<uint64_t>{1, 2}), r.segments);
}

TEST(CommitLogTest, RollReplayOrderAndDeleteSegmentsBefore) {
  MemFileSystem fs;
  std::vector<uint64_t> written_to;
  {
    auto log = OpenLog(&fs, /*segment_bytes=*/1000);
    for (int i = 0; i < 200; i += 2) {
      std::string a = RecordText(i), b = RecordText(i + 1);
      std::vector<std::string_view> batch = {a, b};
      StatusOr<uint64_t> seg = log->AddRecords(batch);
      TESSERA_ASSERT_OK(seg);
      EXPECT_EQ(*seg, log->current_segment());
      written_to.push_back(*seg);
      written_to.push_back(*seg);
      if (i % 10 == 0) TESSERA_ASSERT_OK(log->Sync());
    }
    TESSERA_ASSERT_OK(log->Close());
  }
  EXPECT_TRUE(std::is_sorted(written_to.begin(), written_to.end()));
  const uint64_t last = written_to.back();
  ASSERT_GE(last, 5u);
  std::vector<uint64_t> files;
  const std::vector<std::string> children = fs.GetChildren(kDir).value();
  for (const std::string& name : children) {
    auto n = CommitLog::ParseSegmentFileName(name);
    ASSERT_TRUE(n) << name;
    files.push_back(*n);
    // A segment passes segment_bytes by at most one batch.
    EXPECT_LT(fs.GetFileSize(JoinPath(kDir, name)).value(), 1000u + 200u);
  }
  EXPECT_EQ(last, files.size());

  auto log = OpenLog(&fs, 1000);
  EXPECT_EQ(last + 1, log->current_segment());
  Replayed r = ReplayAll(log.get());
  TESSERA_ASSERT_OK(r.status);
  ASSERT_EQ(200u, r.records.size());
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(RecordText(i), r.records[i]);
    EXPECT_EQ(written_to[i], r.segments[i]);
  }

  // Writes after a replay go to a new segment; the replayed files are untouched.
  const uint64_t last_size = fs.GetFileSize(log->SegmentPath(last)).value();
  StatusOr<uint64_t> seg = log->AddRecord("after replay");
  TESSERA_ASSERT_OK(seg);
  EXPECT_EQ(last + 1, *seg);
  EXPECT_EQ(last_size, fs.GetFileSize(log->SegmentPath(last)).value());
  TESSERA_ASSERT_OK(log->Sync());
  EXPECT_TRUE(absl::IsFailedPrecondition(ReplayAll(log.get()).status));

  TESSERA_ASSERT_OK(log->DeleteSegmentsBefore(3));
  std::vector<uint64_t> live = log->LiveSegments();
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(3u, live.front());
  EXPECT_EQ(last + 1, live.back());
  EXPECT_FALSE(fs.FileExists(log->SegmentPath(1)));
  EXPECT_FALSE(fs.FileExists(log->SegmentPath(2)));
  EXPECT_TRUE(fs.FileExists(log->SegmentPath(3)));

  // Never the current segment, even when asked for more.
  TESSERA_ASSERT_OK(log->DeleteSegmentsBefore(last + 100));
  EXPECT_EQ(std::vector<uint64_t>{last + 1}, log->LiveSegments());
  EXPECT_TRUE(fs.FileExists(log->SegmentPath(last + 1)));
  TESSERA_ASSERT_OK(log->Close());
  fs.SimulateCrash();  // the deletions were made durable

  Replayed after = Reopen(&fs);
  TESSERA_ASSERT_OK(after.status);
  EXPECT_EQ(std::vector<std::string>{"after replay"}, after.records);
}

TEST(CommitLogTest, AddRecordsIsOneAppend) {
  MemFileSystem fs;
  auto log = OpenLog(&fs);
  TESSERA_ASSERT_OK(log->AddRecord("first"));  // creates the segment
  std::vector<std::string> records;
  for (int i = 0; i < 64; ++i) records.push_back(RecordText(i));
  std::vector<std::string_view> views(records.begin(), records.end());
  const int64_t ops = fs.MutatingOpsForTesting();
  TESSERA_ASSERT_OK(log->AddRecords(views));
  EXPECT_EQ(ops + 1, fs.MutatingOpsForTesting());
  TESSERA_ASSERT_OK(log->Sync());
  EXPECT_EQ(ops + 2, fs.MutatingOpsForTesting());
  TESSERA_ASSERT_OK(log->Sync());  // nothing new: no fdatasync
  EXPECT_EQ(ops + 2, fs.MutatingOpsForTesting());
}

TEST(CommitLogTest, TornTailOfLastSegmentIsCut) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs, 500);
    for (int i = 0; i < 40; ++i) TESSERA_ASSERT_OK(log->AddRecord(RecordText(i)));
    TESSERA_ASSERT_OK(log->Close());
  }
  auto log = OpenLog(&fs, 500);
  std::vector<uint64_t> live = log->LiveSegments();
  ASSERT_GE(live.size(), 2u);
  const std::string last = log->SegmentPath(live.back());
  const uint64_t size = fs.GetFileSize(last).value();
  TESSERA_ASSERT_OK(fs.TruncateForTesting(last, size - 3));
  Replayed r = ReplayAll(log.get());
  TESSERA_ASSERT_OK(r.status);
  ASSERT_EQ(39u, r.records.size());
  for (int i = 0; i < 39; ++i) EXPECT_EQ(RecordText(i), r.records[i]);
  const uint64_t cut = fs.GetFileSize(last).value();
  EXPECT_EQ(size - (9 + RecordText(39).size()), cut);

  // The cut is durable, and new records go to a new segment after it.
  TESSERA_ASSERT_OK(log->AddRecord("new"));
  TESSERA_ASSERT_OK(log->Sync());
  log.reset();
  fs.SimulateCrash();
  EXPECT_EQ(cut, fs.GetFileSize(last).value());
  Replayed again = Reopen(&fs, 500);
  TESSERA_ASSERT_OK(again.status);
  ASSERT_EQ(40u, again.records.size());
  EXPECT_EQ("new", again.records.back());
}

TEST(CommitLogTest, TornTailOfEarlierSegmentIsDataLoss) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs, 300);
    for (int i = 0; i < 40; ++i) TESSERA_ASSERT_OK(log->AddRecord(RecordText(i)));
    TESSERA_ASSERT_OK(log->Close());
  }
  auto log = OpenLog(&fs, 300);
  std::vector<uint64_t> live = log->LiveSegments();
  ASSERT_GE(live.size(), 3u);
  const std::string second = log->SegmentPath(live[1]);
  const uint64_t size = fs.GetFileSize(second).value();
  TESSERA_ASSERT_OK(fs.TruncateForTesting(second, size - 1));
  Replayed r = ReplayAll(log.get());
  ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  EXPECT_NE(std::string::npos, r.status.message().find(second)) << r.status;
  // Nothing past the damage reached the callback.
  for (uint64_t seg : r.segments) EXPECT_LE(seg, live[1]);
  EXPECT_EQ(size - 1, fs.GetFileSize(second).value());  // not cut
}

TEST(CommitLogTest, CorruptionInTheMiddleIsDataLoss) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs);
    for (int i = 0; i < 10; ++i) TESSERA_ASSERT_OK(log->AddRecord(RecordText(i)));
    TESSERA_ASSERT_OK(log->Close());
  }
  const std::string path = JoinPath(kDir, CommitLog::SegmentFileName(1));
  const uint64_t offset = 9 + RecordText(0).size();  // second record
  TESSERA_ASSERT_OK(fs.FlipBitForTesting(path, offset + 12, 1));
  Replayed r = Reopen(&fs);
  ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  EXPECT_NE(std::string::npos, r.status.message().find(StrCat(path, " at offset ", offset)))
      << r.status;
  EXPECT_EQ(std::vector<std::string>{RecordText(0)}, r.records);
}

TEST(CommitLogTest, CallbackErrorStopsReplay) {
  MemFileSystem fs;
  {
    auto log = OpenLog(&fs);
    for (int i = 0; i < 10; ++i) TESSERA_ASSERT_OK(log->AddRecord(RecordText(i)));
    TESSERA_ASSERT_OK(log->Close());
  }
  auto log = OpenLog(&fs);
  int calls = 0;
  Status s = log->Replay([&](uint64_t, std::string_view) {
    return ++calls == 3 ? absl::InvalidArgumentError("bad batch") : Status();
  });
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(3, calls);
}

// Random batches, syncs and rolls, then a crash: replay gives a prefix of what was written that
// holds at least every record acknowledged by a Sync.
TEST(CommitLogTest, CrashKeepsSyncedRecords) {
  uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int round = 0; round < 5; ++round) {
    MemFileSystem fs;
    std::vector<std::string> written;
    size_t synced = 0;
    int generation = 0;
    for (int life = 0; life < 3; ++life) {
      auto log = OpenLog(&fs, 200 + rnd.Uniform(2000));
      Replayed r = ReplayAll(log.get());
      TESSERA_ASSERT_OK(r.status);
      ASSERT_GE(r.records.size(), synced);
      ASSERT_LE(r.records.size(), written.size());
      for (size_t i = 0; i < r.records.size(); ++i) ASSERT_EQ(written[i], r.records[i]) << i;
      written = r.records;  // what survived is the history from now on
      synced = written.size();
      for (int b = 0, n = rnd.Uniform(60); b < n; ++b) {
        std::vector<std::string> batch;
        for (int k = 0, m = 1 + rnd.Uniform(5); k < m; ++k) {
          batch.push_back(
              StrCat(generation, ":", written.size() + k, ":", rnd.Bytes(rnd.Skewed(8))));
        }
        std::vector<std::string_view> views(batch.begin(), batch.end());
        TESSERA_ASSERT_OK(log->AddRecords(views));
        written.insert(written.end(), batch.begin(), batch.end());
        if (rnd.OneIn(3)) {
          TESSERA_ASSERT_OK(log->Sync());
          synced = written.size();
        }
      }
      ++generation;
      log.reset();
      fs.SimulateCrash();
    }
  }
}

// Out of space: the error surfaces, nothing acknowledged is lost, and the log works again once
// there is room.
TEST(CommitLogTest, OutOfSpace) {
  MemFileSystem fs;
  auto log = OpenLog(&fs, 4096);
  std::vector<std::string> acked;
  std::vector<std::string> pending;
  fs.SetSpaceLimit(10000);
  Status failure;
  for (int i = 0; i < 1000 && failure.ok(); ++i) {
    pending.push_back(RecordText(i));
    failure = log->AddRecord(pending.back()).status();
    if (failure.ok()) failure = log->Sync();
    if (failure.ok()) {
      acked.insert(acked.end(), pending.begin(), pending.end());
      pending.clear();
    }
  }
  ASSERT_TRUE(absl::IsResourceExhausted(failure)) << failure;
  EXPECT_TRUE(absl::IsResourceExhausted(log->AddRecord(std::string(5000, 'f')).status()));
  {
    Replayed r = Reopen(&fs, 4096);  // a second reader over the live files
    TESSERA_ASSERT_OK(r.status);
    EXPECT_EQ(acked, r.records);
  }
  fs.SetSpaceLimit(0);
  TESSERA_ASSERT_OK(log->AddRecord("room again"));
  TESSERA_ASSERT_OK(log->Sync());
  acked.push_back("room again");
  log.reset();
  fs.SimulateCrash();
  Replayed r = Reopen(&fs, 4096);
  TESSERA_ASSERT_OK(r.status);
  EXPECT_EQ(acked, r.records);
}

// A disk that fills up in the middle of a write leaves half a batch in the file (and the test
// file system makes that half durable). The next write cuts it off; a crash before that leaves
// it as the torn tail of the last segment.
TEST(CommitLogTest, HalfWrittenBatchIsCutOff) {
  for (bool continue_writing : {false, true}) {
    SCOPED_TRACE(continue_writing);
    MemFileSystem mem;
    logtest::PartialAppendFileSystem fs(&mem);
    auto log = OpenLog(&fs, 1 << 20);
    std::vector<std::string> acked;
    for (int i = 0; i < 10; ++i) {
      acked.push_back(RecordText(i));
      TESSERA_ASSERT_OK(log->AddRecord(acked.back()));
    }
    TESSERA_ASSERT_OK(log->Sync());
    fs.partial_appends = 1;
    // Half of the two frames is less than the first one: no whole record is written.
    std::string big(1000, 'b'), small(500, 's');
    std::vector<std::string_view> batch = {big, small};
    StatusOr<uint64_t> s = log->AddRecords(batch);
    ASSERT_TRUE(absl::IsResourceExhausted(s.status())) << s.status();
    if (continue_writing) {
      TESSERA_ASSERT_OK(log->AddRecord("next"));
      TESSERA_ASSERT_OK(log->Sync());
      acked.push_back("next");
    }
    log.reset();
    mem.SimulateCrash();
    Replayed r = Reopen(&mem);
    TESSERA_ASSERT_OK(r.status);
    EXPECT_EQ(acked, r.records);
  }
}

// The process dies at every mutating file-system operation in turn; after the crash the log
// always replays without error and holds every acknowledged record.
TEST(CommitLogTest, CrashAtEveryOperation) {
  for (int64_t fail_after = 0;; ++fail_after) {
    SCOPED_TRACE(fail_after);
    MemFileSystem fs;
    std::vector<std::string> written;
    size_t acked = 0;
    bool failed = false;
    {
      auto log = OpenLog(&fs, 300);
      fs.FailAfterOps(fail_after);
      for (int i = 0; i < 30 && !failed; ++i) {
        std::string a = RecordText(2 * i), b = RecordText(2 * i + 1);
        std::vector<std::string_view> batch = {a, b};
        written.push_back(a);
        written.push_back(b);
        failed = !log->AddRecords(batch).ok();
        if (!failed && i % 3 == 2) {
          failed = !log->Sync().ok();
          if (!failed) acked = written.size();
        }
      }
      if (!failed) {
        failed = !log->Close().ok();
        if (!failed) acked = written.size();
      }
    }
    fs.SimulateCrash();
    Replayed r = Reopen(&fs, 300);
    TESSERA_ASSERT_OK(r.status);
    ASSERT_GE(r.records.size(), acked);
    ASSERT_LE(r.records.size(), written.size());
    for (size_t i = 0; i < r.records.size(); ++i) ASSERT_EQ(written[i], r.records[i]);
    if (!failed) break;  // the whole workload ran before the failure point
  }
}

// --- Reserved space, on the real file system (the in-memory one reserves nothing) ---

uint64_t SizeOnDisk(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::unique_ptr<CommitLog> OpenPosixLog(const std::string& dir, uint64_t segment_bytes,
                                        CommitLogSyncMode mode = CommitLogSyncMode::kBatch) {
  CommitLogOptions options;
  options.dir = dir;
  options.segment_bytes = segment_bytes;
  options.sync_mode = mode;
  StatusOr<std::unique_ptr<CommitLog>> log = CommitLog::Open(options, PosixFileSystem());
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? std::move(*log) : nullptr;
}

TEST(CommitLogTest, ASegmentReservesSpaceAheadAndTrimsItWhenClosed) {
  ::tessera::testing::TempDir dir;
  auto log = OpenPosixLog(dir.path(), 128u << 20);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(ReplayAll(log.get()).status.ok());
  ASSERT_TRUE(log->AddRecord("first").ok());
  ASSERT_TRUE(log->Sync().ok());
  const std::string path = log->SegmentPath(log->current_segment());
  EXPECT_GE(SizeOnDisk(path), CommitLog::kReserveBytes);  // reserved, reading as zeros
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(SizeOnDisk(path), log::kHeaderSize + 5);
  Replayed r = ReplayAll(OpenPosixLog(dir.path(), 128u << 20).get());
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records, std::vector<std::string>{"first"});
}

TEST(CommitLogTest, ACrashKeepsTheReservedZerosWhichReplayCuts) {
  ::tessera::testing::TempDir dir, crashed;
  auto log = OpenPosixLog(dir.path(), 128u << 20);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(ReplayAll(log.get()).status.ok());
  std::vector<std::string> want;
  for (int i = 0; i < 50; ++i) {
    want.push_back(RecordText(i));
    ASSERT_TRUE(log->AddRecord(want.back()).ok());
  }
  ASSERT_TRUE(log->Sync().ok());
  // The files as a crash now would leave them: the segment with its reserve of zeros.
  const std::string path = log->SegmentPath(log->current_segment());
  ASSERT_GT(SizeOnDisk(path), CommitLog::kReserveBytes);
  std::filesystem::copy(
      dir.path(), crashed.path(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  auto reopened = OpenPosixLog(crashed.path(), 128u << 20);
  ASSERT_NE(reopened, nullptr);
  Replayed r = ReplayAll(reopened.get());
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records, want);
  const std::string copy =
      crashed.path() + "/" + CommitLog::SegmentFileName(log->current_segment());
  EXPECT_LT(SizeOnDisk(copy), CommitLog::kReserveBytes);  // the zeros were cut
}

// At the periodic sync mode a small record goes into the file (the page cache) through a
// mapping of the reserve as AddRecord returns, with no Flush; at the batch mode it waits in the
// file's buffer for the group commit's Sync. Either way a copy of the folder replays it once
// it was handed over.
TEST(CommitLogTest, AtThePeriodicModeARecordIsInTheFileWhenAddRecordReturns) {
  for (CommitLogSyncMode mode : {CommitLogSyncMode::kPeriodic, CommitLogSyncMode::kBatch}) {
    SCOPED_TRACE(mode == CommitLogSyncMode::kPeriodic ? "periodic" : "batch");
    ::tessera::testing::TempDir dir, crashed;
    auto log = OpenPosixLog(dir.path(), 128u << 20, mode);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(ReplayAll(log.get()).status.ok());
    ASSERT_TRUE(log->AddRecord("first").ok());
    ASSERT_TRUE(log->Flush().ok());
    ASSERT_TRUE(log->AddRecord("second").ok());
    std::filesystem::copy(dir.path(), crashed.path(),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
    Replayed r = ReplayAll(OpenPosixLog(crashed.path(), 128u << 20).get());
    ASSERT_TRUE(r.status.ok()) << r.status;
    const std::vector<std::string> handed_over = mode == CommitLogSyncMode::kPeriodic
                                                     ? std::vector<std::string>{"first", "second"}
                                                     : std::vector<std::string>{"first"};
    EXPECT_EQ(r.records, handed_over);
    ASSERT_TRUE(log->Close().ok());
  }
}

TEST(CommitLogTest, RollingTrimsTheEarlierSegmentForGood) {
  // Only the last segment may end in zeros: an earlier one doing so is corruption.
  ::tessera::testing::TempDir dir, crashed;
  auto log = OpenPosixLog(dir.path(), 128u << 20);
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(ReplayAll(log.get()).status.ok());
  ASSERT_TRUE(log->AddRecord("one").ok());
  const uint64_t first = log->current_segment();
  ASSERT_TRUE(log->StartNewSegment().ok());
  ASSERT_TRUE(log->AddRecord("two").ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(SizeOnDisk(log->SegmentPath(first)), log::kHeaderSize + 3);
  std::filesystem::copy(
      dir.path(), crashed.path(),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  Replayed r = ReplayAll(OpenPosixLog(crashed.path(), 128u << 20).get());
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.records, (std::vector<std::string>{"one", "two"}));
}

}  // namespace
}  // namespace tessera::storage
