// The number generators of YCSB's core workload: which record an operation touches, how records
// are named, how long a scan is, and what a value holds.
//
// They follow the definitions of YCSB (Cooper et al., "Benchmarking Cloud Serving Systems with
// YCSB", SoCC 2010) and of its CoreWorkload:
//
//   uniform    every record of [min, max] equally likely
//   zipfian    Gray et al.'s zipfian ("Quickly Generating Billion-Record Synthetic Databases",
//              SIGMOD 1994) with constant 0.99, *scrambled*: item i of a zipfian over 10^10
//              items is hashed onto the key space, so the popular records are spread over it
//              instead of clustering at its start
//   latest     the newest records are the most popular: (last inserted) - zipfian(record count)
//
// Records are numbered; record k is stored under KeyName(k) = "user" + the decimal of
// FnvHash64(k) (YCSB's insertorder=hashed), so consecutive inserts land all over the key space.
//
// Thread-safety: generators are not thread-safe (give each thread its own), except
// AcknowledgedCounter, which the threads of a run share.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/util/random.h"

namespace tessera::cli::ycsb {

// FNV-1a 64 over the 8 bytes of `v`, least significant first, made non-negative as Java's
// Math.abs makes it: the hash YCSB uses to scramble record numbers (so key names match YCSB's).
uint64_t FnvHash64(uint64_t v);

// Writes the row key of record `keynum` into *out: "user" + decimal(FnvHash64(keynum)).
void KeyName(uint64_t keynum, std::string* out);
std::string KeyName(uint64_t keynum);

// Uniform in [0, 1).
double NextDouble(Random* rng);

// Uniform in [min, max]. REQUIRES: min <= max.
class UniformGenerator {
 public:
  UniformGenerator(uint64_t min, uint64_t max) : min_(min), count_(max - min + 1) {}
  uint64_t Next(Random* rng) { return min_ + rng->Uniform(count_); }

 private:
  uint64_t min_;
  uint64_t count_;
};

// Zipfian over [min, max]: item min is the most popular, min+1 the next, and so on, with
// P(min + i) proportional to 1/(i+1)^theta.
class ZipfianGenerator {
 public:
  static constexpr double kZipfianConstant = 0.99;

  // REQUIRES: min <= max, 0 < theta < 1. Computes zeta(max-min+1) in O(max-min) time.
  ZipfianGenerator(uint64_t min, uint64_t max, double theta = kZipfianConstant);
  // With zeta(max-min+1, theta) already known (for item counts too large to sum).
  ZipfianGenerator(uint64_t min, uint64_t max, double theta, double zetan);

  // An item of [min, max].
  uint64_t Next(Random* rng) { return NextOf(rng, items_); }
  // An item of [min, min + item_count), for a population that changes between calls (the
  // latest distribution). zeta is brought up to date incrementally when item_count grows and
  // recomputed when it shrinks. REQUIRES: item_count >= 1.
  uint64_t NextOf(Random* rng, uint64_t item_count);

  // sum over i in [from+1, to] of 1/i^theta, added to `initial` (zeta(to) = Zeta(0, to, ..)).
  static double Zeta(uint64_t from, uint64_t to, double theta, double initial = 0);

 private:
  void SetEta();

  uint64_t base_;
  uint64_t items_;
  double theta_;
  double alpha_;
  double zeta2theta_;
  uint64_t count_for_zeta_;  // the item count zetan_ and eta_ belong to
  double zetan_;
  double eta_;
};

// YCSB's scrambled zipfian over [min, max]: min + FnvHash64(zipfian over 10^10 items) modulo
// the item count. Popularity follows the zipfian, yet popular items are scattered.
class ScrambledZipfianGenerator {
 public:
  static constexpr uint64_t kItemCount = 10'000'000'000ull;
  // zeta(10^10, 0.99), as YCSB precomputes it.
  static constexpr double kZetan = 26.46902820178302;

  // REQUIRES: min <= max.
  ScrambledZipfianGenerator(uint64_t min, uint64_t max);
  uint64_t Next(Random* rng) { return min_ + FnvHash64(zipfian_.Next(rng)) % count_; }

 private:
  uint64_t min_;
  uint64_t count_;
  ZipfianGenerator zipfian_;
};

// Hands out record numbers for inserts and knows the highest one below which every insert has
// been acknowledged, so that readers only choose records that exist (YCSB's
// AcknowledgedCounterGenerator). Thread-safe.
class AcknowledgedCounter {
 public:
  // The first Next() returns `start`; Last() is start - 1 until it is acknowledged.
  // REQUIRES: start >= 1 (a loaded table holds at least one record).
  explicit AcknowledgedCounter(uint64_t start) : next_(start), last_(start - 1) {}

  // A fresh record number to insert.
  uint64_t Next() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // Marks `v` (returned by Next()) as durably inserted.
  void Acknowledge(uint64_t v);
  // Every record number <= Last() exists.
  uint64_t Last() const { return last_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> next_;
  std::atomic<uint64_t> last_;
  absl::Mutex mu_;
  std::set<uint64_t> ahead_ ABSL_GUARDED_BY(mu_);  // acknowledged, but above a gap
};

// The latest distribution: Last() - zipfian(Last() + 1), so the most recently acknowledged
// record is the most popular and record 0 is the least. (YCSB draws from [1, Last()], never
// record 0; here every record can be chosen.)
class SkewedLatestGenerator {
 public:
  // `counter` must outlive the generator. `zetan` is ZipfianGenerator::Zeta(0, counter->Last()
  // + 1, kZipfianConstant), computed once and shared by the threads of a run.
  SkewedLatestGenerator(const AcknowledgedCounter* counter, double zetan)
      : counter_(counter),
        zipfian_(0, counter->Last(), ZipfianGenerator::kZipfianConstant, zetan) {}
  uint64_t Next(Random* rng) {
    const uint64_t last = counter_->Last();
    return last - zipfian_.NextOf(rng, last + 1);
  }

 private:
  const AcknowledgedCounter* counter_;
  ZipfianGenerator zipfian_;
};

// Field values: slices of a buffer of random printable characters, as YCSB's
// RandomByteIterator produces (letters and punctuation, not compressible to much).
class ValueGenerator {
 public:
  // REQUIRES: value_size >= 1.
  ValueGenerator(uint64_t seed, size_t value_size);
  // `value_size` bytes. The view lives as long as the generator.
  std::string_view Next();

 private:
  Random rng_;
  size_t value_size_;
  std::string buffer_;
};

}  // namespace tessera::cli::ycsb
