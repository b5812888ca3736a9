#include "tessera/storage/manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "tessera/storage/log_test_util.h"
#include "tessera/storage/log_writer.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

constexpr char kDir[] = "/db";

FileMeta MakeFile(uint64_t number) {
  FileMeta f;
  f.number = number;
  f.size = 4096 + number;
  f.smallest = MakeInternalKey(StrCat("row", number), number, ValueType::kValue);
  f.largest = MakeInternalKey(StrCat("row", number, "~"), number, ValueType::kValue);
  f.min_sequence = number;
  f.max_sequence = number + 10;
  f.num_entries = number * 3;
  return f;
}

// Edit i of a deterministic history: tablets come and go, files are added and compacted.
VersionEdit HistoryEdit(int i) {
  VersionEdit e;
  const uint64_t tablet = 1 + i % 4;
  e.next_file_number = 1000 + i;
  e.last_sequence = 10 * i;
  if (i < 4) {
    e.AddTablet(tablet, StrCat("tablet-", tablet, "-descriptor"));
  } else {
    e.AddFile(tablet, MakeFile(100 + i));
    if (i >= 8) e.DeleteFile(tablet, 100 + i - 4);
    e.SetFlushed(tablet, 10 * i - 5);
  }
  return e;
}

StatusOr<std::unique_ptr<Manifest>> OpenManifest(FileSystem* fs, bool create,
                                                 uint64_t max_file_bytes = 4u << 20) {
  ManifestOptions options;
  options.create_if_missing = create;
  options.max_file_bytes = max_file_bytes;
  return Manifest::Open(fs, kDir, options);
}

std::vector<std::string> ManifestFiles(FileSystem* fs) {
  std::vector<std::string> out;
  const std::vector<std::string> children = fs->GetChildren(kDir).value();
  for (const std::string& name : children) {
    if (Manifest::ParseManifestFileName(name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ManifestTest, MissingWithoutCreateIsNotFound) {
  MemFileSystem fs;
  StatusOr<std::unique_ptr<Manifest>> m = OpenManifest(&fs, false);
  EXPECT_TRUE(absl::IsNotFound(m.status())) << m.status();
}

TEST(ManifestTest, CreateLogReopen) {
  MemFileSystem fs;
  ManifestState expected;
  {
    auto m = OpenManifest(&fs, true);
    TESSERA_ASSERT_OK(m);
    EXPECT_EQ(ManifestState(), (*m)->state());
    EXPECT_EQ("MANIFEST-000001", (*m)->manifest_file_name());
    EXPECT_EQ("MANIFEST-000001\n", ReadFileToString(&fs, "/db/CURRENT").value());
    for (int i = 0; i < 20; ++i) {
      TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i)));
      TESSERA_ASSERT_OK(expected.Apply(HistoryEdit(i)));
      EXPECT_EQ(expected, (*m)->state());
    }
    EXPECT_EQ(expected, (*m)->CopyState());
  }
  fs.SimulateCrash();  // everything was synced
  auto m = OpenManifest(&fs, false);
  TESSERA_ASSERT_OK(m);
  EXPECT_EQ(expected, (*m)->state());
  EXPECT_EQ(1000u + 19, (*m)->state().next_file_number);

  // create_if_missing on an existing manifest just opens it.
  m->reset();
  auto again = OpenManifest(&fs, true);
  TESSERA_ASSERT_OK(again);
  EXPECT_EQ(expected, (*again)->state());
}

TEST(ManifestTest, InapplicableEditWritesNothing) {
  MemFileSystem fs;
  auto m = OpenManifest(&fs, true);
  TESSERA_ASSERT_OK(m);
  TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(0)));
  const uint64_t size = fs.GetFileSize("/db/MANIFEST-000001").value();
  VersionEdit bad;
  bad.DeleteFile(1, 12345);
  Status s = (*m)->LogAndApply(bad);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(size, fs.GetFileSize("/db/MANIFEST-000001").value());
  TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(1)));  // still usable
}

TEST(ManifestTest, RewriteStartsANewFileAndRemovesTheOldOne) {
  MemFileSystem fs;
  ManifestState expected;
  {
    auto m = OpenManifest(&fs, true, /*max_file_bytes=*/400);
    TESSERA_ASSERT_OK(m);
    for (int i = 0; i < 40; ++i) {
      TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i)));
      TESSERA_ASSERT_OK(expected.Apply(HistoryEdit(i)));
      EXPECT_EQ(std::vector<std::string>{(*m)->manifest_file_name()}, ManifestFiles(&fs));
    }
    EXPECT_NE("MANIFEST-000001", (*m)->manifest_file_name());
    EXPECT_EQ((*m)->manifest_file_name() + "\n", ReadFileToString(&fs, "/db/CURRENT").value());
    EXPECT_FALSE(fs.FileExists("/db/CURRENT.tmp"));
  }
  fs.SimulateCrash();
  auto m = OpenManifest(&fs, false, 400);
  TESSERA_ASSERT_OK(m);
  EXPECT_EQ(expected, (*m)->state());
}

// Dies at every mutating file-system operation of a LogAndApply that starts a new manifest
// file: after the crash the manifest opens with the state either before or after the edit
// (after, when LogAndApply returned OK).
TEST(ManifestTest, CrashAtEveryOperationOfARewrite) {
  bool rewrite_seen = false;
  for (int64_t fail_after = 0;; ++fail_after) {
    SCOPED_TRACE(fail_after);
    MemFileSystem fs;
    ManifestState before;
    std::string old_name;
    Status result;
    int64_t ops_used;
    {
      auto m = OpenManifest(&fs, true, /*max_file_bytes=*/300);
      TESSERA_ASSERT_OK(m);
      int i = 0;
      // Fill the file up to just below the threshold.
      while (fs.GetFileSize(JoinPath(kDir, (*m)->manifest_file_name())).value() < 200) {
        TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i++)));
      }
      ASSERT_EQ("MANIFEST-000001", (*m)->manifest_file_name());
      before = (*m)->state();
      VersionEdit big = HistoryEdit(i);
      big.AddTablet(77, std::string(120, 'd'));  // pushes the file past 300 bytes
      const int64_t ops_start = fs.MutatingOpsForTesting();
      fs.FailAfterOps(fail_after);
      result = (*m)->LogAndApply(big);
      ops_used = fs.MutatingOpsForTesting() - ops_start;
      if (result.ok() && (*m)->manifest_file_name() != "MANIFEST-000001") rewrite_seen = true;
    }
    fs.SimulateCrash();
    auto m = OpenManifest(&fs, false, 300);
    TESSERA_ASSERT_OK(m);
    const ManifestState& got = (*m)->state();
    if (result.ok()) {
      EXPECT_TRUE(got.tablets.contains(77));
    } else if (!got.tablets.contains(77)) {
      EXPECT_EQ(before, got);  // before the edit, exactly
    }
    // Whatever survived, the manifest keeps working.
    VersionEdit next;
    next.AddTablet(88, "next");
    TESSERA_ASSERT_OK((*m)->LogAndApply(next));
    EXPECT_EQ(1u, ManifestFiles(&fs).size());
    if (ops_used < fail_after) break;  // the failure point was never reached
  }
  EXPECT_TRUE(rewrite_seen);
}

// Crash points across a whole history of edits and rewrites: the reopened state is one of the
// states the history passed through, no older than the last acknowledged edit.
TEST(ManifestTest, CrashAtEveryOperationOfAHistory) {
  std::vector<ManifestState> states(1);  // states[k]: after k edits
  for (int i = 0; i < 24; ++i) {
    states.push_back(states.back());
    TESSERA_ASSERT_OK(states.back().Apply(HistoryEdit(i)));
  }
  for (int64_t fail_after = 0;; ++fail_after) {
    SCOPED_TRACE(fail_after);
    MemFileSystem fs;
    size_t acked = 0;
    bool failed = false;
    {
      fs.FailAfterOps(fail_after);
      auto m = OpenManifest(&fs, true, /*max_file_bytes=*/250);
      failed = !m.ok();
      for (int i = 0; i < 24 && !failed; ++i) {
        failed = !(*m)->LogAndApply(HistoryEdit(i)).ok();
        if (!failed) acked = i + 1;
      }
    }
    fs.SimulateCrash();
    auto m = OpenManifest(&fs, true, 250);
    TESSERA_ASSERT_OK(m);
    const ManifestState& got = (*m)->state();
    bool matched = false;
    for (size_t k = acked; k <= std::min(acked + 1, states.size() - 1); ++k) {
      matched |= got == states[k];
    }
    EXPECT_TRUE(matched) << "acked " << acked;
    if (!failed) break;
  }
}

TEST(ManifestTest, TornTailIsCut) {
  MemFileSystem fs;
  ManifestState before_last;
  {
    auto m = OpenManifest(&fs, true);
    TESSERA_ASSERT_OK(m);
    for (int i = 0; i < 10; ++i) {
      before_last = (*m)->state();
      TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i)));
    }
  }
  const std::string path = "/db/MANIFEST-000001";
  const uint64_t size = fs.GetFileSize(path).value();
  TESSERA_ASSERT_OK(fs.TruncateForTesting(path, size - 2));
  {
    auto m = OpenManifest(&fs, false);
    TESSERA_ASSERT_OK(m);
    EXPECT_EQ(before_last, (*m)->state());
    EXPECT_LT(fs.GetFileSize(path).value(), size - 2);  // cut at the record boundary
    TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(9)));
  }
  fs.SimulateCrash();
  auto m = OpenManifest(&fs, false);
  TESSERA_ASSERT_OK(m);
  ManifestState expected = before_last;
  TESSERA_ASSERT_OK(expected.Apply(HistoryEdit(9)));
  EXPECT_EQ(expected, (*m)->state());
}

TEST(ManifestTest, CorruptionIsDataLossWithFileAndOffset) {
  MemFileSystem fs;
  {
    auto m = OpenManifest(&fs, true);
    TESSERA_ASSERT_OK(m);
    for (int i = 0; i < 5; ++i) TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i)));
  }
  const std::string path = "/db/MANIFEST-000001";
  // A flipped bit in the snapshot record (offset 0), with edits after it.
  TESSERA_ASSERT_OK(fs.FlipBitForTesting(path, 10, 2));
  auto m = OpenManifest(&fs, false);
  ASSERT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_NE(std::string::npos, m.status().message().find(path + " at offset 0")) << m.status();
  // Not cut, not replaced.
  auto again = OpenManifest(&fs, true);
  EXPECT_TRUE(absl::IsDataLoss(again.status())) << again.status();
}

TEST(ManifestTest, IntactRecordThatDoesNotDecodeIsDataLoss) {
  MemFileSystem fs;
  {
    auto m = OpenManifest(&fs, true);
    TESSERA_ASSERT_OK(m);
    TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(0)));
  }
  const std::string path = "/db/MANIFEST-000001";
  const uint64_t offset = fs.GetFileSize(path).value();
  for (std::string payload : {std::string("\x63\x01", 2), std::string("\x06\x09", 2)}) {
    SCOPED_TRACE(payload);
    TESSERA_ASSERT_OK(fs.TruncateForTesting(path, offset));
    {
      auto file = fs.NewAppendableFile(path);
      TESSERA_ASSERT_OK(file);
      log::LogWriter writer(file->get());
      TESSERA_ASSERT_OK(writer.AddRecord(payload));  // unknown tag 99 / file of unknown tablet
    }
    auto m = OpenManifest(&fs, false);
    ASSERT_TRUE(absl::IsDataLoss(m.status())) << m.status();
    EXPECT_NE(std::string::npos, m.status().message().find(StrCat(path, " at offset ", offset)))
        << m.status();
  }
}

TEST(ManifestTest, BadCurrentIsDataLoss) {
  MemFileSystem fs;
  { TESSERA_ASSERT_OK(OpenManifest(&fs, true)); }
  for (const char* contents :
       {"", "MANIFEST-000001", "MANIFEST-1\n", "garbage\n", "MANIFEST-000002\n"}) {
    SCOPED_TRACE(contents);
    TESSERA_ASSERT_OK(WriteStringToFile(&fs, "/db/CURRENT", contents, true));
    auto m = OpenManifest(&fs, true);
    ASSERT_TRUE(absl::IsDataLoss(m.status())) << m.status();
    EXPECT_NE(std::string::npos, m.status().message().find("/db/CURRENT at offset 0"));
  }
  // Restored, it opens again (nothing was removed).
  TESSERA_ASSERT_OK(WriteStringToFile(&fs, "/db/CURRENT", "MANIFEST-000001\n", true));
  TESSERA_ASSERT_OK(OpenManifest(&fs, false));
}

TEST(ManifestTest, LostCurrentWithALiveManifestIsRefused) {
  MemFileSystem fs;
  {
    auto m = OpenManifest(&fs, true);
    TESSERA_ASSERT_OK(m);
    TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(0)));
  }
  TESSERA_ASSERT_OK(fs.RemoveFile("/db/CURRENT"));
  auto m = OpenManifest(&fs, true);
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_TRUE(fs.FileExists("/db/MANIFEST-000001"));
}

TEST(ManifestTest, OutOfSpaceLeavesTheStateAndFileIntact) {
  for (bool half_written : {false, true}) {
    SCOPED_TRACE(half_written);
    MemFileSystem mem;
    logtest::PartialAppendFileSystem fs(&mem);
    auto m = Manifest::Open(&fs, kDir, /*create_if_missing=*/true);
    TESSERA_ASSERT_OK(m);
    for (int i = 0; i < 6; ++i) TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(i)));
    const ManifestState before = (*m)->state();
    if (half_written) {
      fs.partial_appends = 1;
    } else {
      mem.SetSpaceLimit(mem.TotalBytesForTesting() + 10);
    }
    Status s = (*m)->LogAndApply(HistoryEdit(6));
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
    EXPECT_EQ(before, (*m)->state());
    mem.SetSpaceLimit(0);
    {
      auto reader = OpenManifest(&mem, false);  // the file holds no trace of the failed edit
      TESSERA_ASSERT_OK(reader);
      EXPECT_EQ(before, (*reader)->state());
    }
    TESSERA_ASSERT_OK((*m)->LogAndApply(HistoryEdit(6)));
    ManifestState after = before;
    TESSERA_ASSERT_OK(after.Apply(HistoryEdit(6)));
    m->reset();
    mem.SimulateCrash();
    auto reopened = OpenManifest(&mem, false);
    TESSERA_ASSERT_OK(reopened);
    EXPECT_EQ(after, (*reopened)->state());
  }
}

TEST(ManifestTest, ConcurrentLogAndApply) {
  MemFileSystem fs;
  auto m = OpenManifest(&fs, true, /*max_file_bytes=*/2000);
  TESSERA_ASSERT_OK(m);
  Manifest* manifest = m->get();
  constexpr int kThreads = 3;
  constexpr int kEdits = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([manifest, t] {
      VersionEdit add;
      add.AddTablet(t, "t");
      EXPECT_TRUE(manifest->LogAndApply(add).ok());
      for (int i = 0; i < kEdits; ++i) {
        VersionEdit e;
        e.AddFile(t, MakeFile(1000 * (t + 1) + i));
        Status s = manifest->LogAndApply(e);
        EXPECT_TRUE(s.ok()) << s;
      }
    });
  }
  threads.emplace_back([manifest] {
    for (int i = 0; i < 50; ++i) {
      ManifestState copy = manifest->CopyState();
      for (const auto& [id, tablet] : copy.tablets) EXPECT_LE(tablet.files.size(), 40u);
    }
  });
  for (std::thread& t : threads) t.join();
  ManifestState final_state = manifest->CopyState();
  m->reset();
  auto reopened = OpenManifest(&fs, false);
  TESSERA_ASSERT_OK(reopened);
  EXPECT_EQ(final_state, (*reopened)->state());
  ASSERT_EQ(3u, final_state.tablets.size());
  for (const auto& [id, tablet] : final_state.tablets) EXPECT_EQ(40u, tablet.files.size());
}

}  // namespace
}  // namespace tessera::storage
