#include "tessera/replication/handler_slot.h"

#include <utility>

#include "tessera/util/status.h"

namespace tessera::replication {

void HandlerSlot::Set(RpcChannel::Handler handler) { SetAndWait(std::move(handler), false); }

void HandlerSlot::Close() { SetAndWait(nullptr, true); }

void HandlerSlot::SetAndWait(RpcChannel::Handler handler, bool close) {
  RpcChannel::Handler old;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  if (!closed_) {
    old = std::move(handler_);
    handler_ = std::move(handler);
  }
  closed_ = closed_ || close;
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_));
}

void HandlerSlot::Serve(const std::string& from, const std::string& method, std::string request,
                        RpcChannel::Responder respond) {
  RpcChannel::Handler handler;
  {
    absl::MutexLock lock(&mu_);
    if (handler_) {
      handler = handler_;
      ++running_;
    }
  }
  if (!handler) {
    respond(absl::UnavailableError(StrCat(self_, " serves no calls")));
    return;
  }
  handler(from, method, std::move(request), std::move(respond));
  handler = nullptr;
  absl::MutexLock lock(&mu_);
  --running_;
}

}  // namespace tessera::replication
