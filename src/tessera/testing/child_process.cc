#include "tessera/testing/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace tessera::testing {

namespace {

Status Errno(std::string_view what, int err) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(err)));
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int DecodeStatus(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw); }

}  // namespace

StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const Status s = Errno("bind", errno);
    close(fd);
    return s;
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) return absl::InvalidArgumentError("Spawn: empty argv");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const char* out = options.log_path.empty() ? "/dev/null" : options.log_path.c_str();
  posix_spawn_file_actions_addopen(&actions, 1, out,
                                   O_WRONLY | O_CREAT | (options.append_log ? O_APPEND : O_TRUNC),
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<std::string> args_copy = argv;
  std::vector<char*> args = CStrings(args_copy);
  std::vector<std::string> env_copy = options.env;
  std::vector<char*> env = CStrings(env_copy);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                             options.env.empty() ? environ : env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Errno(StrCat("cannot start ", argv[0]), rc);
  return pid;
}

bool Exited(pid_t pid, int* status) {
  int raw = 0;
  if (waitpid(pid, &raw, WNOHANG) != pid) return false;
  if (status != nullptr) *status = DecodeStatus(raw);
  return true;
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGCONT);
  kill(pid, SIGKILL);
  int raw = 0;
  waitpid(pid, &raw, 0);
}

StatusOr<int> TerminateAndWait(pid_t pid, std::chrono::milliseconds timeout) {
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (Exited(pid, &status)) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  KillAndReap(pid);
  return absl::DeadlineExceededError(
      StrCat("process ", pid, " did not exit within ", timeout.count(), " ms of SIGTERM"));
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadFileTail(const std::string& path, size_t max_bytes) {
  std::string all = ReadFileOrEmpty(path);
  if (all.size() > max_bytes) all = "..." + all.substr(all.size() - max_bytes);
  return all;
}

StatusOr<std::string> MakeTempDir(const std::string& parent, std::string_view prefix) {
  const std::filesystem::path base =
      parent.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(parent);
  std::string templ = (base / StrCat(prefix, "XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) return Errno(StrCat("mkdtemp ", templ), errno);
  return templ;
}

}  // namespace tessera::testing
