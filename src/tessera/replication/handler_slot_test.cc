#include "tessera/replication/handler_slot.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tessera::replication {
namespace {

TEST(HandlerSlotTest, SetWaitsForTheRunningHandlerAndCloseIsForGood) {
  HandlerSlot slot("me");
  absl::Notification entered, release;
  slot.Set([&](const std::string&, const std::string&, std::string, RpcChannel::Responder respond) {
    entered.Notify();
    release.WaitForNotification();
    respond("done");
  });
  std::thread serving([&] { slot.Serve("peer", "M", "", [](StatusOr<std::string>) {}); });
  entered.WaitForNotification();
  std::atomic<bool> replaced{false};
  std::thread replacing([&] {
    slot.Set(nullptr);
    replaced = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(replaced.load());  // the earlier handler still runs
  release.Notify();
  serving.join();
  replacing.join();
  EXPECT_TRUE(replaced.load());

  slot.Close();
  slot.Set([](const std::string&, const std::string&, std::string, RpcChannel::Responder respond) {
    respond("served");
  });
  StatusOr<std::string> got;
  slot.Serve("peer", "M", "", [&](StatusOr<std::string> r) { got = std::move(r); });
  EXPECT_EQ(got.status(), absl::UnavailableError("me serves no calls"));
}

}  // namespace
}  // namespace tessera::replication
