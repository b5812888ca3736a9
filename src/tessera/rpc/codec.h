// Messages to and from gRPC's byte buffers, for the loop's generic calls (server.cc, client.cc).
//
// Thread-safety: pure functions.
#pragma once

#include "google/protobuf/message_lite.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"

namespace tessera::rpc::internal {

// Parses `buffer` (left empty) into `into`; false if it does not parse.
inline bool Parse(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* into) {
  return grpc::SerializationTraits<google::protobuf::MessageLite>::Deserialize(buffer, into).ok();
}

// `message` into `into`, replacing what it held.
inline void Serialize(const google::protobuf::MessageLite& message, grpc::ByteBuffer* into) {
  bool own = false;
  into->Clear();
  (void)grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(message, into, &own);
}

}  // namespace tessera::rpc::internal
