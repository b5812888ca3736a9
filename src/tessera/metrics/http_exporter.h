// HttpExporter: a node's HTTP port (civetweb), serving what Prometheus scrapes at /metrics in
// its text format — prometheus-cpp's collectables and its TextSerializer write the exposition,
// Tessera only says what to collect — and the node's other pages (the dashboard:
// server/dashboard.h).
//
// Thread-safety: the exporter's own threads (`threads`, 2 by default) answer requests, calling
// the collectables' Collect and the pages' functions concurrently with everything else; a
// collectable is skipped once its owner has released it (the exporter holds weak pointers).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "tessera/util/status.h"

class CivetServer;

namespace tessera::metrics {

// What a POST brings: its Authorization header ("" when none), the client's address and the
// body (at most kMaxPostBytes; a larger one is refused with 413 before the handler runs).
struct HttpRequest {
  std::string authorization;
  std::string peer;
  std::string body;
};
inline constexpr size_t kMaxPostBytes = 64 << 10;

// A POST's answer: its HTTP status and body (of the page's content type).
struct HttpReply {
  int status = 200;
  std::string body;
};

// One more page of the port: GET `path` (exact) answers what `get` returns; POST, what `post`
// returns. Either may be null (405 for that method). Every page answers CORS (any origin; the
// Authorization and Content-Type headers), so that one node's dashboard reaches the others.
struct HttpPage {
  std::string path;
  std::string content_type;
  std::function<std::string()> get;
  std::function<HttpReply(const HttpRequest&)> post = nullptr;
};

class HttpExporter {
 public:
  // Listens on `listen` ("HOST:PORT"; port 0 picks a free one) and serves `collectables` at
  // /metrics, and `pages`. Errors: InvalidArgument naming a malformed address, Unavailable
  // naming the address when it cannot be listened on (in use, not this machine's).
  static StatusOr<std::unique_ptr<HttpExporter>> Start(
      const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
      std::vector<HttpPage> pages = {}, int threads = 2);
  ~HttpExporter();  // stops listening; waits for scrapes in progress

  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // The address listened on, with the port actually bound ("127.0.0.1:8087").
  const std::string& address() const { return address_; }
  int port() const { return port_; }

 private:
  class Handler;
  HttpExporter();
  std::vector<std::unique_ptr<Handler>> handlers_;  // outlive server_
  std::unique_ptr<CivetServer> server_;
  std::string address_;
  int port_ = 0;
};

}  // namespace tessera::metrics
