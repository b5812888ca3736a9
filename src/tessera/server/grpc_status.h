// absl::Status <-> grpc::Status. The codes have the same numbers; the message is kept.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

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

}  // namespace tessera::server
