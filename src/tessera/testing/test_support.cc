#include "tessera/testing/test_support.h"

#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::testing {

TempDir::TempDir(std::string_view prefix) {
  const char* base = nullptr;
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* value = std::getenv(var);
    if (base == nullptr && value != nullptr && *value != '\0') base = value;
  }
  std::string pattern = StrCat(base != nullptr ? base : "/tmp", "/", prefix, ".XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp(%s) failed: %s\n", pattern.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  if (std::getenv("TESSERA_KEEP_TEST_DIRS") != nullptr) {
    std::fprintf(stderr, "kept %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool WaitFor(const std::function<bool()>& done, int64_t timeout_ms, int64_t poll_ms) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return done();
}

}  // namespace tessera::testing
