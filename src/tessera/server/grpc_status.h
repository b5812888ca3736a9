// absl::Status <-> grpc::Status. The codes have the same numbers; the message is kept. And
// Reply, which finishes a unary call (rpc/server.h) with a status or a result.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>

#include "tessera/rpc/server.h"
#include "grpcpp/support/status.h"
#include "tessera/util/status.h"

namespace tessera::server {

inline grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return Status();
  return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// Finishes a unary call with the status of `result` (on OK its value is moved into *response).
template <typename T>
rpc::UnaryReactor* Reply(rpc::ServerContext* context, StatusOr<T> result,
                                T* response) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpcStatus(result.status()));
  return reactor;
}

inline rpc::UnaryReactor* Reply(rpc::ServerContext* context,
                                       const Status& status) {
  rpc::UnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace tessera::server
