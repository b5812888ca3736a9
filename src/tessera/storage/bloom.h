// A bloom filter over byte strings, stored as one block in a table (the whole-file filter).
//
//   filter := bits:byte[m]  num_probes:uint8
//
// A key sets `num_probes` bits chosen by double hashing of FilterHash(key): with h its 64-bit
// hash and d = h rotated by 32 bits, probe i tests bit (h + i*d) mod (8m). Bit j lives in byte
// j/8 at position j%8. FilterHash is part of the format and must never change.
//
// BloomFilterBuilder sizes the filter at bits_per_key bits per added key (10 gives ~1% false
// positives) with num_probes = round(bits_per_key * ln 2).
//
// Thread-safety: the builder is used by one thread; a reader is immutable and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::storage {

// The filter's 64-bit hash (persisted: never change it).
uint64_t FilterHash(std::string_view key);

class BloomFilterBuilder {
 public:
  // `bits_per_key` is clamped to [1, 40].
  explicit BloomFilterBuilder(int bits_per_key);

  // Adds `key` to the filter. Adding a key twice only costs space.
  void AddKey(std::string_view key) { hashes_.push_back(FilterHash(key)); }
  size_t num_keys() const { return hashes_.size(); }

  // Appends the filter of every key added so far to `dst` and forgets the keys.
  void Finish(std::string* dst);

 private:
  const int bits_per_key_;
  const int num_probes_;
  std::vector<uint64_t> hashes_;  // 8 bytes per key until Finish, not the keys themselves
};

class BloomFilterReader {
 public:
  // `filter` must outlive the reader. A filter that is too short or uses an unknown number of
  // probes (a newer encoding) matches every key.
  explicit BloomFilterReader(std::string_view filter);

  // False only when `key` was certainly not added.
  bool KeyMayMatch(std::string_view key) const;

 private:
  const char* bits_ = nullptr;
  uint64_t num_bits_ = 0;
  int num_probes_ = 0;  // 0: match everything
};

}  // namespace tessera::storage
