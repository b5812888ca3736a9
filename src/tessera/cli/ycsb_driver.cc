#include "tessera/cli/ycsb_driver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

namespace tessera::cli::ycsb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxThreads = 1024;
constexpr int kMaxFields = 1000;
constexpr size_t kMaxValueSize = 64 << 20;
// A MutateRows request carries at most 100,000 mutations.
constexpr uint64_t kMaxMutationsPerBatch = 100000;

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t HashName(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// What the threads of one run share.
struct Shared {
  const WorkloadSpec* spec;
  const RunOptions* options;
  Distribution distribution;
  AcknowledgedCounter* inserts;
  uint64_t expected_new_records = 0;
  double latest_zetan = 0;
  std::optional<Clock::time_point> deadline;  // set just before the threads start
  std::atomic<uint64_t> claimed{0};           // transactions, or records for the load
  std::atomic<uint64_t> failed_calls{0};
  std::atomic<bool> stop{false};  // max_errors reached
};

struct ThreadResult {
  uint64_t ops = 0;
  uint64_t errors = 0;
  std::array<OpStats, kOpTypeCount> by_type;
  std::map<std::string, uint64_t> errors_by_kind;
  std::map<std::string, std::string> error_examples;
  Clock::time_point end;
};

class Worker {
 public:
  Worker(Shared* shared, std::unique_ptr<YcsbDb> db, uint64_t seed)
      : shared_(shared),
        options_(*shared->options),
        db_(std::move(db)),
        rng_(seed),
        values_(Mix(seed, 1), options_.value_size) {}

  void Run(ThreadResult* r) {
    r_ = r;
    if (shared_->spec->load) {
      RunLoad();
    } else {
      RunTransactions();
    }
    r->end = Clock::now();
  }

 private:
  void RunLoad() {
    const uint64_t batch = options_.batch_size;
    std::vector<std::string> keys(batch);
    std::vector<FieldWrite> fields(batch * options_.fields);
    std::vector<RowWrite> rows(batch);
    while (!shared_->stop.load(std::memory_order_relaxed)) {
      const uint64_t begin = shared_->claimed.fetch_add(batch, std::memory_order_relaxed);
      if (begin >= options_.records) break;
      const uint64_t n = std::min(batch, options_.records - begin);
      for (uint64_t i = 0; i < n; i++) {
        KeyName(begin + i, &keys[i]);
        FieldWrite* row_fields = &fields[i * options_.fields];
        for (int f = 0; f < options_.fields; f++) row_fields[f] = {f, values_.Next()};
        rows[i] = {keys[i], std::span<const FieldWrite>(row_fields, options_.fields)};
      }
      OpStats& stats = r_->by_type[static_cast<int>(OpType::kBatchInsert)];
      const Clock::time_point start = Clock::now();
      std::vector<Status> statuses = db_->WriteBatch(std::span<const RowWrite>(rows.data(), n));
      const Clock::time_point end = Clock::now();
      stats.calls++;
      r_->ops += n;
      if (statuses.size() != n) {
        statuses.assign(n, absl::InternalError(StrCat("the store answered ", statuses.size(),
                                                      " statuses for ", n, " rows")));
      }
      bool all_ok = true;
      for (uint64_t i = 0; i < n; i++) {
        if (statuses[i].ok()) continue;
        all_ok = false;
        r_->errors++;
        NoteError(OpType::kBatchInsert, keys[i], statuses[i]);
      }
      if (all_ok) {
        stats.latency.Record(Nanos(start, end));
      } else {
        stats.errors++;
      }
    }
  }

  void RunTransactions() {
    OperationChooser ops(*shared_->spec);
    KeyChooser keys(shared_->distribution, options_.records, shared_->expected_new_records,
                    shared_->inserts, shared_->latest_zetan);
    while (!shared_->stop.load(std::memory_order_relaxed)) {
      if (options_.operations > 0 &&
          shared_->claimed.fetch_add(1, std::memory_order_relaxed) >= options_.operations) {
        break;
      }
      if (shared_->deadline && Clock::now() >= *shared_->deadline) break;
      bool ok = false;
      switch (ops.Next(&rng_)) {
        case OpType::kRead:
          ok = DoRead(keys.Next(&rng_));
          break;
        case OpType::kUpdate:
          ok = DoUpdate(keys.Next(&rng_));
          break;
        case OpType::kInsert:
          ok = DoInsert();
          break;
        case OpType::kScan:
          ok = DoScan(keys.Next(&rng_));
          break;
        case OpType::kReadModifyWrite:
          ok = DoReadModifyWrite(keys.Next(&rng_));
          break;
        case OpType::kPing:
          ok = DoPing();
          break;
        case OpType::kBatchInsert:
          break;  // not a transaction
      }
      r_->ops++;
      if (!ok) r_->errors++;
    }
  }

  bool DoRead(uint64_t keynum) {
    KeyName(keynum, &key_);
    const Clock::time_point start = Clock::now();
    StatusOr<int> cells = db_->Read(key_);
    return Finish(OpType::kRead, start, cells.status(), cells.ok() && *cells == 0);
  }

  bool DoUpdate(uint64_t keynum) {
    KeyName(keynum, &key_);
    const FieldWrite field{static_cast<int>(rng_.Uniform(options_.fields)), values_.Next()};
    const Clock::time_point start = Clock::now();
    const Status s = db_->Write(key_, std::span<const FieldWrite>(&field, 1));
    return Finish(OpType::kUpdate, start, s, false);
  }

  bool DoInsert() {
    const uint64_t keynum = shared_->inserts->Next();
    KeyName(keynum, &key_);
    fields_.resize(options_.fields);
    for (int f = 0; f < options_.fields; f++) fields_[f] = {f, values_.Next()};
    const Clock::time_point start = Clock::now();
    const Status s = db_->Write(key_, fields_);
    const bool ok = Finish(OpType::kInsert, start, s, false);
    // Only an acknowledged record may be read; a failed insert leaves a gap that holds Last()
    // back for the rest of the run, as in YCSB.
    if (ok) shared_->inserts->Acknowledge(keynum);
    return ok;
  }

  bool DoScan(uint64_t keynum) {
    KeyName(keynum, &key_);
    const int length = 1 + static_cast<int>(rng_.Uniform(options_.max_scan_length));
    const Clock::time_point start = Clock::now();
    StatusOr<int> rows = db_->Scan(key_, length);
    return Finish(OpType::kScan, start, rows.status(), rows.ok() && *rows == 0);
  }

  bool DoPing() {
    const Clock::time_point start = Clock::now();
    const Status s = db_->Ping();
    return Finish(OpType::kPing, start, s, false);
  }

  bool DoReadModifyWrite(uint64_t keynum) {
    const Clock::time_point start = Clock::now();
    const bool ok = DoRead(keynum) && DoUpdate(keynum);
    return Finish(OpType::kReadModifyWrite, start, ok ? Status() : absl::AbortedError(""), false,
                  /*counted=*/true);
  }

  // Books one call of `type` that began at `start`. `missing`: it succeeded but did not find
  // the record it was sent for. `counted`: the failure was already booked by an inner call.
  // Returns whether the call did what it should.
  bool Finish(OpType type, Clock::time_point start, const Status& s, bool missing,
              bool counted = false) {
    const Clock::time_point end = Clock::now();
    OpStats& stats = r_->by_type[static_cast<int>(type)];
    stats.calls++;
    if (s.ok() && !missing) {
      stats.latency.Record(Nanos(start, end));
      return true;
    }
    stats.errors++;
    if (!counted) {
      NoteError(type, key_,
                missing ? absl::NotFoundError("ROW_NOT_FOUND: the row was not there") : s,
                missing ? "ROW_NOT_FOUND" : "");
    }
    return false;
  }

  void NoteError(OpType type, std::string_view key, const Status& s, std::string_view kind = "") {
    const std::string k =
        kind.empty() ? std::string(absl::StatusCodeToString(s.code())) : std::string(kind);
    if (r_->errors_by_kind[k]++ == 0) {
      r_->error_examples[k] = StrCat(OpTypeName(type), " ", key, ": ", s.ToString());
    }
    if (shared_->failed_calls.fetch_add(1, std::memory_order_relaxed) + 1 >= options_.max_errors) {
      shared_->stop.store(true, std::memory_order_relaxed);
    }
  }

  static uint64_t Nanos(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  }

  Shared* const shared_;
  const RunOptions& options_;
  const std::unique_ptr<YcsbDb> db_;
  Random rng_;
  ValueGenerator values_;
  ThreadResult* r_ = nullptr;
  std::string key_;
  std::vector<FieldWrite> fields_;
};

}  // namespace

Status ValidateRunOptions(const RunOptions& o) {
  if (o.records < 1) return absl::InvalidArgumentError("--records must be at least 1");
  if (o.operations == 0 && o.duration_s <= 0) {
    return absl::InvalidArgumentError("--operations 0 needs a --duration-s bound");
  }
  if (o.duration_s < 0) return absl::InvalidArgumentError("--duration-s must not be negative");
  if (o.threads < 1 || o.threads > kMaxThreads) {
    return absl::InvalidArgumentError(StrCat("--threads must be in [1, ", kMaxThreads, "]"));
  }
  if (o.fields < 1 || o.fields > kMaxFields) {
    return absl::InvalidArgumentError(StrCat("--fields must be in [1, ", kMaxFields, "]"));
  }
  if (o.value_size < 1 || o.value_size > kMaxValueSize) {
    return absl::InvalidArgumentError(StrCat("--value-size must be in [1, ", kMaxValueSize, "]"));
  }
  if (o.max_scan_length < 1) return absl::InvalidArgumentError("--scan-length must be at least 1");
  if (o.batch_size < 1 || static_cast<uint64_t>(o.batch_size) * o.fields > kMaxMutationsPerBatch) {
    return absl::InvalidArgumentError(
        StrCat("--batch-size must be at least 1, and --batch-size x --fields at most ",
               kMaxMutationsPerBatch, " (the mutations one MutateRows may carry)"));
  }
  if (o.max_errors < 1) return absl::InvalidArgumentError("--max-errors must be at least 1");
  return Status();
}

StatusOr<WorkloadResult> RunWorkload(const WorkloadSpec& spec, const RunOptions& options,
                                     const YcsbDbFactory& factory, AcknowledgedCounter* inserts) {
  RETURN_IF_ERROR(ValidateRunOptions(options));
  if (inserts->Last() + 1 < options.records) {
    return absl::InvalidArgumentError("the insert counter starts below --records");
  }
  Shared shared;
  shared.spec = &spec;
  shared.options = &options;
  shared.distribution = options.distribution.value_or(spec.distribution);
  shared.inserts = inserts;
  shared.expected_new_records =
      static_cast<uint64_t>(static_cast<double>(options.operations) * spec.insert * 2.0);
  if (!spec.load && shared.distribution == Distribution::kLatest) {
    shared.latest_zetan =
        ZipfianGenerator::Zeta(0, inserts->Last() + 1, ZipfianGenerator::kZipfianConstant);
  }

  const uint64_t run_seed = Mix(options.seed, HashName(spec.name));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < options.threads; t++) {
    ASSIGN_OR_RETURN(std::unique_ptr<YcsbDb> db, factory(t));
    workers.push_back(std::make_unique<Worker>(&shared, std::move(db), Mix(run_seed, t + 1)));
  }

  std::vector<ThreadResult> results(options.threads);
  std::latch ready(options.threads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; t++) {
    threads.emplace_back([&, t] {
      ready.arrive_and_wait();
      workers[t]->Run(&results[t]);
    });
  }
  // The deadline is written before the latch opens; the threads read it after.
  const Clock::time_point start = Clock::now();
  if (!spec.load && options.duration_s > 0) {
    shared.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(options.duration_s));
  }
  ready.arrive_and_wait();
  for (std::thread& t : threads) t.join();

  WorkloadResult out;
  out.workload = std::string(spec.name);
  Clock::time_point end = start;
  for (const ThreadResult& r : results) {
    out.ops += r.ops;
    out.errors += r.errors;
    end = std::max(end, r.end);
    for (int i = 0; i < kOpTypeCount; i++) {
      out.by_type[i].calls += r.by_type[i].calls;
      out.by_type[i].errors += r.by_type[i].errors;
      out.by_type[i].latency.Merge(r.by_type[i].latency);
    }
    for (const auto& [kind, n] : r.errors_by_kind) out.errors_by_kind[kind] += n;
    out.error_examples.insert(r.error_examples.begin(), r.error_examples.end());
  }
  out.seconds = std::chrono::duration<double>(end - start).count();
  out.stopped_early = shared.stop.load();
  return out;
}

}  // namespace tessera::cli::ycsb
