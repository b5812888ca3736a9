// CRC-32C (Castagnoli), the checksum on every stored record and block. Uses the SSE4.2 crc32
// instruction when the CPU has it (checked once at run time), a table otherwise; both give the
// same values (tested against the RFC 3720 vectors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera::crc32c {

// CRC of concat(A, data[0,n)) where `init_crc` is the CRC of A.
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// Stored CRCs are masked, so that a CRC over data that itself holds CRCs stays strong
// (the leveldb convention).
inline uint32_t Mask(uint32_t crc) {
  constexpr uint32_t kMaskDelta = 0xa282ead8ul;
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}
inline uint32_t Unmask(uint32_t masked) {
  constexpr uint32_t kMaskDelta = 0xa282ead8ul;
  uint32_t rot = masked - kMaskDelta;
  return ((rot >> 17) | (rot << 15));
}

// True when the hardware path is in use (for tests and logs).
bool HardwareAccelerated();

}  // namespace tessera::crc32c
