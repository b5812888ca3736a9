// A small, fast, seeded pseudo-random generator (splitmix64 seeding a xoshiro256**).
// Deterministic for a given seed on every platform; not for cryptography.
//
// Thread-safety: not thread-safe; give each thread its own.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

class Random {
 public:
  explicit Random(uint64_t seed);
  uint64_t Next64();
  uint32_t Next32() { return static_cast<uint32_t>(Next64() >> 32); }
  // Uniform in [0, n). REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n);
  // True with probability 1/n. REQUIRES: n > 0.
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }
  // Picks a base uniformly from [0, max_log] and returns a uniform number in [0, 2^base):
  // small values are much more likely than large ones.
  uint64_t Skewed(int max_log);
  // `len` random bytes (any value 0..255).
  std::string Bytes(size_t len);

 private:
  uint64_t s_[4];
};

// A seed for tests: the TESSERA_SEED environment variable when set, else a fresh one from the
// time. Tests print it on failure so a run can be replayed.
uint64_t TestSeed();

}  // namespace tessera
