// IncarnationFile: which incarnation of each table the node's local data belongs to, kept in a
// small file in the data folder (e.g. "<data-dir>/CLUSTER_SCHEMA").
//
// A table deleted and created again under the same name is a new table; its incarnation is the
// lock-service revision that created its schema record (FileInfo::create_revision). The schema
// store records an incarnation before it creates a local table and forgets it only after the
// table is dropped, so after a crash the file never claims data that is not there.
//
// Format:
//   file := "TSCS" format(1 byte = 0x01) varint32(count) entry*count fixed32(crc)
//   entry := lp(full table name) varint64(incarnation)
//   crc: crc32c::Mask of the CRC-32C of every byte before it
// Entries appear in strictly increasing name order. Written whole: temporary file, Sync, rename,
// SyncDir.
//
// Thread-safety: every method is safe to call concurrently; Set holds the object's mutex while
// it writes the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

class IncarnationFile {
 public:
  // Loads `path` (missing: no table has a known incarnation). `fs` must outlive the object.
  // DataLoss "cluster schema state file <path>: <what>" if the file is corrupt.
  static StatusOr<std::unique_ptr<IncarnationFile>> Open(FileSystem* fs, std::string path);

  IncarnationFile(const IncarnationFile&) = delete;
  IncarnationFile& operator=(const IncarnationFile&) = delete;

  // The incarnation the local data of `full_name` belongs to, if known.
  std::optional<int64_t> Get(std::string_view full_name) const;
  // Every table with a known incarnation, in name order.
  std::vector<std::string> Names() const;
  // Records `incarnation` for `full_name` (nullopt: forgets it) and writes the file before
  // returning. Nothing is written when nothing changes. On a write error the object keeps what
  // it held before, so that a retry writes again.
  Status Set(const std::string& full_name, std::optional<int64_t> incarnation);

 private:
  IncarnationFile(FileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
  Status Load();
  Status SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const fs_;
  const std::string path_;

  mutable absl::Mutex mu_;
  std::map<std::string, int64_t, std::less<>> incarnations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::catalog
