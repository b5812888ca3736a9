// tessera_engine_bench: a db_bench-style comparison of Tessera's tablet engine with RocksDB and
// LevelDB, all opened with the same settings by one program run.
//
//   tessera_engine_bench [--num 1000000] [--benchmarks fillseq,readrandom,...]
//                        [--engines tessera,tessera-stcs,rocksdb,leveldb] [--json] ...
//
// Method (see workload.h for the benchmarks themselves):
//  - Every engine runs in its own forked child, one after the other, so engines share no cache,
//    allocator state or background threads, and the parent learns each child's peak resident
//    memory (ru_maxrss from wait4). Peak memory includes the benchmark's own small buffers
//    (about 1 MiB of value text per thread), the same for every engine.
//  - An engine runs the benchmark list in order on one database in <db_dir>/<engine>. A read
//    benchmark that no full fill (fillseq, fillrandom, overwrite) preceded first loads every key
//    once, untimed. Nothing waits for compactions between benchmarks (as db_bench).
//  - Same settings for all engines: write-ahead log on and not synced per write (Tessera:
//    SyncMode::kPeriodic, which also syncs every 10 ms in the background); fillsync reopens the
//    database to sync every write (RocksDB/LevelDB WriteOptions::sync, Tessera SyncMode::kBatch).
//    Block cache --cache_mb, block size --block_size (4 KiB by default, for all three; Tessera's
//    own default is 64 KiB), memtable --write_buffer_mb, bloom filters --bloom_bits bits/key,
//    LZ4 compression (LevelDB has no LZ4: it uses Snappy, the coder of the same kind), two
//    background threads (LevelDB: its fixed one), no compaction throttling, reads verify block
//    checksums.
//  - Keys and values come from fixed seeds, so every engine sees the same operations.
//
// Output: a line per benchmark from each child as it finishes, then a table per benchmark and
// one of peak RSS and CPU seconds (user + system of the whole child, loading included). With
// --json, stdout has exactly one JSON object per line and nothing else (settings go to stderr):
//   {"benchmark": "readrandom", "engine": "rocksdb", "ops_per_sec": N, "mb_per_sec": N,
//    "micros_per_op": N}
//   {"benchmark": "peak_memory", "engine": "rocksdb", "peak_rss_mb": N}
//   {"benchmark": "amplification", "after": "overwrite", "engine": "rocksdb",
//    "user_bytes_written", "live_user_bytes", "file_bytes_written", "compaction_bytes_written"
//    (null for LevelDB, which counts flushes and compactions together), "sorted_file_bytes",
//    "disk_bytes", "write_amplification", "compaction_write_amplification", "space_amplification"}
//    after each write benchmark, cumulative since the database was created (untimed loads
//    included): write amplification is what the engine wrote to sorted files (flushes and
//    compactions; the write-ahead log not counted) over the user bytes put, space amplification
//    the bytes allocated to the database directory's files (logs too) over the live user bytes
//    (distinct keys written x (key + value)). Taken right after the benchmark, while
//    compactions may still run.
//   {"benchmark": "readrandom", "engine": "ratio", "tessera_vs_best_peer": R, "best_peer": "..."}
// A benchmark's ratio is Tessera's ops/s over the best peer's (> 1: Tessera is faster); the
// peak_memory ratio is Tessera's peak RSS over the smallest peer's (< 1: Tessera uses less).
// "tessera" is the engine with its default, leveled compaction; "tessera-stcs" the same with
// size-tiered compaction (docs/compaction.md), shown beside it and never taken as a peer.
// Engine logs (spdlog) go to stderr, warnings only unless --verbose.
// Exit status 0 iff every engine ran every benchmark.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "kv_adapter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "workload.h"

namespace tessera::bench {
namespace {

struct Flags {
  uint64_t num = 1000000;
  uint64_t sync_num = 0;  // 0: num / 100
  std::string benchmarks =
      "fillseq,fillrandom,overwrite,readrandom,readmissing,seekrandom,readseq,fillsync";
  std::string engines;  // "": every engine compiled in
  bool json = false;
  std::string db_dir;  // "": a fresh directory under /tmp, removed at the end
  size_t value_size = 100;
  int threads = 1;
  size_t cache_mb = 64;
  size_t block_size = 4096;
  size_t write_buffer_mb = 64;
  int bloom_bits = 10;
  int background_threads = 2;
  int idle_tablets = 0;
  uint64_t seed = 301;
  bool verbose = false;
};

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// Informational lines go to stdout, or to stderr when stdout carries JSON only.
class Output {
 public:
  explicit Output(bool json) : json_(json) {}
  bool json() const { return json_; }

  template <typename... Args>
  void Info(fmt::format_string<Args...> format, Args&&... args) const {
    FILE* out = json_ ? stderr : stdout;
    fmt::print(out, format, std::forward<Args>(args)...);
    std::fputc('\n', out);
    std::fflush(out);
  }
  // A JSON object (already formatted) on its own line, in JSON mode only.
  void Json(const std::string& object) const {
    if (!json_) return;
    std::fputs(object.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }

 private:
  const bool json_;
};

// ------------------------------------------------------------------------------------------
// Child side: one engine.

// What a child reports to the parent through a pipe, one line per benchmark:
//   <benchmark> <ops_per_sec> <mb_per_sec> <micros_per_op>
struct Measurement {
  std::string benchmark;
  double ops_per_sec = 0;
  double mb_per_sec = 0;
  double micros_per_op = 0;
};

// `prefix` and the compactions' share of the write amplification to `decimals` places, or
// `none` for an engine that does not count it apart.
std::string CompactionFigure(const Amplification& a, std::string_view none,
                             std::string_view prefix = "", int decimals = 2) {
  const std::optional<double> compaction = a.compaction_write_amplification();
  return compaction.has_value() ? fmt::format("{}{:.{}f}", prefix, *compaction, decimals)
                                : std::string(none);
}

// Writes one line to the parent's pipe.
void SendLine(const Output& out, int result_fd, std::string_view engine, const std::string& line) {
  // The parent reads the pipe to the end before it waits, so this cannot block for long.
  if (write(result_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    out.Info("{}: cannot report to the parent: {}", engine, line);
  }
}

// The amplification figures after write benchmark `benchmark`, to the log and the parent as
//   amp <benchmark> <user written> <live user> <file writes> <compaction writes or -1>
//       <sorted file bytes> <disk bytes>
void ReportAmplification(const Output& out, int result_fd, std::string_view engine,
                         std::string_view benchmark, const Amplification& a) {
  out.Info(
      "{:<12} {:<8}: write amplification {:.2f} ({}), space amplification {:.2f} ({:.1f} MB "
      "on disk for {:.1f} MB of live keys and values)",
      benchmark, engine, a.write_amplification(),
      CompactionFigure(a, "flushes and compactions", "compactions "), a.space_amplification(),
      a.disk_bytes / 1048576.0, a.live_user_bytes / 1048576.0);
  SendLine(out, result_fd, engine,
           fmt::format("amp {} {} {} {} {} {} {}\n", benchmark, a.user_bytes_written,
                       a.live_user_bytes, a.file_writes.total_bytes,
                       a.file_writes.compaction_bytes.has_value()
                           ? static_cast<int64_t>(*a.file_writes.compaction_bytes)
                           : int64_t{-1},
                       a.sorted_file_bytes, a.disk_bytes));
}

void ReportResult(const Output& out, int result_fd, std::string_view engine,
                  const BenchmarkResult& r) {
  if (out.json()) {
    out.Json(fmt::format(
        R"({{"benchmark": "{}", "engine": "{}", "ops_per_sec": {:.1f}, "mb_per_sec": {:.3f}, )"
        R"("micros_per_op": {:.4f}}})",
        r.benchmark, engine, r.ops_per_sec(), r.mb_per_sec(), r.micros_per_op()));
  } else {
    out.Info("{:<12} {:<8}: {:>10.3f} micros/op {:>11.0f} ops/sec {:>8.1f} MB/s  {}", r.benchmark,
             engine, r.micros_per_op(), r.ops_per_sec(), r.mb_per_sec(), r.note);
  }
  SendLine(out, result_fd, engine,
           fmt::format("{} {:.17g} {:.17g} {:.17g}\n", r.benchmark, r.ops_per_sec(), r.mb_per_sec(),
                       r.micros_per_op()));
}

// a + b; the compaction part only when both count it.
FileWrites Add(const FileWrites& a, const FileWrites& b) {
  FileWrites sum{a.total_bytes + b.total_bytes, std::nullopt};
  if (a.compaction_bytes.has_value() && b.compaction_bytes.has_value()) {
    sum.compaction_bytes = *a.compaction_bytes + *b.compaction_bytes;
  }
  return sum;
}

Status RunEngine(const Flags& flags, const std::string& engine, const std::string& dir,
                 const Output& out, int result_fd) {
  KvOptions kv;
  kv.dir = dir;
  kv.block_cache_bytes = flags.cache_mb << 20;
  kv.block_size = flags.block_size;
  kv.write_buffer_bytes = flags.write_buffer_mb << 20;
  kv.bloom_bits_per_key = flags.bloom_bits;
  kv.idle_tablets = flags.idle_tablets;
  kv.background_threads = flags.background_threads;

  WorkloadOptions workload;
  workload.num = flags.num;
  workload.sync_num = flags.sync_num;
  workload.value_size = flags.value_size;
  workload.threads = flags.threads;
  workload.seed = flags.seed;
  KeySet written(flags.num);
  workload.written = &written;
  const uint64_t entry_bytes = kKeySize + flags.value_size;

  std::unique_ptr<KvAdapter> db;
  bool filled = false;
  uint64_t user_bytes = 0;         // put since the database was created
  FileWrites closed_writes{0, 0};  // by the databases opened before `db` (a reopen for fillsync)
  for (const std::string& name : SplitList(flags.benchmarks)) {
    const BenchmarkInfo& info = *FindBenchmark(name);  // validated by the parent
    if (db == nullptr || kv.sync != info.sync) {
      if (db != nullptr) {
        ASSIGN_OR_RETURN(FileWrites w, db->Written());
        closed_writes = Add(closed_writes, w);
        RETURN_IF_ERROR(db->Close());
      }
      kv.sync = info.sync;
      ASSIGN_OR_RETURN(db, OpenEngine(engine, kv));
      out.Info("{:<12} {:<8}: opened {}: {}", "", engine, dir, db->Describe());
    }
    if (!info.writes() && !filled) {
      RETURN_IF_ERROR(LoadDatabase(db.get(), workload));
      user_bytes += workload.num * entry_bytes;
      filled = true;
      out.Info("{:<12} {:<8}: loaded {} keys in random order (untimed)", name, engine,
               workload.num);
    }
    filled |= info.writes() && !info.sync;
    ASSIGN_OR_RETURN(BenchmarkResult result, RunBenchmark(db.get(), info, workload));
    ReportResult(out, result_fd, engine, result);
    if (info.writes()) {
      user_bytes += result.bytes;
      Amplification a;
      a.user_bytes_written = user_bytes;
      a.live_user_bytes = written.size() * entry_bytes;
      ASSIGN_OR_RETURN(FileWrites w, db->Written());
      a.file_writes = Add(closed_writes, w);
      RETURN_IF_ERROR(MeasureDirectory(dir, &a.sorted_file_bytes, &a.disk_bytes));
      ReportAmplification(out, result_fd, engine, name, a);
    }
  }
  if (db != nullptr) RETURN_IF_ERROR(db->Close());
  return Status();
}

// ------------------------------------------------------------------------------------------
// Parent side.

struct EngineRun {
  std::string engine;
  bool ok = false;
  double peak_rss_mb = 0;
  double cpu_seconds = 0;  // user + system, all threads
  std::vector<Measurement> results;
  std::vector<std::pair<std::string, Amplification>> amplification;  // after write benchmarks
};

std::string ReadAll(int fd) {
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      data.append(buf, n);
    } else if (n == 0 || errno != EINTR) {
      return data;
    }
  }
}

// The child's lines (ReportResult, ReportAmplification) into `run`.
void ParseChildLines(const std::string& data, EngineRun* run) {
  std::istringstream in(data);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (line.rfind("amp ", 0) == 0) {
      std::string tag, benchmark;
      Amplification a;
      int64_t compaction = -1;
      if (fields >> tag >> benchmark >> a.user_bytes_written >> a.live_user_bytes >>
          a.file_writes.total_bytes >> compaction >> a.sorted_file_bytes >> a.disk_bytes) {
        if (compaction >= 0) a.file_writes.compaction_bytes = static_cast<uint64_t>(compaction);
        run->amplification.emplace_back(benchmark, a);
      }
      continue;
    }
    Measurement m;
    if (fields >> m.benchmark >> m.ops_per_sec >> m.mb_per_sec >> m.micros_per_op) {
      run->results.push_back(m);
    }
  }
}

// Runs `engine` in a forked child and collects what it reports.
EngineRun ForkEngine(const Flags& flags, const std::string& engine, const std::string& dir,
                     const Output& out) {
  EngineRun run;
  run.engine = engine;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    out.Info("{}: pipe failed: {}", engine, std::strerror(errno));
    return run;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    out.Info("{}: fork failed: {}", engine, std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return run;
  }
  if (pid == 0) {
    close(fds[0]);
    Status s = RunEngine(flags, engine, dir, out, fds[1]);
    if (!s.ok()) fmt::print(stderr, "{}: {}\n", engine, s.ToString());
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(s.ok() ? 0 : 1);  // skip the parent's atexit handlers and static destructors
  }
  close(fds[1]);
  ParseChildLines(ReadAll(fds[0]), &run);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (WIFSIGNALED(status)) out.Info("{}: killed by signal {}", engine, WTERMSIG(status));
  run.peak_rss_mb = usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
  run.cpu_seconds = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                    (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return run;
}

// Tessera's result over the best peer's, per benchmark (see the comment atop this file).
struct Ratio {
  std::string benchmark;
  double ratio = 0;
  std::string best_peer;
};

std::vector<Ratio> ComputeRatios(const std::vector<EngineRun>& runs,
                                 const std::vector<std::string>& benchmarks) {
  std::vector<Ratio> ratios;
  auto find = [](const EngineRun& run, const std::string& name) -> const Measurement* {
    for (const Measurement& m : run.results) {
      if (m.benchmark == name) return &m;
    }
    return nullptr;
  };
  const EngineRun* tessera = nullptr;
  for (const EngineRun& run : runs) {
    if (run.engine == "tessera") tessera = &run;
  }
  if (tessera == nullptr) return ratios;
  for (const std::string& name : benchmarks) {
    const Measurement* ours = find(*tessera, name);
    if (ours == nullptr) continue;
    Ratio best{name, 0, ""};
    double best_ops = 0;
    for (const EngineRun& run : runs) {
      const Measurement* m = IsTessera(run.engine) ? nullptr : find(run, name);
      if (m != nullptr && m->ops_per_sec > best_ops) {
        best_ops = m->ops_per_sec;
        best.best_peer = run.engine;
      }
    }
    if (best_ops <= 0) continue;
    best.ratio = ours->ops_per_sec / best_ops;
    ratios.push_back(best);
  }
  if (tessera->ok || tessera->peak_rss_mb > 0) {
    Ratio memory{"peak_memory", 0, ""};
    double least = 0;
    for (const EngineRun& run : runs) {
      if (IsTessera(run.engine) || run.peak_rss_mb <= 0) continue;
      if (least == 0 || run.peak_rss_mb < least) {
        least = run.peak_rss_mb;
        memory.best_peer = run.engine;
      }
    }
    if (least > 0) {
      memory.ratio = tessera->peak_rss_mb / least;
      ratios.push_back(memory);
    }
  }
  return ratios;
}

std::string AmplificationJson(std::string_view engine, std::string_view after,
                              const Amplification& a) {
  return fmt::format(
      R"({{"benchmark": "amplification", "after": "{}", "engine": "{}", )"
      R"("user_bytes_written": {}, "live_user_bytes": {}, "file_bytes_written": {}, )"
      R"("compaction_bytes_written": {}, "sorted_file_bytes": {}, "disk_bytes": {}, )"
      R"("write_amplification": {:.3f}, "compaction_write_amplification": {}, )"
      R"("space_amplification": {:.3f}}})",
      after, engine, a.user_bytes_written, a.live_user_bytes, a.file_writes.total_bytes,
      a.file_writes.compaction_bytes.has_value() ? std::to_string(*a.file_writes.compaction_bytes)
                                                 : "null",
      a.sorted_file_bytes, a.disk_bytes, a.write_amplification(),
      CompactionFigure(a, "null", "", 3), a.space_amplification());
}

void PrintTables(const Output& out, const std::vector<EngineRun>& runs,
                 const std::vector<std::string>& benchmarks, const std::vector<Ratio>& ratios) {
  auto ratio_of = [&](const std::string& name) -> std::string {
    for (const Ratio& r : ratios) {
      if (r.benchmark == name) return fmt::format("{:.2f}x {}", r.ratio, r.best_peer);
    }
    return "";
  };
  out.Info("");
  out.Info("{:<12} {:<12} {:>12} {:>9} {:>10}   {}", "benchmark", "engine", "ops/s", "MB/s",
           "micros/op", "tessera vs best peer");
  for (const std::string& name : benchmarks) {
    bool first = true;
    for (const EngineRun& run : runs) {
      for (const Measurement& m : run.results) {
        if (m.benchmark != name) continue;
        out.Info("{:<12} {:<12} {:>12.0f} {:>9.1f} {:>10.3f}   {}", first ? name : "", run.engine,
                 m.ops_per_sec, m.mb_per_sec, m.micros_per_op,
                 run.engine == "tessera" ? ratio_of(name) : "");
        first = false;
      }
    }
  }
  out.Info("");
  out.Info("{:<12} {:<12} {:>9} {:>9} {:>10} {:>9} {:>10} {:>10} {:>8} {:>9}", "after", "engine",
           "user MB", "live MB", "written MB", "write amp", "compaction", "sorted MB", "disk MB",
           "space amp");
  for (const EngineRun& run : runs) {
    for (const auto& [after, a] : run.amplification) {
      out.Info(
          "{:<12} {:<12} {:>9.1f} {:>9.1f} {:>10.1f} {:>9.2f} {:>10} {:>10.1f} {:>8.1f} {:>9.2f}",
          after, run.engine, a.user_bytes_written / 1048576.0, a.live_user_bytes / 1048576.0,
          a.file_writes.total_bytes / 1048576.0, a.write_amplification(), CompactionFigure(a, "-"),
          a.sorted_file_bytes / 1048576.0, a.disk_bytes / 1048576.0, a.space_amplification());
    }
  }
  out.Info(
      "write amp: bytes the engine wrote to sorted files (flushes and compactions; "
      "compaction: theirs alone) / user bytes put; space amp: disk bytes / live user bytes");
  out.Info("");
  out.Info("{:<12} {:<12} {:>12} {:>9}   {}", "peak_memory", "engine", "peak RSS MB", "CPU s",
           "tessera vs smallest peer");
  for (const EngineRun& run : runs) {
    out.Info("{:<12} {:<12} {:>12.1f} {:>9.1f}   {}{}", "", run.engine, run.peak_rss_mb,
             run.cpu_seconds, run.engine == "tessera" ? ratio_of("peak_memory") : "",
             run.ok ? "" : " (FAILED)");
  }
}

std::string CpuDescription() {
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) return "unknown";
  char line[512];
  std::string model = "unknown";
  int count = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string_view text(line);
    if (text.rfind("model name", 0) == 0) {
      count++;
      size_t colon = text.find(':');
      if (colon != std::string_view::npos) {
        model = std::string(text.substr(colon + 2, text.size() - colon - 3));
      }
    }
  }
  std::fclose(f);
  return fmt::format("{} x {}", count, model);
}

// Checks the flags; InvalidArgument naming the first bad one.
Status Validate(Flags* flags, std::vector<std::string>* engines,
                std::vector<std::string>* benchmarks) {
  if (flags->num == 0) return absl::InvalidArgumentError("--num must be > 0");
  if (flags->value_size == 0) return absl::InvalidArgumentError("--value_size must be > 0");
  if (flags->threads < 1) return absl::InvalidArgumentError("--threads must be >= 1");
  if (flags->idle_tablets < 0 || flags->idle_tablets > 100000) {
    return absl::InvalidArgumentError("--idle_tablets must be in [0, 100000]");
  }
  if (flags->block_size < 256) return absl::InvalidArgumentError("--block_size must be >= 256");
  if (flags->sync_num == 0) flags->sync_num = std::max<uint64_t>(1, flags->num / 100);
  *benchmarks = SplitList(flags->benchmarks);
  for (const std::string& name : *benchmarks) {
    if (FindBenchmark(name) == nullptr) {
      return absl::InvalidArgumentError(StrCat("unknown benchmark '", name, "'"));
    }
  }
  const std::vector<std::string> available = AvailableEngines();
  *engines = flags->engines.empty() ? available : SplitList(flags->engines);
  for (const std::string& engine : *engines) {
    if (std::find(available.begin(), available.end(), engine) == available.end()) {
      return absl::InvalidArgumentError(StrCat("engine '", engine, "' is not compiled in (have: ",
                                               fmt::format("{}", fmt::join(available, ",")), ")"));
    }
  }
  return Status();
}

int Main(int argc, char** argv) {
  // Debian's abseil runs Mutex deadlock detection (a debug feature) unless told not to; a
  // production binary turns it off, as RocksDB and LevelDB have nothing of the kind.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Flags flags;
  CLI::App app{"db_bench-style comparison of Tessera's engine with RocksDB and LevelDB"};
  app.add_option("--num", flags.num, "keys in the key space and operations per benchmark")
      ->capture_default_str();
  app.add_option("--sync_num", flags.sync_num, "operations of fillsync (default num/100)");
  app.add_option("--benchmarks", flags.benchmarks, "comma-separated, run in this order")
      ->capture_default_str();
  app.add_option("--engines", flags.engines, "comma-separated (default: every engine built in)");
  app.add_flag("--json", flags.json, "one JSON object per line on stdout");
  app.add_option("--db_dir", flags.db_dir,
                 "databases go to <db_dir>/<engine> (default: a fresh /tmp dir, removed after)");
  app.add_option("--value_size", flags.value_size, "bytes per value")->capture_default_str();
  app.add_option("--threads", flags.threads, "threads per benchmark")->capture_default_str();
  app.add_option("--cache_mb", flags.cache_mb, "block cache MiB")->capture_default_str();
  app.add_option("--block_size", flags.block_size, "SSTable block bytes")->capture_default_str();
  app.add_option("--write_buffer_mb", flags.write_buffer_mb, "memtable MiB")->capture_default_str();
  app.add_option("--bloom_bits", flags.bloom_bits, "bloom filter bits per key")
      ->capture_default_str();
  app.add_option("--background_threads", flags.background_threads,
                 "flush/compaction threads (RocksDB, Tessera)")
      ->capture_default_str();
  app.add_option("--idle_tablets", flags.idle_tablets,
                 "Tessera only: this many more tablets that no benchmark touches (a node holds "
                 "copies of many)")
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of keys and values")->capture_default_str();
  app.add_flag("--verbose", flags.verbose, "show the engines' info logs (on stderr)");
  CLI11_PARSE(app, argc, argv);

  // Tessera logs through spdlog's default logger: keep it off stdout (which may carry JSON
  // only) and quiet unless asked.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("tessera_engine_bench"));
  spdlog::set_level(flags.verbose ? spdlog::level::info : spdlog::level::warn);

  const Output out(flags.json);
  std::vector<std::string> engines;
  std::vector<std::string> benchmarks;
  if (Status s = Validate(&flags, &engines, &benchmarks); !s.ok()) {
    fmt::print(stderr, "tessera_engine_bench: {}\n", s.message());
    return 2;
  }

  const bool temporary_dir = flags.db_dir.empty();
  std::string root = flags.db_dir;
  if (temporary_dir) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera_bench.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      fmt::print(stderr, "tessera_engine_bench: mkdtemp {}: {}\n", pattern, std::strerror(errno));
      return 1;
    }
    root = pattern;
  }

  out.Info(
      "tessera_engine_bench: {} keys of {} B, values of {} B (~50% compressible), "
      "{} thread(s), fillsync {} ops",
      flags.num, kKeySize, flags.value_size, flags.threads, flags.sync_num);
  out.Info(
      "  same for every engine: block cache {} MiB, block size {} B, memtable {} MiB, "
      "bloom {} bits/key, WAL on (synced per write in fillsync only)",
      flags.cache_mb, flags.block_size, flags.write_buffer_mb, flags.bloom_bits);
  out.Info("  one database per engine in {}, benchmarks run in order on it; cpu: {}", root,
           CpuDescription());

  std::vector<EngineRun> runs;
  bool all_ok = true;
  for (const std::string& engine : engines) {
    const std::string dir = (std::filesystem::path(root) / engine).string();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);  // each engine starts from an empty database
    EngineRun run = ForkEngine(flags, engine, dir, out);
    if (temporary_dir) std::filesystem::remove_all(dir, ignored);
    out.Json(fmt::format(R"({{"benchmark": "peak_memory", "engine": "{}", "peak_rss_mb": {:.1f}}})",
                         engine, run.peak_rss_mb));
    for (const auto& [after, a] : run.amplification) out.Json(AmplificationJson(engine, after, a));
    if (!run.ok) {
      all_ok = false;
      out.Info("{}: FAILED (see stderr)", engine);
    }
    runs.push_back(std::move(run));
  }
  if (temporary_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }

  const std::vector<Ratio> ratios = ComputeRatios(runs, benchmarks);
  for (const Ratio& r : ratios) {
    out.Json(fmt::format(R"({{"benchmark": "{}", "engine": "ratio", "tessera_vs_best_peer": )"
                         R"({:.4f}, "best_peer": "{}"}})",
                         r.benchmark, r.ratio, r.best_peer));
  }
  if (!flags.json) PrintTables(out, runs, benchmarks, ratios);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::Main(argc, argv); }
