#include "tessera/server/grpc_executor.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace tessera::server {
namespace {

// Threads of this process whose name (as Linux keeps it, 15 characters) starts with `prefix`.
int ThreadsNamed(const std::string& prefix) {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// A started thread names itself once it runs: waits for it, 5 s at most.
bool SomeThreadGetsNamed(const std::string& prefix) {
  for (int i = 0; i < 500; ++i) {
    if (ThreadsNamed(prefix) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// gRPC names its executor's threads "default-executor" and "resolver-executor"; turning them
// off joins them before it returns.
TEST(GrpcExecutorTest, ItsThreadsFollowTheSetting) {
  SetGrpcExecutorThreads(true);
  EXPECT_TRUE(SomeThreadGetsNamed("default-executo"));
  SetGrpcExecutorThreads(false);
  EXPECT_EQ(ThreadsNamed("default-executo"), 0);
  EXPECT_EQ(ThreadsNamed("resolver-execut"), 0);
  SetGrpcExecutorThreads(true);
  EXPECT_TRUE(SomeThreadGetsNamed("default-executo"));
  SetGrpcExecutorThreads(false);
  EXPECT_EQ(ThreadsNamed("default-executo"), 0);
}

}  // namespace
}  // namespace tessera::server
