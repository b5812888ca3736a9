#include "tessera/testing/test_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tessera/testing/child_process.h"

extern char** environ;

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;

Status Errno(std::string_view what) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(errno)));
}

bool CanConnect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool overridden = false;
    for (const std::string& x : extra) {
      const size_t eq = x.find('=');
      if (eq != std::string::npos && entry.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1)) {
        overridden = true;
      }
    }
    if (!overridden) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

StatusOr<pid_t> SpawnQuiet(const std::vector<std::string>& argv, const std::string& log_path) {
  return Spawn(argv, {.log_path = log_path});
}

void Stop(pid_t pid) {
  if (pid > 0) (void)TerminateAndWait(pid, std::chrono::seconds(5));
}

}  // namespace

std::string EmulatorPath() {
  const char* env = std::getenv("TESSERA_CBTEMULATOR");
  if (env != nullptr && *env != '\0') return env;
  return "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";
}

StatusOr<std::unique_ptr<TestServer>> TestServer::StartEmulator() {
  const std::string path = EmulatorPath();
  if (access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat("cbtemulator not found at ", path));
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSIGN_OR_RETURN(const int port, PickFreePort());
    ASSIGN_OR_RETURN(const pid_t pid,
                     SpawnQuiet({path, "-host", "127.0.0.1", "-port", std::to_string(port)}, ""));
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    bool exited = false;
    while (Clock::now() < deadline) {
      if (CanConnect(port)) {
        return std::unique_ptr<TestServer>(
            new TestServer("emulator", pid, StrCat("127.0.0.1:", port), ""));
      }
      if (Exited(pid)) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!exited) {
      Stop(pid);
      return absl::DeadlineExceededError("cbtemulator did not accept connections within 15 s");
    }
  }
  return absl::UnavailableError("cbtemulator exited at start three times (port collisions?)");
}

StatusOr<std::unique_ptr<TestServer>> TestServer::StartTesseraServe(
    const std::string& tessera_binary, const std::string& data_dir) {
  return StartServe(tessera_binary, data_dir, "");
}

StatusOr<std::unique_ptr<TestServer>> TestServer::StartServe(const std::string& tessera_binary,
                                                             const std::string& data_dir,
                                                             const std::string& owned_dir) {
  if (access(tessera_binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(StrCat("tessera binary not found at ", tessera_binary));
  }
  // Is `serve` linked into this build?
  ASSIGN_OR_RETURN(ProcessResult help, RunProcess({tessera_binary, "serve", "--help"}, "", {},
                                                  std::chrono::seconds(10)));
  if (help.exit_code != 0) {
    return absl::NotFoundError(StrCat(tessera_binary, " has no working `serve` command"));
  }
  const std::string port_file = data_dir + "/port";
  const std::string log_file = data_dir + "/serve.log";
  std::filesystem::remove(port_file);
  ASSIGN_OR_RETURN(const pid_t pid,
                   SpawnQuiet({tessera_binary, "serve", "--listen", "127.0.0.1:0", "--port-file",
                               port_file, "--data-dir", data_dir + "/data"},
                              log_file));
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    std::string port = ReadFileOrEmpty(port_file);
    while (!port.empty() && (port.back() == '\n' || port.back() == ' ')) port.pop_back();
    if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos) {
      return std::unique_ptr<TestServer>(
          new TestServer("serve", pid, StrCat("127.0.0.1:", port), owned_dir));
    }
    if (Exited(pid)) {
      return absl::UnavailableError(
          StrCat("tessera serve exited at start; its log:\n", ReadFileOrEmpty(log_file)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Stop(pid);
  return absl::DeadlineExceededError("tessera serve wrote no port file within 30 s");
}

StatusOr<std::unique_ptr<TestServer>> TestServer::Start(const std::string& backend,
                                                        const std::string& tessera_binary) {
  if (backend == "emulator") return StartEmulator();
  if (backend == "serve") {
    ASSIGN_OR_RETURN(const std::string dir, MakeTempDir("", "tessera-test-"));
    StatusOr<std::unique_ptr<TestServer>> server = StartServe(tessera_binary, dir, dir);
    if (!server.ok()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    return server;
  }
  return absl::InvalidArgumentError(StrCat("unknown test backend \"", backend, "\""));
}

TestServer::~TestServer() {
  Stop(pid_);
  if (!temp_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp_dir_, ignored);
  }
}

StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                   const std::string& stdin_text,
                                   const std::vector<std::string>& extra_env,
                                   std::chrono::milliseconds timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  signal(SIGPIPE, SIG_IGN);  // a child that stops reading its stdin must not kill us
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<std::string> args_storage = argv;
  std::vector<char*> args = CStrings(args_storage);
  std::vector<std::string> env_storage = EnvironmentWith(extra_env);
  std::vector<char*> env = CStrings(env_storage);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    errno = rc;
    return Errno(StrCat("spawn ", argv[0]));
  }
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  int in_fd = in[1];
  size_t written = 0;
  if (stdin_text.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  ProcessResult result;
  int out_fd = out[0], err_fd = err[0];
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (poll(fds, n, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = write(in_fd, stdin_text.data() + written, stdin_text.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) written = stdin_text.size();
        if (written == stdin_text.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      const ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        (fds[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        if (fds[i].fd == out_fd) {
          close(out_fd);
          out_fd = -1;
        } else {
          close(err_fd);
          err_fd = -1;
        }
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  // The pipes are closed: the child exits soon (or was killed).
  const auto wait_deadline = Clock::now() + std::chrono::seconds(10);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > wait_deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (timed_out) {
    return absl::DeadlineExceededError(StrCat(argv[0], " did not finish within ",
                                              timeout.count(), " ms; stdout so far:\n",
                                              result.out, "\nstderr so far:\n", result.err));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace tessera::testing
