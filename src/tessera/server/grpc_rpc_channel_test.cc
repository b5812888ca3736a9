#include "tessera/server/grpc_rpc_channel.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tessera/testing/child_process.h"
#include "tessera/testing/rpc_server.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/executor.h"

namespace tessera::server {
namespace {

using replication::RpcChannel;

constexpr int64_t kMs = 1000;
constexpr int64_t kTimeout = 5000 * kMs;

// A channel with its serving end on a free 127.0.0.1 port.
struct Node {
  explicit Node(const std::string& cluster, int max_in_flight_per_peer = 1024, std::string at = "",
                int max_message_bytes = 64 << 20, int64_t silent_stream_us = 2000 * kMs) {
    if (at.empty()) {
      auto port = ::tessera::testing::PickFreePort();
      EXPECT_TRUE(port.ok()) << port.status();
      at = "127.0.0.1:" + std::to_string(*port);
    }
    address = at;
    const int port = std::stoi(address.substr(address.rfind(':') + 1));
    executor = NewThreadPoolExecutor(2);
    server = std::make_unique<::tessera::testing::RpcServer>();
    channel = std::make_unique<GrpcRpcChannel>(
        GrpcRpcChannelOptions{.self = address,
                              .cluster_name = cluster,
                              .max_in_flight_per_peer = max_in_flight_per_peer,
                              .max_message_bytes = max_message_bytes,
                              .silent_stream_us = silent_stream_us},
        executor.get(), server->loop());
    service = std::make_unique<ReplicaService>(channel.get());
    service->Register(server->services());
    Status started = server->Start(address);
    EXPECT_TRUE(started.ok()) << started;
    EXPECT_EQ(server->port(), port);
  }
  ~Node() {
    // Calls still held by a handler are cancelled (their reactors finish CANCELLED).
    server->StopServing(1000);
    channel->Shutdown();
    server->Shutdown();
  }

  // Holds every request's Responder instead of answering.
  void Hold() {
    channel->SetHandler(
        [this](const std::string&, const std::string&, std::string, RpcChannel::Responder respond) {
          absl::MutexLock lock(&mu);
          held.push_back(std::move(respond));
        });
  }
  size_t held_count() {
    absl::MutexLock lock(&mu);
    return held.size();
  }

  std::string address;
  std::unique_ptr<Executor> executor;
  std::unique_ptr<GrpcRpcChannel> channel;
  std::unique_ptr<ReplicaService> service;
  std::unique_ptr<::tessera::testing::RpcServer> server;
  absl::Mutex mu;
  std::vector<RpcChannel::Responder> held ABSL_GUARDED_BY(mu);
};

// One call's outcome, waited for.
class Result {
 public:
  RpcChannel::Done Done() {
    return [this](StatusOr<std::string> r) {
      EXPECT_FALSE(done_.HasBeenNotified()) << "done ran twice";
      result_ = std::move(r);
      done_.Notify();
    };
  }
  const StatusOr<std::string>& Wait() {
    EXPECT_TRUE(done_.WaitForNotificationWithTimeout(absl::Seconds(20)));
    return result_;
  }
  bool has_run() const { return done_.HasBeenNotified(); }

 private:
  absl::Notification done_;
  StatusOr<std::string> result_ = absl::UnknownError("not run");
};

void Echo(Node* node) {
  node->channel->SetHandler(
      [](const std::string& from, const std::string& method, std::string request,
         RpcChannel::Responder respond) { respond(from + " " + method + " " + request); });
}

TEST(GrpcRpcChannelTest, RoundTrip) {
  Node a("c1"), b("c1");
  Echo(&b);
  Result r;
  a.channel->Call(b.address, "Echo", std::string("x\0y", 3), kTimeout, r.Done());
  ASSERT_TRUE(r.Wait().ok()) << r.Wait().status();
  EXPECT_EQ(*r.Wait(), a.address + " Echo " + std::string("x\0y", 3));
  EXPECT_EQ(a.channel->self(), a.address);
}

TEST(GrpcRpcChannelTest, HandlerErrorsTravelBackWithTheirCodeAndMessage) {
  Node a("c1"), b("c1");
  b.channel->SetHandler([](const std::string&, const std::string& method, std::string,
                           RpcChannel::Responder respond) {
    // The handler's own DeadlineExceeded and Unavailable must not be taken for gRPC's.
    if (method == "NotFound") respond(absl::NotFoundError("no tablet 00000007"));
    if (method == "Deadline") respond(absl::DeadlineExceededError("the handler's own"));
    if (method == "Unavailable") respond(absl::UnavailableError("engine closed"));
  });
  for (const Status& want :
       {absl::NotFoundError("no tablet 00000007"), absl::DeadlineExceededError("the handler's own"),
        absl::UnavailableError("engine closed")}) {
    const std::string method = want.code() == absl::StatusCode::kNotFound           ? "NotFound"
                               : want.code() == absl::StatusCode::kDeadlineExceeded ? "Deadline"
                                                                                    : "Unavailable";
    Result r;
    a.channel->Call(b.address, method, "", kTimeout, r.Done());
    EXPECT_EQ(r.Wait().status(), want);
  }
}

TEST(GrpcRpcChannelTest, NoAnswerInTimeIsDeadlineExceeded) {
  Node a("c1"), b("c1");
  b.Hold();
  Result r;
  const auto start = std::chrono::steady_clock::now();
  a.channel->Call(b.address, "Echo", "x", 300 * kMs, r.Done());
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.Wait().status())) << r.Wait().status();
  EXPECT_NE(r.Wait().status().message().find(b.address), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
  // The handler answering after the caller gave up changes nothing.
  ASSERT_EQ(b.held_count(), 1u);
  absl::MutexLock lock(&b.mu);
  b.held[0]("too late");
}

TEST(GrpcRpcChannelTest, AClosedPortIsUnavailable) {
  Node a("c1");
  auto port = ::tessera::testing::PickFreePort();  // free: nothing listens there
  ASSERT_TRUE(port.ok());
  Result r;
  a.channel->Call("127.0.0.1:" + std::to_string(*port), "Echo", "x", kTimeout, r.Done());
  EXPECT_TRUE(absl::IsUnavailable(r.Wait().status())) << r.Wait().status();
  // No connection was made, so the request cannot have run: a caller may send a write again.
  EXPECT_TRUE(replication::WasNotSent(r.Wait().status())) << r.Wait().status();
}

TEST(GrpcRpcChannelTest, ACallThatReachedAPeerThatGoesAwayMayHaveRun) {
  Node a("c1");
  auto b = std::make_unique<Node>("c1");
  b->Hold();
  Result r;
  a.channel->Call(b->address, "Echo", "x", kTimeout, r.Done());
  ASSERT_TRUE(::tessera::testing::WaitFor([&] { return b->held_count() == 1; }));
  b.reset();  // the handler had it; the peer goes without answering
  EXPECT_FALSE(r.Wait().ok());
  EXPECT_FALSE(replication::WasNotSent(r.Wait().status())) << r.Wait().status();
}

TEST(GrpcRpcChannelTest, NoHandlerIsUnavailable) {
  Node a("c1"), b("c1");
  Result r;
  a.channel->Call(b.address, "Echo", "x", kTimeout, r.Done());
  EXPECT_TRUE(absl::IsUnavailable(r.Wait().status())) << r.Wait().status();
}

TEST(GrpcRpcChannelTest, AnotherClusterRefusesWithFailedPrecondition) {
  Node a("c1"), stranger("c2");
  Echo(&a);
  Result r;
  stranger.channel->Call(a.address, "Echo", "x", kTimeout, r.Done());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.Wait().status())) << r.Wait().status();
  EXPECT_NE(r.Wait().status().message().find("cluster 'c1', not 'c2'"), std::string::npos)
      << r.Wait().status();
}

TEST(GrpcRpcChannelTest, AResponderCalledLaterFromAnotherThreadAnswers) {
  Node a("c1"), b("c1");
  std::vector<std::thread> threads;
  absl::Mutex mu;
  b.channel->SetHandler([&](const std::string&, const std::string&, std::string request,
                            RpcChannel::Responder respond) {
    absl::MutexLock lock(&mu);
    threads.emplace_back([respond = std::move(respond), request] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      respond("later " + request);
    });
  });
  Result r;
  a.channel->Call(b.address, "Echo", "x", kTimeout, r.Done());
  EXPECT_EQ(r.Wait().value_or("failed"), "later x");
  absl::MutexLock lock(&mu);
  for (auto& t : threads) t.join();
}

TEST(GrpcRpcChannelTest, ACallbackMayCallAgain) {
  Node a("c1"), b("c1");
  Echo(&b);
  Result second;
  a.channel->Call(b.address, "First", "x", kTimeout, [&](StatusOr<std::string> r) {
    ASSERT_TRUE(r.ok()) << r.status();
    a.channel->Call(b.address, "Second", *r, kTimeout, second.Done());
  });
  EXPECT_EQ(second.Wait().value_or("failed"), a.address + " Second " + a.address + " First x");
}

TEST(GrpcRpcChannelTest, TooManyCallsInFlightFailAtOnce) {
  Node a("c1", /*max_in_flight_per_peer=*/1), b("c1");
  b.Hold();
  Result first, second;
  a.channel->Call(b.address, "Echo", "1", kTimeout, first.Done());
  a.channel->Call(b.address, "Echo", "2", kTimeout, second.Done());
  EXPECT_TRUE(absl::IsUnavailable(second.Wait().status())) << second.Wait().status();
  EXPECT_NE(second.Wait().status().message().find("too many calls in flight to " + b.address),
            std::string::npos);
  EXPECT_TRUE(replication::WasNotSent(second.Wait().status()));
  ASSERT_TRUE(::tessera::testing::WaitFor([&] { return b.held_count() == 1; }));
  {
    absl::MutexLock lock(&b.mu);
    b.held[0]("one");
  }
  EXPECT_EQ(first.Wait().value_or("failed"), "one");
}

TEST(GrpcRpcChannelTest, ShutdownCompletesAPendingCallAndRefusesLaterOnes) {
  Node a("c1"), b("c1");
  b.Hold();
  Result pending;
  a.channel->Call(b.address, "Echo", "x", kTimeout, pending.Done());
  ASSERT_TRUE(::tessera::testing::WaitFor([&] { return b.held_count() == 1; }));
  a.channel->Shutdown();
  ASSERT_TRUE(pending.has_run());  // Shutdown waited for it
  EXPECT_TRUE(absl::IsUnavailable(pending.Wait().status())) << pending.Wait().status();
  EXPECT_FALSE(replication::WasNotSent(pending.Wait().status()));  // the handler had it
  Result later;
  a.channel->Call(b.address, "Echo", "y", kTimeout, later.Done());
  EXPECT_TRUE(absl::IsUnavailable(later.Wait().status())) << later.Wait().status();
  EXPECT_TRUE(replication::WasNotSent(later.Wait().status()));
  // And a shut-down channel serves nothing.
  Echo(&a);
  Result refused;
  b.channel->Call(a.address, "Echo", "z", kTimeout, refused.Done());
  EXPECT_TRUE(absl::IsUnavailable(refused.Wait().status())) << refused.Wait().status();
}

TEST(GrpcRpcChannelTest, ManyCallsAtOnceEachGetTheirOwnAnswer) {
  // Calls share one stream per peer, several to a message: each answer must find its call,
  // whether the handler answers at once or later from another thread, in any order.
  Node a("c1"), b("c1");
  std::vector<std::thread> later;
  absl::Mutex mu;
  b.channel->SetHandler([&](const std::string&, const std::string& method, std::string request,
                            RpcChannel::Responder respond) {
    if (method == "Now") {
      respond("now " + request);
      return;
    }
    absl::MutexLock lock(&mu);
    later.emplace_back([respond = std::move(respond), request] { respond("later " + request); });
  });
  constexpr int kThreads = 4;
  constexpr int kCalls = 200;  // 800 in all: under the 1024 a peer may hold
  std::vector<std::unique_ptr<Result>> results(kThreads * kCalls);
  for (auto& r : results) r = std::make_unique<Result>();
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const int n = t * kCalls + i;
        if (n % 2 == 0) {
          a.channel->Call(b.address, n % 4 == 0 ? "Now" : "Later", std::to_string(n), kTimeout,
                          results[n]->Done());
        } else {
          a.channel->CallInline(b.address, n % 3 == 0 ? "Now" : "Later", std::to_string(n),
                                kTimeout, results[n]->Done());
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  for (int n = 0; n < kThreads * kCalls; ++n) {
    const std::string want = ((n % 2 == 0) ? n % 4 == 0 : n % 3 == 0) ? "now " : "later ";
    EXPECT_EQ(results[n]->Wait().value_or("failed"), want + std::to_string(n))
        << n << " " << results[n]->Wait().status();
  }
  absl::MutexLock lock(&mu);
  for (auto& t : later) t.join();
}

TEST(GrpcRpcChannelTest, AHandlerThatBlocksHoldsUpNoOtherCall) {
  // A replica's handler may wait for its commit log; the calls behind it on the same stream,
  // in the same message or a later one, must not wait with it.
  Node a("c1"), b("c1");
  absl::Notification release;
  b.channel->SetHandler([&](const std::string&, const std::string& method, std::string request,
                            RpcChannel::Responder respond) {
    if (method == "Block") release.WaitForNotification();
    respond(method + " " + request);
  });
  Result blocked;
  a.channel->Call(b.address, "Block", "0", kTimeout, blocked.Done());
  std::vector<std::unique_ptr<Result>> others;
  for (int i = 0; i < 20; ++i) {
    others.push_back(std::make_unique<Result>());
    a.channel->Call(b.address, "Echo", std::to_string(i), kTimeout, others.back()->Done());
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(others[i]->Wait().value_or("failed"), "Echo " + std::to_string(i));
  }
  EXPECT_FALSE(blocked.has_run());
  release.Notify();
  EXPECT_EQ(blocked.Wait().value_or("failed"), "Block 0");
}

TEST(GrpcRpcChannelTest, APeerThatRestartsIsReachedAgain) {
  // The stream to a peer that went away has failed; the next calls take a new one.
  Node a("c1");
  auto b = std::make_unique<Node>("c1");
  const std::string address = b->address;
  Echo(b.get());
  Result before;
  a.channel->Call(address, "Echo", "1", kTimeout, before.Done());
  ASSERT_TRUE(before.Wait().ok()) << before.Wait().status();
  b.reset();
  Result away;
  a.channel->Call(address, "Echo", "2", kTimeout, away.Done());
  EXPECT_TRUE(absl::IsUnavailable(away.Wait().status())) << away.Wait().status();
  b = std::make_unique<Node>("c1", 1024, address);
  Echo(b.get());
  bool reached = false;
  for (int attempt = 0; attempt < 100 && !reached; ++attempt) {
    Result again;
    a.channel->Call(address, "Echo", "3", 1000 * kMs, again.Done());
    reached = again.Wait().ok();
    if (!reached) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(reached);
}

TEST(GrpcRpcChannelTest, AMessageAboveTheLimitIsResourceExhausted) {
  Node a("c1", 1024, "", /*max_message_bytes=*/1 << 20), b("c1", 1024, "", 1 << 20);
  b.channel->SetHandler([](const std::string&, const std::string& method, std::string request,
                           RpcChannel::Responder respond) {
    respond(method == "Grow" ? std::string(2 << 20, 'x') : request);
  });
  Result big_request;
  a.channel->Call(b.address, "Echo", std::string(2 << 20, 'x'), kTimeout, big_request.Done());
  EXPECT_TRUE(absl::IsResourceExhausted(big_request.Wait().status()))
      << big_request.Wait().status();
  Result big_answer;
  a.channel->Call(b.address, "Grow", "x", kTimeout, big_answer.Done());
  EXPECT_TRUE(absl::IsResourceExhausted(big_answer.Wait().status())) << big_answer.Wait().status();
  // Neither broke the stream.
  Result small;
  a.channel->Call(b.address, "Echo", "y", kTimeout, small.Done());
  EXPECT_EQ(small.Wait().value_or("failed"), "y");
}

TEST(GrpcRpcChannelTest, ATimeoutOnASilentStreamGivesTheStreamUp) {
  // Nothing came back on the stream for silent_stream_us while calls waited when one timed
  // out: the peer may hang with its connection open, so the stream is cancelled (its other
  // calls fail at once, as after a broken connection) and the next call takes a new one.
  Node a("c1", 1024, "", 64 << 20, /*silent_stream_us=*/150 * kMs), b("c1");
  b.Hold();
  Result short_call, long_call;
  const auto start = std::chrono::steady_clock::now();
  a.channel->Call(b.address, "Echo", "1", 200 * kMs, short_call.Done());
  a.channel->Call(b.address, "Echo", "2", 10'000 * kMs, long_call.Done());
  EXPECT_TRUE(absl::IsDeadlineExceeded(short_call.Wait().status())) << short_call.Wait().status();
  EXPECT_TRUE(absl::IsUnavailable(long_call.Wait().status())) << long_call.Wait().status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  Echo(&b);
  Result next;
  a.channel->Call(b.address, "Echo", "3", kTimeout, next.Done());
  EXPECT_EQ(next.Wait().value_or("failed"), a.address + " Echo 3");
}

TEST(GrpcRpcChannelTest, AStreamSilentForLessThanTheBoundKeepsItsCallsWhenOneTimesOut) {
  // A peer that stalls for less than silent_stream_us (a slow disk, an overloaded machine):
  // the call that timed out fails alone, and the others get their answers when it resumes.
  Node a("c1", 1024, "", 64 << 20, /*silent_stream_us=*/5000 * kMs), b("c1");
  b.Hold();
  Result short_call, long_call;
  a.channel->Call(b.address, "Echo", "1", 200 * kMs, short_call.Done());
  a.channel->Call(b.address, "Echo", "2", 10'000 * kMs, long_call.Done());
  EXPECT_TRUE(absl::IsDeadlineExceeded(short_call.Wait().status())) << short_call.Wait().status();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(long_call.has_run());
  std::vector<RpcChannel::Responder> held;
  {
    absl::MutexLock lock(&b.mu);
    held = std::move(b.held);
  }
  ASSERT_EQ(held.size(), 2u);
  for (RpcChannel::Responder& respond : held) respond(std::string("resumed"));
  EXPECT_EQ(long_call.Wait().value_or("failed"), "resumed");
}

TEST(GrpcRpcChannelTest, AnAnsweringStreamIsKeptWhenOneCallTimesOut) {
  // A call the handler never answers times out alone while answers keep coming. (The results
  // outlive the nodes: `later` is still pending when they shut down.)
  Result never, later, echo;
  Node a("c1"), b("c1");
  b.channel->SetHandler([](const std::string&, const std::string& method, std::string request,
                           RpcChannel::Responder respond) {
    if (method != "Never") respond(request);
  });
  a.channel->Call(b.address, "Never", "1", 1000 * kMs, never.Done());
  a.channel->Call(b.address, "Never", "2", 10'000 * kMs, later.Done());
  a.channel->Call(b.address, "Echo", "3", kTimeout, echo.Done());
  EXPECT_EQ(echo.Wait().value_or("failed"), "3");
  EXPECT_TRUE(absl::IsDeadlineExceeded(never.Wait().status())) << never.Wait().status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(later.has_run());  // still waiting on the same stream
}

}  // namespace
}  // namespace tessera::server
