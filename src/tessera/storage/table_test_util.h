// Test-only helpers for the sstable tests: build a table from a std::map on a MemFileSystem,
// open it, and make keys that look like the engine's (rows with many columns).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/storage/dbformat.h"
#include "tessera/storage/table.h"
#include "tessera/storage/table_builder.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::storage::testing {

using KVMap = std::map<std::string, std::string>;

// Filter key = the bytes before the first '/' (the "row" of keys shaped "row/column").
class RowExtractorForTesting final : public FilterKeyExtractor {
 public:
  explicit RowExtractorForTesting(const char* name = "test.row") : name_(name) {}
  std::string_view FilterKey(std::string_view key) const override {
    return key.substr(0, key.find('/'));
  }
  const char* Name() const override { return name_; }

 private:
  const char* name_;
};

// The same over internal keys (the engine's setup): the user key's bytes before the first '/'.
class InternalRowExtractorForTesting final : public FilterKeyExtractor {
 public:
  std::string_view FilterKey(std::string_view key) const override {
    std::string_view user = ExtractUserKey(key);
    return user.substr(0, user.find('/'));
  }
  const char* Name() const override { return "test.internal-row"; }
};

inline Status BuildTableForTesting(MemFileSystem* fs, const std::string& path,
                                   const TableOptions& options, const KVMap& entries,
                                   std::string_view user_properties = {}) {
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs->NewWritableFile(path));
  TableBuilder builder(options, file.get());
  builder.SetUserProperties(user_properties);
  for (const auto& [k, v] : entries) builder.Add(k, v);
  RETURN_IF_ERROR(builder.Finish());
  if (builder.FileSize() != file->Size()) {
    return absl::InternalError("builder FileSize() differs from the file size");
  }
  RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

inline StatusOr<std::unique_ptr<Table>> OpenTableForTesting(MemFileSystem* fs,
                                                            const std::string& path,
                                                            const TableOptions& options,
                                                            BlockCache* cache = nullptr,
                                                            bool in_memory = false) {
  ASSIGN_OR_RETURN(uint64_t size, fs->GetFileSize(path));
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->NewRandomAccessFile(path));
  const uint64_t id = cache != nullptr ? cache->NewId() : 0;
  return Table::Open(options, path, std::move(file), size, cache, id, in_memory);
}

// `rows` rows of up to `max_columns` columns: keys "rowNNNNNN/colNNNNNN", values of random
// length up to `max_value`, half of them compressible.
inline KVMap RandomRowsForTesting(Random* rnd, int rows, int max_columns, int max_value) {
  KVMap m;
  for (int r = 0; r < rows; ++r) {
    const uint64_t row = rnd->Uniform(1000000);
    const int columns = 1 + static_cast<int>(rnd->Uniform(max_columns));
    for (int c = 0; c < columns; ++c) {
      char key[32];
      std::snprintf(key, sizeof(key), "row%06d/col%06d", static_cast<int>(row),
                    static_cast<int>(rnd->Uniform(1000000)));
      const size_t len = rnd->Uniform(max_value + 1);
      std::string value =
          rnd->OneIn(2) ? rnd->Bytes(len) : std::string(len, static_cast<char>('a' + c % 26));
      m[key] = std::move(value);
    }
  }
  return m;
}

}  // namespace tessera::storage::testing
