#include "tessera/server/server.h"

#include <chrono>

#include "grpcpp/grpcpp.h"
#include "tessera/server/admin_service.h"
#include "tessera/server/table_catalog.h"
#include "tessera/util/executor.h"
#include "tessera/util/logging.h"

namespace tessera::server {

struct Server::State {
  ServerOptions options;
  std::unique_ptr<tablet::Engine> engine;
  std::unique_ptr<TableCatalog> catalog;
  std::unique_ptr<Executor> workers;
  std::unique_ptr<DataService> data;
  std::unique_ptr<AdminService> admin;
  std::unique_ptr<grpc::Server> grpc_server;
  bool shut_down = false;
};

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() {
  Status s = Shutdown();
  if (!s.ok()) TLOG_ERROR("server: shutdown: {}", s);
}

tablet::Engine* Server::engine() const { return state_->engine.get(); }

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto state = std::make_unique<State>();
  state->options = options;
  ASSIGN_OR_RETURN(state->engine, tablet::Engine::Open(options.engine));
  ASSIGN_OR_RETURN(state->catalog, TableCatalog::Open(state->engine.get()));
  state->workers = NewThreadPoolExecutor(options.worker_threads);
  state->data = std::make_unique<DataService>(state->catalog.get(), SystemClock(),
                                              state->workers.get(), options.data);
  state->admin = std::make_unique<AdminService>(state->catalog.get(), state->data->row_locks());

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // The official clients ping every 30 s even without calls in flight; accept that forever.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Our own keepalive: notice dead clients of long streams.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  builder.RegisterService(state->data.get());
  builder.RegisterService(state->admin.get());
  state->grpc_server = builder.BuildAndStart();
  if (state->grpc_server == nullptr || port == 0) {
    Status close = state->engine->Close();
    (void)close;
    return absl::UnavailableError(
        tessera::StrCat("cannot listen on ", options.listen,
                        " (address in use, or not a HOST:PORT this machine has?)"));
  }
  std::unique_ptr<Server> server(new Server(std::move(state)));
  server->port_ = port;
  const std::string& listen = options.listen;
  server->address_ = tessera::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
  TLOG_INFO("server: serving the Bigtable API on {} (data in {})", server->address_,
            options.engine.dir);
  return server;
}

Status Server::Shutdown() {
  State& s = *state_;
  if (s.shut_down) return Status();
  s.shut_down = true;
  TLOG_INFO("server: shutting down");
  s.grpc_server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(s.options.shutdown_grace_ms));
  s.grpc_server->Wait();
  // Work already handed to the workers finishes before the engine closes.
  s.workers.reset();
  s.grpc_server.reset();
  s.admin.reset();
  s.data.reset();
  s.catalog.reset();
  Status closed = s.engine->Close();
  if (closed.ok()) TLOG_INFO("server: engine closed cleanly");
  return closed;
}

}  // namespace tessera::server
