// Helpers shared by the engine-level tests (tests/engine_*_test.cc): collecting scans, listing
// an engine's files, building schemas, temporary folders.
//
// Thread-safety: free functions; safe to call concurrently on different objects.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/model/gc_rule.h"
#include "tessera/model/schema.h"
#include "tessera/tablet/engine.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/clock.h"
#include "tessera/util/file_system.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/status.h"

namespace tessera::test {

// Runs a scan to its end and returns its rows, or the first error (from Scan or the iterator).
StatusOr<std::vector<model::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                          const model::RowRange& range,
                                          const model::ReadSpec& spec = {}, uint64_t limit = 0);
StatusOr<std::vector<model::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                          const model::RowRange& range, const model::ReadSpec& spec,
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

// The tablet's drop marks (must succeed).
tablet::DropMarks DropMarksOf(const tablet::Engine& engine, tablet::TabletId id);
// The descriptor bytes an engine of the node-wide sequence counter stored: format 0x01 with a
// schema of format 0x02, which carries the tablet's drop marks (docs/sequence_numbers.md).
std::string LegacyDescriptor(const tablet::TabletDescriptor& d, const tablet::DropMarks& marks);

// A schema with `families`, each with the given rule.
model::TableSchema MakeSchema(std::string table,
                              const std::vector<std::pair<std::string, model::GcRule>>& families);

// A fresh, empty folder on the real file system, removed by the destructor.
using ::tessera::testing::TempDir;

// The fixture the engine suites share: an engine over an in-memory file system and a manual
// clock, with small memtables and blocks so that flushes and compactions happen within a test's
// worth of data. Suites adjust options_ in their constructors, before Open().
class EngineTestBase : public ::testing::Test {
 protected:
  explicit EngineTestBase(std::string dir);

  void Open();
  // Close (which must succeed) and Open again on the same files.
  void Reopen();
  void Create(tablet::TabletId id, const tablet::TabletDescriptor& d);
  // One cell, applied (must succeed).
  void Put(tablet::TabletId id, std::string_view row, std::string_view family,
           std::string_view qualifier, int64_t ts, std::string_view value);
  size_t CommitLogFiles();

  MemFileSystem fs_;
  ManualClock clock_;
  tablet::EngineOptions options_;
  Env env_;
  std::unique_ptr<tablet::Engine> engine_;
};

}  // namespace tessera::test

namespace tessera::model {
// Readable gtest output for EXPECT_EQ on cells and rows (found by argument-dependent lookup).
void PrintTo(const Cell& cell, std::ostream* os);
void PrintTo(const Row& row, std::ostream* os);
}  // namespace tessera::model
