#include "tessera/storage/log_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::storage::log {
namespace {

// Reads are issued in steps of at least kReadChunk and at most kMaxReadStep bytes, growing with
// the data already buffered, so a damaged length never makes the reader allocate much more than
// the file holds.
constexpr size_t kReadChunk = 64u << 10;
constexpr size_t kMaxReadStep = 4u << 20;

// REQUIRES: frame[0, kHeaderSize + length) is readable.
bool CrcMatches(const char* frame, uint32_t length) {
  uint32_t expected = crc32c::Unmask(DecodeFixed32(frame));
  // length, type and payload are contiguous: bytes [4, kHeaderSize + length).
  return crc32c::Value(frame + 4, 5 + static_cast<size_t>(length)) == expected;
}

// True when `data` (which extends to the end of the file) starts with an intact frame.
bool StartsWithIntactFrame(std::string_view data) {
  if (data.size() < kHeaderSize) return false;
  if (static_cast<uint8_t>(data[8]) == static_cast<uint8_t>(RecordType::kZero)) return false;
  uint32_t length = DecodeFixed32(data.data() + 4);
  if (length > kMaxRecordSize || length > data.size() - kHeaderSize) return false;
  return CrcMatches(data.data(), length);
}

}  // namespace

LogReader::LogReader(std::unique_ptr<SequentialFile> file, std::string file_name)
    : file_(std::move(file)), file_name_(std::move(file_name)) {}

StatusOr<bool> LogReader::Finish(Status s) {
  done_ = true;
  final_status_ = s;
  if (!s.ok()) return s;
  return false;
}

StatusOr<size_t> LogReader::Fill(size_t n) {
  if (end_ - pos_ >= n || eof_) return end_ - pos_;
  if (pos_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  while (end_ < n && !eof_) {
    // At least a chunk; more only as far as needed and as the data read so far justifies
    // (doubling), so memory follows what the file really holds.
    const size_t want =
        std::max(kReadChunk, std::min(n - end_, std::clamp(end_, kReadChunk, kMaxReadStep)));
    if (buffer_.size() < end_ + want) buffer_.resize(end_ + want);
    StatusOr<std::string_view> r = file_->Read(want, buffer_.data() + end_);
    if (!r.ok()) return Annotate(r.status(), StrCat("reading log ", file_name_));
    if (!r->empty() && r->data() != buffer_.data() + end_) {
      std::memmove(buffer_.data() + end_, r->data(), r->size());
    }
    end_ += r->size();
    if (r->empty()) eof_ = true;
  }
  return end_;
}

StatusOr<bool> LogReader::ReadRecord(std::string_view* record) {
  if (done_) {
    if (!final_status_.ok()) return final_status_;
    return false;
  }
  StatusOr<size_t> avail = Fill(kHeaderSize);
  if (!avail.ok()) return Finish(avail.status());
  if (*avail == 0) {
    end_of_valid_data_ = offset_;
    return Finish(Status());
  }
  if (*avail < kHeaderSize) return HandleBadRecord("the file ends inside a record header");

  const char* header = buffer_.data() + pos_;
  const uint32_t length = DecodeFixed32(header + 4);
  const uint8_t type = static_cast<uint8_t>(header[8]);
  if (type == static_cast<uint8_t>(RecordType::kZero)) {
    return HandleBadRecord("record type 0 (zero bytes)");
  }
  if (length > kMaxRecordSize) {
    return HandleBadRecord(StrCat("record length ", length, " exceeds the limit"));
  }
  const size_t frame_size = kHeaderSize + static_cast<size_t>(length);
  avail = Fill(frame_size);
  if (!avail.ok()) return Finish(avail.status());
  if (*avail < frame_size) return HandleBadRecord("the file ends inside a record payload");

  const char* frame = buffer_.data() + pos_;  // Fill may have moved the buffer
  if (!CrcMatches(frame, length)) return HandleBadRecord("checksum mismatch");
  if (type != static_cast<uint8_t>(RecordType::kFull)) {
    return Finish(CorruptionError(file_name_, offset_, StrCat("unknown log record type ", type)));
  }
  *record = std::string_view(frame + kHeaderSize, length);
  last_record_offset_ = offset_;
  pos_ += frame_size;
  offset_ += frame_size;
  end_of_valid_data_ = offset_;
  return true;
}

StatusOr<bool> LogReader::HandleBadRecord(std::string_view what) {
  const uint64_t bad_offset = offset_;
  StatusOr<size_t> avail = Fill(std::numeric_limits<size_t>::max());
  if (!avail.ok()) return Finish(avail.status());
  const std::string_view rest(buffer_.data() + pos_, *avail);  // up to the end of the file
  zero_tail_ = rest.find_first_not_of('\0') == std::string_view::npos;
  if (!zero_tail_) {
    for (size_t y = 1; y + kHeaderSize <= rest.size(); ++y) {
      if (StartsWithIntactFrame(rest.substr(y))) {
        return Finish(
            CorruptionError(file_name_, bad_offset,
                            StrCat("corrupt log record (", what,
                                   ") followed by an intact record at offset ", bad_offset + y)));
      }
    }
  }
  torn_tail_ = true;
  torn_bytes_ = rest.size();
  end_of_valid_data_ = bad_offset;
  return Finish(Status());
}

}  // namespace tessera::storage::log
