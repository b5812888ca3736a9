#include "tessera/server/unimplemented_service.h"

#include "tessera/util/status.h"

namespace tessera::server {

namespace {

// Finishes at once; the call's request messages are never read.
class UnimplementedReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit UnimplementedReactor(const std::string& method) {
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, UnimplementedMessage(method)));
  }
  void OnDone() override { delete this; }
};

}  // namespace

std::string UnimplementedMessage(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (path.size() < 4 || path.front() != '/' || slash == 0 || slash + 1 >= path.size()) {
    return tessera::StrCat("method \"", path, "\" is not supported by Tessera");
  }
  return tessera::StrCat(path.substr(slash + 1), " (", path.substr(1, slash - 1),
                         ") is not supported by Tessera");
}

grpc::ServerGenericBidiReactor* UnimplementedService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  // gRPC owns the reactor from here; OnDone() frees it.
  return new UnimplementedReactor(context->method());
}

}  // namespace tessera::server
