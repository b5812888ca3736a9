// UnimplementedService: the server's fallback for every gRPC method no registered service
// declares (IAM, hot tablets, views and memory layers of the instance-admin API, backups and
// snapshots of the table-admin API, change streams, anything newer clients send). It answers
// UNIMPLEMENTED with a message naming the RPC and its service, e.g. "GetIamPolicy
// (google.bigtable.admin.v2.BigtableInstanceAdmin) is not supported by Tessera", where gRPC's
// own default answers UNIMPLEMENTED with an empty message.
//
// Register it with grpc::ServerBuilder::RegisterCallbackGenericService; a server has at most
// one generic service.
//
// Thread-safety: stateless; gRPC calls it from many threads.
#pragma once

#include <string>
#include <string_view>

#include "grpcpp/generic/async_generic_service.h"

namespace tessera::server {

// The message for method path "/package.Service/Method": "Method (package.Service) is not
// supported by Tessera"; a path of another shape is quoted whole.
std::string UnimplementedMessage(std::string_view method_path);

class UnimplementedService final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;
};

}  // namespace tessera::server
