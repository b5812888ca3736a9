// RpcServer: a gRPC server for tests, on the rpc layer (rpc/server.h) with a loop of its own,
// on 127.0.0.1 and a free port. The loop exists from construction, so a client of the loop
// (a GrpcTransport, a GrpcRpcChannel) can be made before the server starts; services register
// on services() before Start().
//
//   testing::RpcServer server;
//   service.Register(server.services());
//   ASSERT_TRUE(server.Start().ok());
//   ... grpc::CreateChannel(server.address(), ...) ...
//
// Thread-safety: one controlling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "grpcpp/server_builder.h"
#include "tessera/rpc/loop.h"
#include "tessera/rpc/server.h"
#include "tessera/util/status.h"

namespace tessera::testing {

class RpcServer {
 public:
  RpcServer();
  ~RpcServer();  // Shutdown()

  rpc::Loop* loop() const { return loop_.get(); }
  rpc::Services* services() { return &services_; }
  // Settings for the server before Start (message limits, say).
  grpc::ServerBuilder* builder() { return builder_.get(); }

  // Serves what was registered on `address` (HOST:PORT; port 0: a free one), telling
  // `observer` (may be null; must outlive the server) of every call that ends.
  Status Start(const std::string& address = "127.0.0.1:0",
               rpc::CallObserver* observer = nullptr);
  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }

  // Stops serving: calls still running after `grace_ms` are cancelled. The loop keeps running
  // for its clients. Idempotent.
  void StopServing(int64_t grace_ms = 0);
  // StopServing, then the loop (every client of it must have ended its calls). Idempotent.
  void Shutdown(int64_t grace_ms = 0);

 private:
  std::unique_ptr<grpc::ServerBuilder> builder_;
  std::unique_ptr<rpc::Loop> loop_;
  rpc::Services services_;
  std::unique_ptr<rpc::Server> server_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
};

}  // namespace tessera::testing
