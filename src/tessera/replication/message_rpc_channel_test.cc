#include "tessera/replication/message_rpc_channel.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/testing/sim_network.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/random.h"
#include "tessera/util/sim_executor.h"

namespace tessera::replication {
namespace {

using ::tessera::testing::NetworkOptions;
using ::tessera::testing::SimNetwork;

constexpr int64_t kMs = 1000;
constexpr int64_t kTimeout = 100 * kMs;
const std::string kA = "10.0.0.1:7000";
const std::string kB = "10.0.0.2:7000";

// What one call's `done` got, and when (simulated monotonic time).
struct Outcome {
  int calls = 0;
  std::optional<StatusOr<std::string>> result;
  int64_t at_us = 0;
};

// The value, or the status as text (so that a failure shows in the assertion).
std::string Got(const Outcome& out) {
  if (!out.result.has_value()) return "(no result)";
  return out.result->ok() ? **out.result : out.result->status().ToString();
}

RpcChannel::Done Record(Outcome* out, Clock* clock) {
  return [out, clock](StatusOr<std::string> r) {
    out->calls++;
    out->result = std::move(r);
    out->at_us = clock->MonotonicMicros();
  };
}

// Two channels on a SimNetwork, on one SimExecutor.
class SimPair {
 public:
  explicit SimPair(NetworkOptions network = {.loss = 0, .latency_us = kMs, .jitter_us = 0})
      : sim_(&clock), network_(&sim_, Random(301), network) {
    transport_a_ = *network_.Attach(kA);
    transport_b_ = *network_.Attach(kB);
    a = std::make_unique<MessageRpcChannel>(kA, transport_a_.get(), &sim_, &clock);
    b = std::make_unique<MessageRpcChannel>(kB, transport_b_.get(), &sim_, &clock);
  }
  ~SimPair() {
    a.reset();
    b.reset();
  }

  // b answers every call with "<method>:<request>" at once, counting them.
  void EchoAtB() {
    b->SetHandler([this](const std::string& from, const std::string& method, std::string request,
                         RpcChannel::Responder respond) {
      handled++;
      last_from = from;
      respond(method + ":" + request);
    });
  }

  void Run() { sim_.RunFor(10 * kTimeout); }

  ManualClock clock;
  std::unique_ptr<MessageRpcChannel> a, b;
  int handled = 0;
  std::string last_from;

  SimExecutor& sim() { return sim_; }
  SimNetwork& network() { return network_; }

 private:
  SimExecutor sim_;
  SimNetwork network_;
  std::unique_ptr<cluster::Transport> transport_a_, transport_b_;
};

TEST(MessageRpcChannelTest, RoundTrip) {
  SimPair p;
  p.EchoAtB();
  Outcome out;
  p.a->Call(kB, "Echo", std::string("x\0y", 3), kTimeout, Record(&out, &p.clock));
  EXPECT_EQ(out.calls, 0);  // never inside Call
  p.Run();
  ASSERT_EQ(out.calls, 1);
  ASSERT_TRUE(out.result->ok()) << out.result->status();
  EXPECT_EQ(**out.result, std::string("Echo:x\0y", 8));
  EXPECT_EQ(p.last_from, kA);
  EXPECT_EQ(p.a->self(), kA);
}

TEST(MessageRpcChannelTest, HandlerErrorTravelsBackUnchanged) {
  SimPair p;
  p.b->SetHandler(
      [](const std::string&, const std::string&, std::string, RpcChannel::Responder respond) {
        respond(absl::FailedPreconditionError("stale epoch 7"));
      });
  Outcome out;
  p.a->Call(kB, "Replicate", "", kTimeout, Record(&out, &p.clock));
  p.Run();
  ASSERT_EQ(out.calls, 1);
  EXPECT_EQ(out.result->status(), absl::FailedPreconditionError("stale epoch 7"));
}

TEST(MessageRpcChannelTest, NoHandlerAnswersUnavailable) {
  SimPair p;
  Outcome out;
  p.a->Call(kB, "Echo", "x", kTimeout, Record(&out, &p.clock));
  p.Run();
  ASSERT_EQ(out.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(out.result->status())) << out.result->status();
}

TEST(MessageRpcChannelTest, LossGivesDeadlineExceededAtExactlyTheTimeout) {
  SimPair p({.loss = 1, .latency_us = kMs, .jitter_us = 0});
  p.EchoAtB();
  Outcome out;
  const int64_t start = p.clock.MonotonicMicros();
  p.a->Call(kB, "Echo", "x", kTimeout, Record(&out, &p.clock));
  p.Run();
  ASSERT_EQ(out.calls, 1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(out.result->status())) << out.result->status();
  EXPECT_NE(out.result->status().message().find(kB), std::string::npos);
  EXPECT_EQ(out.at_us, start + kTimeout);
  EXPECT_EQ(p.handled, 0);
}

TEST(MessageRpcChannelTest, PartitionGivesDeadlineExceededThenHealingWorks) {
  SimPair p;
  p.EchoAtB();
  p.network().SetPartition({{kA, 0}, {kB, 1}});
  Outcome cut;
  p.a->Call(kB, "Echo", "x", kTimeout, Record(&cut, &p.clock));
  p.Run();
  ASSERT_EQ(cut.calls, 1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(cut.result->status()));
  // Silence is not a refusal: a cut-off peer may have run what reached it before.
  EXPECT_FALSE(WasNotSent(cut.result->status()));
  EXPECT_EQ(p.handled, 0);

  p.network().Heal();
  Outcome healed;
  p.a->Call(kB, "Echo", "y", kTimeout, Record(&healed, &p.clock));
  p.Run();
  ASSERT_EQ(healed.calls, 1);
  EXPECT_EQ(Got(healed), "Echo:y");
}

TEST(MessageRpcChannelTest, ACallToACrashedNodeIsRefusedAtOnceAndMarkedNotSent) {
  SimPair p;
  const std::string gone = "10.0.0.9:7000";  // reachable, but nothing attached there
  Outcome refused;
  const int64_t start = p.clock.MonotonicMicros();
  p.a->Call(gone, "Echo", "x", kTimeout, Record(&refused, &p.clock));
  EXPECT_EQ(refused.calls, 0);  // never inside Call
  p.Run();
  ASSERT_EQ(refused.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(refused.result->status())) << refused.result->status();
  EXPECT_TRUE(WasNotSent(refused.result->status())) << refused.result->status();
  EXPECT_NE(refused.result->status().message().find("connection refused"), std::string::npos);
  EXPECT_EQ(refused.at_us, start);
}

TEST(MessageRpcChannelTest, HandlerMayAnswerLater) {
  SimPair p;
  p.b->SetHandler([&p](const std::string&, const std::string&, std::string request,
                       RpcChannel::Responder respond) {
    p.sim().ScheduleAfter(30 * kMs, [respond, request] { respond("later:" + request); });
  });
  Outcome out;
  const int64_t start = p.clock.MonotonicMicros();
  p.a->Call(kB, "Echo", "x", kTimeout, Record(&out, &p.clock));
  p.Run();
  ASSERT_EQ(out.calls, 1);
  EXPECT_EQ(Got(out), "later:x");
  EXPECT_EQ(out.at_us, start + kMs + 30 * kMs + kMs);  // there, the handler's wait, back
}

TEST(MessageRpcChannelTest, AnAnswerAfterTheDeadlineIsDropped) {
  SimPair p;
  p.b->SetHandler(
      [&p](const std::string&, const std::string&, std::string, RpcChannel::Responder respond) {
        p.sim().ScheduleAfter(2 * kTimeout, [respond] { respond("too late"); });
      });
  Outcome out;
  p.a->Call(kB, "Echo", "x", kTimeout, Record(&out, &p.clock));
  p.Run();
  ASSERT_EQ(out.calls, 1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(out.result->status()));
  EXPECT_EQ(p.a->frames_dropped(), 1u);
}

TEST(MessageRpcChannelTest, ACallbackMayCallAgain) {
  SimPair p;
  p.EchoAtB();
  std::vector<std::string> got;
  std::function<void(StatusOr<std::string>)> next = [&](StatusOr<std::string> r) {
    ASSERT_TRUE(r.ok()) << r.status();
    got.push_back(*r);
    if (got.size() < 3) p.a->Call(kB, "Again", *r, kTimeout, next);
  };
  p.a->Call(kB, "Echo", "x", kTimeout, next);
  p.Run();
  EXPECT_EQ(got, (std::vector<std::string>{"Echo:x", "Again:Echo:x", "Again:Again:Echo:x"}));
}

// Under loss and jitter every call ends exactly once, and no handler ran more often than it
// was asked.
TEST(MessageRpcChannelTest, EveryCallEndsOnceUnderLossAndJitter) {
  SimPair p({.loss = 0.3, .latency_us = kMs, .jitter_us = 80 * kMs});
  p.EchoAtB();
  constexpr int kCalls = 300;
  std::vector<Outcome> out(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    p.a->Call(kB, "Echo", std::to_string(i), kTimeout, Record(&out[i], &p.clock));
  }
  p.Run();
  int ok = 0, late = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(out[i].calls, 1) << i;
    if (out[i].result->ok()) {
      EXPECT_EQ(**out[i].result, "Echo:" + std::to_string(i));
      ok++;
    } else {
      EXPECT_TRUE(absl::IsDeadlineExceeded(out[i].result->status())) << out[i].result->status();
      late++;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(late, 0);
  EXPECT_LE(p.handled, kCalls);
  EXPECT_GE(p.handled, ok);
}

TEST(MessageRpcChannelTest, DestructionCompletesPendingCallsWithUnavailable) {
  SimPair p;
  std::vector<RpcChannel::Responder> held;
  p.b->SetHandler([&held](const std::string&, const std::string&, std::string,
                          RpcChannel::Responder respond) { held.push_back(std::move(respond)); });
  Outcome first, made_while_closing;
  MessageRpcChannel* a = p.a.get();  // p.a is already null while its destructor runs
  a->Call(kB, "Echo", "x", kTimeout, [&](StatusOr<std::string> r) {
    Record(&first, &p.clock)(std::move(r));
    a->Call(kB, "Echo", "y", kTimeout, Record(&made_while_closing, &p.clock));
  });
  p.sim().RunFor(10 * kMs);  // the request is held at b
  ASSERT_EQ(held.size(), 1u);
  p.a.reset();
  ASSERT_EQ(first.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(first.result->status())) << first.result->status();
  ASSERT_EQ(made_while_closing.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(made_while_closing.result->status()));
  // b's late answer reaches nobody; nothing of a's runs any more.
  held[0]("answer");
  p.Run();
  EXPECT_EQ(first.calls, 1);
  // A responder outliving its channel does nothing.
  p.b.reset();
  held[0]("after b is gone");
  p.Run();
}

// On a thread pool, responses, timers and the destructor race: every call still ends exactly
// once, and nothing of the channel runs after its destructor returned.
TEST(MessageRpcChannelTest, OnAThreadPoolEveryCallEndsOnceAndNothingRunsAfterDestruction) {
  auto pool = NewThreadPoolExecutor(4);
  SimNetwork network(pool.get(), Random(7), {.loss = 0.2, .latency_us = 200, .jitter_us = 3 * kMs});
  auto ta = *network.Attach(kA);
  auto tb = *network.Attach(kB);
  auto a = std::make_unique<MessageRpcChannel>(kA, ta.get(), pool.get(), SystemClock());
  auto b = std::make_unique<MessageRpcChannel>(kB, tb.get(), pool.get(), SystemClock());
  b->SetHandler([](const std::string&, const std::string&, std::string request,
                   RpcChannel::Responder respond) { respond(std::move(request)); });
  constexpr int kCalls = 2000;
  std::vector<std::atomic<int>> ends(kCalls);
  std::atomic<bool> destroyed{false};
  std::atomic<int> after_destruction{0};
  MessageRpcChannel* raw = a.get();
  for (int i = 0; i < kCalls; ++i) {
    // Half the calls make a second call from their callback, which counts as the same call.
    raw->Call(kB, "Echo", "x", 2 * kMs, [&, i](StatusOr<std::string>) {
      if (destroyed) after_destruction++;
      if (ends[i]++ == 0 && i % 2 == 0) {
        raw->Call(kB, "Again", "y", 2 * kMs, [&](StatusOr<std::string>) {
          if (destroyed) after_destruction++;
        });
      }
    });
    if (i == kCalls / 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  a.reset();
  destroyed = true;
  b.reset();
  pool.reset();  // runs or drops what the network still had queued
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(ends[i].load(), 1) << i;
  EXPECT_EQ(after_destruction.load(), 0);
}

// --- Duplicates, replays and garbage: a network the test delivers by hand. ---

// Keeps every message sent; the test delivers message i to its destination, any number of
// times, in any order.
class Hub {
 public:
  class End final : public cluster::Transport {
   public:
    End(Hub* hub, std::string name) : hub_(hub), name_(std::move(name)) {}
    ~End() override { hub_->ends_.erase(name_); }
    void Send(const cluster::NodeId& to, std::string bytes) override {
      hub_->sent.push_back({to, std::move(bytes)});
    }
    void SetReceiver(Receiver receiver) override { receiver_ = std::move(receiver); }
    Receiver receiver_;

   private:
    Hub* const hub_;
    const std::string name_;
  };
  struct Message {
    std::string to;
    std::string bytes;
  };

  std::unique_ptr<End> Attach(const std::string& name) {
    auto end = std::make_unique<End>(this, name);
    ends_[name] = end.get();
    return end;
  }
  void Deliver(size_t i) { DeliverBytes(sent.at(i).to, sent.at(i).bytes); }
  void DeliverBytes(const std::string& to, std::string_view bytes) {
    auto it = ends_.find(to);
    if (it != ends_.end() && it->second->receiver_) it->second->receiver_(bytes);
  }

  std::vector<Message> sent;

 private:
  std::map<std::string, End*> ends_;
};

class HubTest : public ::testing::Test {
 protected:
  HubTest() : sim_(&clock_) {}

  std::unique_ptr<MessageRpcChannel> Open(const std::string& name, std::unique_ptr<Hub::End>* end,
                                          MessageRpcChannelOptions options = {}) {
    *end = hub_.Attach(name);
    return std::make_unique<MessageRpcChannel>(name, end->get(), &sim_, &clock_, options);
  }
  // b's handler: counts and echoes.
  void Echo(MessageRpcChannel* channel) {
    channel->SetHandler([this](const std::string&, const std::string&, std::string request,
                               RpcChannel::Responder respond) {
      handled_++;
      respond(request);
    });
  }

  ManualClock clock_;
  SimExecutor sim_;
  Hub hub_;
  int handled_ = 0;
};

TEST_F(HubTest, ADuplicatedRequestRunsTheHandlerOnceAndADuplicatedAnswerEndsTheCallOnce) {
  std::unique_ptr<Hub::End> ea, eb;
  auto a = Open(kA, &ea);
  auto b = Open(kB, &eb);
  Echo(b.get());
  Outcome out;
  a->Call(kB, "Echo", "x", kTimeout, Record(&out, &clock_));
  ASSERT_EQ(hub_.sent.size(), 1u);
  hub_.Deliver(0);
  hub_.Deliver(0);
  EXPECT_EQ(handled_, 1);
  EXPECT_EQ(b->frames_dropped(), 1u);
  ASSERT_EQ(hub_.sent.size(), 2u);  // one answer
  hub_.Deliver(1);
  hub_.Deliver(1);
  ASSERT_EQ(out.calls, 1);
  EXPECT_EQ(Got(out), "x");
  EXPECT_EQ(a->frames_dropped(), 1u);
  sim_.RunFor(10 * kTimeout);  // the cancelled timer does not fire
  EXPECT_EQ(out.calls, 1);
}

TEST_F(HubTest, ARequestOlderThanTheWindowIsDroppedNotRunTwice) {
  std::unique_ptr<Hub::End> ea, eb;
  auto a = Open(kA, &ea);
  auto b = Open(kB, &eb, {.dedup_window = 2});
  Echo(b.get());
  for (int i = 0; i < 4; ++i) a->Call(kB, "Echo", std::to_string(i), kTimeout, [](auto) {});
  ASSERT_EQ(hub_.sent.size(), 4u);
  hub_.Deliver(1);
  hub_.Deliver(2);
  hub_.Deliver(3);  // the window holds ids 3 and 4; the floor is 2
  EXPECT_EQ(handled_, 3);
  hub_.Deliver(0);  // id 1, below the floor: may be new, but is treated as lost
  hub_.Deliver(1);  // id 2, seen (now the floor)
  hub_.Deliver(3);  // id 4, seen
  EXPECT_EQ(handled_, 3);
  EXPECT_EQ(b->frames_dropped(), 3u);
  sim_.RunFor(10 * kTimeout);
}

TEST_F(HubTest, ARestartedCallerIsToldApartFromItsPreviousLife) {
  std::unique_ptr<Hub::End> ea, eb;
  auto b = Open(kB, &eb);
  std::vector<RpcChannel::Responder> held;
  b->SetHandler([&](const std::string&, const std::string&, std::string request,
                    RpcChannel::Responder respond) {
    handled_++;
    held.push_back([respond, request](StatusOr<std::string>) { respond("for " + request); });
  });
  auto a = Open(kA, &ea);
  a->Call(kB, "Echo", "old life", kTimeout, [](auto) {});
  hub_.Deliver(0);
  a.reset();
  ea.reset();
  clock_.Advance(kMs);
  auto a2 = Open(kA, &ea);
  Outcome out;
  a2->Call(kB, "Echo", "new life", kTimeout, Record(&out, &clock_));  // call id 1 again
  hub_.Deliver(1);
  ASSERT_EQ(handled_, 2);  // the new incarnation's id 1 is not a duplicate
  held[0](std::string());  // the old life's answer, with the same call id
  hub_.Deliver(hub_.sent.size() - 1);
  EXPECT_EQ(out.calls, 0);
  EXPECT_EQ(a2->frames_dropped(), 1u);
  held[1](std::string());
  hub_.Deliver(hub_.sent.size() - 1);
  ASSERT_EQ(out.calls, 1);
  EXPECT_EQ(Got(out), "for new life");
  // A request of the old life that arrives late is dropped too.
  hub_.Deliver(0);
  EXPECT_EQ(handled_, 2);
}

TEST_F(HubTest, MalformedFramesAreDropped) {
  std::unique_ptr<Hub::End> eb;
  auto b = Open(kB, &eb);
  Echo(b.get());
  for (std::string_view bytes : {std::string_view(), std::string_view("\x07junk"),
                                 std::string_view("\x01short"), std::string_view("\x02\0\0", 3)}) {
    hub_.DeliverBytes(kB, bytes);
  }
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(b->frames_dropped(), 4u);
  EXPECT_TRUE(hub_.sent.empty());
}

}  // namespace
}  // namespace tessera::replication
