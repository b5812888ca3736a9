#include "workload.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <latch>
#include <numeric>
#include <thread>

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kSeekRows = 11;  // the row sought and the 10 after it
constexpr size_t kValueBufferSize = 1 << 20;
constexpr size_t kValueStretch = 100;  // compressibility is set per stretch of this many bytes

// Writes the 16-digit decimal form of k into *out (resized to kKeySize, no allocation after
// the first call).
void FormatKey(uint64_t k, std::string* out) {
  out->resize(kKeySize);
  for (size_t i = kKeySize; i > 0; i--) {
    (*out)[i - 1] = static_cast<char>('0' + k % 10);
    k /= 10;
  }
}

// FNV-1a, to give every benchmark its own (deterministic) random stream.
uint64_t HashName(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct ThreadResult {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t found = 0;
  Clock::time_point start;
  Clock::time_point end;
  Status status;

  double micros() const { return std::chrono::duration<double, std::micro>(end - start).count(); }
};

// The work of one thread: operations [begin, end) of the benchmark.
class Worker {
 public:
  Worker(KvAdapter* db, const BenchmarkInfo& info, const WorkloadOptions& options, uint64_t seed)
      : db_(db), info_(info), options_(options), rng_(seed), values_(seed, options.value_size) {}

  void Run(uint64_t begin, uint64_t end, const std::atomic<bool>& failed, ThreadResult* r) {
    r->start = Clock::now();
    if (info_.access == Access::kSequentialRead) {
      r->status = ReadSequential(begin, end, r);
    } else {
      for (uint64_t i = begin; i < end && r->status.ok(); i++) {
        r->status = One(i, r);
        // Stop soon after another thread failed (checked now and then, not on every op).
        if ((i & 1023) == 0 && failed.load(std::memory_order_relaxed)) break;
      }
    }
    r->end = Clock::now();
  }

 private:
  Status One(uint64_t i, ThreadResult* r) {
    switch (info_.access) {
      case Access::kSequentialWrite:
        return Write(i, r);
      case Access::kRandomWrite:
        return Write(rng_.Uniform(options_.num), r);
      case Access::kRandomRead:
        FormatKey(rng_.Uniform(options_.num), &key_);
        return Read(r);
      case Access::kMissingRead:
        FormatKey(rng_.Uniform(options_.num), &key_);
        key_.push_back('.');
        return Read(r);
      case Access::kSeek: {
        FormatKey(rng_.Uniform(options_.num), &key_);
        ASSIGN_OR_RETURN(ScanResult scan, db_->Scan(key_, kSeekRows));
        r->ops++;
        r->bytes += scan.bytes;
        if (scan.rows > 0) r->found++;
        return Status();
      }
      case Access::kSequentialRead:
        break;
    }
    return absl::InternalError("unreachable");
  }

  Status Write(uint64_t k, ThreadResult* r) {
    if (options_.written != nullptr) options_.written->Add(k);
    FormatKey(k, &key_);
    std::string_view value = values_.Next(options_.value_size);
    RETURN_IF_ERROR(db_->Put(key_, value));
    r->ops++;
    r->bytes += key_.size() + value.size();
    return Status();
  }

  Status Read(ThreadResult* r) {
    bool found = false;
    RETURN_IF_ERROR(db_->Get(key_, &value_, &found));
    r->ops++;
    if (found) {
      if (value_.size() != options_.value_size) {
        return absl::InternalError(StrCat(db_->name(), ": key ", key_, " has a value of ",
                                          value_.size(), " bytes, wrote ", options_.value_size));
      }
      r->found++;
      r->bytes += key_.size() + value_.size();
    }
    return Status();
  }

  // One scan over this thread's key range; one op per row.
  Status ReadSequential(uint64_t begin, uint64_t end, ThreadResult* r) {
    if (begin >= end) return Status();  // Scan's limit 0 would mean "no limit"
    FormatKey(begin, &key_);
    ASSIGN_OR_RETURN(ScanResult scan, db_->Scan(key_, end - begin));
    r->ops += scan.rows;
    r->found += scan.rows;
    r->bytes += scan.bytes;
    return Status();
  }

  KvAdapter* const db_;
  const BenchmarkInfo& info_;
  const WorkloadOptions& options_;
  Random rng_;
  ValueGenerator values_;
  std::string key_;
  std::string value_;
};

std::string Note(const BenchmarkInfo& info, uint64_t found, uint64_t ops) {
  switch (info.access) {
    case Access::kRandomRead:
    case Access::kMissingRead:
      return StrCat("found ", found, " of ", ops);
    case Access::kSeek:
      return StrCat(found, " of ", ops, " seeks found a row");
    case Access::kSequentialRead:
      return StrCat(ops, " rows");
    default:
      return "";
  }
}

}  // namespace

std::string MakeKey(uint64_t k) {
  std::string key;
  FormatKey(k, &key);
  return key;
}

ValueGenerator::ValueGenerator(uint64_t seed, size_t max_value_size) {
  Random rng(seed);
  const size_t size = std::max(kValueBufferSize, max_value_size);
  data_.reserve(size + kValueStretch);
  while (data_.size() < size) {
    // Half of each stretch is fresh printable characters, the rest repeats them.
    const size_t fresh_begin = data_.size();
    for (size_t i = 0; i < kValueStretch / 2; i++) {
      data_.push_back(static_cast<char>(' ' + rng.Uniform(95)));
    }
    for (size_t i = 0; i < kValueStretch / 2; i++) data_.push_back(data_[fresh_begin + i]);
  }
}

std::string_view ValueGenerator::Next(size_t size) {
  if (pos_ + size > data_.size()) pos_ = 0;
  std::string_view value(data_.data() + pos_, size);
  pos_ += size;
  return value;
}

const std::vector<BenchmarkInfo>& AllBenchmarks() {
  static const std::vector<BenchmarkInfo> kAll = {
      {"fillseq", Access::kSequentialWrite, false}, {"fillrandom", Access::kRandomWrite, false},
      {"overwrite", Access::kRandomWrite, false},   {"readrandom", Access::kRandomRead, false},
      {"readmissing", Access::kMissingRead, false}, {"seekrandom", Access::kSeek, false},
      {"readseq", Access::kSequentialRead, false},  {"fillsync", Access::kRandomWrite, true},
  };
  return kAll;
}

const BenchmarkInfo* FindBenchmark(std::string_view name) {
  for (const BenchmarkInfo& info : AllBenchmarks()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

StatusOr<BenchmarkResult> RunBenchmark(KvAdapter* db, const BenchmarkInfo& info,
                                       const WorkloadOptions& options) {
  const uint64_t total = info.sync ? options.sync_num : options.num;
  const int threads = std::max(1, options.threads);
  const uint64_t seed = options.seed + HashName(info.name);

  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < threads; t++) {
    workers.push_back(std::make_unique<Worker>(db, info, options, seed + t));
  }
  std::vector<ThreadResult> results(threads);
  std::atomic<bool> failed{false};
  std::latch go(1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) {
    pool.emplace_back([&, t] {
      go.wait();
      workers[t]->Run(total * t / threads, total * (t + 1) / threads, failed, &results[t]);
      if (!results[t].status.ok()) failed.store(true, std::memory_order_relaxed);
    });
  }
  go.count_down();
  for (std::thread& thread : pool) thread.join();

  BenchmarkResult result;
  result.benchmark = std::string(info.name);
  uint64_t found = 0;
  Clock::time_point first_start = results[0].start;
  Clock::time_point last_end = results[0].end;
  for (const ThreadResult& r : results) {
    RETURN_IF_ERROR(r.status);
    result.ops += r.ops;
    result.bytes += r.bytes;
    result.thread_micros += r.micros();
    found += r.found;
    first_start = std::min(first_start, r.start);
    last_end = std::max(last_end, r.end);
  }
  result.wall_seconds = std::chrono::duration<double>(last_end - first_start).count();
  if (info.access == Access::kMissingRead && found > 0) {
    return absl::InternalError(
        StrCat(db->name(), ": readmissing found ", found, " keys that were never written"));
  }
  result.note = Note(info, found, result.ops);
  return result;
}

Status LoadDatabase(KvAdapter* db, const WorkloadOptions& options) {
  // k -> (k * stride) mod num is a permutation of [0, num) when gcd(stride, num) == 1: every key
  // once, in a scattered order, without a permutation table in memory.
  const uint64_t num = options.num;
  if (num == 0) return Status();
  uint64_t stride = std::max<uint64_t>(1, num * 618 / 1000) | 1;
  while (std::gcd(stride, num) != 1) stride += 2;
  ValueGenerator values(options.seed, options.value_size);
  std::string key;
  for (uint64_t i = 0; i < num; i++) {
    const auto k = static_cast<uint64_t>((static_cast<unsigned __int128>(i) * stride) % num);
    if (options.written != nullptr) options.written->Add(k);
    FormatKey(k, &key);
    RETURN_IF_ERROR(db->Put(key, values.Next(options.value_size)));
  }
  return Status();
}

KeySet::KeySet(uint64_t num) : words_(new std::atomic<uint64_t>[(num + 63) / 64]()) {}

void KeySet::Add(uint64_t k) {
  const uint64_t bit = uint64_t{1} << (k % 64);
  if ((words_[k / 64].fetch_or(bit, std::memory_order_relaxed) & bit) == 0) {
    size_.fetch_add(1, std::memory_order_relaxed);
  }
}

Status MeasureDirectory(const std::string& dir, uint64_t* sorted, uint64_t* disk) {
  *sorted = 0;
  *disk = 0;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    struct stat st;
    // A file removed meanwhile (by a compaction) is skipped.
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    *disk += static_cast<uint64_t>(st.st_blocks) * 512;
    const std::string ext = it->path().extension().string();
    if (ext == ".sst" || ext == ".ldb") *sorted += static_cast<uint64_t>(st.st_size);
  }
  if (ec) return absl::UnavailableError(StrCat(dir, ": ", ec.message()));
  return Status();
}

}  // namespace tessera::bench
