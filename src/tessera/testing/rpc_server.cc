#include "tessera/testing/rpc_server.h"

#include <chrono>

#include "grpcpp/security/server_credentials.h"

namespace tessera::testing {

RpcServer::RpcServer()
    : builder_(std::make_unique<grpc::ServerBuilder>()),
      loop_(rpc::Loop::ForServer(builder_.get(), 1)) {}

RpcServer::~RpcServer() { Shutdown(); }

Status RpcServer::Start(const std::string& address, rpc::CallObserver* observer) {
  if (builder_ == nullptr) return absl::FailedPreconditionError("the server was started before");
  host_ = address.substr(0, address.rfind(':'));
  builder_->AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  StatusOr<std::unique_ptr<rpc::Server>> server =
      rpc::Server::Start(builder_.get(), &services_, loop_.get(), observer);
  builder_.reset();
  if (!server.ok()) return server.status();
  if (port_ == 0) return absl::UnavailableError("cannot listen on " + address);
  server_ = *std::move(server);
  return Status();
}

void RpcServer::StopServing(int64_t grace_ms) {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
  server_.reset();
}

void RpcServer::Shutdown(int64_t grace_ms) {
  StopServing(grace_ms);
  builder_.reset();
  if (loop_ != nullptr) loop_->Shutdown();
}

}  // namespace tessera::testing
