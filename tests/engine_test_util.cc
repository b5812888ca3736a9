#include "tests/engine_test_util.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "tessera/util/coding.h"
#include "tessera/util/logging.h"
#include "tests/reference_model.h"

namespace tessera::test {

namespace {
// The engine logs every segment, flush and recovery at info level: thousands of lines per test.
// Tests show warnings and errors only, unless TESSERA_TEST_VERBOSE is set.
bool Verbose();
const bool kQuietLogs = [] {
  if (!Verbose()) spdlog::set_level(spdlog::level::warn);
  return true;
}();
bool Verbose() {
  const char* verbose = getenv("TESSERA_TEST_VERBOSE");
  return verbose != nullptr && *verbose != '\0';
}

}  // namespace

tablet::DropMarks DropMarksOf(const tablet::Engine& engine, tablet::TabletId id) {
  StatusOr<tablet::DropMarks> marks = engine.GetDropMarks(id);
  EXPECT_TRUE(marks.ok()) << marks.status();
  return marks.ok() ? *std::move(marks) : tablet::DropMarks();
}

std::string LegacyDescriptor(const tablet::TabletDescriptor& d, const tablet::DropMarks& marks) {
  // Schema format 0x02 is today's 0x03 followed by the drop marks.
  std::string schema = d.schema.Encode();
  schema[0] = 0x02;
  PutVarint32(&schema, static_cast<uint32_t>(marks.size()));
  for (const auto& [family, sequence] : marks) {
    PutLengthPrefixed(&schema, family);
    PutVarint64(&schema, sequence);
  }
  std::string out(1, '\x01');
  PutLengthPrefixed(&out, d.table);
  PutLengthPrefixed(&out, d.start_row);
  PutLengthPrefixed(&out, d.end_row);
  PutLengthPrefixed(&out, schema);
  return out;
}

void SilenceExpectedErrorLogs() {
  if (!Verbose()) spdlog::set_level(spdlog::level::critical);
}

StatusOr<std::vector<model::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                          const model::RowRange& range, const model::ReadSpec& spec,
                                          uint64_t limit) {
  return ScanAll(engine, id, range, spec, tablet::ScanOptions{.limit = limit, .reversed = false});
}

StatusOr<std::vector<model::Row>> ScanAll(const tablet::Engine& engine, tablet::TabletId id,
                                          const model::RowRange& range, const model::ReadSpec& spec,
                                          const tablet::ScanOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<tablet::RowIterator> it, engine.Scan(id, range, spec, options));
  std::vector<model::Row> rows;
  // A runaway iterator would otherwise fill memory or never end.
  constexpr size_t kMaxRows = 10'000'000;
  for (; it->Valid(); it->Next()) {
    rows.push_back(it->row());
    if (options.limit > 0 && rows.size() > options.limit) break;
    if (rows.size() > kMaxRows) return absl::InternalError("scan returned too many rows");
  }
  RETURN_IF_ERROR(it->status());
  return rows;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

namespace {

void ListInto(FileSystem* fs, const std::string& dir, int depth, std::vector<std::string>* out) {
  StatusOr<std::vector<std::string>> children = fs->GetChildren(dir);
  if (!children.ok() || depth > 8) return;
  for (const std::string& name : *children) {
    if (name == "." || name == "..") continue;
    const std::string path = JoinPath(dir, name);
    if (fs->GetFileSize(path).ok()) {
      out->push_back(path);
    } else {
      ListInto(fs, path, depth + 1, out);
    }
  }
}

}  // namespace

std::vector<std::string> ListFilesRecursive(FileSystem* fs, const std::string& dir) {
  std::vector<std::string> out;
  ListInto(fs, dir, 0, &out);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FilesWithSuffix(FileSystem* fs, const std::string& dir,
                                         std::string_view suffix) {
  std::vector<std::string> out;
  for (const std::string& path : ListFilesRecursive(fs, dir)) {
    if (Basename(path).ends_with(suffix)) out.push_back(path);
  }
  return out;
}

std::vector<std::string> FilesWithPrefix(FileSystem* fs, const std::string& dir,
                                         std::string_view prefix) {
  std::vector<std::string> out;
  for (const std::string& path : ListFilesRecursive(fs, dir)) {
    if (Basename(path).starts_with(prefix)) out.push_back(path);
  }
  return out;
}

model::TableSchema MakeSchema(std::string table,
                              const std::vector<std::pair<std::string, model::GcRule>>& families) {
  model::TableSchema schema;
  schema.name = std::move(table);
  for (const auto& [name, rule] : families) {
    model::FamilySchema family;
    family.gc_rule = rule;
    schema.families.emplace(name, family);
  }
  return schema;
}

EngineTestBase::EngineTestBase(std::string dir) {
  options_.dir = std::move(dir);
  options_.memtable_bytes = 64 << 10;
  options_.block_size = 4096;
  options_.compaction_bytes_per_second = 0;
  options_.size_tier_min_files = 3;
  env_.fs = &fs_;
  env_.clock = &clock_;
}

void EngineTestBase::Open() {
  StatusOr<std::unique_ptr<tablet::Engine>> engine = tablet::Engine::Open(options_, env_);
  ASSERT_TRUE(engine.ok()) << engine.status();
  engine_ = std::move(*engine);
}

void EngineTestBase::Reopen() {
  Status s = engine_->Close();
  ASSERT_TRUE(s.ok()) << s;
  engine_.reset();
  ASSERT_NO_FATAL_FAILURE(Open());
}

void EngineTestBase::Create(tablet::TabletId id, const tablet::TabletDescriptor& d) {
  Status s = engine_->CreateTablet(id, d);
  ASSERT_TRUE(s.ok()) << s;
}

void EngineTestBase::Put(tablet::TabletId id, std::string_view row, std::string_view family,
                         std::string_view qualifier, int64_t ts, std::string_view value) {
  model::RowMutation m(row);
  m.SetCell(family, qualifier, ts, value);
  Status s = engine_->Apply(id, m);
  ASSERT_TRUE(s.ok()) << s;
}

size_t EngineTestBase::CommitLogFiles() {
  return FilesWithPrefix(&fs_, options_.dir, "commitlog-").size();
}

}  // namespace tessera::test

namespace tessera::model {

void PrintTo(const Cell& cell, std::ostream* os) {
  *os << test::ReferenceModel::DebugString(Row{"", {cell}});
}

void PrintTo(const Row& row, std::ostream* os) { *os << test::ReferenceModel::DebugString(row); }

}  // namespace tessera::model
