#include "tessera/testing/http_get.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "tessera/testing/test_support.h"
#include "tessera/util/host_port.h"

namespace tessera::testing {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

StatusOr<std::string> HttpGet(const std::string& address, const std::string& path,
                              int timeout_ms) {
  ASSIGN_OR_RETURN(const HostPort at, ParseHostPort(address));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at.port);
  if (getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return absl::UnavailableError(StrCat("cannot resolve ", address));
  }
  Fd fd(::socket(found->ai_family, found->ai_socktype, found->ai_protocol));
  const int connected = fd.get() < 0 ? -1 : ::connect(fd.get(), found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  if (connected != 0) return absl::UnavailableError(StrCat("cannot connect to ", address));
  const std::string request =
      StrCat("GET ", path, " HTTP/1.0\r\nHost: ", address, "\r\nConnection: close\r\n\r\n");
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError(StrCat("cannot send to ", address));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string answer;
  char buf[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd.get(), POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
      return absl::UnavailableError(StrCat("no whole answer from ", address, path, " within ",
                                           timeout_ms, " ms"));
    }
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0) return absl::UnavailableError(StrCat("reading from ", address, " failed"));
    if (n == 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  const size_t line_end = answer.find("\r\n");
  const std::string status_line = answer.substr(0, line_end);
  if (status_line.find(" 200") == std::string::npos) {
    return absl::InternalError(StrCat("GET ", path, " from ", address, ": ", status_line));
  }
  const size_t body = answer.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : answer.substr(body + 4);
}

Status PromtoolCheckMetrics(const std::string& exposition) {
  const char* kPromtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(kPromtool)) {
    return absl::NotFoundError(StrCat(kPromtool, " is not installed (Debian's prometheus)"));
  }
  TempDir dir;
  const std::string file = StrCat(dir.path(), "/metrics.txt");
  {
    FILE* f = std::fopen(file.c_str(), "w");
    if (f == nullptr) return absl::InternalError(StrCat("cannot write ", file));
    std::fwrite(exposition.data(), 1, exposition.size(), f);
    std::fclose(f);
  }
  const std::string command = StrCat(kPromtool, " check metrics < ", file, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot run promtool");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0 || !out.empty()) {
    return absl::FailedPreconditionError(StrCat("promtool check metrics: ", out));
  }
  return Status();
}

}  // namespace tessera::testing
