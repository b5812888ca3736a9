#include "tessera/storage/bloom.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::storage {
namespace {

constexpr int kMaxProbes = 30;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A strong 64-bit finalizer (the splitmix64 output function).
inline uint64_t Fmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t FilterHash(std::string_view key) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const char* p = key.data();
  size_t n = key.size();
  uint64_t h = 0x243f6a8885a308d3ull ^ (static_cast<uint64_t>(n) * kMul);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian hosts only (as the rest of the format)
    h = Rotl((h ^ Fmix(w + kMul)) * kMul, 29);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    for (size_t i = 0; i < n; ++i)
      w |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
    h = Rotl((h ^ Fmix(w + kMul + n)) * kMul, 29);
  }
  return Fmix(h);
}

BloomFilterBuilder::BloomFilterBuilder(int bits_per_key)
    : bits_per_key_(std::clamp(bits_per_key, 1, 40)),
      num_probes_(std::clamp(static_cast<int>(std::lround(bits_per_key_ * 0.69)), 1, kMaxProbes)) {}

void BloomFilterBuilder::Finish(std::string* dst) {
  // At least 64 bits, so that a tiny filter's false-positive rate stays sane.
  const uint64_t bits = std::max<uint64_t>(hashes_.size() * bits_per_key_, 64);
  const uint64_t bytes = (bits + 7) / 8;
  const uint64_t num_bits = bytes * 8;
  const size_t start = dst->size();
  dst->resize(start + bytes, '\0');
  char* array = dst->data() + start;
  for (uint64_t h : hashes_) {
    const uint64_t delta = Rotl(h, 32);
    for (int i = 0; i < num_probes_; ++i) {
      const uint64_t bit = h % num_bits;
      array[bit / 8] |= static_cast<char>(1 << (bit % 8));
      h += delta;
    }
  }
  dst->push_back(static_cast<char>(num_probes_));
  hashes_.clear();
}

BloomFilterReader::BloomFilterReader(std::string_view filter) {
  if (filter.size() < 2) return;
  const int probes = static_cast<uint8_t>(filter.back());
  if (probes < 1 || probes > kMaxProbes) return;
  bits_ = filter.data();
  num_bits_ = static_cast<uint64_t>(filter.size() - 1) * 8;
  num_probes_ = probes;
}

bool BloomFilterReader::KeyMayMatch(std::string_view key) const {
  if (num_probes_ == 0) return true;
  uint64_t h = FilterHash(key);
  const uint64_t delta = Rotl(h, 32);
  for (int i = 0; i < num_probes_; ++i) {
    const uint64_t bit = h % num_bits_;
    if ((bits_[bit / 8] & (1 << (bit % 8))) == 0) return false;
    h += delta;
  }
  return true;
}

}  // namespace tessera::storage
