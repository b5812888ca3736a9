#include "tessera/util/random.h"

#include <chrono>
#include <cstdlib>
#include <string>

namespace tessera {
namespace {

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Random::Random(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = SplitMix64(&x);
}

uint64_t Random::Next64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Random::Uniform(uint64_t n) {
  // Multiply-shift mapping: unbiased enough for tests and workloads.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next64()) * n) >> 64);
}

uint64_t Random::Skewed(int max_log) {
  int base = static_cast<int>(Uniform(max_log + 1));
  return base >= 64 ? Next64() : Uniform(uint64_t{1} << base);
}

std::string Random::Bytes(size_t len) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>(Next64() & 0xff);
  return s;
}

uint64_t TestSeed() {
  if (const char* env = std::getenv("TESSERA_SEED")) {
    return std::strtoull(env, nullptr, 10);
  }
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) *
         2654435761u;
}

}  // namespace tessera
