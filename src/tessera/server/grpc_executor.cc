#include "tessera/server/grpc_executor.h"

#include "grpc/grpc.h"

// grpc_core::Executor::SetThreadingAll(bool), a static member function exported by libgrpc
// (its class is in a header gRPC does not install). Named by its symbol, so no declaration of
// the class is needed here; a gRPC without it fails to link, never silently.
extern "C++" void GrpcCoreExecutorSetThreadingAll(bool enable) __asm__(
    "_ZN9grpc_core8Executor15SetThreadingAllEb");

namespace tessera::server {

void SetGrpcExecutorThreads(bool threads) {
  // The executors exist once gRPC is initialised; this reference is never given back, so no
  // later grpc_shutdown (the last gRPC object of the process going away) can undo the choice.
  static const bool initialised = [] {
    grpc_init();
    return true;
  }();
  (void)initialised;
  GrpcCoreExecutorSetThreadingAll(threads);
}

}  // namespace tessera::server
