#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "tessera/util/file_system.h"

namespace tessera {
namespace {

TEST(PosixFileSystemTest, WriteReadRenameRemove) {
  FileSystem* fs = PosixFileSystem();
  char tmpl[] = "/tmp/tessera_fs_test_XXXXXX";
  ASSERT_NE(nullptr, ::mkdtemp(tmpl));
  std::string dir = tmpl;
  std::string sub = JoinPath(dir, "a/b");
  ASSERT_TRUE(fs->CreateDirs(sub).ok());
  std::string path = JoinPath(sub, "f");
  {
    auto f = fs->NewWritableFile(path).value();
    std::string big(200000, 'q');
    ASSERT_TRUE(f->Append("head").ok());
    ASSERT_TRUE(f->Append(big).ok());
    ASSERT_TRUE(f->Sync().ok());
    EXPECT_EQ(200004u, f->Size());
    ASSERT_TRUE(f->Close().ok());
  }
  ASSERT_TRUE(fs->SyncDir(sub).ok());
  EXPECT_EQ(200004u, fs->GetFileSize(path).value());
  auto r = fs->NewRandomAccessFile(path).value();
  char buf[8];
  EXPECT_EQ("headqq", r->Read(0, 6, buf).value());
  EXPECT_EQ("q", r->Read(200003, 8, buf).value());
  {
    auto a = fs->NewAppendableFile(path).value();
    EXPECT_EQ(200004u, a->Size());
    ASSERT_TRUE(a->Append("tail").ok());
    ASSERT_TRUE(a->Close().ok());
  }
  ASSERT_TRUE(fs->Truncate(path, 4).ok());
  EXPECT_EQ("head", ReadFileToString(fs, path).value());
  ASSERT_TRUE(fs->RenameFile(path, path + "2").ok());
  EXPECT_FALSE(fs->FileExists(path));
  EXPECT_TRUE(absl::IsNotFound(fs->NewSequentialFile(path).status()));
  ASSERT_TRUE(fs->RemoveFile(path + "2").ok());
  ASSERT_TRUE(fs->RemoveDir(sub).ok());
  ASSERT_TRUE(fs->RemoveDir(JoinPath(dir, "a")).ok());
  ASSERT_TRUE(fs->RemoveDir(dir).ok());
}

TEST(PathTest, NumberedFileNames) {
  EXPECT_EQ("commitlog-000012.log", NumberedFileName("commitlog-", 12, ".log"));
  EXPECT_EQ(12u, ParseNumberedFileName("commitlog-000012.log", "commitlog-", ".log"));
  EXPECT_EQ(1234567u, ParseNumberedFileName("1234567.sst", "", ".sst"));
  for (const char* bad : {"000000.sst", "12.sst", "0000012.sst", "abc.sst", ".sst", "00001x.sst",
                          "000012.ss", "000012.sst.tmp"}) {
    EXPECT_EQ(std::nullopt, ParseNumberedFileName(bad, "", ".sst")) << bad;
  }
}

TEST(PathTest, JoinAndDirname) {
  EXPECT_EQ("a/b", JoinPath("a", "b"));
  EXPECT_EQ("a/b", JoinPath("a/", "b"));
  EXPECT_EQ("/x", Dirname("/x/y"));
  EXPECT_EQ(".", Dirname("y"));
}

}  // namespace
}  // namespace tessera
