#include "tessera/coord/etcd_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"

extern char** environ;

namespace tessera::coord::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

Status Errno(std::string_view what) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(errno)));
}

// A port that was free a moment ago (etcd binds it next; a collision makes it exit and Start
// tries again with other ports).
StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const Status s = Errno("bind");
    close(fd);
    return s;
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string ReadTail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

StatusOr<std::string> MakeTempDir(const std::string& parent) {
  std::string templ = (std::filesystem::path(parent) / "tessera-etcd-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) return Errno(StrCat("mkdtemp in ", parent));
  return templ;
}

std::string DefaultParent() {
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return std::filesystem::temp_directory_path().string();
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
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
    ASSIGN_OR_RETURN(const std::string dir, MakeTempDir(parent));
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
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      errno = rc;
      std::filesystem::remove_all(dir);
      return Errno(StrCat("spawn ", binary));
    }
    const std::string endpoint = StrCat("127.0.0.1:", client_port);
    const auto give_up = SteadyClock::now() + std::chrono::milliseconds(options.start_timeout_ms);
    bool exited = false;
    // Bounded by start_timeout_ms.
    while (SteadyClock::now() < give_up) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
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
