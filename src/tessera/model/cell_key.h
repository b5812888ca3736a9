// The one encoding of a cell key: how a (row, family, qualifier, timestamp) cell and the three
// kinds of tombstone become an opaque storage key, such that the bytewise (memcmp) order of the
// encodings is the model order. The storage engine orders keys bytewise and knows nothing else;
// everything that gives those bytes meaning lives here. See docs/data_model.md.
//
//   esc(x)          := x with every 0x00 byte written as 0x00 0xFF, then the terminator 0x00 0x01
//   row part        := esc(row)
//   RowTombstone    := row part 0x01
//   FamilyTombstone := row part 0x02 family 0x00 0x01
//   ColumnTombstone := row part 0x02 family 0x00 0x02 esc(qualifier) 0x01
//   Cell            := row part 0x02 family 0x00 0x02 esc(qualifier) 0x02 ts'
//   ts'             := fixed64_big_endian(~(uint64(timestamp) ^ 0x8000000000000000))
//
// Family names never contain 0x00 (schema.h restricts them to [-_.a-zA-Z0-9]). The timestamp
// transform maps int64 order to reversed unsigned order, so newer cells (larger timestamps,
// negative ones included) sort first. Within a row the order is therefore: the row tombstone;
// then for each family by name its family tombstone, then for each qualifier (bytewise) its
// column tombstones, then its cells newest first. Rows order bytewise, a proper prefix first.
//
// Scopes. Every key starts with the encoded prefix of each scope that contains it:
//   row scope    := row part                                  (RowPrefix)
//   family scope := row part 0x02 family 0x00                 (FamilyPrefix)
//   column scope := row part 0x02 family 0x00 0x02 esc(qual)  (ColumnPrefix)
// and every key of a scope sorts in [scope prefix, scope prefix + 0x03) (ScopeLimit), with no key
// of another scope in between. Row-range boundaries of tablets are row prefixes.
//
// Thread-safety: everything here is a pure function of its arguments.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::model {

enum class CellKind : uint8_t {
  kRowTombstone,
  kFamilyTombstone,
  kColumnTombstone,
  kCell,
};

std::string_view CellKindName(CellKind kind);

// Printable form of arbitrary bytes for messages and tools: printable ASCII as is, everything
// else (and '\\', '"') as \xNN.
std::string DisplayBytes(std::string_view bytes);

// Bytes of the encoding (exposed for tests and the format doc; code should use the functions).
namespace cell_key_format {
inline constexpr char kEscape = '\x00';
inline constexpr char kEscapedZero = '\xff';  // 0x00 0xFF is a 0x00 byte of the value
inline constexpr char kTerminator = '\x01';   // 0x00 0x01 ends an escaped value
inline constexpr char kEndOfScope = '\x01';   // a tombstone of the enclosing scope
inline constexpr char kNested = '\x02';       // a narrower scope or a cell follows
inline constexpr char kScopeLimit = '\x03';   // scope prefix + this > every key of the scope
inline constexpr size_t kTimestampSize = 8;
}  // namespace cell_key_format

// ---------------------------------------------------------------------------------------------
// Encoding. Every function appends to `dst` (it does not clear it).
// REQUIRES: `family` contains no 0x00 byte.

void AppendRowTombstoneKey(std::string* dst, std::string_view row);
void AppendFamilyTombstoneKey(std::string* dst, std::string_view row, std::string_view family);
void AppendColumnTombstoneKey(std::string* dst, std::string_view row, std::string_view family,
                              std::string_view qualifier);
void AppendCellKey(std::string* dst, std::string_view row, std::string_view family,
                   std::string_view qualifier, int64_t timestamp_micros);

// The pieces, for callers that build many keys of one row (row_mutation.cc) or seek keys.
// AppendEscaped appends esc(value) including its terminator.
void AppendEscaped(std::string* dst, std::string_view value);
// Appends what follows the row part in a family tombstone key / a column tombstone key / a cell
// key.
void AppendFamilyTombstoneSuffix(std::string* dst, std::string_view family);
void AppendColumnTombstoneSuffix(std::string* dst, std::string_view family,
                                 std::string_view qualifier);
void AppendCellSuffix(std::string* dst, std::string_view family, std::string_view qualifier,
                      int64_t timestamp_micros);

// The 8 bytes that end a cell key, and back.
uint64_t EncodeTimestamp(int64_t timestamp_micros);
int64_t DecodeTimestamp(uint64_t encoded);

// Scope prefixes (see above), appended to `dst`, and as fresh strings.
void AppendRowPrefix(std::string* dst, std::string_view row);
void AppendFamilyPrefix(std::string* dst, std::string_view row, std::string_view family);
void AppendColumnPrefix(std::string* dst, std::string_view row, std::string_view family,
                        std::string_view qualifier);
std::string EncodeRowPrefix(std::string_view row);
std::string EncodeFamilyPrefix(std::string_view row, std::string_view family);
std::string EncodeColumnPrefix(std::string_view row, std::string_view family,
                               std::string_view qualifier);
// `scope_prefix` + 0x03: greater than every key in the scope and not greater than any key after
// it, so [prefix, ScopeLimit(prefix)) is exactly the scope. Not itself a decodable key.
std::string ScopeLimit(std::string_view scope_prefix);

// The smallest key of the row: EncodeRowPrefix(row) (the row tombstone key is prefix + 0x01).
// The tablet holding rows [start, end) holds keys [EncodeRowPrefix(start), EncodeRowPrefix(end)).

// ---------------------------------------------------------------------------------------------
// Decoding.

// Where the parts of an encoded key end, without unescaping anything. Offsets are into the key.
struct CellKeyLayout {
  CellKind kind = CellKind::kCell;
  // key[0, row_end) is the row part (RowPrefix). Always set.
  uint32_t row_end = 0;
  // key[0, family_end) is the family scope prefix (ends with the family's 0x00); the family
  // name is key[row_end + 1, family_end - 1). Set unless kind == kRowTombstone.
  uint32_t family_end = 0;
  // key[0, column_end) is the column scope prefix (ends with the qualifier's terminator); the
  // escaped qualifier is key[family_end + 1, column_end). Set for kColumnTombstone and kCell.
  uint32_t column_end = 0;
  // Whether the row / the qualifier contained a 0x00 byte (so that unescaping copies).
  bool row_escaped = false;
  bool qualifier_escaped = false;
  // Set for kCell only.
  int64_t timestamp_micros = 0;

  std::string_view family(std::string_view key) const {
    return key.substr(row_end + 1, family_end - row_end - 2);
  }
};

// Parses the structure of `key`. Returns false if it is not a well-formed cell key (truncated,
// bad escape, trailing bytes, longer than 4 GiB); never reads outside `key`.
bool ParseCellKeyLayout(std::string_view key, CellKeyLayout* layout);

// A decoded key. The views point into the key passed to DecodeCellKey when the part needed no
// unescaping, and into the caller's scratch strings otherwise: they live as long as both.
struct CellKeyView {
  CellKind kind = CellKind::kCell;
  std::string_view row;
  std::string_view family;       // empty for kRowTombstone
  std::string_view qualifier;    // empty unless kColumnTombstone or kCell
  int64_t timestamp_micros = 0;  // 0 unless kCell
};

// Decodes `key`. Returns false on malformed input (never crashes). The scratch strings are only
// written when the row or qualifier contains 0x00 bytes.
bool DecodeCellKey(std::string_view key, CellKeyView* out, std::string* row_scratch,
                   std::string* qualifier_scratch);
// The same for a key already parsed: `layout` is what ParseCellKeyLayout(key) filled in when it
// returned true. Cannot fail.
void DecodeCellKey(std::string_view key, const CellKeyLayout& layout, CellKeyView* out,
                   std::string* row_scratch, std::string* qualifier_scratch);

// Undoes AppendEscaped on a full escaped value including its terminator. Returns false if
// malformed. Fast path: returns a view of `escaped` when no 0x00 occurs in the value.
bool Unescape(std::string_view escaped, std::string_view* value, std::string* scratch);

// The row part of an encoded key (esc(row) including its terminator): the bloom-filter key and
// the unit of tablet row ranges. For input without a row terminator, returns `key` whole.
std::string_view RowPrefix(std::string_view key);

// ---------------------------------------------------------------------------------------------
// An owning, decoded cell key; convenient for tests, tools and the shell, not for hot paths.
struct CellKey {
  CellKind kind = CellKind::kCell;
  std::string row;
  std::string family;
  std::string qualifier;
  int64_t timestamp_micros = 0;

  static CellKey RowTombstone(std::string row);
  static CellKey FamilyTombstone(std::string row, std::string family);
  static CellKey ColumnTombstone(std::string row, std::string family, std::string qualifier);
  static CellKey Cell(std::string row, std::string family, std::string qualifier,
                      int64_t timestamp_micros);

  void AppendTo(std::string* dst) const;
  std::string Encode() const;
  // Returns false on malformed input.
  static bool Decode(std::string_view key, CellKey* out);
  std::string DebugString() const;

  // The model order: row, then row tombstone first, then family, family tombstone first, then
  // qualifier, column tombstone first, then timestamp descending. Agrees with comparing
  // encodings. Fields irrelevant to the kind are ignored.
  std::strong_ordering operator<=>(const CellKey& other) const;
  bool operator==(const CellKey& other) const { return (*this <=> other) == 0; }
};

}  // namespace tessera::model
