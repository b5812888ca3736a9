// Test helpers for a node's HTTP port: plain HTTP/1.1 calls (one per connection, closed by the
// server; answers with a Content-Length, not chunked), and Prometheus' own check of an
// exposition (promtool).
#pragma once

#include <string>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::testing {

// An HTTP answer: its status code and body.
struct HttpAnswer {
  int status = 0;
  std::string body;
};

// `method` http://`address``path` with `headers` ("Name: value") and `body` (sent with its
// Content-Length when not empty), within `timeout_ms`: the answer, whatever its status.
// Unavailable when the server cannot be reached or does not answer in time.
StatusOr<HttpAnswer> HttpCall(const std::string& address, const std::string& method,
                              const std::string& path, const std::string& body = "",
                              const std::vector<std::string>& headers = {}, int timeout_ms = 5000);

// GETs http://`address``path` (address "HOST:PORT") within `timeout_ms`; the body of a 200
// answer. Errors: Unavailable (cannot connect, no answer in time), Internal (another status,
// named with the answer's first line).
StatusOr<std::string> HttpGet(const std::string& address, const std::string& path,
                              int timeout_ms = 5000);

// Runs `promtool check metrics` on `exposition`: OK when promtool finds nothing to say,
// FailedPrecondition with what it printed otherwise, NotFound when promtool is not installed
// (Debian's prometheus package; scripts/install_deps.sh installs it).
Status PromtoolCheckMetrics(const std::string& exposition);

}  // namespace tessera::testing
