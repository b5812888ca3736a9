// `tessera serve`: flags and config file -> ServerOptions, logging, signals, the port file.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/table_placement.h"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/config_file.h"
#include "tessera/cli/log_setup.h"
#include "tessera/coord/open_lock_service.h"
#include "tessera/rpc/tls.h"
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

// --lock-service: what coord::OpenLockService will accept.
CLI::Validator LockServiceCheck() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        StatusOr<coord::LockServiceAddress> a = coord::ParseLockServiceAddress(value);
        return a.ok() ? std::string() : std::string(a.status().message());
      },
      "embedded|etcd://HOST:PORT[,HOST:PORT...]");
}

absl::Mutex g_fatal_mu;
Status g_fatal ABSL_GUARDED_BY(g_fatal_mu);

}  // namespace

int RunServe(int argc, char** argv) {
  CLI::App app{
      "tessera serve: a node serving the Cloud Bigtable v2 data and table-admin APIs over "
      "durable local storage. Point cbt or a client library at it with "
      "BIGTABLE_EMULATOR_HOST=HOST:PORT; any project and instance names are accepted. Alone by "
      "default; with --lock-service etcd://HOST:PORT and --seeds, one node of a cluster "
      "(`tessera admin status` shows it).",
      "tessera serve"};
  SetUpCommandLine(&app);
  std::string config_path;
  app.add_option("--config", config_path,
                 "read flags from this TOML file (keys are the flag names without the dashes; "
                 "flags on the command line win)")
      ->check(CLI::ExistingFile);

  server::ServerOptions options;
  options.engine.dir = "./data";
  // Most reads are served from the block cache or memtables: answering them on the gRPC loop's
  // thread saves two thread hand-offs per read (measured: about a quarter of the server's CPU per
  // point read). Writes wait for group commit and stay on the worker threads.
  options.data.inline_reads = true;
  std::string sync = "batch";
  int64_t periodic_sync_ms = options.engine.periodic_sync_interval_ms;
  size_t memtable_mb = options.engine.memtable_bytes / kMiB;
  size_t memory_limit_mb = options.engine.memory_hard_limit_bytes / kMiB;
  size_t block_cache_mb = options.engine.block_cache_bytes / kMiB;
  size_t block_size_kb = options.engine.block_size / 1024;
  std::string compression = "lz4";
  std::string compaction = "leveled";
  int64_t compaction_mb_per_s = options.engine.compaction_bytes_per_second / int64_t{kMiB};
  int64_t hint_window_ms = options.cluster.replica.hint_window_us / 1000;
  int64_t max_hints_mb = static_cast<int64_t>(options.cluster.replica.max_hints_bytes / kMiB);
  int64_t hint_delivery_mb_per_s =
      static_cast<int64_t>(options.cluster.replica.hint_delivery_bytes_per_s / kMiB);
  int64_t stream_mb_per_s = static_cast<int64_t>(options.cluster.replica.stream_bytes_per_s / kMiB);
  std::string port_file;
  std::string log_level = "info";
  std::string log_format = "text";

  app.add_option("--listen", options.listen, "HOST:PORT to serve on; port 0 picks a free port")
      ->check(HostPortCheck(PortZero::kPicksFreePort))
      ->capture_default_str();
  app.add_option("--http-listen", options.http_listen,
                 "HOST:PORT serving Prometheus metrics at /metrics; \"auto\": the --listen host "
                 "and the next port (skipped with a warning when taken); \"\": none")
      ->check([](const std::string& v) -> std::string {
        if (v.empty() || v == server::kHttpNextToGrpc) return "";
        auto hp = ParseHostPort(v, PortZero::kPicksFreePort);
        return hp.ok() ? "" : std::string(hp.status().message());
      })
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls.cert_file,
                 "serve TLS with this certificate (PEM; with --tls-key and --tls-ca); nodes "
                 "also present it to each other (docs/security.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", options.tls.key_file, "the private key of --tls-cert (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-ca", options.tls.ca_file,
                 "the cluster CA (PEM): peers' certificates must be signed by it, and only a "
                 "node presenting one may gossip or replicate with this node")
      ->check(CLI::ExistingFile);
  app.add_flag("--auth", options.auth,
               "require a bearer token on every call, and grants for what it may do "
               "(docs/auth.md; `tessera admin grant`)");
  app.add_option("--auth-tokens", options.auth_tokens_file,
                 "with --auth: a private file of \"<principal> <token> [admin]\" lines; an "
                 "`admin` line names an administrator of the whole cluster")
      ->check(CLI::ExistingFile);
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
  app.add_option("--compaction", compaction,
                 "how the files of tables that choose none (tessera_options.compaction) are "
                 "compacted: leveled = a read touches one file per level; size_tiered = fewer "
                 "rewrites, for write-heavy tables read rarely")
      ->check(CLI::IsMember({"leveled", "size_tiered"}))
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
  app.add_option("--io-threads", options.io_threads,
                 "threads polling gRPC's completion queues, each serving the calls of its own "
                 "queue (docs/rpc.md: on 2 cores one is cheapest; more for a bigger machine)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  AddSwitch(&app, "grpc-executor", &options.grpc_executor_threads,
            "run gRPC's deferred callbacks on its executor threads (one more hand-off a call)");
  AddSwitch(&app, "inline-reads", &options.data.inline_reads,
            "serve ReadRows on the gRPC loop's thread instead of the worker threads");
  // Unset: inline with --sync periodic, whose writes wait for no fdatasync (measured: 5-20 %
  // less server CPU per operation on workloads A and F), on the workers with batch.
  CLI::Option* inline_writes = app.add_flag(
      "--inline-writes,!--no-inline-writes", options.data.inline_writes,
      "apply MutateRow on the gRPC loop's thread instead of the worker threads (default: on with "
      "--sync periodic, off with batch)");
  // --- cluster ---
  cluster::NodeOptions& node = options.cluster.node;
  std::string on_session_loss = "reregister";
  std::string read_consistency = "primary";
  std::string write_consistency = "quorum";
  int64_t gossip_interval_ms = node.gossip.interval_ms;
  app.add_option("--cluster-name", node.cluster_name,
                 "the cluster this node belongs to; gossip from another cluster is refused")
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--lock-service", options.cluster.lock_service,
                 "embedded (one node, kept in the data folder) or etcd://HOST:PORT[,HOST:PORT...] "
                 "(a cluster: every node names the same etcd, listing all its members; the "
                 "schema lives there)")
      ->check(LockServiceCheck())
      ->capture_default_str()
      ->group("Cluster");
  std::string etcd_ca, etcd_cert, etcd_key;
  app.add_option("--etcd-tls-ca", etcd_ca,
                 "reach etcd over TLS, verifying it against this CA certificate (PEM)")
      ->check(CLI::ExistingFile)
      ->group("Cluster");
  app.add_option("--etcd-tls-cert", etcd_cert,
                 "the client certificate (PEM) given to an etcd started with "
                 "--client-cert-auth; needs --etcd-tls-key and --etcd-tls-ca")
      ->check(CLI::ExistingFile)
      ->group("Cluster");
  app.add_option("--etcd-tls-key", etcd_key, "the private key of --etcd-tls-cert (PEM)")
      ->check(CLI::ExistingFile)
      ->group("Cluster");
  app.add_option("--seeds", node.seeds,
                 "comma-separated HOST:PORT of nodes to join through; a node may list itself "
                 "(it may then start alone)")
      ->delimiter(',')
      ->check(HostPortCheck())
      ->group("Cluster");
  app.add_option("--dc", node.dc, "this node's data centre")->capture_default_str()->group(
      "Cluster");
  app.add_option("--rack", node.rack, "this node's rack")->capture_default_str()->group(
      "Cluster");
  app.add_option("--placement", options.cluster.placement,
                 "how tables that name no placement place their tablets: tablets (the least "
                 "loaded nodes), ring (by the nodes' tokens), or a whole policy such as "
                 "ring:rack:3 or tablets:dc1=2,dc2=1; replication factor min(3, nodes) unless "
                 "given")
      ->check(CLI::Validator(
          [](std::string& text) {
            Status s = catalog::ValidatePlacementText(text);
            return s.ok() ? std::string() : std::string(s.message());
          },
          "PLACEMENT"))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--advertise", node.endpoint,
                 "HOST:PORT other nodes reach this one at (default: the bound --listen address)")
      ->check(HostPortCheck())
      ->group("Cluster");
  app.add_option("--gossip-interval-ms", gossip_interval_ms, "one gossip round this often")
      ->check(CLI::Range(int64_t{10}, int64_t{60000}))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--phi-convict", node.gossip.convict_phi,
                 "phi at which a silent peer is marked down (suspect at half of it)")
      ->check(CLI::Range(0.5, 100.0))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--session-ttl-ms", node.session_ttl_ms,
                 "lock-service lease; a node silent this long loses its session and the "
                 "master lock; etcd rounds it up to whole seconds")
      ->check(CLI::Range(int64_t{1000}, int64_t{3600000}))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--join-timeout-ms", node.join_timeout_ms,
                 "how long to wait for a seed to answer before giving up")
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--on-session-loss", on_session_loss,
                 "what a node does when its lock-service session expires: stop serving and "
                 "reregister, or exit")
      ->check(CLI::IsMember({"reregister", "exit"}))
      ->capture_default_str()
      ->group("Cluster");

  app.add_option("--read-consistency", read_consistency,
                 "level of reads whose app profile sets none: primary (linearizable), quorum "
                 "or one")
      ->check(CLI::IsMember({"primary", "quorum", "one"}))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--write-consistency", write_consistency,
                 "level of writes whose app profile sets none: one, quorum, all or "
                 "local_quorum")
      ->check(CLI::IsMember({"one", "quorum", "all", "local_quorum"}))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--hint-window-ms", hint_window_ms,
                 "a replica's primary keeps the mutations it misses on disk this long; a replica "
                 "away longer is rebuilt")
      ->check(CLI::Range(int64_t{1}, int64_t{30} * 24 * 3600 * 1000))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--max-hints-mb", max_hints_mb,
                 "the hints on disk of all this node's tablets together; beyond, the oldest go")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--stream-mb-per-s", stream_mb_per_s,
                 "rebuild copies sent to replicas, per node, every copy together; 0 = unlimited "
                 "(`tessera admin setstreamthroughput` changes it at run time)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str()
      ->group("Cluster");
  app.add_option("--hint-delivery-mb-per-s", hint_delivery_mb_per_s,
                 "hints sent from disk to replicas that are back, per node; 0 = unlimited")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
      ->capture_default_str()
      ->group("Cluster");

  app.add_option("--port-file", port_file, "write the bound port to this file once serving");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.add_option("--log-format", log_format, "text or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  if (!config_path.empty()) {
    if (Status s = ApplyConfigFile(&app, config_path); !s.ok()) {
      std::fprintf(stderr, "tessera serve: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (Status s = SetUpLogging(log_level, log_format); !s.ok()) {
    std::fprintf(stderr, "tessera serve: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  // Debian's abseil checks lock order on every Mutex acquisition; that costs more than the
  // locks themselves and the engine's tests already check lock order.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  if (!etcd_ca.empty() || !etcd_cert.empty() || !etcd_key.empty()) {
    StatusOr<std::shared_ptr<grpc::ChannelCredentials>> etcd =
        rpc::EtcdCredentials(etcd_ca, etcd_cert, etcd_key);
    if (!etcd.ok()) {
      std::fprintf(stderr, "tessera serve: %s\n", std::string(etcd.status().message()).c_str());
      return 2;
    }
    options.cluster.lock_service_credentials = *std::move(etcd);
  }
  options.engine.sync_mode = sync == "batch" ? tablet::SyncMode::kBatch
                                             : tablet::SyncMode::kPeriodic;
  options.engine.periodic_sync_interval_ms = periodic_sync_ms;
  if (inline_writes->count() == 0) {
    options.data.inline_writes = options.engine.sync_mode == tablet::SyncMode::kPeriodic;
  }
  options.engine.memtable_bytes = memtable_mb * kMiB;
  options.engine.memory_hard_limit_bytes = memory_limit_mb * kMiB;
  options.engine.block_cache_bytes = block_cache_mb * kMiB;
  options.engine.block_size = block_size_kb * 1024;
  options.engine.compaction_style =
      tablet::ParseCompactionStyle(compaction).value_or(tablet::CompactionStyle::kLeveled);
  options.engine.compression = compression == "none"   ? tablet::Compression::kNone
                               : compression == "zstd" ? tablet::Compression::kZstd
                                                       : tablet::Compression::kLz4;
  options.engine.compaction_bytes_per_second = compaction_mb_per_s * int64_t{kMiB};
  cluster::SetGossipInterval(&node.gossip, gossip_interval_ms);
  node.gossip.suspect_phi = node.gossip.convict_phi / 2;
  options.cluster.read_level = *replication::ParseReadLevel(read_consistency);
  options.cluster.write_level = *replication::ParseWriteLevel(write_consistency);
  options.cluster.replica.hint_window_us = hint_window_ms * 1000;
  options.cluster.replica.max_hints_bytes = static_cast<uint64_t>(max_hints_mb) * kMiB;
  options.cluster.replica.hint_delivery_bytes_per_s =
      static_cast<uint64_t>(hint_delivery_mb_per_s) * kMiB;
  options.cluster.replica.stream_bytes_per_s = static_cast<uint64_t>(stream_mb_per_s) * kMiB;
  node.on_session_loss = on_session_loss == "exit" ? cluster::SessionLossAction::kExit
                                                   : cluster::SessionLossAction::kReregister;
  options.cluster.on_fatal = [](const Status& why) {
    {
      absl::MutexLock lock(&g_fatal_mu);
      g_fatal = why;
    }
    kill(getpid(), SIGTERM);
  };

  // SIGTERM, SIGINT and SIGHUP are taken by sigwait below; block them before any thread starts
  // so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
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
  if (const std::string http = (*server)->http_address(); !http.empty()) {
    std::printf("tessera: metrics on http://%s/metrics\n", http.c_str());
  }
  std::fflush(stdout);

  int sig = 0;
  // With a tokens file, SIGHUP reads it again (as daemons reread their configuration); without
  // one it stops the node as SIGTERM does, as a hangup always did.
  const bool reload_on_hup = !options.auth_tokens_file.empty();
  for (sigwait(&signals, &sig); sig == SIGHUP && reload_on_hup; sigwait(&signals, &sig)) {
    StatusOr<size_t> tokens = (*server)->ReloadAuthTokens();
    if (tokens.ok()) {
      TLOG_INFO("tessera serve: SIGHUP: {} token(s) read again from --auth-tokens", *tokens);
    } else {
      TLOG_ERROR("tessera serve: SIGHUP: tokens not reloaded, the previous ones stay: {}",
                 tokens.status().message());
    }
  }
  Status fatal;
  {
    absl::MutexLock lock(&g_fatal_mu);
    fatal = g_fatal;
  }
  if (!fatal.ok()) {
    TLOG_ERROR("tessera serve: {}; shutting down", fatal.message());
  } else {
    TLOG_INFO("tessera serve: {} received, shutting down",
              sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT");
  }
  Status closed = (*server)->Shutdown();
  if (!closed.ok()) {
    TLOG_ERROR("tessera serve: shutdown: {}", closed);
    return 1;
  }
  if (!fatal.ok()) {
    std::fprintf(stderr, "tessera serve: %s\n", std::string(fatal.message()).c_str());
    return 1;
  }
  TLOG_INFO("tessera serve: stopped cleanly");
  return 0;
}

}  // namespace tessera::cli
