// Tablet rebuilds against background work (docs/tablet.md "Copying a tablet"): a flush of the
// replica's old content that picked its input before a rebuild and installs after it is
// discarded; on a SimExecutor a rebuild waits for no background work.
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "tessera/util/sim_executor.h"
#include "tests/tablet_copy_test_util.h"

namespace tessera::test {
namespace {

// A FileSystem that holds every SyncDir of `dir` made by a thread other than the test's while
// armed: a background flush stops there, its input picked and its file written, until released.
class GatedFileSystem final : public FileSystem {
 public:
  GatedFileSystem(FileSystem* base, std::string dir) : base_(base), dir_(std::move(dir)) {}

  void Arm() {
    absl::MutexLock l(&mu_);
    armed_ = true;
  }
  // Waits until a background thread is held.
  void AwaitHeld() {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&held_));
  }
  void Release() {
    absl::MutexLock l(&mu_);
    armed_ = false;
  }

  Status SyncDir(const std::string& dir) override {
    if (dir == dir_ && std::this_thread::get_id() != test_thread_) {
      absl::MutexLock l(&mu_);
      if (armed_) {
        held_ = true;
        mu_.Await(absl::Condition(
            +[](bool* armed) { return !*armed; }, &armed_));
      }
    }
    return base_->SyncDir(dir);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return base_->NewWritableFile(path);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return base_->NewAppendableFile(path);
  }
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    return base_->NewSequentialFile(path);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return base_->GetChildren(dir);
  }
  StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    return base_->GetFileSize(path);
  }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return base_->RenameFile(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }

 private:
  FileSystem* const base_;
  const std::string dir_;
  const std::thread::id test_thread_ = std::this_thread::get_id();
  absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
};

class EngineTabletCopyRaceTest : public EngineTabletCopyTest {
 protected:
  EngineTabletCopyRaceTest() : gated_(&fs_, "/replica") { env_.fs = &gated_; }

  void TearDown() override {
    EngineTabletCopyTest::TearDown();
    if (engine_ != nullptr) {
      EXPECT_TRUE(engine_->Close().ok());
    }
    engine_.reset();  // before the file system it uses
  }

  GatedFileSystem gated_;
};

// A flush of the replica's old content picked its memtable and wrote its file before the
// rebuild, and installs after it: the file must not become part of the new content.
TEST_F(EngineTabletCopyRaceTest, FlushOfTheOldContentIsDiscarded) {
  ASSERT_NO_FATAL_FAILURE(FillSource(100));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  const Copy copy = ReadCopy(source_.get(), kTablet, 64 << 10);
  const std::vector<RawEntry>& expected = copy.entries;
  gated_.Arm();
  for (int i = 0; i < 150; ++i) {  // more than a memtable: a flush starts, and is held
    RowMutation d(StrCat("r", 1000 + i));
    d.SetCell("f", "a", 1, std::string(1000, 'd'));
    ASSERT_TRUE(engine_->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1, Batch{d}).ok());
  }
  gated_.AwaitHeld();
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  gated_.Release();
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), expected);
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), expected);
}

// On a SimExecutor: the rebuild runs inside the simulation's thread without waiting for
// background work, and a flush of the old content that was queued before it is discarded.
class EngineTabletCopySimTest : public EngineTabletCopyTest {
 protected:
  EngineTabletCopySimTest() : sim_(&clock_) { env_.executor = &sim_; }

  void TearDown() override {
    EngineTabletCopyTest::TearDown();
    if (engine_ != nullptr) {
      EXPECT_TRUE(engine_->Close().ok());
    }
    engine_.reset();  // before the executor it uses
  }

  SimExecutor sim_;
};

TEST_F(EngineTabletCopySimTest, RebuildWaitsForNoBackgroundWork) {
  RowMutation m("r1000");
  m.SetCell("f", "a", 1, "x");
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(Write(m));
  const Copy copy = ReadCopy(source_.get(), kTablet, 512);
  // The replica diverges with enough data to seal memtables: flushes are queued, not run.
  int i = 0;
  while (sim_.pending() == 0 || i < 50) {
    RowMutation d(StrCat("r", 1100 + i));
    d.SetCell("g", "b", 1, std::string(2000, 'd'));
    ASSERT_TRUE(engine_->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1, Batch{d}).ok());
    ++i;
  }
  // On the thread that drives the simulation: waiting for the queued flushes would hang.
  ASSERT_GT(sim_.pending(), 0u);
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
  sim_.RunReady();  // the old flushes run now and are discarded
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence);
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
}

}  // namespace
}  // namespace tessera::test
