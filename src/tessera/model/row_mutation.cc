// Encoded row mutation (also the commit-log record; docs/row_mutation_format.md):
//
//   batch    := format(1 byte = 0x01) varint32(row length) row fixed32(count) mutation*
//   mutation := 0x01 lp(family) lp(qualifier) fixed64(timestamp) lp(value)   SetCell
//             | 0x02 lp(family) lp(qualifier) fixed64(start) fixed64(end)    DeleteFromColumn
//             | 0x03 lp(family)                                              DeleteFromFamily
//             | 0x04                                                         DeleteFromRow
//   lp(x)    := varint32(length of x) x
//
// Fixed-width integers are little-endian; timestamps are int64 microseconds stored as their
// two's-complement uint64. The count is fixed32 rather than a varint so the builder can update it
// in place. Exactly `count` mutations follow the header and nothing after them. A family never
// contains 0x00 (it would break the cell-key encoding), so the decoder rejects one that does.
#include "tessera/model/row_mutation.h"

#include <cstring>
#include <limits>

#include "tessera/util/coding.h"

namespace tessera::model {

namespace {

constexpr char kFormatVersion = 0x01;
constexpr std::string_view kWhat = "row mutation";

// Varints with an inline fast path for one-byte values (almost every length here).
inline const char* ParseVarint32(const char* p, const char* limit, uint32_t* v) {
  if (p < limit && (static_cast<uint8_t>(*p) & 0x80) == 0) {
    *v = static_cast<uint8_t>(*p);
    return p + 1;
  }
  return GetVarint32Ptr(p, limit, v);
}

inline const char* ParseLengthPrefixed(const char* p, const char* limit, std::string_view* out) {
  uint32_t len;
  p = ParseVarint32(p, limit, &len);
  if (p == nullptr || len > static_cast<size_t>(limit - p)) return nullptr;
  *out = std::string_view(p, len);
  return p + len;
}

inline size_t LengthPrefixedSize(std::string_view s) { return VarintLength(s.size()) + s.size(); }

inline char* WriteLengthPrefixed(char* p, std::string_view s) {
  if (s.size() < 0x80) {
    *p++ = static_cast<char>(s.size());
  } else {
    p = EncodeVarint32(p, static_cast<uint32_t>(s.size()));
  }
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

inline char* Grow(std::string* dst, size_t n) {
  const size_t old = dst->size();
  dst->resize(old + n);
  return dst->data() + old;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TimeRange

void TimeRange::EncodeTo(char* dst) const {
  EncodeFixed64(dst, static_cast<uint64_t>(start_micros));
  EncodeFixed64(dst + 8, static_cast<uint64_t>(end_micros));
}

void TimeRange::AppendTo(std::string* dst) const {
  char buf[kEncodedSize];
  EncodeTo(buf);
  dst->append(buf, sizeof(buf));
}

bool TimeRange::Decode(std::string_view encoded, TimeRange* out) {
  if (encoded.size() != kEncodedSize) return false;
  out->start_micros = static_cast<int64_t>(DecodeFixed64(encoded.data()));
  out->end_micros = static_cast<int64_t>(DecodeFixed64(encoded.data() + 8));
  return true;
}

// ---------------------------------------------------------------------------------------------
// RowMutation

RowMutation::RowMutation(std::string_view row) {
  encoded_.reserve(1 + 5 + row.size() + 4 + 32);
  encoded_.push_back(kFormatVersion);
  PutVarint32(&encoded_, static_cast<uint32_t>(row.size()));
  row_offset_ = static_cast<uint32_t>(encoded_.size());
  row_size_ = static_cast<uint32_t>(row.size());
  encoded_.append(row.data(), row.size());
  count_offset_ = static_cast<uint32_t>(encoded_.size());
  PutFixed32(&encoded_, 0);
}

std::string_view RowMutation::row() const {
  return std::string_view(encoded_).substr(row_offset_, row_size_);
}

void RowMutation::SetCount(uint32_t count) {
  count_ = count;
  EncodeFixed32(encoded_.data() + count_offset_, count);
}

RowMutation& RowMutation::SetCell(std::string_view family, std::string_view qualifier,
                                  int64_t timestamp_micros, std::string_view value) {
  char* p = Grow(&encoded_, 1 + LengthPrefixedSize(family) + LengthPrefixedSize(qualifier) + 8 +
                                LengthPrefixedSize(value));
  *p++ = static_cast<char>(MutationType::kSetCell);
  p = WriteLengthPrefixed(p, family);
  p = WriteLengthPrefixed(p, qualifier);
  EncodeFixed64(p, static_cast<uint64_t>(timestamp_micros));
  WriteLengthPrefixed(p + 8, value);
  SetCount(count_ + 1);
  return *this;
}

RowMutation& RowMutation::DeleteFromColumn(std::string_view family, std::string_view qualifier,
                                           TimeRange range) {
  char* p = Grow(&encoded_, 1 + LengthPrefixedSize(family) + LengthPrefixedSize(qualifier) +
                                TimeRange::kEncodedSize);
  *p++ = static_cast<char>(MutationType::kDeleteFromColumn);
  p = WriteLengthPrefixed(p, family);
  p = WriteLengthPrefixed(p, qualifier);
  range.EncodeTo(p);
  SetCount(count_ + 1);
  return *this;
}

RowMutation& RowMutation::DeleteFromFamily(std::string_view family) {
  encoded_.push_back(static_cast<char>(MutationType::kDeleteFromFamily));
  PutLengthPrefixed(&encoded_, family);
  SetCount(count_ + 1);
  return *this;
}

RowMutation& RowMutation::DeleteFromRow() {
  encoded_.push_back(static_cast<char>(MutationType::kDeleteFromRow));
  SetCount(count_ + 1);
  return *this;
}

void RowMutation::Clear() {
  encoded_.resize(count_offset_ + 4);
  SetCount(0);
}

StatusOr<RowMutation> RowMutation::FromEncoded(std::string_view encoded) {
  RETURN_IF_ERROR(ValidateRowMutation(encoded));
  RowMutationReader reader(encoded);
  RowMutation m;
  m.encoded_.assign(encoded.data(), encoded.size());
  m.row_offset_ = static_cast<uint32_t>(reader.row().data() - encoded.data());
  m.row_size_ = static_cast<uint32_t>(reader.row().size());
  m.count_offset_ = m.row_offset_ + m.row_size_;
  m.count_ = reader.count();
  return m;
}

// ---------------------------------------------------------------------------------------------
// RowMutationReader

RowMutationReader::RowMutationReader(std::string_view encoded)
    : begin_(encoded.data()), pos_(encoded.data()), limit_(encoded.data() + encoded.size()) {
  if (encoded.empty()) {
    Fail(0, "empty");
    return;
  }
  if (encoded[0] != kFormatVersion) {
    Fail(0, tessera::StrCat("unknown format ", static_cast<uint8_t>(encoded[0])));
    return;
  }
  const char* p = ParseLengthPrefixed(pos_ + 1, limit_, &row_);
  if (p == nullptr) {
    Fail(1, "truncated row");
    return;
  }
  if (limit_ - p < 4) {
    Fail(p - begin_, "truncated count");
    return;
  }
  count_ = DecodeFixed32(p);
  pos_ = p + 4;
}

bool RowMutationReader::Fail(size_t offset, std::string_view what) {
  status_ = CorruptionError(kWhat, offset, what);
  pos_ = limit_ = nullptr;
  row_ = std::string_view();
  count_ = 0;
  read_ = 0;
  return false;
}

bool RowMutationReader::Next(MutationView* m) {
  if (read_ == count_) {
    if (pos_ != limit_) return Fail(pos_ - begin_, "trailing bytes");
    return false;
  }
  const char* p = pos_;
  if (p == limit_) {
    return Fail(p - begin_, tessera::StrCat("truncated: ", read_, " of ", count_, " mutations"));
  }
  const uint8_t type = static_cast<uint8_t>(*p++);
  switch (type) {
    case static_cast<uint8_t>(MutationType::kSetCell):
      if ((p = ParseLengthPrefixed(p, limit_, &m->family)) == nullptr ||
          (p = ParseLengthPrefixed(p, limit_, &m->qualifier)) == nullptr || limit_ - p < 8) {
        p = nullptr;
        break;
      }
      m->timestamp_micros = static_cast<int64_t>(DecodeFixed64(p));
      p = ParseLengthPrefixed(p + 8, limit_, &m->value);
      m->range = TimeRange();
      break;
    case static_cast<uint8_t>(MutationType::kDeleteFromColumn):
      if ((p = ParseLengthPrefixed(p, limit_, &m->family)) == nullptr ||
          (p = ParseLengthPrefixed(p, limit_, &m->qualifier)) == nullptr ||
          limit_ - p < static_cast<ptrdiff_t>(TimeRange::kEncodedSize)) {
        p = nullptr;
        break;
      }
      TimeRange::Decode(std::string_view(p, TimeRange::kEncodedSize), &m->range);
      p += TimeRange::kEncodedSize;
      m->value = std::string_view();
      m->timestamp_micros = 0;
      break;
    case static_cast<uint8_t>(MutationType::kDeleteFromFamily):
      p = ParseLengthPrefixed(p, limit_, &m->family);
      m->qualifier = m->value = std::string_view();
      m->timestamp_micros = 0;
      m->range = TimeRange();
      break;
    case static_cast<uint8_t>(MutationType::kDeleteFromRow):
      m->family = m->qualifier = m->value = std::string_view();
      m->timestamp_micros = 0;
      m->range = TimeRange();
      break;
    default:
      return Fail(pos_ - begin_, tessera::StrCat("unknown mutation type ", type));
  }
  if (p == nullptr) {
    return Fail(pos_ - begin_, tessera::StrCat("truncated mutation ", read_));
  }
  if (!m->family.empty() && std::memchr(m->family.data(), 0, m->family.size()) != nullptr) {
    status_ = absl::InvalidArgumentError(tessera::StrCat(kWhat, " at offset ", pos_ - begin_,
                                                         ": family of mutation ", read_,
                                                         " contains a 0x00 byte"));
    pos_ = limit_ = nullptr;
    count_ = read_ = 0;
    row_ = std::string_view();
    return false;
  }
  m->type = static_cast<MutationType>(type);
  pos_ = p;
  ++read_;
  return true;
}

Status ValidateRowMutation(std::string_view encoded) {
  RowMutationReader reader(encoded);
  MutationView m;
  while (reader.Next(&m)) {
  }
  return reader.status();
}

void AppendEntryForMutation(const MutationView& m, std::string* key, std::string_view* value,
                            char (&range_buf)[TimeRange::kEncodedSize]) {
  switch (m.type) {
    case MutationType::kSetCell:
      AppendCellSuffix(key, m.family, m.qualifier, m.timestamp_micros);
      *value = m.value;
      return;
    case MutationType::kDeleteFromColumn:
      AppendColumnTombstoneSuffix(key, m.family, m.qualifier);
      m.range.EncodeTo(range_buf);
      *value = std::string_view(range_buf, sizeof(range_buf));
      return;
    case MutationType::kDeleteFromFamily:
      AppendFamilyTombstoneSuffix(key, m.family);
      *value = std::string_view();
      return;
    case MutationType::kDeleteFromRow:
      key->push_back(cell_key_format::kEndOfScope);
      *value = std::string_view();
      return;
  }
}

}  // namespace tessera::model
