#include "tessera/server/server.h"

#include "tessera/server/grpc_rpc_channel.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>

#include "grpcpp/grpcpp.h"
#include "prometheus/registry.h"
#include "tessera/cluster/grpc_transport.h"
#include "tessera/cluster/status_service.h"
#include "tessera/metrics/http_exporter.h"
#include "tessera/metrics/rpc_metrics.h"
#include "tessera/replication/coordinator.h"
#include "tessera/rpc/loop.h"
#include "tessera/rpc/server.h"
#include "tessera/rpc/tls.h"
#include "tessera/server/access_admin_service.h"
#include "tessera/server/app_profile_levels.h"
#include "tessera/server/audit.h"
#include "tessera/server/auth_gate.h"
#include "tessera/server/cluster_definitions.h"
#include "tessera/server/dashboard.h"
#include "tessera/server/grpc_executor.h"
#include "tessera/server/grpc_rpc_channel.h"
#include "tessera/server/instance_admin_service.h"
#include "tessera/server/node_admin_service.h"
#include "tessera/server/node_metrics.h"
#include "tessera/server/tablet_admin_service.h"
#include "tessera/util/env.h"
#include "tessera/util/executor.h"
#include "tessera/util/host_port.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace {

namespace v1 = ::tessera::v1;

// Whether `listen` (HOST:PORT) is reachable only from this machine.
bool IsLoopback(const std::string& listen) {
  StatusOr<HostPort> where = ParseHostPort(listen, PortZero::kPicksFreePort);
  if (!where.ok()) return false;
  return where->host == "localhost" || where->host == "::1" || where->host.starts_with("127.");
}

// Why gRPC could not listen on `listen` (HOST:PORT): it says only that it failed, so bind a
// socket the same way and report the system's reason ("Address already in use").
std::string ListenFailure(const std::string& listen) {
  StatusOr<HostPort> where = ParseHostPort(listen, PortZero::kPicksFreePort);
  if (!where.ok()) return std::string(where.status().message());
  const std::string& host = where->host;
  const std::string port = std::to_string(where->port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return tessera::StrCat("cannot resolve '", host, "': ", ::gai_strerror(rc));
  }
  std::string why = "gRPC could not start a listener there";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int bound = ::bind(fd, a->ai_addr, a->ai_addrlen);
    const int err = errno;
    ::close(fd);
    if (bound != 0) {
      why = tessera::StrCat(std::strerror(err), err == EADDRINUSE ? " (another server?)" : "");
      break;
    }
  }
  ::freeaddrinfo(found);
  return why;
}

}  // namespace

// The replication protocol's service, registered before the node's address (and so its
// channel) is known: calls wait for nothing, they are refused until the channel is made.
class LateReplicaService final {
 public:
  void Set(std::unique_ptr<ReplicaService> service) {
    absl::MutexLock l(&mu_);
    service_ = std::move(service);
  }
  void Register(rpc::Services* services) {
    constexpr const char* kService = ::tessera::v1::Replica::service_full_name();
    services->Add(kService, "Call", this, &LateReplicaService::Call);
    services->Add(kService, "Stream", this, &LateReplicaService::Stream);
  }
  rpc::UnaryReactor* Call(rpc::ServerContext* context, const ::tessera::v1::ReplicaCall* request,
                          ::tessera::v1::ReplicaReply* reply) {
    ReplicaService* service = nullptr;
    {
      absl::MutexLock l(&mu_);
      service = service_.get();
    }
    if (service != nullptr) return service->Call(context, request, reply);
    rpc::UnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(NotYet());
    return reactor;
  }
  rpc::BidiReactor<::tessera::v1::ReplicaFrames, ::tessera::v1::ReplicaFrames>* Stream(
      rpc::ServerContext* context) {
    ReplicaService* service = nullptr;
    {
      absl::MutexLock l(&mu_);
      service = service_.get();
    }
    if (service != nullptr) return service->Stream(context);
    // A reactor that only refuses: finished at once, deleted when gRPC is done with it.
    class Refusal final
        : public rpc::BidiReactor<::tessera::v1::ReplicaFrames, ::tessera::v1::ReplicaFrames> {
     public:
      explicit Refusal(rpc::ServerContext* context) : BidiReactor(context) { Finish(NotYet()); }
      void OnDone() override { delete this; }
    };
    return new Refusal(context);
  }

 private:
  static grpc::Status NotYet() {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this node does not replicate yet");
  }

  absl::Mutex mu_;
  std::unique_ptr<ReplicaService> service_ ABSL_GUARDED_BY(mu_);  // set once, kept to the end
};

struct Server::State {
  ServerOptions options;
  // The gRPC server's settings and ports, from Start until the server is built (the loop's
  // queues are added to it first: the lock service's watches run on them from the start).
  std::unique_ptr<grpc::ServerBuilder> builder;
  // Every gRPC call of the node, served and made, completes here (rpc/loop.h). Shut down last.
  std::unique_ptr<rpc::Loop> loop;
  // The admin services' handlers, which wait for the lock service and other nodes.
  std::unique_ptr<Executor> admin_executor;
  rpc::Services services;
  // The node's election and re-registration steps, and the tasks of the lock service's
  // mirrors, run here.
  std::unique_ptr<SystemEnv> cluster_env;
  // The gossip rounds, on a thread of their own, so that nothing on cluster_env (a lock-service
  // call that blocks for its timeout) holds up a heartbeat.
  std::unique_ptr<Executor> gossip_executor;
  // Everything but gRPC: engine, catalog, lock service, TableAccess, admin logic, the node.
  std::unique_ptr<NodeCore> core;
  std::unique_ptr<Executor> workers;
  std::unique_ptr<AppProfileLevels> profile_levels;
  std::unique_ptr<DataService> data;
  std::unique_ptr<InstanceAdminService> instance_admin;
  std::unique_ptr<cluster::GrpcTransport> transport;
  std::unique_ptr<cluster::GossipService> gossip_service;
  std::unique_ptr<cluster::ClusterAdminService> cluster_admin;
  std::unique_ptr<TabletAdminService> tablet_admin;
  std::unique_ptr<NodeAdminService> node_admin;
  // The replication protocol (cluster schema only): its callbacks' threads and its service.
  std::unique_ptr<Executor> replica_executor;
  std::unique_ptr<LateReplicaService> replica_service;
  std::unique_ptr<rpc::Server> rpc_server;
  // Metrics (docs/metrics.md): the gRPC calls, counted as they end, and the node's figures,
  // read at each scrape of the HTTP port (null with --http-listen "").
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<metrics::RpcMetrics> rpc_metrics;
  std::unique_ptr<CallCounter> calls;  // the dashboard's count, before rpc_metrics
  std::shared_ptr<NodeMetrics> node_metrics;
  std::unique_ptr<metrics::HttpExporter> http;
  int port = 0;
  std::string address;
  bool shut_down = false;
  // TLS (null: plaintext) and the gate that keeps node-to-node services for certified peers.
  std::unique_ptr<rpc::TlsMaterial> tls;
  std::unique_ptr<rpc::PeerCertificateGate> gate;
  // With --auth: bearer tokens and the admin services' permissions; then both gates in order.
  std::unique_ptr<AuthGate> auth_gate;
  std::unique_ptr<rpc::GateChain> gates;
  std::unique_ptr<AccessAdminService> access_admin;

  // Stops what Start() started, in reverse order; safe on a partly started state.
  Status Stop();
};

Status Server::State::Stop() {
  // Scrapes end first: they read the core.
  http.reset();
  // Peers learn of a clean stop while this node still answers, and mark it down at once.
  if (core != nullptr) core->AnnounceShutdown();
  if (rpc_server != nullptr) {
    rpc_server->Shutdown(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(options.shutdown_grace_ms));
  }
  // The session closes: the directory entry and the master lock go at once.
  if (cluster_admin != nullptr) cluster_admin->SetNode(nullptr);
  if (core != nullptr) core->StopNode();
  cluster_env.reset();
  gossip_executor.reset();
  if (transport != nullptr) transport->Shutdown();
  // Work already handed to the workers finishes before the engine closes.
  workers.reset();
  rpc_server.reset();
  admin_executor.reset();
  instance_admin.reset();
  data.reset();
  cluster_admin.reset();
  tablet_admin.reset();
  node_admin.reset();
  access_admin.reset();
  gossip_service.reset();
  transport.reset();
  Status closed;
  if (core != nullptr) closed = core->Close();  // the replication channel goes here, its
                                                // callbacks run; the lock service closes
  replica_service.reset();
  replica_executor.reset();
  builder.reset();
  if (loop != nullptr) loop->Shutdown();  // every call of the node has ended
  return closed;
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  Status s = Shutdown();
  if (!s.ok()) TLOG_ERROR("server: shutdown: {}", s);
}

tablet::Engine* Server::engine() const { return state_->core->engine(); }
cluster::ClusterNode* Server::node() const { return state_->core->node(); }
NodeCore* Server::core() const { return state_->core.get(); }

StatusOr<size_t> Server::ReloadAuthTokens() {
  AccessControl* ac = core()->access_control();
  StatusOr<size_t> tokens = ac != nullptr
                                ? ac->ReloadTokensFile()
                                : StatusOr<size_t>(absl::FailedPreconditionError(
                                      "the node has no tokens file (--auth --auth-tokens)"));
  AuditAdmin("-", "signal", "reloadtokens", core()->options().auth_tokens_file, tokens.status());
  return tokens;
}

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  // Before any channel of the node (lock service, gossip) or the server is made.
  if (!options.auth && !options.auth_tokens_file.empty()) {
    return absl::InvalidArgumentError("--auth-tokens needs --auth");
  }
  SetGrpcExecutorThreads(options.grpc_executor_threads);
  auto state = std::make_unique<State>();
  state->options = options;
  State* s = state.get();
  if (!options.tls.empty()) {
    ASSIGN_OR_RETURN(rpc::TlsMaterial tls, rpc::LoadTls(options.tls));
    s->tls = std::make_unique<rpc::TlsMaterial>(std::move(tls));
    // Only a node with a certificate of the cluster CA may gossip or replicate with this one.
    s->gate = std::make_unique<rpc::PeerCertificateGate>(
        std::set<std::string, std::less<>>{std::string(v1::Gossip::service_full_name()),
                                           std::string(v1::Replica::service_full_name())});
  } else if (!IsLoopback(options.listen)) {
    TLOG_WARN(
        "server: *** {} is not a loopback address and TLS is off: anyone who reaches it can "
        "read and change every table, and join the cluster. Give --tls-cert, --tls-key and "
        "--tls-ca (docs/security.md). ***",
        options.listen);
  }
  s->builder = std::make_unique<grpc::ServerBuilder>();
  s->loop = rpc::Loop::ForServer(s->builder.get(), std::max(1, options.io_threads));
  s->cluster_env = std::make_unique<SystemEnv>(/*threads=*/2);
  s->gossip_executor = NewThreadPoolExecutor(1);
  s->options.cluster.node.gossip_executor = s->gossip_executor.get();
  // The real machine: the engine on its own threads, the lock service the options name.
  NodeCoreEnv env{.env = s->cluster_env->env()};
  env.rpc_loop = s->loop.get();
  // A cluster replicates its tables over the Replica service on the node's one port.
  s->replica_executor = NewThreadPoolExecutor(4);
  env.replica_executor = s->replica_executor.get();
  s->replica_service = std::make_unique<LateReplicaService>();
  env.replica_channel =
      [s, cluster_name = options.cluster.node.cluster_name, max_bytes = options.max_message_bytes](
          const std::string& self) -> StatusOr<std::unique_ptr<replication::RpcChannel>> {
    GrpcRpcChannelOptions o;
    o.self = self;
    o.cluster_name = cluster_name;
    o.max_message_bytes = static_cast<int>(max_bytes);
    // Reads served where they arrive wait for nothing (a primary's read is answered once the
    // commit it saw is, through a callback).
    o.inline_methods = {std::string(replication::kForwardReadMethod),
                        std::string(replication::kForwardPositionMethod)};
    if (s->tls != nullptr) o.credentials = rpc::PeerCredentialsFor(s->tls.get());
    auto channel =
        std::make_unique<GrpcRpcChannel>(o, s->replica_executor.get(), s->loop.get());
    s->replica_service->Set(std::make_unique<ReplicaService>(channel.get()));
    return std::unique_ptr<replication::RpcChannel>(std::move(channel));
  };
  ASSIGN_OR_RETURN(s->core,
                   NodeCore::Open(NodeCoreOptions{.engine = options.engine,
                                                  .cluster = s->options.cluster,
                                                  .auth = options.auth,
                                                  .auth_tokens_file = options.auth_tokens_file},
                                  env));
  Status started = StartServices(s);
  if (!started.ok()) {
    Status stopped = s->Stop();
    if (!stopped.ok()) TLOG_ERROR("server: stopping after a failed start: {}", stopped);
    return started;
  }
  std::unique_ptr<Server> server(new Server(std::move(state)));
  server->port_ = s->port;
  server->address_ = s->address;
  TLOG_INFO(
      "server: serving the Bigtable API on {} (data in {}; cluster '{}', {} lock service; {})",
      server->address_, options.engine.dir, options.cluster.node.cluster_name,
      s->core->lock_service()->backend_name(),
      s->tls != nullptr ? "TLS, nodes by certificate" : "plaintext");
  return server;
}

Status Server::StartServices(State* s) {
  const ServerOptions& options = s->options;
  NodeCore* core = s->core.get();
  s->transport = std::make_unique<cluster::GrpcTransport>(cluster::GrpcTransportOptions{
      options.cluster.node.cluster_name,
      std::max<int64_t>(1000, 2 * options.cluster.node.gossip.interval_ms), 4, s->loop.get(),
      s->tls != nullptr ? rpc::PeerCredentialsFor(s->tls.get()) : nullptr});
  s->gossip_service = std::make_unique<cluster::GossipService>(s->transport.get());
  s->cluster_admin = std::make_unique<cluster::ClusterAdminService>();
  s->tablet_admin = std::make_unique<TabletAdminService>(core);
  s->node_admin = std::make_unique<NodeAdminService>(core);

  s->workers = NewThreadPoolExecutor(options.worker_threads);
  // One check for every Bigtable call, data and admin alike.
  auto serving_check = [core] { return core->CheckServing(); };
  DataServiceOptions data_options = options.data;
  data_options.serving_check = serving_check;
  data_options.access_control = core->access_control();
  if (ClusterDefinitions* definitions = core->cluster_definitions(); definitions != nullptr) {
    // A table this node does not know may have been created through another node a moment
    // ago (one whose schema agreement timed out): the store reconciles once before NotFound,
    // at most once a second, so a client asking for missing tables costs the lock service one
    // listing a second, not one per request.
    auto last_reconcile_us = std::make_shared<std::atomic<int64_t>>(0);
    data_options.refresh_schema = [definitions, last_reconcile_us, clock = core->env().clock] {
      const int64_t now = clock->MonotonicMicros();
      int64_t last = last_reconcile_us->load();
      if ((last != 0 && now - last < 1'000'000) ||
          !last_reconcile_us->compare_exchange_strong(last, now)) {
        return Status();  // another request reconciled a moment ago: the answer stands
      }
      return definitions->store()->Reconcile();
    };
  }
  if (core->cluster_definitions() != nullptr) {
    // A replicated node's operations wait for other nodes, whose answers arrive on the gRPC
    // loop, so the loop may never wait for one: its answers (the failover's seals among
    // them) would never be served, as the chaos tests once found with reads. No operation waits on a
    // thread for another node (a waker for the read stream, TableAccess's asynchronous
    // writes), so reads keep --inline-reads; a write this node applies as primary waits for
    // its commit log on a worker (no --inline-writes).
    data_options.inline_writes = false;
  }
  TLOG_INFO("server: gRPC on {} loop thread{}; ReadRows on {}, MutateRow on {}",
            s->loop->size(), s->loop->size() == 1 ? "" : "s",
            data_options.inline_reads ? "the loop" : "the worker threads",
            data_options.inline_writes ? "the loop" : "the worker threads");
  s->profile_levels = std::make_unique<AppProfileLevels>(
      [core](const std::string& instance, const std::string& id) {
        return core->profiles()->Get(AppProfileName{instance, id});
      },
      core->env().clock);
  data_options.profile_levels = [levels = s->profile_levels.get()](std::string_view instance,
                                                                   std::string_view id) {
    return levels->Resolve(instance, id);
  };
  s->data = std::make_unique<DataService>(core->catalog(), core->access(), core->env().clock,
                                          s->workers.get(), data_options);
  const std::string cluster_name = options.cluster.node.cluster_name;
  const std::string dc = options.cluster.node.dc;
  s->instance_admin = std::make_unique<InstanceAdminService>(
      core->catalog(), core->profiles(),
      [core, cluster_name, dc] {
        ClusterView view{cluster_name, dc, 1, false};
        cluster::ClusterNode* node = core->serving_node();
        if (node == nullptr) return view;
        view.serving = node->serving();
        int up = 0;
        for (const cluster::PeerSummary& peer : node->gossiper()->Summaries()) {
          if (peer.liveness != cluster::Liveness::kDown) ++up;
        }
        view.serve_nodes = std::max(up, 1);
        return view;
      },
      serving_check,
      [levels = s->profile_levels.get()](const AppProfileName& name) {
        levels->Forget(name.instance, name.id);
      });
  s->admin_executor = NewThreadPoolExecutor(4);

  grpc::ServerBuilder& builder = *s->builder;
  builder.AddListeningPort(options.listen, rpc::ServerCredentialsFor(s->tls.get()), &s->port);
  // gRPC sets SO_REUSEPORT by default, so a second server on a port in use would start and
  // share it with the first, the two answering alternately; refuse as any server does.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // The official clients ping every 30 s even without calls in flight; accept that forever.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Our own keepalive: notice dead clients of long streams.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  Executor* admin = s->admin_executor.get();
  s->data->Register(&s->services);
  core->admin()->Register(&s->services, admin);
  s->instance_admin->Register(&s->services, admin);
  s->gossip_service->Register(&s->services);
  s->cluster_admin->Register(&s->services, admin);
  s->tablet_admin->Register(&s->services, admin);
  s->node_admin->Register(&s->services, admin);
  s->access_admin = std::make_unique<AccessAdminService>(core->access_control());
  s->access_admin->Register(&s->services, admin);
  if (core->access_control() != nullptr) {
    // Node-to-node services stay under the certificate gate: a coordinator authorizes a
    // request before it forwards it.
    s->auth_gate = std::make_unique<AuthGate>(
        core->access_control(),
        std::set<std::string, std::less<>>{std::string(v1::Gossip::service_full_name()),
                                           std::string(v1::Replica::service_full_name())});
    if (s->tls == nullptr && !IsLoopback(options.listen)) {
      TLOG_WARN("server: *** --auth without TLS: bearer tokens cross the network in clear ***");
    }
  }
  s->gates = std::make_unique<rpc::GateChain>(
      std::vector<rpc::CallGate*>{s->gate.get(), s->auth_gate.get()});
  s->replica_service->Register(&s->services);
  if (!options.http_listen.empty()) {
    s->registry = std::make_shared<prometheus::Registry>();
    s->rpc_metrics = std::make_unique<metrics::RpcMetrics>(s->registry.get(), &s->services);
  }
  // Every call is counted for the dashboard, then for Prometheus.
  s->calls = std::make_unique<CallCounter>(s->rpc_metrics.get());
  StatusOr<std::unique_ptr<rpc::Server>> server =
      rpc::Server::Start(&builder, &s->services, s->loop.get(), s->calls.get(), s->gates.get());
  if (!server.ok() && !absl::IsUnavailable(server.status())) return server.status();
  if (!server.ok() || s->port == 0) {
    return absl::UnavailableError(
        tessera::StrCat("cannot listen on ", options.listen, ": ", ListenFailure(options.listen)));
  }
  s->rpc_server = *std::move(server);
  s->builder.reset();
  const std::string& listen = options.listen;
  s->address = tessera::StrCat(listen.substr(0, listen.rfind(':')), ":", s->port);
  RETURN_IF_ERROR(StartHttp(s));

  // Join the cluster (alone, by default) now that gossip can arrive.
  RETURN_IF_ERROR(core->StartNode(s->address, s->transport.get()));
  s->cluster_admin->SetNode(core->node());
  // Peers' dashboards find this node's HTTP port through gossip.
  if (s->http != nullptr) {
    core->node()->gossiper()->SetApplicationState(cluster::kHttpKey, s->http->address());
  }
  return Status();
}

Status Server::StartHttp(State* s) {
  const std::string& wanted = s->options.http_listen;
  if (wanted.empty()) return Status();
  // "auto": the gRPC host, the next port (a free one when the gRPC port was picked).
  const bool automatic = wanted == kHttpNextToGrpc;
  std::string at = wanted;
  if (automatic) {
    const std::string& listen = s->options.listen;
    const bool picked = listen.size() >= 2 && listen.substr(listen.size() - 2) == ":0";
    at = tessera::StrCat(listen.substr(0, listen.rfind(':')), ":", picked ? 0 : s->port + 1);
  }
  s->node_metrics = std::make_shared<NodeMetrics>(s->core.get());
  StatusOr<std::unique_ptr<metrics::HttpExporter>> http = metrics::HttpExporter::Start(
      at, {s->registry, s->node_metrics}, DashboardPages(s->core.get(), s->calls.get()));
  if (!http.ok()) {
    // An address asked for must work; the default one may be taken (a second node on the
    // machine, say): the node serves without it, and says so.
    if (!automatic) return http.status();
    TLOG_WARN("server: no metrics over HTTP: {} (set --http-listen to choose the address)",
              http.status());
    return Status();
  }
  s->http = *std::move(http);
  TLOG_INFO("server: metrics on http://{}/metrics", s->http->address());
  return Status();
}

std::string Server::http_address() const {
  return state_->http != nullptr ? state_->http->address() : "";
}

Status Server::Shutdown() {
  State& s = *state_;
  if (s.shut_down) return Status();
  s.shut_down = true;
  TLOG_INFO("server: shutting down");
  Status closed = s.Stop();
  if (closed.ok()) TLOG_INFO("server: engine closed cleanly");
  return closed;
}

}  // namespace tessera::server
