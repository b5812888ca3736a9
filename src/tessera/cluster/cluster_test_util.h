// Test-only helpers for the cluster node tests: a temporary folder, and a bounded wait.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

namespace tessera::cluster::testing {

class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "tessera-cluster-XXXXXX").string();
    path_ = mkdtemp(templ.data()) != nullptr ? templ : std::string();
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Polls `done` every 20 ms until it returns true or `timeout_ms` passes; returns its last answer.
inline bool WaitFor(const std::function<bool()>& done, int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace tessera::cluster::testing
