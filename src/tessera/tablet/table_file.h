// One SSTable of one tablet, open for reading, shared by every snapshot that includes it.
//
// A TableFile lives as long as some FileSet or read snapshot holds it. When a compaction replaces
// it, the engine marks it obsolete; the file is removed from disk when the last holder lets go,
// so a scan that started before the compaction keeps reading the old file safely.
//
// A file that leveled compaction moves to another level without rewriting it (a trivial move,
// docs/compaction.md) gets a second TableFile with the new level, which holds the first and reads
// through its table: the first is not marked obsolete by the move, marking the second obsolete
// marks the first, and the file goes from disk when the last holder of either lets go.
//
// Thread-safety: immutable after construction except for the obsolete flag and the read count
// (atomics) and the row samples, computed on first use under a mutex of their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/storage/table.h"
#include "tessera/storage/version_edit.h"
#include "tessera/tablet/row_samples.h"
#include "tessera/util/file_system.h"

namespace tessera::tablet {

// Locality groups (Bigtable §6): the families marked in-memory are written to files of their own,
// which are loaded whole into RAM when opened.
enum class LocalityGroup : uint32_t { kDefault = 0, kInMemory = 1 };

class TableFile {
 public:
  // `fs` must outlive the file.
  TableFile(storage::FileMeta meta, std::string path, std::unique_ptr<storage::Table> table,
            FileSystem* fs)
      : meta_(std::move(meta)), path_(std::move(path)), table_(std::move(table)), fs_(fs) {}
  // `from` moved to `level`.
  TableFile(std::shared_ptr<TableFile> from, uint32_t level);
  ~TableFile();

  const storage::FileMeta& meta() const { return meta_; }
  const std::string& path() const { return path_; }
  storage::Table* table() const { return moved_from_ ? moved_from_->table() : table_.get(); }
  LocalityGroup group() const { return static_cast<LocalityGroup>(meta_.group); }
  // The file this one moved to another level; null unless moved.
  const TableFile* moved_from() const { return moved_from_.get(); }

  // The file is deleted from disk when the last reference goes away.
  void MarkObsolete() {
    if (moved_from_) moved_from_->MarkObsolete();
    obsolete_.store(true, std::memory_order_release);
  }

  // Counts a read that passed this file on its way to a row held deeper, or merged it with
  // others (docs/compaction.md, "Compaction by reads"); returns the count, this one included.
  uint64_t AddPassingRead() const {
    return passing_reads_.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  // One sample per data block (row_samples.h: SampleTableIndex), read from the file on the
  // first call and cached; a failed read is not cached.
  StatusOr<std::shared_ptr<const std::vector<RowSample>>> RowSamples() const;

 private:
  const storage::FileMeta meta_;
  const std::string path_;
  const std::unique_ptr<storage::Table> table_;  // null when moved
  const std::shared_ptr<TableFile> moved_from_;  // holds the table and removes the file
  FileSystem* const fs_;
  std::atomic<bool> obsolete_{false};
  mutable std::atomic<uint64_t> passing_reads_{0};
  mutable absl::Mutex samples_mu_;
  mutable std::shared_ptr<const std::vector<RowSample>> samples_ ABSL_GUARDED_BY(samples_mu_);
};

// The files of one tablet at one moment, newest first (by max sequence). Immutable; replaced
// whole on every flush or compaction.
struct FileSet {
  std::vector<std::shared_ptr<TableFile>> files;
};

inline constexpr std::string_view kTableFileSuffix = ".sst";
// "<dir>/<number, 6+ digits>.sst"
std::string TableFileName(const std::string& dir, uint64_t number);
// The number of an SSTable's file name ("000042.sst"); nullopt for any other name.
std::optional<uint64_t> ParseTableFileName(std::string_view name);

}  // namespace tessera::tablet
