// Log record framing.
//
// A log file (commit-log segment or MANIFEST) is a plain sequence of records, with no file
// header and no block structure:
//
//   file   := record*
//   record := crc(4) length(4) type(1) payload[length]
//
//   crc     fixed32 little-endian: crc32c::Mask(crc32c over the 5 bytes length+type and payload)
//   length  fixed32 little-endian, payload bytes, at most kMaxRecordSize (256 MiB)
//   type    1 = kFull (the only type written); 0 is never valid, so zeros never form a record;
//           other values are rejected as corrupt (or written by a newer version)
//
// Why whole records and not leveldb's 32 KiB blocks of fragments: a group commit becomes exactly
// one Append of contiguous frames; a record never straddles a block boundary, so the reader can
// report the exact byte offset of every record and of the first bad byte, which is where a torn
// tail is cut. Blocks would let a reader resynchronise after a damaged region, but we never
// skip damage: corruption in the middle of a log is an error, not something to step over.
// The crc covers the length too, so a damaged length is caught by the checksum rather than only
// by the frame running past the end of the file.
//
// How the reader classifies the file (the rule is written down in log_reader.h and
// docs/log_format.md): records are parsed from offset 0; the first record that is not intact is
// either a torn tail (nothing intact follows it) or corruption in the middle (DataLoss).
#include "tessera/storage/log_writer.h"

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::storage::log {
namespace {

// A buffer grown past this by one large batch is released after the call, so one huge write
// does not pin its memory for the life of the log.
constexpr size_t kMaxRetainedBuffer = 4u << 20;

}  // namespace

LogWriter::LogWriter(WritableFile* dest) : dest_(dest), good_size_(dest->Size()) {}

void LogWriter::AppendFrame(std::string_view record, std::string* dst) {
  char header[kHeaderSize];
  EncodeFixed32(header + 4, static_cast<uint32_t>(record.size()));
  header[8] = static_cast<char>(RecordType::kFull);
  uint32_t crc = crc32c::Value(header + 4, 5);
  crc = crc32c::Extend(crc, record.data(), record.size());
  EncodeFixed32(header, crc32c::Mask(crc));
  dst->append(header, kHeaderSize);
  dst->append(record.data(), record.size());
}

Status LogWriter::AddRecord(std::string_view record) {
  return AddRecords(std::span<const std::string_view>(&record, 1));
}

Status LogWriter::AddRecords(std::span<const std::string_view> records) {
  if (!error_.ok()) {
    return absl::FailedPreconditionError(
        StrCat("log writer stopped after an earlier failed append: ", error_.message()));
  }
  size_t total = 0;
  for (std::string_view r : records) {
    if (r.size() > kMaxRecordSize) {
      return absl::InvalidArgumentError(
          StrCat("log record of ", r.size(), " bytes exceeds the limit of ", kMaxRecordSize));
    }
    total += kHeaderSize + r.size();
  }
  if (total == 0) return Status();
  buffer_.clear();
  buffer_.reserve(total);
  for (std::string_view r : records) AppendFrame(r, &buffer_);
  return AppendBuffer();
}

Status LogWriter::AppendBuffer() {
  Status s = dest_->Append(buffer_);
  if (s.ok()) {
    good_size_ += buffer_.size();
  } else {
    error_ = s;
  }
  if (buffer_.capacity() > kMaxRetainedBuffer) {
    std::string().swap(buffer_);
  } else {
    buffer_.clear();
  }
  return s;
}

}  // namespace tessera::storage::log
