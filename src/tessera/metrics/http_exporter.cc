#include "tessera/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "CivetServer.h"
#include "prometheus/text_serializer.h"
#include "tessera/util/host_port.h"

namespace tessera::metrics {

// Answers GET and POST of one path with what the page's functions make.
class HttpExporter::Handler final : public CivetHandler {
 public:
  explicit Handler(HttpPage page) : page_(std::move(page)) {}

  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    if (!page_.get) return NotAllowed(conn);
    std::string body;
    try {
      body = page_.get();
    } catch (const std::exception& e) {
      mg_send_http_error(conn, 500, "%s", e.what());
      return true;
    }
    Send(conn, 200, body);
    return true;
  }

  bool handlePost(CivetServer* /*server*/, mg_connection* conn) override {
    if (!page_.post) return NotAllowed(conn);
    const mg_request_info* info = mg_get_request_info(conn);
    if (info->content_length > static_cast<long long>(kMaxPostBytes)) {
      mg_send_http_error(conn, 413, "the body is larger than %zu bytes", kMaxPostBytes);
      return true;
    }
    HttpRequest request;
    if (const char* auth = mg_get_header(conn, "Authorization"); auth != nullptr) {
      request.authorization = auth;
    }
    request.peer = info->remote_addr;
    char buffer[4096];
    for (int n; (n = mg_read(conn, buffer, sizeof(buffer))) > 0;) {
      request.body.append(buffer, n);
      if (request.body.size() > kMaxPostBytes) {
        mg_send_http_error(conn, 413, "the body is larger than %zu bytes", kMaxPostBytes);
        return true;
      }
    }
    HttpReply reply;
    try {
      reply = page_.post(request);
    } catch (const std::exception& e) {
      mg_send_http_error(conn, 500, "%s", e.what());
      return true;
    }
    Send(conn, reply.status, reply.body);
    return true;
  }

  // The browser's CORS preflight before a cross-origin POST or a request with Authorization.
  bool handleOptions(CivetServer* /*server*/, mg_connection* conn) override {
    mg_printf(conn,
              "HTTP/1.1 204 No Content\r\nAccess-Control-Allow-Origin: *\r\n"
              "Access-Control-Allow-Methods: GET, POST\r\n"
              "Access-Control-Allow-Headers: Authorization, Content-Type\r\n"
              "Access-Control-Max-Age: 600\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return true;
  }

 private:
  bool NotAllowed(mg_connection* conn) {
    mg_send_http_error(conn, 405, "method not allowed on this page");
    return true;
  }
  void Send(mg_connection* conn, int status, const std::string& body) {
    mg_printf(conn,
              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
              "Cache-Control: no-store\r\nAccess-Control-Allow-Origin: *\r\n"
              "Connection: close\r\n\r\n",
              status, mg_get_response_code_text(nullptr, status), page_.content_type.c_str(),
              body.size());
    mg_write(conn, body.data(), body.size());
  }

  const HttpPage page_;
};

HttpExporter::HttpExporter() = default;

namespace {

// Every live collectable's families, in Prometheus' text format.
std::string Exposition(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : collectables) {
    if (std::shared_ptr<prometheus::Collectable> c = weak.lock()) {
      std::vector<prometheus::MetricFamily> some = c->Collect();
      families.insert(families.end(), std::make_move_iterator(some.begin()),
                      std::make_move_iterator(some.end()));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace

StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(
    const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
    std::vector<HttpPage> pages, int threads) {
  StatusOr<HostPort> at = ParseHostPort(listen, PortZero::kPicksFreePort);
  if (!at.ok()) {
    return absl::InvalidArgumentError(
        StrCat("HTTP listen address \"", listen, "\": ", at.status().message()));
  }
  std::unique_ptr<HttpExporter> exporter(new HttpExporter);
  // /metrics: every live collectable's families in Prometheus' text format.
  pages.push_back(
      HttpPage{"/metrics", "text/plain; version=0.0.4; charset=utf-8",
               [collectables = std::move(collectables)] { return Exposition(collectables); }});
  try {
    // civetweb: "HOST:PORT", an IPv6 host in brackets (as HostPort writes it).
    exporter->server_ = std::make_unique<CivetServer>(std::vector<std::string>{
        "listening_ports", at->ToString(), "num_threads", std::to_string(threads)});
  } catch (const std::exception& e) {
    return absl::UnavailableError(StrCat("cannot serve HTTP on ", at->ToString(), ": ", e.what()));
  }
  for (HttpPage& page : pages) {
    const std::string path = page.path;
    exporter->handlers_.push_back(std::make_unique<Handler>(std::move(page)));
    exporter->server_->addHandler(path, exporter->handlers_.back().get());
  }
  const std::vector<int> ports = exporter->server_->getListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(StrCat("cannot serve HTTP on ", at->ToString()));
  }
  exporter->port_ = ports.front();
  HostPort bound = *at;
  bound.port = exporter->port_;
  exporter->address_ = bound.ToString();
  return exporter;
}

// civetweb's listener polls with a 2 s timeout and looks at its stop flag only between polls,
// so stopping it waits up to 2 s — per server, in every test that starts one. Connections to
// the port wake the poll: they are made until the stop is done, then closed unanswered.
HttpExporter::~HttpExporter() {
  if (server_ == nullptr) return;
  std::atomic<bool> stopped{false};
  StatusOr<HostPort> at = ParseHostPort(address_);
  std::thread waker([&] {
    if (!at.ok()) return;
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (at->is_ipv6()) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons(static_cast<uint16_t>(port_));
      if (inet_pton(AF_INET6, at->host.c_str(), &a6->sin6_addr) != 1) a6->sin6_addr = in6addr_loopback;
      len = sizeof(sockaddr_in6);
    } else {
      auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
      a4->sin_family = AF_INET;
      a4->sin_port = htons(static_cast<uint16_t>(port_));
      if (inet_pton(AF_INET, at->host.c_str(), &a4->sin_addr) != 1 ||
          a4->sin_addr.s_addr == htonl(INADDR_ANY)) {
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      }
      len = sizeof(sockaddr_in);
    }
    // Bounded: the stop ends within civetweb's 2 s poll whether or not a connection helps.
    for (int i = 0; i < 200 && !stopped.load(); ++i) {
      const int fd = ::socket(addr.ss_family, SOCK_STREAM, 0);
      if (fd >= 0) {
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  server_->close();
  server_.reset();
  stopped.store(true);
  waker.join();
}

}  // namespace tessera::metrics
