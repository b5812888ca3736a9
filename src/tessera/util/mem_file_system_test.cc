#include "tessera/util/mem_file_system.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(MemFileSystemTest, UnsyncedDataIsLostOnCrash) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/db").ok());
  auto f = fs.NewWritableFile("/db/a").value();
  ASSERT_TRUE(fs.SyncDir("/db").ok());
  ASSERT_TRUE(f->Append("durable").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("-lost").ok());
  EXPECT_EQ("durable-lost", ReadFileToString(&fs, "/db/a").value());
  fs.SimulateCrash();
  EXPECT_EQ("durable", ReadFileToString(&fs, "/db/a").value());
  // The old handle no longer changes the file.
  ASSERT_TRUE(f->Append("zombie").ok());
  EXPECT_EQ("durable", ReadFileToString(&fs, "/db/a").value());
}

TEST(MemFileSystemTest, UnsyncedDirectoryEntriesAreLostOnCrash) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/db").ok());
  ASSERT_TRUE(WriteStringToFile(&fs, "/db/a", "x", /*sync=*/true).ok());
  EXPECT_TRUE(fs.FileExists("/db/a"));
  fs.SimulateCrash();
  EXPECT_FALSE(fs.FileExists("/db/a"));

  ASSERT_TRUE(WriteStringToFile(&fs, "/db/b", "y", true).ok());
  ASSERT_TRUE(fs.SyncDir("/db").ok());
  ASSERT_TRUE(fs.RenameFile("/db/b", "/db/c").ok());
  ASSERT_TRUE(WriteStringToFile(&fs, "/db/d", "z", true).ok());
  ASSERT_TRUE(fs.RemoveFile("/db/d").ok());
  fs.SimulateCrash();
  EXPECT_TRUE(fs.FileExists("/db/b"));
  EXPECT_FALSE(fs.FileExists("/db/c"));
  EXPECT_EQ("y", ReadFileToString(&fs, "/db/b").value());
}

TEST(MemFileSystemTest, SpaceLimit) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/db").ok());
  fs.SetSpaceLimit(10);
  auto f = fs.NewWritableFile("/db/a").value();
  ASSERT_TRUE(f->Append("12345").ok());
  Status s = f->Append("1234567");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ("12345", ReadFileToString(&fs, "/db/a").value());
}

TEST(MemFileSystemTest, FailAfterOps) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/db").ok());
  auto f = fs.NewWritableFile("/db/a").value();
  fs.FailAfterOps(1);
  EXPECT_TRUE(f->Append("a").ok());
  EXPECT_TRUE(absl::IsUnavailable(f->Append("b")));
  EXPECT_TRUE(absl::IsUnavailable(fs.SyncDir("/db")));
  fs.SimulateCrash();
  EXPECT_TRUE(fs.SyncDir("/db").ok());
}

TEST(MemFileSystemTest, ChildrenAndErrors) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/db/sub").ok());
  ASSERT_TRUE(WriteStringToFile(&fs, "/db/a", "x", false).ok());
  auto children = fs.GetChildren("/db").value();
  std::sort(children.begin(), children.end());
  EXPECT_EQ((std::vector<std::string>{"a", "sub"}), children);
  EXPECT_TRUE(absl::IsNotFound(fs.NewRandomAccessFile("/db/nope").status()));
  EXPECT_TRUE(absl::IsNotFound(fs.NewWritableFile("/nodir/x").status()));
  ASSERT_TRUE(fs.FlipBitForTesting("/db/a", 0, 0).ok());
  EXPECT_EQ("y", ReadFileToString(&fs, "/db/a").value());
}

}  // namespace
}  // namespace tessera
