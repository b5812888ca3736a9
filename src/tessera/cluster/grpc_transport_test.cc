#include "tessera/cluster/grpc_transport.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/testing/rpc_server.h"
#include "tessera/testing/test_support.h"

namespace tessera::cluster {
namespace {

using ::tessera::testing::WaitFor;

// One transport with its receiving server on a free 127.0.0.1 port.
struct Endpoint {
  explicit Endpoint(std::string cluster)
      : transport(GrpcTransportOptions{cluster, 500, 2, server.loop()}), service(&transport) {
    service.Register(server.services());
    EXPECT_TRUE(server.Start().ok());
    port = server.port();
    transport.SetReceiver([this](std::string_view bytes) {
      std::lock_guard<std::mutex> lock(mu);
      received.emplace_back(bytes);
    });
  }
  ~Endpoint() {
    server.StopServing();
    transport.Shutdown();
    server.Shutdown();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return received.size();
  }

  ::tessera::testing::RpcServer server;  // first: the transport runs on its loop
  GrpcTransport transport;
  GossipService service;
  int port = 0;
  std::mutex mu;
  std::vector<std::string> received;
};

TEST(GrpcTransportTest, DeliversBytesBetweenProcesses) {
  Endpoint a("c1"), b("c1");
  ASSERT_NE(a.port, 0);
  ASSERT_NE(b.port, 0);
  a.transport.Send(b.address(), std::string("hello\0world", 11));
  ASSERT_TRUE(WaitFor([&] { return b.count() == 1; }, 5000));
  {
    std::lock_guard<std::mutex> lock(b.mu);
    EXPECT_EQ(b.received[0], std::string("hello\0world", 11));
  }
  EXPECT_TRUE(a.transport.Refusals().empty());
}

TEST(GrpcTransportTest, AnotherClusterRefusesAndSaysWhich) {
  Endpoint a("c1"), stranger("c2");
  stranger.transport.Send(a.address(), "x");
  ASSERT_TRUE(WaitFor([&] { return !stranger.transport.Refusals().empty(); }, 5000));
  auto refusals = stranger.transport.Refusals();
  ASSERT_EQ(refusals.count(a.address()), 1u);
  EXPECT_NE(refusals[a.address()].find("cluster 'c1'"), std::string::npos)
      << refusals[a.address()];
}

TEST(GrpcTransportTest, SendToAnUnreachablePeerNeverBlocks) {
  Endpoint a("c1");
  // Nothing listens on port 1; each Send must return at once and the pending calls stay bounded.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) a.transport.Send("127.0.0.1:1", "x");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // Shutdown waits for the bounded pending calls (each ends within its 500 ms deadline).
  a.transport.Shutdown();
  a.transport.Send("127.0.0.1:1", "after shutdown is dropped");
}

}  // namespace
}  // namespace tessera::cluster
