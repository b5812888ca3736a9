// The incarnation file: survives reopen, refuses corruption naming the file, and keeps memory
// as on disk when a write fails.
#include "tessera/catalog/incarnation_file.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::catalog {
namespace {

constexpr char kPath[] = "/db/CLUSTER_SCHEMA";

void MakeDataDir(MemFileSystem* fs) {
  ASSERT_TRUE(fs->CreateDirs("/db").ok());
  ASSERT_TRUE(fs->SyncDir("/").ok());
}

TEST(IncarnationFileTest, MissingFileKnowsNothingAndSetsSurviveReopen) {
  MemFileSystem fs;
  MakeDataDir(&fs);
  {
    auto file = IncarnationFile::Open(&fs, kPath);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ((*file)->Get("a"), std::nullopt);
    EXPECT_FALSE(fs.FileExists(kPath));
    ASSERT_TRUE((*file)->Set("b", 7).ok());
    ASSERT_TRUE((*file)->Set("a", 3).ok());
    ASSERT_TRUE((*file)->Set("c", 9).ok());
    ASSERT_TRUE((*file)->Set("c", std::nullopt).ok());
  }
  fs.SimulateCrash();  // every Set was durable when it returned
  auto file = IncarnationFile::Open(&fs, kPath);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Get("a"), 3);
  EXPECT_EQ((*file)->Get("b"), 7);
  EXPECT_EQ((*file)->Get("c"), std::nullopt);
  EXPECT_EQ((*file)->Names(), (std::vector<std::string>{"a", "b"}));
}

TEST(IncarnationFileTest, CorruptFileIsDataLossNamingIt) {
  MemFileSystem fs;
  MakeDataDir(&fs);
  std::string good;
  {
    auto file = IncarnationFile::Open(&fs, kPath);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Set("projects/p/instances/i/tables/t", 5).ok());
    auto read = ReadFileToString(&fs, kPath);
    ASSERT_TRUE(read.ok());
    good = *read;
  }
  auto expect_corrupt = [&](const std::string& bytes, std::string_view what) {
    ASSERT_TRUE(WriteStringToFile(&fs, kPath, bytes, true).ok());
    auto file = IncarnationFile::Open(&fs, kPath);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss) << what;
    EXPECT_NE(std::string(file.status().message()).find(kPath), std::string::npos);
    EXPECT_NE(std::string(file.status().message()).find(what), std::string::npos) << file.status();
  };
  expect_corrupt(std::string("TSCS\x01\x00garbage", 13), "checksum mismatch");
  expect_corrupt("TSC", "truncated");
  std::string flipped = good;
  flipped[6] ^= 1;
  expect_corrupt(flipped, "checksum mismatch");
  for (size_t cut = 0; cut < good.size(); ++cut) {
    ASSERT_TRUE(WriteStringToFile(&fs, kPath, good.substr(0, cut), true).ok());
    EXPECT_EQ(IncarnationFile::Open(&fs, kPath).status().code(), absl::StatusCode::kDataLoss)
        << "cut at " << cut;
  }
}

TEST(IncarnationFileTest, FailedWriteKeepsWhatTheFileHolds) {
  MemFileSystem fs;
  MakeDataDir(&fs);
  auto file = IncarnationFile::Open(&fs, kPath);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Set("a", 1).ok());
  fs.FailAfterOps(0);
  EXPECT_FALSE((*file)->Set("a", 2).ok());
  EXPECT_FALSE((*file)->Set("b", 1).ok());
  EXPECT_EQ((*file)->Get("a"), 1);
  EXPECT_EQ((*file)->Get("b"), std::nullopt);
  EXPECT_TRUE((*file)->Set("a", 1).ok());  // unchanged: nothing to write
  fs.SimulateCrash();                      // also clears FailAfterOps
  ASSERT_TRUE((*file)->Set("b", 1).ok());  // a retry writes again
  auto reopened = IncarnationFile::Open(&fs, kPath);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Names(), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace tessera::catalog
