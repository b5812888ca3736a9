// CRC-32C with the reflected polynomial 0x82F63B78. The hardware path uses the SSE4.2 crc32
// instruction (8 bytes per step); the portable path is a byte-at-a-time table. Which one runs is
// decided once, at first use, from the CPU's feature bits.
#include "tessera/util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace tessera::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const char* data,
                                                          size_t n) {
  uint64_t c = ~crc;
  const char* p = data;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p));
    ++p;
    --n;
  }
  return ~c32;
}

bool DetectHardware() { return __builtin_cpu_supports("sse4.2"); }
#else
uint32_t ExtendHardware(uint32_t crc, const char* data, size_t n) {
  return ExtendPortable(crc, data, n);
}
bool DetectHardware() { return false; }
#endif

const bool kHardware = DetectHardware();

}  // namespace

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  return kHardware ? ExtendHardware(init_crc, data, n) : ExtendPortable(init_crc, data, n);
}

bool HardwareAccelerated() { return kHardware; }

namespace internal {
uint32_t ExtendPortableForTesting(uint32_t crc, const char* data, size_t n) {
  return ExtendPortable(crc, data, n);
}
}  // namespace internal

}  // namespace tessera::crc32c
