// LogReader reads the framed records (log_format.h) of one log file from its start and tells a
// clean end, a torn tail and corruption apart.
//
// The rule. Records are parsed from offset 0. A frame at offset X is *intact* when its 9-byte
// header lies within the file, its type is not 0, its length is at most kMaxRecordSize, its
// payload ends within the file and its crc matches. Let N be the file size.
//   1. Reaching X == N after intact kFull records is a clean end.
//   2. An intact frame with a type other than kFull is corruption: DataLoss at X.
//   3. The first frame at X that is not intact (the file ends inside its header or payload, its
//      length is too large, its type is 0 or its crc fails) is a *bad record*. Then:
//        a. if some offset Y in (X, N) starts an intact frame (of any non-zero type), the bad
//           record is corruption in the middle of the file: DataLoss naming the file and X;
//        b. otherwise (this includes a tail of zero bytes, as left by preallocation) the file has
//           a *torn tail* at X: ReadRecord returns false, TornTail() is true and
//           EndOfValidData() == X, where the owner may cut the file (FileSystem::Truncate).
// The rule assumes appends reach the disk in order (a crash keeps a prefix of the unsynced
// bytes), so that an incomplete write is only ever followed by nothing or by zeros. A checksum
// failure in the last record of a file therefore reads as a torn tail; damage anywhere before the
// last record is always reported.
//
// Checking 3a reads the rest of the file into memory (at most the file size); it happens at most
// once per file, at its end.
//
// Thread-safety: not thread-safe; one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/storage/log_format.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage::log {

class LogReader {
 public:
  // Reads `file` from its current position, which must be the start of the log file.
  // `file_name` names the file in error messages.
  LogReader(std::unique_ptr<SequentialFile> file, std::string file_name);
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // Reads the next record. Returns true and sets `*record` (valid until the next call or the
  // reader's destruction) when there is one; false at the end of the valid data, either a clean
  // end or a torn tail (see TornTail()). DataLoss naming the file and offset for corruption;
  // the file system's error (with the file name) when a read fails. Once it returned false or
  // an error, every later call returns the same.
  StatusOr<bool> ReadRecord(std::string_view* record);

  // Offset of the header of the record last returned (0 before any).
  uint64_t LastRecordOffset() const { return last_record_offset_; }
  // Offset just past the last intact record read: the size the file should be cut to when
  // TornTail() is true.
  uint64_t EndOfValidData() const { return end_of_valid_data_; }
  // True after ReadRecord returned false because of a torn tail (including a zero-filled tail).
  bool TornTail() const { return torn_tail_; }
  // When TornTail(): the number of bytes after EndOfValidData() (the torn bytes).
  uint64_t TornBytes() const { return torn_bytes_; }
  // When TornTail(): every torn byte is zero (space reserved ahead of the appends and never
  // written, or written but not yet on disk at a crash), as opposed to a record cut short.
  bool ZeroTail() const { return zero_tail_; }
  const std::string& file_name() const { return file_name_; }

 private:
  // Makes at least `n` unread bytes available in buffer_ (from pos_); returns the number
  // available, which is less than `n` only at the end of the file.
  StatusOr<size_t> Fill(size_t n);
  // Classifies the bad record at the current position (rule 3). Returns false or DataLoss.
  StatusOr<bool> HandleBadRecord(std::string_view what);
  StatusOr<bool> Finish(Status s);

  const std::unique_ptr<SequentialFile> file_;
  const std::string file_name_;

  // Unread bytes are buffer_[pos_, end_); buffer_[pos_] is at file offset offset_. The bytes
  // past end_ are spare room (buffer_ only grows, so refills do not clear memory).
  std::string buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t offset_ = 0;
  bool eof_ = false;  // the file returned an empty read

  uint64_t last_record_offset_ = 0;
  uint64_t end_of_valid_data_ = 0;
  bool torn_tail_ = false;
  uint64_t torn_bytes_ = 0;
  bool zero_tail_ = false;
  bool done_ = false;
  Status final_status_;  // what every call after the end returns
};

}  // namespace tessera::storage::log
