// Cell key encoding; the format is described in cell_key.h and docs/data_model.md.
#include "tessera/model/cell_key.h"

#include <cstring>
#include <limits>

#include "tessera/util/coding.h"
#include "tessera/util/status.h"

namespace tessera::model {

namespace f = cell_key_format;

namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;

// Finds the first 0x00 byte in data[pos, n); returns n if none.
inline size_t FindZero(const char* data, size_t pos, size_t n) {
  if (pos >= n) return n;  // also keeps a null `data` away from memchr
  const void* p = std::memchr(data + pos, 0, n - pos);
  return p == nullptr ? n : static_cast<size_t>(static_cast<const char*>(p) - data);
}

// Number of 0x00 bytes in `value`.
inline size_t CountZeros(std::string_view value) {
  size_t zeros = 0;
  const char* data = value.data();
  const size_t n = value.size();
  for (size_t i = FindZero(data, 0, n); i < n; i = FindZero(data, i + 1, n)) ++zeros;
  return zeros;
}

inline size_t EscapedSize(std::string_view value, size_t zeros) { return value.size() + zeros + 2; }

// Writes esc(value) at `dst`, which has room for EscapedSize(value, zeros) bytes; returns the
// byte after it.
inline char* WriteEscaped(char* dst, std::string_view value, size_t zeros) {
  if (zeros == 0) {
    if (!value.empty()) std::memcpy(dst, value.data(), value.size());
    dst += value.size();
  } else {
    for (char c : value) {
      *dst++ = c;
      if (c == f::kEscape) *dst++ = f::kEscapedZero;
    }
  }
  dst[0] = f::kEscape;
  dst[1] = f::kTerminator;
  return dst + 2;
}

inline char* WriteBytes(char* dst, std::string_view bytes) {
  if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
  return dst + bytes.size();
}

// Grows `dst` by `n` bytes and returns where they start.
inline char* Grow(std::string* dst, size_t n) {
  const size_t old = dst->size();
  dst->resize(old + n);
  return dst->data() + old;
}

// The bytes after the row part, for each kind (family_zeros is always 0: REQUIRES no 0x00).
inline size_t FamilyTombstoneSuffixSize(std::string_view family) { return family.size() + 3; }
inline char* WriteFamilyTombstoneSuffix(char* p, std::string_view family) {
  *p++ = f::kNested;
  p = WriteBytes(p, family);
  *p++ = '\0';
  *p++ = f::kEndOfScope;
  return p;
}

inline size_t ColumnSuffixSize(std::string_view family, std::string_view qualifier,
                               size_t qualifier_zeros) {
  return 1 + family.size() + 2 + EscapedSize(qualifier, qualifier_zeros);
}
// Writes "0x02 family 0x00 0x02 esc(qualifier)".
inline char* WriteColumnSuffix(char* p, std::string_view family, std::string_view qualifier,
                               size_t qualifier_zeros) {
  *p++ = f::kNested;
  p = WriteBytes(p, family);
  *p++ = '\0';
  *p++ = f::kNested;
  return WriteEscaped(p, qualifier, qualifier_zeros);
}

constexpr size_t kCellTailSize = 1 + f::kTimestampSize;
inline char* WriteCellTail(char* p, int64_t timestamp_micros) {
  *p++ = f::kNested;
  const uint64_t be = __builtin_bswap64(EncodeTimestamp(timestamp_micros));  // little-endian host
  std::memcpy(p, &be, sizeof(be));
  return p + sizeof(be);
}

// Parses an escaped value starting at *pos; on success leaves *pos just past its terminator.
inline bool SkipEscaped(const char* data, size_t n, size_t* pos, bool* escaped) {
  size_t i = *pos;
  while (true) {
    i = FindZero(data, i, n);
    if (i + 1 >= n) return false;  // no terminator, or a lone 0x00 at the end
    char next = data[i + 1];
    if (next == f::kTerminator) {
      *pos = i + 2;
      return true;
    }
    if (next != f::kEscapedZero) return false;
    *escaped = true;
    i += 2;
  }
}

}  // namespace

std::string DisplayBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    }
  }
  return out;
}

std::string_view CellKindName(CellKind kind) {
  switch (kind) {
    case CellKind::kRowTombstone:
      return "RowTombstone";
    case CellKind::kFamilyTombstone:
      return "FamilyTombstone";
    case CellKind::kColumnTombstone:
      return "ColumnTombstone";
    case CellKind::kCell:
      return "Cell";
  }
  return "Unknown";
}

void AppendEscaped(std::string* dst, std::string_view value) {
  const size_t zeros = CountZeros(value);
  WriteEscaped(Grow(dst, EscapedSize(value, zeros)), value, zeros);
}

uint64_t EncodeTimestamp(int64_t timestamp_micros) {
  return ~(static_cast<uint64_t>(timestamp_micros) ^ kSignBit);
}

int64_t DecodeTimestamp(uint64_t encoded) { return static_cast<int64_t>(~encoded ^ kSignBit); }

void AppendFamilyTombstoneSuffix(std::string* dst, std::string_view family) {
  WriteFamilyTombstoneSuffix(Grow(dst, FamilyTombstoneSuffixSize(family)), family);
}

void AppendColumnTombstoneSuffix(std::string* dst, std::string_view family,
                                 std::string_view qualifier) {
  const size_t qz = CountZeros(qualifier);
  char* p = Grow(dst, ColumnSuffixSize(family, qualifier, qz) + 1);
  p = WriteColumnSuffix(p, family, qualifier, qz);
  *p = f::kEndOfScope;
}

void AppendCellSuffix(std::string* dst, std::string_view family, std::string_view qualifier,
                      int64_t timestamp_micros) {
  const size_t qz = CountZeros(qualifier);
  char* p = Grow(dst, ColumnSuffixSize(family, qualifier, qz) + kCellTailSize);
  p = WriteColumnSuffix(p, family, qualifier, qz);
  WriteCellTail(p, timestamp_micros);
}

void AppendRowTombstoneKey(std::string* dst, std::string_view row) {
  const size_t rz = CountZeros(row);
  char* p = Grow(dst, EscapedSize(row, rz) + 1);
  p = WriteEscaped(p, row, rz);
  *p = f::kEndOfScope;
}

void AppendFamilyTombstoneKey(std::string* dst, std::string_view row, std::string_view family) {
  const size_t rz = CountZeros(row);
  char* p = Grow(dst, EscapedSize(row, rz) + FamilyTombstoneSuffixSize(family));
  p = WriteEscaped(p, row, rz);
  WriteFamilyTombstoneSuffix(p, family);
}

void AppendColumnTombstoneKey(std::string* dst, std::string_view row, std::string_view family,
                              std::string_view qualifier) {
  const size_t rz = CountZeros(row);
  const size_t qz = CountZeros(qualifier);
  char* p = Grow(dst, EscapedSize(row, rz) + ColumnSuffixSize(family, qualifier, qz) + 1);
  p = WriteEscaped(p, row, rz);
  p = WriteColumnSuffix(p, family, qualifier, qz);
  *p = f::kEndOfScope;
}

void AppendCellKey(std::string* dst, std::string_view row, std::string_view family,
                   std::string_view qualifier, int64_t timestamp_micros) {
  const size_t rz = CountZeros(row);
  const size_t qz = CountZeros(qualifier);
  char* p =
      Grow(dst, EscapedSize(row, rz) + ColumnSuffixSize(family, qualifier, qz) + kCellTailSize);
  p = WriteEscaped(p, row, rz);
  p = WriteColumnSuffix(p, family, qualifier, qz);
  WriteCellTail(p, timestamp_micros);
}

void AppendRowPrefix(std::string* dst, std::string_view row) { AppendEscaped(dst, row); }

void AppendFamilyPrefix(std::string* dst, std::string_view row, std::string_view family) {
  AppendEscaped(dst, row);
  dst->push_back(f::kNested);
  dst->append(family.data(), family.size());
  dst->push_back('\0');
}

void AppendColumnPrefix(std::string* dst, std::string_view row, std::string_view family,
                        std::string_view qualifier) {
  AppendFamilyPrefix(dst, row, family);
  dst->push_back(f::kNested);
  AppendEscaped(dst, qualifier);
}

std::string EncodeRowPrefix(std::string_view row) {
  std::string out;
  out.reserve(row.size() + 2);
  AppendRowPrefix(&out, row);
  return out;
}

std::string EncodeFamilyPrefix(std::string_view row, std::string_view family) {
  std::string out;
  out.reserve(row.size() + family.size() + 4);
  AppendFamilyPrefix(&out, row, family);
  return out;
}

std::string EncodeColumnPrefix(std::string_view row, std::string_view family,
                               std::string_view qualifier) {
  std::string out;
  AppendColumnPrefix(&out, row, family, qualifier);
  return out;
}

std::string ScopeLimit(std::string_view scope_prefix) {
  std::string out;
  out.reserve(scope_prefix.size() + 1);
  out.append(scope_prefix.data(), scope_prefix.size());
  out.push_back(f::kScopeLimit);
  return out;
}

bool ParseCellKeyLayout(std::string_view key, CellKeyLayout* layout) {
  const char* data = key.data();
  const size_t n = key.size();
  if (n > std::numeric_limits<uint32_t>::max()) return false;
  size_t pos = 0;
  layout->row_escaped = false;
  layout->qualifier_escaped = false;
  layout->family_end = 0;
  layout->column_end = 0;
  layout->timestamp_micros = 0;

  if (!SkipEscaped(data, n, &pos, &layout->row_escaped)) return false;
  layout->row_end = static_cast<uint32_t>(pos);
  if (pos >= n) return false;
  char tag = data[pos++];
  if (tag == f::kEndOfScope) {
    layout->kind = CellKind::kRowTombstone;
    return pos == n;
  }
  if (tag != f::kNested) return false;

  size_t family_zero = FindZero(data, pos, n);
  if (family_zero == n) return false;
  pos = family_zero + 1;
  layout->family_end = static_cast<uint32_t>(pos);
  if (pos >= n) return false;
  tag = data[pos++];
  if (tag == f::kEndOfScope) {
    layout->kind = CellKind::kFamilyTombstone;
    return pos == n;
  }
  if (tag != f::kNested) return false;

  if (!SkipEscaped(data, n, &pos, &layout->qualifier_escaped)) return false;
  layout->column_end = static_cast<uint32_t>(pos);
  if (pos >= n) return false;
  tag = data[pos++];
  if (tag == f::kEndOfScope) {
    layout->kind = CellKind::kColumnTombstone;
    return pos == n;
  }
  if (tag != f::kNested || n - pos != f::kTimestampSize) return false;
  layout->kind = CellKind::kCell;
  layout->timestamp_micros = DecodeTimestamp(DecodeBigEndian64(data + pos));
  return true;
}

namespace {

// Unescapes a value known to be well-formed and to contain escapes.
void UnescapeSlow(std::string_view escaped, std::string* out) {
  out->clear();
  const char* data = escaped.data();
  const size_t n = escaped.size() - 2;  // drop the terminator
  size_t start = 0;
  while (true) {
    size_t zero = FindZero(data, start, n);
    out->append(data + start, zero - start);
    if (zero >= n) break;
    out->push_back('\0');
    start = zero + 2;
  }
}

}  // namespace

bool Unescape(std::string_view escaped, std::string_view* value, std::string* scratch) {
  size_t pos = 0;
  bool has_escapes = false;
  if (!SkipEscaped(escaped.data(), escaped.size(), &pos, &has_escapes) || pos != escaped.size()) {
    return false;
  }
  if (!has_escapes) {
    *value = escaped.substr(0, escaped.size() - 2);
  } else {
    UnescapeSlow(escaped, scratch);
    *value = *scratch;
  }
  return true;
}

bool DecodeCellKey(std::string_view key, CellKeyView* out, std::string* row_scratch,
                   std::string* qualifier_scratch) {
  CellKeyLayout layout;
  if (!ParseCellKeyLayout(key, &layout)) return false;
  DecodeCellKey(key, layout, out, row_scratch, qualifier_scratch);
  return true;
}

void DecodeCellKey(std::string_view key, const CellKeyLayout& layout, CellKeyView* out,
                   std::string* row_scratch, std::string* qualifier_scratch) {
  out->kind = layout.kind;
  std::string_view row_part = key.substr(0, layout.row_end);
  if (layout.row_escaped) {
    UnescapeSlow(row_part, row_scratch);
    out->row = *row_scratch;
  } else {
    out->row = row_part.substr(0, row_part.size() - 2);
  }
  out->family = layout.kind == CellKind::kRowTombstone ? std::string_view() : layout.family(key);
  out->qualifier = std::string_view();
  out->timestamp_micros = layout.timestamp_micros;
  if (layout.kind == CellKind::kColumnTombstone || layout.kind == CellKind::kCell) {
    std::string_view qual_part =
        key.substr(layout.family_end + 1, layout.column_end - layout.family_end - 1);
    if (layout.qualifier_escaped) {
      UnescapeSlow(qual_part, qualifier_scratch);
      out->qualifier = *qualifier_scratch;
    } else {
      out->qualifier = qual_part.substr(0, qual_part.size() - 2);
    }
  }
}

std::string_view RowPrefix(std::string_view key) {
  const char* data = key.data();
  const size_t n = key.size();
  size_t i = 0;
  while (true) {
    i = FindZero(data, i, n);
    if (i + 1 >= n) return key;
    if (data[i + 1] == f::kTerminator) return key.substr(0, i + 2);
    i += 2;
  }
}

// ---------------------------------------------------------------------------------------------
// CellKey

CellKey CellKey::RowTombstone(std::string row) {
  CellKey k;
  k.kind = CellKind::kRowTombstone;
  k.row = std::move(row);
  return k;
}

CellKey CellKey::FamilyTombstone(std::string row, std::string family) {
  CellKey k;
  k.kind = CellKind::kFamilyTombstone;
  k.row = std::move(row);
  k.family = std::move(family);
  return k;
}

CellKey CellKey::ColumnTombstone(std::string row, std::string family, std::string qualifier) {
  CellKey k;
  k.kind = CellKind::kColumnTombstone;
  k.row = std::move(row);
  k.family = std::move(family);
  k.qualifier = std::move(qualifier);
  return k;
}

CellKey CellKey::Cell(std::string row, std::string family, std::string qualifier,
                      int64_t timestamp_micros) {
  CellKey k;
  k.kind = CellKind::kCell;
  k.row = std::move(row);
  k.family = std::move(family);
  k.qualifier = std::move(qualifier);
  k.timestamp_micros = timestamp_micros;
  return k;
}

void CellKey::AppendTo(std::string* dst) const {
  switch (kind) {
    case CellKind::kRowTombstone:
      AppendRowTombstoneKey(dst, row);
      return;
    case CellKind::kFamilyTombstone:
      AppendFamilyTombstoneKey(dst, row, family);
      return;
    case CellKind::kColumnTombstone:
      AppendColumnTombstoneKey(dst, row, family, qualifier);
      return;
    case CellKind::kCell:
      AppendCellKey(dst, row, family, qualifier, timestamp_micros);
      return;
  }
}

std::string CellKey::Encode() const {
  std::string out;
  AppendTo(&out);
  return out;
}

bool CellKey::Decode(std::string_view key, CellKey* out) {
  CellKeyView view;
  std::string row_scratch, qualifier_scratch;
  if (!DecodeCellKey(key, &view, &row_scratch, &qualifier_scratch)) return false;
  out->kind = view.kind;
  out->row.assign(view.row);
  out->family.assign(view.family);
  out->qualifier.assign(view.qualifier);
  out->timestamp_micros = view.timestamp_micros;
  return true;
}

std::string CellKey::DebugString() const {
  std::string out = tessera::StrCat(CellKindName(kind), "(\"", DisplayBytes(row), "\"");
  if (kind != CellKind::kRowTombstone) out += tessera::StrCat(", ", DisplayBytes(family));
  if (kind == CellKind::kColumnTombstone || kind == CellKind::kCell) {
    out += tessera::StrCat(":\"", DisplayBytes(qualifier), "\"");
  }
  if (kind == CellKind::kCell) out += tessera::StrCat(" @", timestamp_micros);
  out.push_back(')');
  return out;
}

namespace {

std::strong_ordering CompareBytes(std::string_view a, std::string_view b) {
  int c = a.compare(b);
  return c < 0 ? std::strong_ordering::less
               : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
}

}  // namespace

std::strong_ordering CellKey::operator<=>(const CellKey& other) const {
  if (auto c = CompareBytes(row, other.row); c != 0) return c;
  // Within a row: the row tombstone first.
  bool a_row = kind == CellKind::kRowTombstone, b_row = other.kind == CellKind::kRowTombstone;
  if (a_row || b_row) return b_row <=> a_row;
  if (auto c = CompareBytes(family, other.family); c != 0) return c;
  bool a_fam = kind == CellKind::kFamilyTombstone;
  bool b_fam = other.kind == CellKind::kFamilyTombstone;
  if (a_fam || b_fam) return b_fam <=> a_fam;
  if (auto c = CompareBytes(qualifier, other.qualifier); c != 0) return c;
  bool a_col = kind == CellKind::kColumnTombstone;
  bool b_col = other.kind == CellKind::kColumnTombstone;
  if (a_col || b_col) return b_col <=> a_col;
  return other.timestamp_micros <=> timestamp_micros;  // newest first
}

}  // namespace tessera::model
