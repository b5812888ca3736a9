#include "tessera/testing/http_get.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

StatusOr<HttpAnswer> HttpCall(const std::string& address, const std::string& method,
                              const std::string& path, const std::string& body,
                              const std::vector<std::string>& headers, int timeout_ms) {
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
  std::string request =
      StrCat(method, " ", path, " HTTP/1.1\r\nHost: ", address, "\r\nConnection: close\r\n");
  for (const std::string& h : headers) request += StrCat(h, "\r\n");
  if (!body.empty()) request += StrCat("Content-Length: ", body.size(), "\r\n");
  request += "\r\n" + body;
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
    // Done once the body a Content-Length announces is in (some servers keep the connection).
    if (const size_t end = answer.find("\r\n\r\n"); end != std::string::npos) {
      std::string head = answer.substr(0, end);
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (const size_t at = head.find("\r\ncontent-length:"); at != std::string::npos) {
        const size_t length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
        if (answer.size() >= end + 4 + length) break;
      }
    }
  }
  HttpAnswer out;
  // "HTTP/1.1 200 OK"
  const size_t space = answer.find(' ');
  if (space != std::string::npos) out.status = std::atoi(answer.c_str() + space + 1);
  const size_t at_body = answer.find("\r\n\r\n");
  if (at_body != std::string::npos) out.body = answer.substr(at_body + 4);
  return out;
}

StatusOr<std::string> HttpGet(const std::string& address, const std::string& path, int timeout_ms) {
  ASSIGN_OR_RETURN(HttpAnswer answer, HttpCall(address, "GET", path, "", {}, timeout_ms));
  if (answer.status != 200) {
    return absl::InternalError(StrCat("GET ", path, " from ", address, ": HTTP ", answer.status));
  }
  return std::move(answer.body);
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
