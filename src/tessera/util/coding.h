// Little-endian fixed-width and varint encodings (the leveldb formats), and length-prefixed
// strings. Decoders take a `std::string_view*` and advance it past what they consumed; they
// return false on truncated or malformed input and never read past the view.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tessera {

inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }  // little-endian host
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Big-endian 64-bit (memcmp order equals numeric order for unsigned values).
void EncodeBigEndian64(char* dst, uint64_t v);
uint64_t DecodeBigEndian64(const char* p);
// The same 8 bytes as a string (Bigtable's counter cells, time-sorted qualifiers).
std::string BigEndian64String(uint64_t v);

void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
// Varint length followed by the bytes.
void PutLengthPrefixed(std::string* dst, std::string_view value);

// Writes the varint to `dst` (at least 10 bytes) and returns the byte after it.
char* EncodeVarint32(char* dst, uint32_t v);
char* EncodeVarint64(char* dst, uint64_t v);
int VarintLength(uint64_t v);

bool GetFixed32(std::string_view* input, uint32_t* value);
bool GetFixed64(std::string_view* input, uint64_t* value);
bool GetVarint32(std::string_view* input, uint32_t* value);
bool GetVarint64(std::string_view* input, uint64_t* value);
bool GetLengthPrefixed(std::string_view* input, std::string_view* result);

// Pointer forms: decode from [p, limit); return the byte after the value or nullptr on error.
const char* GetVarint32Ptr(const char* p, const char* limit, uint32_t* value);
const char* GetVarint64Ptr(const char* p, const char* limit, uint64_t* value);

}  // namespace tessera
