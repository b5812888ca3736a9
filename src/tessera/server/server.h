// Server: one Tessera node's process wiring — gRPC over a NodeCore (node_core.h: the engine over
// a data folder, the table catalog, the lock service, the cluster membership) on the real
// machine (SystemEnv), with the Bigtable data, table-admin and instance-admin services on one
// gRPC port (insecure h2c, as the official emulator: clients reach it through
// BIGTABLE_EMULATOR_HOST), a fallback that answers every undeclared method UNIMPLEMENTED naming
// it, and the worker threads that run engine I/O off the gRPC loop (rpc/loop.h). App profiles live in the lock
// service (embedded or etcd) and are reachable once the node has registered
// (server/app_profile_store.h).
//
// Lifecycle: Start() opens the engine (recovering the commit log) and listens; Shutdown() stops
// accepting calls, lets running calls finish (up to a deadline, then cancels them), stops the
// workers and closes the engine, which syncs the commit log. Every acknowledged write is in the
// commit log before its call returns (kBatch) or within the periodic sync interval (kPeriodic).
//
// gRPC settings: receive limit raised to 256 MiB (Bigtable allows 100 MiB values); client
// keepalive pings every 30 s (the official clients' setting) are accepted without strikes.
//
// Cluster membership (cluster/node.h): every server is a ClusterNode — alone, with the embedded
// lock service in its data folder (the default), or one of many with etcd as the lock service.
// The same port carries gossip (tessera.v1.Gossip) and the operator's status
// (tessera.v1.ClusterAdmin). With etcd, the schema lives in the lock service and this node
// mirrors it (catalog/schema_store.h, cluster_definitions.h); every Bigtable call, data and admin,
// answers UNAVAILABLE while the node has no lock-service session. Shutdown() first announces the
// stop through gossip (peers mark the node down at once), then stops answering.
//
// Thread-safety: Start/Shutdown/Wait from one controlling thread; the services are
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/cluster/node.h"
#include "tessera/rpc/tls.h"
#include "tessera/server/data_service.h"
#include "tessera/server/node_core.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/status.h"

namespace tessera::server {

// ServerOptions::http_listen's default: the gRPC host and the next port.
inline constexpr char kHttpNextToGrpc[] = "auto";

struct ServerOptions {
  // HOST:PORT to listen on; port 0 picks a free port (see Server::port()).
  std::string listen = "127.0.0.1:8086";
  // HOST:PORT of the HTTP port serving /metrics for Prometheus (docs/metrics.md); "" serves
  // none. kHttpNextToGrpc: listen's host and port + 1 (a free port when listen's is 0), and
  // a node whose next port is taken serves without it, with a warning; any other address
  // must be free, or Start fails.
  std::string http_listen = kHttpNextToGrpc;
  tablet::EngineOptions engine;  // engine.dir is the data folder
  DataServiceOptions data;
  // Threads running engine reads and writes for the data service.
  int worker_threads = 16;
  // Threads of the gRPC loop (rpc/loop.h), each polling a completion queue of its own and
  // running the calls that arrive on it (docs/rpc.md: one is cheapest on a small machine).
  int io_threads = 1;
  // gRPC's deferred callbacks (a streaming call's OnDone among them) on gRPC's executor
  // threads instead of the thread at hand: one more hand-off per call. Process-wide
  // (grpc_executor.h): the last server started in a process decides.
  bool grpc_executor_threads = false;
  // Largest request or response message, in bytes.
  int max_message_bytes = 256 << 20;
  // On Shutdown, calls still running after this long are cancelled.
  int64_t shutdown_grace_ms = 5000;
  ClusterServeOptions cluster;
  // TLS (rpc/tls.h, docs/security.md): all empty serves plaintext.
  rpc::TlsFiles tls;
  // --auth and --auth-tokens (docs/auth.md): bearer tokens and grants. Off: every caller may
  // do everything, as with the emulator.
  bool auth = false;
  std::string auth_tokens_file;
};

class Server {
 public:
  static StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();  // Shutdown() if still running

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound.
  int port() const { return port_; }
  // The HTTP port's HOST:PORT ("" if none).
  std::string http_address() const;
  const std::string& address() const { return address_; }
  tablet::Engine* engine() const;
  cluster::ClusterNode* node() const;
  NodeCore* core() const;

  // Reads the --auth-tokens file again (AccessControl::ReloadTokensFile; `tessera serve` on
  // SIGHUP), audited as the action `reloadtokens`; returns how many tokens it holds.
  // FailedPrecondition without --auth-tokens; the file's error otherwise, the old tokens kept.
  StatusOr<size_t> ReloadAuthTokens();

  // Stops serving and closes the engine; returns the engine's Close() status. Idempotent.
  Status Shutdown();

 private:
  struct State;
  explicit Server(std::unique_ptr<State> state);
  // Everything after the engine: catalog, lock service, services, the gRPC server, the node.
  static Status StartServices(State* state);
  // The HTTP port for metrics (ServerOptions::http_listen).
  static Status StartHttp(State* state);

  std::unique_ptr<State> state_;
  int port_ = 0;
  std::string address_;
};

}  // namespace tessera::server
