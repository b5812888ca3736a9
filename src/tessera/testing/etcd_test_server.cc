#include "tessera/testing/etcd_test_server.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tessera/testing/child_process.h"

namespace tessera::testing {
namespace {

using SteadyClock = std::chrono::steady_clock;

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

std::string EtcdTestServer::JoinEndpointsOf(const std::vector<Member>& members) {
  std::string out;
  for (const Member& m : members) out += (out.empty() ? "" : ",") + m.endpoint;
  return out;
}

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
  if (options.members < 1) {
    return absl::InvalidArgumentError(StrCat("etcd members must be >= 1, not ", options.members));
  }
  const std::string parent = options.parent_dir.empty() ? DefaultParent() : options.parent_dir;
  const int n = options.members;
  static std::atomic<int> counter{0};
  std::string last_log;
  // A few attempts: a picked port may be taken between the pick and etcd's bind.
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSIGN_OR_RETURN(const std::string dir, MakeTempDir(parent, "tessera-etcd-"));
    std::set<int> ports;
    // Bounded: each pass adds a port or fails; PickFreePort rarely repeats itself.
    for (int tries = 0; tries < 100 && static_cast<int>(ports.size()) < 2 * n; ++tries) {
      ASSIGN_OR_RETURN(const int port, PickFreePort());
      ports.insert(port);
    }
    if (static_cast<int>(ports.size()) < 2 * n) {
      std::filesystem::remove_all(dir);
      return absl::UnavailableError("cannot find free ports for etcd");
    }
    std::vector<int> port_list(ports.begin(), ports.end());
    std::vector<Member> members(n);
    std::vector<std::string> peer_urls(n), client_urls(n);
    std::string initial_cluster;
    for (int i = 0; i < n; ++i) {
      client_urls[i] = StrCat("http://127.0.0.1:", port_list[2 * i]);
      peer_urls[i] = StrCat("http://127.0.0.1:", port_list[2 * i + 1]);
      members[i].endpoint = StrCat("127.0.0.1:", port_list[2 * i]);
      members[i].log_path = StrCat(dir, "/etcd", i, ".log");
      initial_cluster += StrCat(i == 0 ? "" : ",", "m", i, "=", peer_urls[i]);
    }
    const std::string token = StrCat("tessera-test-", getpid(), "-", counter++);
    Status spawn_failed;
    for (int i = 0; i < n && spawn_failed.ok(); ++i) {
      std::vector<std::string> argv = {
          binary,
          "--name", StrCat("m", i),
          "--data-dir", StrCat(dir, "/data", i),
          "--listen-client-urls", client_urls[i],
          "--advertise-client-urls", client_urls[i],
          "--listen-peer-urls", peer_urls[i],
          "--initial-advertise-peer-urls", peer_urls[i],
          "--initial-cluster", initial_cluster,
          "--initial-cluster-token", token,
          "--initial-cluster-state", "new",
          // The minimum lease TTL is 1.5 election timeouts: these let etcd grant 1 s leases. A
          // cluster of several members gets a little more slack, so that a busy machine does
          // not set off elections.
          "--heartbeat-interval", n == 1 ? "20" : "50",
          "--election-timeout", n == 1 ? "200" : "500",
      };
      StatusOr<pid_t> spawned = Spawn(argv, {.log_path = members[i].log_path});
      if (spawned.ok()) {
        members[i].pid = *spawned;
      } else {
        spawn_failed = spawned.status();
      }
    }
    auto kill_all = [&] {
      for (Member& m : members) {
        KillAndReap(m.pid);
        m.pid = -1;
      }
    };
    if (!spawn_failed.ok()) {
      kill_all();
      std::filesystem::remove_all(dir);
      return spawn_failed;
    }
    const auto give_up = SteadyClock::now() + std::chrono::milliseconds(options.start_timeout_ms);
    bool exited = false;
    std::vector<bool> answered(n, false);
    // Bounded by start_timeout_ms.
    while (SteadyClock::now() < give_up && !exited) {
      int ready = 0;
      for (int i = 0; i < n; ++i) {
        if (Exited(members[i].pid)) {
          members[i].pid = -1;
          exited = true;
          break;
        }
        if (!answered[i]) answered[i] = Answers(members[i].endpoint);
        ready += answered[i] ? 1 : 0;
      }
      if (!exited && ready == n) {
        return std::unique_ptr<EtcdTestServer>(new EtcdTestServer(std::move(members), dir));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    last_log.clear();
    for (const Member& m : members) last_log += ReadFileTail(m.log_path, 2000);
    kill_all();
    std::filesystem::remove_all(dir);
    if (!exited) {
      return absl::UnavailableError(StrCat("etcd (", n, " members) did not answer within ",
                                           options.start_timeout_ms, " ms; log tail:\n",
                                           last_log));
    }
  }
  return absl::UnavailableError(StrCat("etcd exited at start three times; log tail:\n", last_log));
}

EtcdTestServer::EtcdTestServer(std::vector<Member> members, std::string dir)
    : members_(std::move(members)), endpoint_(JoinEndpointsOf(members_)), dir_(std::move(dir)) {}

EtcdTestServer::~EtcdTestServer() {
  Kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

StatusOr<int> EtcdTestServer::LeaderMember() const {
  for (const Member& m : members_) {
    if (m.pid <= 0) continue;
    auto channel = grpc::CreateChannel(m.endpoint, grpc::InsecureChannelCredentials());
    auto maintenance = etcdserverpb::Maintenance::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1000));
    etcdserverpb::StatusResponse response;
    if (!maintenance->Status(&ctx, etcdserverpb::StatusRequest(), &response).ok() ||
        response.leader() == 0) {
      continue;
    }
    // Which member has that id: ask each live one for its own.
    for (size_t i = 0; i < members_.size(); ++i) {
      if (members_[i].pid <= 0) continue;
      auto c = grpc::CreateChannel(members_[i].endpoint, grpc::InsecureChannelCredentials());
      auto stub = etcdserverpb::Maintenance::NewStub(c);
      grpc::ClientContext ctx2;
      ctx2.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1000));
      etcdserverpb::StatusResponse own;
      if (stub->Status(&ctx2, etcdserverpb::StatusRequest(), &own).ok() &&
          own.header().member_id() == response.leader()) {
        return static_cast<int>(i);
      }
    }
  }
  return absl::UnavailableError("no live etcd member knows a leader");
}

void EtcdTestServer::Kill() {
  for (int i = 0; i < members(); ++i) KillMember(i);
}

void EtcdTestServer::KillMember(int i) {
  Member& m = members_[i];
  if (m.pid <= 0) return;
  kill(m.pid, SIGCONT);  // a paused process must run to die promptly
  KillAndReap(m.pid);
  m.pid = -1;
}

void EtcdTestServer::Pause() {
  for (Member& m : members_) {
    if (m.pid <= 0) continue;
    kill(m.pid, SIGSTOP);
    // kill() returns before the process has stopped; wait until it has, so that nothing sent
    // after Pause() is answered.
    int status = 0;
    waitpid(m.pid, &status, WUNTRACED);
  }
}

void EtcdTestServer::Resume() {
  for (Member& m : members_) {
    if (m.pid > 0) kill(m.pid, SIGCONT);
  }
}

std::string EtcdTestServer::LogTail(size_t bytes) const {
  std::string out;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_.size() > 1) out += StrCat("--- etcd member ", i, " ---\n");
    out += ReadFileTail(members_[i].log_path, bytes);
  }
  return out;
}

}  // namespace tessera::testing
