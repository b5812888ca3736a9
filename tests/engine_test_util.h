// Helpers shared by the engine-level tests (tests/engine_*_test.cc): collecting scans, listing
// an engine's files, building schemas, temporary folders.
//
// Thread-safety: free functions; safe to call concurrently on different objects.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/gc_rule.h"
#include "tessera/model/schema.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::test {

// Runs a scan to its end and returns its rows, or the first error (from Scan or the iterator).
StatusOr<std::vector<tablet::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                           const tablet::RowRange& range,
                                           const tablet::ReadSpec& spec = {}, uint64_t limit = 0);
StatusOr<std::vector<tablet::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                           const tablet::RowRange& range,
                                           const tablet::ReadSpec& spec,
                                           const tablet::ScanOptions& options);

// Paths of every file under `dir`, recursively, sorted.
std::vector<std::string> ListFilesRecursive(FileSystem* fs, const std::string& dir);
// The files of ListFilesRecursive whose name (the part after the last '/') ends with `suffix`
// / starts with `prefix`.
std::vector<std::string> FilesWithSuffix(FileSystem* fs, const std::string& dir,
                                         std::string_view suffix);
std::vector<std::string> FilesWithPrefix(FileSystem* fs, const std::string& dir,
                                         std::string_view prefix);
std::string_view Basename(std::string_view path);

// Tests that provoke I/O errors on purpose (crash points, full disks) call this so the engine's
// expected error logs do not bury the test output (TESSERA_TEST_VERBOSE=1 keeps them).
void SilenceExpectedErrorLogs();

// A schema with `families`, each with the given rule.
model::TableSchema MakeSchema(std::string table,
                              const std::vector<std::pair<std::string, model::GcRule>>& families);

// A fresh, empty folder on the real file system (under $TEST_TMPDIR or /tmp); removed by the
// destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessera::test

namespace tessera::tablet {
// Readable gtest output for EXPECT_EQ on cells and rows (found by argument-dependent lookup).
void PrintTo(const Cell& cell, std::ostream* os);
void PrintTo(const Row& row, std::ostream* os);
}  // namespace tessera::tablet
