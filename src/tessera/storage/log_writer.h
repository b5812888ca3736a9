// LogWriter appends framed records (log_format.h) to a WritableFile. It is the encoder shared by
// the commit log and the manifest.
//
// Each AddRecord/AddRecords call frames its records into one reused buffer and hands it to the
// file in a single Append, so a group commit of N records is one write.
//
// Failure: when an Append fails the file may hold part of the frames (a torn tail). Appending
// more records after that would turn the torn tail into corruption in the middle of the file,
// so the writer refuses every later call (the first error is sticky). The owner recovers by
// cutting the file back to the last good size (good_size()) and starting a new writer.
//
// Thread-safety: not thread-safe; one thread at a time (like the WritableFile it writes to).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tessera/storage/log_format.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage::log {

class LogWriter {
 public:
  // `dest` must outlive the writer. The bytes already in `dest` (dest->Size()) must be whole
  // records or nothing: the writer continues the file after them.
  explicit LogWriter(WritableFile* dest);
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Appends one record. InvalidArgument when it is longer than kMaxRecordSize (nothing written).
  Status AddRecord(std::string_view record);
  // Appends every record in order with one Append call. InvalidArgument when one of them is too
  // long (nothing written). An empty span writes nothing.
  Status AddRecords(std::span<const std::string_view> records);

  // File size after the last successful append: every byte before it is a whole record.
  uint64_t good_size() const { return good_size_; }
  // The sticky error of a failed append (OK when none).
  const Status& error() const { return error_; }

  // Appends the frame of `record` to `*dst`. REQUIRES: record.size() <= kMaxRecordSize.
  static void AppendFrame(std::string_view record, std::string* dst);

 private:
  Status AppendBuffer();

  WritableFile* const dest_;
  std::string buffer_;  // frames of the current call; capacity reused between calls
  uint64_t good_size_;
  Status error_;
};

}  // namespace tessera::storage::log
