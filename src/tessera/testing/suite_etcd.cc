#include "tessera/testing/suite_etcd.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace tessera::testing {
namespace {

EtcdTestServer* g_server = nullptr;
std::string* g_skip_reason = new std::string();  // never destroyed: read by late skips
std::atomic<int> g_key_roots{0};

}  // namespace

void SuiteEtcd::Start(std::string_view tests) {
  if (g_server != nullptr) return;
  StatusOr<std::unique_ptr<EtcdTestServer>> server = EtcdTestServer::Start();
  if (server.ok()) {
    g_server = server->release();
    return;
  }
  *g_skip_reason = server.status().ToString();
  std::fprintf(stderr, "\n*** SKIPPING %.*s: %s ***\n\n", static_cast<int>(tests.size()),
               tests.data(), g_skip_reason->c_str());
}

void SuiteEtcd::Stop() {
  delete g_server;
  g_server = nullptr;
}

EtcdTestServer* SuiteEtcd::server() { return g_server; }

const std::string& SuiteEtcd::skip_reason() { return *g_skip_reason; }

StatusOr<std::unique_ptr<coord::EtcdLockService>> SuiteEtcd::OpenLockService(std::string_view tag) {
  coord::EtcdLockServiceOptions options;
  options.endpoint = g_server->endpoint();
  options.key_root = StrCat("/", tag, "-", getpid(), "-", g_key_roots++, "/");
  return coord::EtcdLockService::Open(options);
}

}  // namespace tessera::testing
