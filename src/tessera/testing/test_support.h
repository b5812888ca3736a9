// Small pieces every test suite needs: a scratch folder that cleans up after itself, and a
// bounded wait for a condition. (Child processes: child_process.h.)
//
// Thread-safety: TempDir is used by one thread; WaitFor runs `done` on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tessera::testing {

// A fresh, empty folder `<$TEST_TMPDIR or $TMPDIR or /tmp>/<prefix>.XXXXXX`, removed by the
// destructor unless TESSERA_KEEP_TEST_DIRS is set (then its path is printed). Aborts if the
// folder cannot be made: a test cannot run without it.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "tessera-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Calls `done` every `poll_ms` until it returns true or `timeout_ms` passes; returns its last
// answer (so a condition that turns true at the deadline still counts).
bool WaitFor(const std::function<bool()>& done, int64_t timeout_ms = 5000, int64_t poll_ms = 20);

}  // namespace tessera::testing
