// Child processes for tests that start servers (tessera serve, the official emulator, etcd):
// a free port on 127.0.0.1, spawning with output to a log file, reaping, stopping, log tails and
// scratch folders. One implementation for every suite that needs them.
//
// Thread-safety: plain functions; a pid must be waited for by one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (the child binds it next; a collision
// makes the child exit, and callers retry).
StatusOr<int> PickFreePort();

struct SpawnOptions {
  // stdout and stderr go here ("" = /dev/null); stdin is /dev/null.
  std::string log_path;
  // Append to the log instead of truncating it.
  bool append_log = false;
  // The child's environment ("NAME=value" entries); empty = this process's environment.
  std::vector<std::string> env = {};
};

// Starts argv (argv[0] is a path). Internal error naming the binary if it cannot be started.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// True if the child has exited; it is then reaped and, if `status` is set, its exit status
// stored there (128 + signal number when a signal ended it).
bool Exited(pid_t pid, int* status = nullptr);

// SIGKILL (after SIGCONT, so a stopped child dies promptly) and reap. Ignores pid <= 0.
void KillAndReap(pid_t pid);

// SIGTERM, then waits up to `timeout` for the exit status; after that SIGKILL, reap, and
// DeadlineExceeded.
StatusOr<int> TerminateAndWait(pid_t pid, std::chrono::milliseconds timeout);

// The whole file, or "" if it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);
// The last `max_bytes` of a file ("..." in front when cut).
std::string ReadFileTail(const std::string& path, size_t max_bytes);

// A new folder `<parent>/<prefix>XXXXXX` (parent "" = the system temp folder).
StatusOr<std::string> MakeTempDir(const std::string& parent, std::string_view prefix);

}  // namespace tessera::testing
