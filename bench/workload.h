// The db_bench-style workloads of tessera_engine_bench, written once against KvAdapter.
//
// Keys are 16-byte zero-padded decimal numbers in [0, num) ("0000000000001234"). Values come
// from ValueGenerator: `value_size` bytes that a fast LZ coder compresses to about half.
//
//   fillseq      Put keys 0, 1, ..., num-1 in order
//   fillrandom   Put num keys drawn uniformly from [0, num)
//   overwrite    the same as fillrandom; named apart because it runs on a filled database
//   fillsync     fillrandom with sync_num operations, each durable before it returns
//   readrandom   Get num keys drawn uniformly from [0, num)
//   readmissing  Get num keys that do not exist but sort among those that do (key + ".")
//   seekrandom   num times: seek to a random key, then read it and the 10 rows after it
//   readseq      read every row in key order (one op per row)
//
// With `threads` > 1 the operations of a benchmark are divided among the threads (each thread
// draws its own random keys; fillseq and readseq give each thread a contiguous key range), so
// a benchmark always does the same total work.
//
// Thread-safety: RunBenchmark and LoadDatabase start and join their own threads; the
// functions may not run concurrently on the same adapter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv_adapter.h"
#include "tessera/util/random.h"
#include "tessera/util/status.h"

namespace tessera::bench {

inline constexpr size_t kKeySize = 16;

// The 16-byte key of number `k` (k < 10^16).
std::string MakeKey(uint64_t k);

// Slices of one pre-generated buffer of pseudo-random printable text in which each 100-byte
// stretch is half fresh random characters and half a repeat of them, so values compress to
// ~50% (as db_bench's values do). Deterministic for a seed. Not thread-safe.
class ValueGenerator {
 public:
  explicit ValueGenerator(uint64_t seed, size_t max_value_size = 100);
  // The returned view lives as long as the generator. REQUIRES: size <= max_value_size.
  std::string_view Next(size_t size);

 private:
  std::string data_;
  size_t pos_ = 0;
};

// The distinct keys of [0, num) written so far, one bit each: what the database should hold,
// for its space amplification. Thread-safe.
class KeySet {
 public:
  explicit KeySet(uint64_t num);
  // REQUIRES: k < num.
  void Add(uint64_t k);
  uint64_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  std::atomic<uint64_t> size_{0};
};

// Sizes of a database's files and the amplification figures derived from them, cumulative since
// the database was created.
struct Amplification {
  uint64_t user_bytes_written = 0;  // keys + values of every put (untimed loads included)
  uint64_t live_user_bytes = 0;     // distinct keys written x (key + value size)
  FileWrites file_writes;           // by the engine, into sorted files
  uint64_t sorted_file_bytes = 0;   // the sorted files in the directory now (*.sst, *.ldb)
  uint64_t disk_bytes = 0;          // everything in the directory (logs too), as allocated

  double write_amplification() const { return Over(file_writes.total_bytes, user_bytes_written); }
  std::optional<double> compaction_write_amplification() const {
    if (!file_writes.compaction_bytes.has_value()) return std::nullopt;
    return Over(*file_writes.compaction_bytes, user_bytes_written);
  }
  double space_amplification() const { return Over(disk_bytes, live_user_bytes); }

 private:
  static double Over(uint64_t a, uint64_t b) { return b > 0 ? static_cast<double>(a) / b : 0; }
};

// The sorted-file bytes (files named *.sst or *.ldb) and all bytes allocated to files under
// `dir`, recursively, into *sorted and *disk.
Status MeasureDirectory(const std::string& dir, uint64_t* sorted, uint64_t* disk);

struct WorkloadOptions {
  uint64_t num = 1000000;     // key space and operations per benchmark
  uint64_t sync_num = 10000;  // operations of fillsync
  size_t value_size = 100;
  int threads = 1;
  uint64_t seed = 301;        // the same seed gives every engine the same keys and values
  KeySet* written = nullptr;  // when set, write benchmarks and LoadDatabase add their keys
};

// What a benchmark's operations do.
enum class Access {
  kSequentialWrite,  // fillseq
  kRandomWrite,      // fillrandom, overwrite, fillsync
  kRandomRead,       // readrandom
  kMissingRead,      // readmissing
  kSeek,             // seekrandom
  kSequentialRead,   // readseq
};

struct BenchmarkInfo {
  std::string_view name;
  Access access;
  bool sync;  // runs on a database opened with KvOptions::sync, with sync_num operations

  bool writes() const {
    return access == Access::kSequentialWrite || access == Access::kRandomWrite;
  }
};

// nullptr for an unknown name.
const BenchmarkInfo* FindBenchmark(std::string_view name);
// Every benchmark, in the default run order.
const std::vector<BenchmarkInfo>& AllBenchmarks();

struct BenchmarkResult {
  std::string benchmark;
  uint64_t ops = 0;
  uint64_t bytes = 0;        // user bytes written or read (keys + values)
  double wall_seconds = 0;   // first thread start to last thread end
  double thread_micros = 0;  // sum over threads of each thread's busy time
  std::string note;          // e.g. "found 1000 of 1000"

  double ops_per_sec() const { return wall_seconds > 0 ? ops / wall_seconds : 0; }
  double mb_per_sec() const { return wall_seconds > 0 ? bytes / 1048576.0 / wall_seconds : 0; }
  // Average time of one operation as a thread sees it.
  double micros_per_op() const { return ops > 0 ? thread_micros / ops : 0; }
};

// Runs one benchmark. REQUIRES: `db` was opened with sync == info.sync. Fails with the first error
// an operation returns, or with Internal when a read sees what cannot be (a missing key found, a
// value of the wrong size).
StatusOr<BenchmarkResult> RunBenchmark(KvAdapter* db, const BenchmarkInfo& info,
                                       const WorkloadOptions& options);

// Untimed: writes every key in [0, num) once, in a random order (so the database has the shape
// of a random fill, yet every read of a key in range finds it). Used before read benchmarks
// that no fill preceded.
Status LoadDatabase(KvAdapter* db, const WorkloadOptions& options);

}  // namespace tessera::bench
