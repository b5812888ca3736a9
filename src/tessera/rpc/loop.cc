#include "tessera/rpc/loop.h"

#include <pthread.h>

#include <algorithm>
#include <cassert>
#include <utility>

namespace tessera::rpc {

namespace {
// The loop whose thread this is (null on every other thread).
thread_local const Loop* current_loop = nullptr;
}  // namespace

std::unique_ptr<Loop> Loop::ForServer(grpc::ServerBuilder* builder, int threads) {
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues;
  for (int i = 0; i < std::max(1, threads); ++i) queues.push_back(builder->AddCompletionQueue());
  return std::unique_ptr<Loop>(new Loop(std::move(queues), /*server=*/true));
}

std::unique_ptr<Loop> Loop::ClientOnly(int threads) {
  std::vector<std::unique_ptr<grpc::CompletionQueue>> queues;
  for (int i = 0; i < std::max(1, threads); ++i) {
    queues.push_back(std::make_unique<grpc::CompletionQueue>());
  }
  return std::unique_ptr<Loop>(new Loop(std::move(queues), /*server=*/false));
}

Loop::Loop(std::vector<std::unique_ptr<grpc::CompletionQueue>> queues, bool server)
    : server_(server), queues_(std::move(queues)) {
  for (size_t i = 0; i < queues_.size(); ++i) {
    threads_.emplace_back([this, q = queues_[i].get(), i] {
      const std::string name = "rpc-loop-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      Run(q);
    });
  }
}

Loop::~Loop() { Shutdown(); }

grpc::ServerCompletionQueue* Loop::server_queue(int i) const {
  if (!server_) return nullptr;
  return static_cast<grpc::ServerCompletionQueue*>(queues_[static_cast<size_t>(i)].get());
}

grpc::CompletionQueue* Loop::NextQueue() {
  const unsigned n = next_.fetch_add(1, std::memory_order_relaxed);
  return queues_[n % queues_.size()].get();
}

bool Loop::InLoopThread() const { return current_loop == this; }

void Loop::Run(grpc::CompletionQueue* queue) {
  current_loop = this;
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) static_cast<Tag*>(tag)->Complete(ok);
  current_loop = nullptr;
}

void Loop::Shutdown() {
  if (shut_down_.exchange(true)) return;
  assert(!InLoopThread());
  for (auto& q : queues_) q->Shutdown();
  for (auto& t : threads_) t.join();
}

}  // namespace tessera::rpc
