#include "tessera/coord/etcd_test_server.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tessera/util/child_process.h"

namespace tessera::coord::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

using ::tessera::testing::KillAndReap;
using ::tessera::testing::PickFreePort;

std::string ReadTail(const std::string& path, size_t bytes) {
  return ::tessera::testing::ReadFileTail(path, bytes);
}

std::string DefaultParent() {
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return std::filesystem::temp_directory_path().string();
}

// Whether etcd answers a linearizable read (it has a leader and serves clients).
bool Answers(const std::string& endpoint) {
  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  auto kv = etcdserverpb::KV::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  etcdserverpb::RangeRequest request;
  request.set_key("tessera-test-probe");
  etcdserverpb::RangeResponse response;
  return kv->Range(&ctx, request, &response).ok();
}

}  // namespace

std::string EtcdTestServer::BinaryPath(const EtcdTestServerOptions& options) {
  if (!options.binary.empty()) return options.binary;
  const char* env = std::getenv("TESSERA_ETCD");
  if (env != nullptr && *env != '\0') return env;
  return "/usr/bin/etcd";
}

StatusOr<std::unique_ptr<EtcdTestServer>> EtcdTestServer::Start(
    const EtcdTestServerOptions& options) {
  const std::string binary = BinaryPath(options);
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat("etcd binary ", binary, " is not installed"));
  }
  const std::string parent = options.parent_dir.empty() ? DefaultParent() : options.parent_dir;
  static std::atomic<int> counter{0};
  std::string last_log;
  // A few attempts: a picked port may be taken between the pick and etcd's bind.
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSIGN_OR_RETURN(const std::string dir, ::tessera::testing::MakeTempDir(parent, "tessera-etcd-"));
    ASSIGN_OR_RETURN(const int client_port, PickFreePort());
    ASSIGN_OR_RETURN(const int peer_port, PickFreePort());
    if (client_port == peer_port) {
      std::filesystem::remove_all(dir);
      continue;
    }
    const std::string client_url = StrCat("http://127.0.0.1:", client_port);
    const std::string peer_url = StrCat("http://127.0.0.1:", peer_port);
    const std::string log_path = StrCat(dir, "/etcd.log");
    std::vector<std::string> argv = {
        binary,
        "--name", "solo",
        "--data-dir", StrCat(dir, "/data"),
        "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", StrCat("solo=", peer_url),
        "--initial-cluster-token", StrCat("tessera-test-", getpid(), "-", counter++),
        "--initial-cluster-state", "new",
        // The minimum lease TTL is 1.5 election timeouts: 200 ms lets etcd grant 1 s leases.
        "--heartbeat-interval", "20",
        "--election-timeout", "200",
    };
    StatusOr<pid_t> spawned = ::tessera::testing::Spawn(argv, {.log_path = log_path});
    if (!spawned.ok()) {
      std::filesystem::remove_all(dir);
      return spawned.status();
    }
    const pid_t pid = *spawned;
    const std::string endpoint = StrCat("127.0.0.1:", client_port);
    const auto give_up = SteadyClock::now() + std::chrono::milliseconds(options.start_timeout_ms);
    bool exited = false;
    // Bounded by start_timeout_ms.
    while (SteadyClock::now() < give_up) {
      if (::tessera::testing::Exited(pid)) {
        exited = true;
        break;
      }
      if (Answers(endpoint)) {
        return std::unique_ptr<EtcdTestServer>(new EtcdTestServer(pid, endpoint, dir));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    last_log = ReadTail(log_path, 2000);
    if (!exited) KillAndReap(pid);
    std::filesystem::remove_all(dir);
    if (!exited) {
      return absl::UnavailableError(StrCat("etcd did not answer on ", endpoint, " within ",
                                           options.start_timeout_ms, " ms; log tail:\n", last_log));
    }
  }
  return absl::UnavailableError(StrCat("etcd exited at start three times; log tail:\n", last_log));
}

EtcdTestServer::~EtcdTestServer() {
  Kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void EtcdTestServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);  // a paused process must run to die promptly
  KillAndReap(pid_);
  pid_ = -1;
}

void EtcdTestServer::Pause() {
  if (pid_ <= 0) return;
  kill(pid_, SIGSTOP);
  // kill() returns before the process has stopped; wait until it has, so that nothing sent
  // after Pause() is answered.
  int status = 0;
  waitpid(pid_, &status, WUNTRACED);
}

void EtcdTestServer::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

std::string EtcdTestServer::LogTail(size_t bytes) const {
  return ReadTail(StrCat(dir_, "/etcd.log"), bytes);
}

}  // namespace tessera::coord::testing
