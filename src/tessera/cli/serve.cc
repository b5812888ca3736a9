// `tessera serve`: flags and config file -> ServerOptions, logging, signals, the port file.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/log_setup.h"
#include "tessera/server/server.h"
#include "tessera/util/logging.h"

namespace tessera::cli {

namespace {

constexpr size_t kMiB = 1 << 20;

// Writes `port` to `path` atomically (temp file + rename), so a reader never sees half a number.
Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) return absl::UnavailableError(tessera::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(tessera::StrCat("cannot rename ", tmp, " to ", path));
  }
  return Status();
}

}  // namespace

int RunServe(int argc, char** argv) {
  CLI::App app{
      "tessera serve: one node serving the Cloud Bigtable v2 data and table-admin APIs over "
      "durable local storage. Point cbt or a client library at it with "
      "BIGTABLE_EMULATOR_HOST=HOST:PORT; any project and instance names are accepted.",
      "tessera serve"};
  app.set_config("--config", "", "read flags from this TOML file (keys are the flag names)");
  app.get_config_ptr()->check(CLI::ExistingFile);

  server::ServerOptions options;
  options.engine.dir = "./data";
  // Most reads are served from the block cache or memtables: answering them on gRPC's thread
  // saves two thread hand-offs per read (measured: about a quarter of the server's CPU per
  // point read). Writes wait for group commit and stay on the worker threads.
  options.data.inline_reads = true;
  std::string sync = "batch";
  int64_t periodic_sync_ms = options.engine.periodic_sync_interval_ms;
  size_t memtable_mb = options.engine.memtable_bytes / kMiB;
  size_t memory_limit_mb = options.engine.memory_hard_limit_bytes / kMiB;
  size_t block_cache_mb = options.engine.block_cache_bytes / kMiB;
  size_t block_size_kb = options.engine.block_size / 1024;
  std::string compression = "lz4";
  int64_t compaction_mb_per_s = options.engine.compaction_bytes_per_second / int64_t{kMiB};
  std::string port_file;
  std::string log_level = "info";
  std::string log_format = "text";

  app.add_option("--listen", options.listen, "HOST:PORT to serve on; port 0 picks a free port")
      ->capture_default_str();
  app.add_option("--data-dir", options.engine.dir, "folder holding the node's data")
      ->capture_default_str();
  app.add_option("--sync", sync,
                 "commit-log durability: batch = a write is acknowledged after fdatasync "
                 "(group commit); periodic = acknowledged once written, fdatasync every "
                 "--periodic-sync-ms")
      ->check(CLI::IsMember({"batch", "periodic"}))
      ->capture_default_str();
  app.add_option("--periodic-sync-ms", periodic_sync_ms, "fdatasync interval in periodic mode")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_option("--memtable-mb", memtable_mb, "memtable size of a tablet before it is flushed")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--memory-limit-mb", memory_limit_mb,
                 "all memtables together; writers wait above this")
      ->check(CLI::Range(8, 1 << 20))
      ->capture_default_str();
  app.add_option("--block-cache-mb", block_cache_mb, "SSTable block cache")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--block-size-kb", block_size_kb, "SSTable block size")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--compression", compression, "SSTable block compression")
      ->check(CLI::IsMember({"none", "lz4", "zstd"}))
      ->capture_default_str();
  app.add_option("--background-threads", options.engine.background_threads,
                 "threads for flushes and compactions")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--compaction-mb-per-s", compaction_mb_per_s,
                 "compaction write rate limit; 0 = unlimited")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--worker-threads", options.worker_threads,
                 "threads running engine reads and writes for requests")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_flag("--inline-reads,!--no-inline-reads", options.data.inline_reads,
               "serve ReadRows on gRPC's threads instead of the worker threads")
      ->capture_default_str();
  app.add_flag("--inline-writes,!--no-inline-writes", options.data.inline_writes,
               "apply MutateRow on gRPC's threads instead of the worker threads")
      ->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port to this file once serving");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.add_option("--log-format", log_format, "text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (Status s = SetUpLogging(log_level, log_format); !s.ok()) {
    std::fprintf(stderr, "tessera serve: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  // Debian's abseil checks lock order on every Mutex acquisition; that costs more than the
  // locks themselves and the engine's tests already check lock order.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  options.engine.sync_mode = sync == "batch" ? tablet::SyncMode::kBatch
                                             : tablet::SyncMode::kPeriodic;
  options.engine.periodic_sync_interval_ms = periodic_sync_ms;
  options.engine.memtable_bytes = memtable_mb * kMiB;
  options.engine.memory_hard_limit_bytes = memory_limit_mb * kMiB;
  options.engine.block_cache_bytes = block_cache_mb * kMiB;
  options.engine.block_size = block_size_kb * 1024;
  options.engine.compression = compression == "none"   ? tablet::Compression::kNone
                               : compression == "zstd" ? tablet::Compression::kZstd
                                                       : tablet::Compression::kLz4;
  options.engine.compaction_bytes_per_second = compaction_mb_per_s * int64_t{kMiB};

  // SIGTERM and SIGINT are taken by sigwait below; block them before any thread starts so that
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  StatusOr<std::unique_ptr<server::Server>> server = server::Server::Start(options);
  if (!server.ok()) {
    TLOG_ERROR("tessera serve: {}", server.status());
    std::fprintf(stderr, "tessera serve: cannot start: %s\n",
                 std::string(server.status().message()).c_str());
    return 1;
  }
  if (!port_file.empty()) {
    if (Status s = WritePortFile(port_file, (*server)->port()); !s.ok()) {
      TLOG_ERROR("tessera serve: {}", s);
      return 1;
    }
  }
  std::printf("tessera: serving on %s\n", (*server)->address().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  TLOG_INFO("tessera serve: {} received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  Status closed = (*server)->Shutdown();
  if (!closed.ok()) {
    TLOG_ERROR("tessera serve: shutdown: {}", closed);
    return 1;
  }
  TLOG_INFO("tessera serve: stopped cleanly");
  return 0;
}

}  // namespace tessera::cli
