#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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

// A file whose space is reserved takes appends through a moving window of a mapping; the
// bytes must come out in order across windows, across appends that pass the reserved space
// (buffered) and a later reservation, and Close must trim the reserve.
TEST(PosixFileSystemTest, AppendsInReservedSpaceComeBackInOrderAcrossWindows) {
  FileSystem* fs = PosixFileSystem();
  char tmpl[] = "/tmp/tessera_fs_test_XXXXXX";
  ASSERT_NE(nullptr, ::mkdtemp(tmpl));
  const std::string path = JoinPath(tmpl, "log");
  std::string expected;
  uint32_t x = 7;
  auto next_piece = [&](size_t n) {
    std::string piece(n, '\0');
    for (char& c : piece) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
    expected += piece;
    return piece;
  };
  {
    auto f = fs->NewWritableFile(path).value();
    ASSERT_TRUE(f->Append(next_piece(100)).ok());  // buffered: nothing reserved yet
    ASSERT_TRUE(f->Preallocate(3u << 20, WritableFile::ReservedAppends::kMapped)
                    .ok());  // flushes the buffer, then maps
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(f->Append(next_piece(10007)).ok());  // ~3 MB
    while (expected.size() + 9001 <= (3u << 20)) ASSERT_TRUE(f->Append(next_piece(9001)).ok());
    ASSERT_TRUE(f->Append(next_piece(9001)).ok());    // past the end of the reserve: buffered
    ASSERT_TRUE(f->Append(next_piece(5)).ok());       // buffered
    ASSERT_TRUE(f->Preallocate(8u << 20, WritableFile::ReservedAppends::kMapped).ok());
    for (int i = 0; i < 400; ++i) ASSERT_TRUE(f->Append(next_piece(9001)).ok());  // > a window
    ASSERT_TRUE(f->Append(next_piece(100000)).ok());  // large: written, not mapped
    ASSERT_TRUE(f->Sync().ok());
    EXPECT_EQ(expected.size(), f->Size());
    EXPECT_EQ(8u << 20, fs->GetFileSize(path).value());  // reserved, zeros past the appends
    ASSERT_TRUE(f->Close().ok());
  }
  EXPECT_EQ(expected, ReadFileToString(fs, path).value());
  ASSERT_TRUE(fs->RemoveFile(path).ok());
  ASSERT_TRUE(fs->RemoveDir(tmpl).ok());
}

// A mapped append is in the page cache when Append returns: a process that dies right after,
// with no Flush, Sync or Close, loses none of it (what kill -9 of a server relies on).
TEST(PosixFileSystemTest, AMappedAppendSurvivesTheDeathOfTheProcess) {
  FileSystem* fs = PosixFileSystem();
  char tmpl[] = "/tmp/tessera_fs_test_XXXXXX";
  ASSERT_NE(nullptr, ::mkdtemp(tmpl));
  const std::string path = JoinPath(tmpl, "log");
  const std::string record = "a record that must survive";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto f = fs->NewWritableFile(path);
    if (!f.ok() || !(*f)->Preallocate(1u << 20, WritableFile::ReservedAppends::kMapped).ok() ||
        !(*f)->Append(record).ok())
      ::_exit(1);
    ::_exit(0);  // no destructor, no Close: as if killed
  }
  int wstatus = 0;
  ASSERT_EQ(pid, ::waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(0, WEXITSTATUS(wstatus));
  const std::string contents = ReadFileToString(fs, path).value();
  ASSERT_EQ(1u << 20, contents.size());  // the reserve was not trimmed
  EXPECT_EQ(record, contents.substr(0, record.size()));
  EXPECT_EQ(std::string(contents.size() - record.size(), '\0'), contents.substr(record.size()));
  ASSERT_TRUE(fs->RemoveFile(path).ok());
  ASSERT_TRUE(fs->RemoveDir(tmpl).ok());
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
