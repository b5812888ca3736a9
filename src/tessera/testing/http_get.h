// Test helpers for a node's HTTP port: a plain HTTP/1.0 GET, and Prometheus' own check of an
// exposition (promtool).
#pragma once

#include <string>

#include "tessera/util/status.h"

namespace tessera::testing {

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
