// HandlerSlot: an RpcChannel's installed handler and the calls running it, shared by both
// channels (message_rpc_channel.h, server/grpc_rpc_channel.h) so that they keep the same
// promise: when SetHandler returns, the earlier handler is not running and will not run again.
//
// Thread-safety: every method may be called from any thread; Set and Close must not be called
// from within a handler (they would wait for themselves).
#pragma once

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/replication/rpc_channel.h"

namespace tessera::replication {

class HandlerSlot {
 public:
  // `self` names the node in the refusal a call gets when no handler is installed.
  explicit HandlerSlot(std::string self) : self_(std::move(self)) {}

  // Installs `handler` (nullptr: none) and waits until no call runs the earlier one. After
  // Close() it only waits.
  void Set(RpcChannel::Handler handler);

  // Removes the handler for good and waits until no call runs it.
  void Close();

  // Runs the installed handler on one call, or answers it Unavailable ("<self> serves no
  // calls") when there is none.
  void Serve(const std::string& from, const std::string& method, std::string request,
             RpcChannel::Responder respond);

 private:
  void SetAndWait(RpcChannel::Handler handler, bool close);

  const std::string self_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  RpcChannel::Handler handler_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // calls inside a copy of a handler now
};

}  // namespace tessera::replication
