// The etcd of a test suite: one etcd started by the suite's SetUpTestSuite and stopped by its
// TearDownTestSuite, with a key space of its own for every test. Without etcd (not installed,
// or it would not start) the tests skip, and say why once, loudly.
//
// Thread-safety: Start/Stop from gtest's suite hooks; the rest from the test thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tessera/coord/etcd_lock_service.h"
#include "tessera/testing/etcd_test_server.h"
#include "tessera/util/status.h"

namespace tessera::testing {

class SuiteEtcd {
 public:
  // `tests` names them in the skip message: "the etcd lock-service tests".
  static void Start(std::string_view tests);
  static void Stop();
  // Null when etcd could not start; then skip_reason() says why.
  static EtcdTestServer* server();
  static const std::string& skip_reason();
  // A lock service on the suite's etcd under "/<tag>-<pid>-<n>/", a key root no other test
  // uses. REQUIRES: server() != nullptr.
  static StatusOr<std::unique_ptr<coord::EtcdLockService>> OpenLockService(std::string_view tag);
};

}  // namespace tessera::testing
