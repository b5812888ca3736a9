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
#include "tessera/testing/test_support.h"
#include "tessera/util/executor.h"

namespace tessera::server {
namespace {

using replication::RpcChannel;

constexpr int64_t kMs = 1000;
constexpr int64_t kTimeout = 5000 * kMs;

// A channel with its serving end on a free 127.0.0.1 port.
struct Node {
  explicit Node(const std::string& cluster, int max_in_flight_per_peer = 1024) {
    auto port = ::tessera::testing::PickFreePort();
    EXPECT_TRUE(port.ok()) << port.status();
    address = "127.0.0.1:" + std::to_string(*port);
    executor = NewThreadPoolExecutor(2);
    channel = std::make_unique<GrpcRpcChannel>(
        GrpcRpcChannelOptions{.self = address,
                              .cluster_name = cluster,
                              .max_in_flight_per_peer = max_in_flight_per_peer},
        executor.get());
    service = std::make_unique<ReplicaService>(channel.get());
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    EXPECT_EQ(bound, *port);
  }
  ~Node() {
    // Calls still held by a handler are cancelled (their reactors finish CANCELLED).
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    channel->Shutdown();
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
  std::unique_ptr<grpc::Server> server;
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
  Result later;
  a.channel->Call(b.address, "Echo", "y", kTimeout, later.Done());
  EXPECT_TRUE(absl::IsUnavailable(later.Wait().status())) << later.Wait().status();
  // And a shut-down channel serves nothing.
  Echo(&a);
  Result refused;
  b.channel->Call(a.address, "Echo", "z", kTimeout, refused.Done());
  EXPECT_TRUE(absl::IsUnavailable(refused.Wait().status())) << refused.Wait().status();
}

}  // namespace
}  // namespace tessera::server
