// Loop: the completion queues a process's gRPC calls complete on, each polled by one thread of
// the loop (docs/rpc.md says why Tessera does not use gRPC's callback API).
//
// Every operation started on one of the loop's queues carries a `Tag*` as its gRPC tag; when it
// completes, the queue's thread calls `tag->Complete(ok)`. Operations of one server call all
// complete on the queue the call was requested on, so one call's reactions never run at once.
//
// A Tag's Complete runs on a loop thread and must not block: a loop thread that waits stops
// every call on its queue.
//
// Lifetime: Shutdown() (or the destructor) shuts the queues down, runs the completions still
// to come and joins the threads. REQUIRES before it: every operation started on the loop will
// complete (the gRPC server using the queues has been shut down, client calls are cancelled or
// done); otherwise Shutdown waits for them. Never call it from a loop thread.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/completion_queue.h"
#include "grpcpp/server_builder.h"

namespace tessera::rpc {

// What an operation on a loop queue carries as its tag.
class Tag {
 public:
  // `ok`: gRPC's verdict on the operation (false: the call ended, was cancelled, or the queue
  // is shutting down). Runs on the loop thread of the queue.
  virtual void Complete(bool ok) = 0;

 protected:
  ~Tag() = default;
};

// A Tag that calls a member function of `object`.
template <typename T, void (T::*kMethod)(bool)>
class MemberTag final : public Tag {
 public:
  explicit MemberTag(T* object) : object_(object) {}
  void Complete(bool ok) override { (object_->*kMethod)(ok); }

 private:
  T* const object_;
};

class Loop {
 public:
  // Queues that also serve a gRPC server: each is added to `builder` (which must not have been
  // built yet), and polled from now on, client calls possible at once. `threads` >= 1.
  static std::unique_ptr<Loop> ForServer(grpc::ServerBuilder* builder, int threads);
  // Queues for client calls only (a process or a test without a server).
  static std::unique_ptr<Loop> ClientOnly(int threads);

  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  int size() const { return static_cast<int>(queues_.size()); }
  // Queue i as a server's queue (null for a client-only loop).
  grpc::ServerCompletionQueue* server_queue(int i) const;
  // A queue for a new client call, round robin.
  grpc::CompletionQueue* NextQueue();

  // True on one of this loop's threads.
  bool InLoopThread() const;

  // Idempotent. See the lifetime note above.
  void Shutdown();

 private:
  Loop(std::vector<std::unique_ptr<grpc::CompletionQueue>> queues, bool server);
  void Run(grpc::CompletionQueue* queue);

  const bool server_;
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  std::atomic<unsigned> next_{0};
  std::atomic<bool> shut_down_{false};
};

}  // namespace tessera::rpc
