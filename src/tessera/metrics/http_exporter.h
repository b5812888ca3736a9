// HttpExporter: a node's HTTP port, serving what Prometheus scrapes at /metrics in its text
// format, through prometheus-cpp's pull exposer (civetweb underneath): the library writes the
// exposition, Tessera only says what to collect.
//
// Thread-safety: the exporter's own threads (`threads`, 2 by default) answer scrapes and call
// the collectables' Collect concurrently with everything else; a collectable is skipped once
// its owner has released it (the exporter holds weak pointers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "tessera/util/status.h"

namespace prometheus {
class Exposer;
}

namespace tessera::metrics {

class HttpExporter {
 public:
  // Listens on `listen` ("HOST:PORT"; port 0 picks a free one) and serves `collectables` at
  // /metrics. Errors: InvalidArgument naming a malformed address, Unavailable naming the
  // address when it cannot be listened on (in use, not this machine's).
  static StatusOr<std::unique_ptr<HttpExporter>> Start(
      const std::string& listen, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
      int threads = 2);
  ~HttpExporter();  // stops listening; waits for scrapes in progress

  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // The address listened on, with the port actually bound ("127.0.0.1:8087").
  const std::string& address() const { return address_; }
  int port() const { return port_; }

 private:
  HttpExporter() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string address_;
  int port_ = 0;
};

}  // namespace tessera::metrics
