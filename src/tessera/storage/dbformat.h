// The engine's internal key: the caller's key (opaque bytes, ordered bytewise) followed by an
// 8-byte trailer holding the sequence number (56 bits) and the entry type (8 bits):
//
//   internal_key := user_key fixed64_le((sequence << 8) | type)
//
// Internal keys order by user key ascending, then sequence descending (newest first), then type
// descending. Every write gets a sequence number from the engine; a read at sequence S sees only
// entries with sequence <= S. The storage layer gives no meaning to entries beyond that: the
// model layer above encodes cells, tombstones and their scope in the user key itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/util/coding.h"

namespace tessera::storage {

using SequenceNumber = uint64_t;
inline constexpr SequenceNumber kMaxSequenceNumber = (uint64_t{1} << 56) - 1;
inline constexpr size_t kTrailerSize = 8;

enum class ValueType : uint8_t {
  kDeletion = 0,  // a point deletion of the user key (unused by the cell model; kept for tests)
  kValue = 1,
};
// The type to use in seek keys: sorts before every entry of the same user key and sequence.
inline constexpr ValueType kValueTypeForSeek = ValueType::kValue;

struct ParsedInternalKey {
  std::string_view user_key;
  SequenceNumber sequence = 0;
  ValueType type = ValueType::kValue;
};

inline uint64_t PackSequenceAndType(SequenceNumber seq, ValueType t) {
  return (seq << 8) | static_cast<uint8_t>(t);
}

inline void AppendInternalKey(std::string* dst, std::string_view user_key, SequenceNumber seq,
                              ValueType t) {
  dst->append(user_key.data(), user_key.size());
  PutFixed64(dst, PackSequenceAndType(seq, t));
}

inline std::string MakeInternalKey(std::string_view user_key, SequenceNumber seq, ValueType t) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, t);
  return k;
}

// Returns false when `ikey` is too short or has an unknown type.
inline bool ParseInternalKey(std::string_view ikey, ParsedInternalKey* out) {
  if (ikey.size() < kTrailerSize) return false;
  uint64_t packed = DecodeFixed64(ikey.data() + ikey.size() - kTrailerSize);
  uint8_t t = static_cast<uint8_t>(packed & 0xff);
  if (t > static_cast<uint8_t>(ValueType::kValue)) return false;
  out->user_key = ikey.substr(0, ikey.size() - kTrailerSize);
  out->sequence = packed >> 8;
  out->type = static_cast<ValueType>(t);
  return true;
}

// REQUIRES: ikey.size() >= kTrailerSize.
inline std::string_view ExtractUserKey(std::string_view ikey) {
  return ikey.substr(0, ikey.size() - kTrailerSize);
}
inline SequenceNumber ExtractSequence(std::string_view ikey) {
  return DecodeFixed64(ikey.data() + ikey.size() - kTrailerSize) >> 8;
}

}  // namespace tessera::storage
