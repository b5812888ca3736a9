// Test-only: starting a Bigtable-API server as a child process on 127.0.0.1 and a free port —
// the official emulator (cbtemulator) or `tessera serve` — and running a command-line program
// with a time bound. Used by the client and shell tests so the same test body runs against
// either server ("backends").
//
// Thread-safety: a TestServer is used by one thread. RunProcess may run concurrently.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::testing {

// Where the official emulator is installed with the Google Cloud CLI; $TESSERA_CBTEMULATOR
// overrides it.
std::string EmulatorPath();

// A server child process, stopped (SIGTERM, then SIGKILL after 5 s) when destroyed.
class TestServer {
 public:
  // Starts cbtemulator on a free 127.0.0.1 port and waits (≤ 15 s) until it accepts
  // connections. NotFound if the emulator is not installed (tests skip on that).
  static StatusOr<std::unique_ptr<TestServer>> StartEmulator();

  // Starts `<tessera_binary> serve --listen 127.0.0.1:0 --port-file … --data-dir <data_dir>`
  // and waits (≤ 30 s) for the port file. NotFound if the binary is missing or has no `serve`
  // command (tests skip on that).
  static StatusOr<std::unique_ptr<TestServer>> StartTesseraServe(const std::string& tessera_binary,
                                                                 const std::string& data_dir);

  // "emulator" -> StartEmulator(); "serve" -> StartTesseraServe(tessera_binary, a fresh
  // temporary directory removed at destruction). InvalidArgument for other names.
  static StatusOr<std::unique_ptr<TestServer>> Start(const std::string& backend,
                                                     const std::string& tessera_binary);

  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // "127.0.0.1:<port>".
  const std::string& endpoint() const { return endpoint_; }
  const std::string& name() const { return name_; }

 private:
  static StatusOr<std::unique_ptr<TestServer>> StartServe(const std::string& tessera_binary,
                                                          const std::string& data_dir,
                                                          const std::string& owned_dir);
  TestServer(std::string name, pid_t pid, std::string endpoint, std::string temp_dir)
      : name_(std::move(name)), pid_(pid), endpoint_(std::move(endpoint)),
        temp_dir_(std::move(temp_dir)) {}

  const std::string name_;
  const pid_t pid_;
  const std::string endpoint_;
  const std::string temp_dir_;  // removed at destruction if not empty
};

struct ProcessResult {
  int exit_code = -1;     // the exit status, or 128 + signal if killed by one
  std::string out;        // everything written to stdout
  std::string err;        // everything written to stderr
};

// Runs argv[0] (a path) with `argv`, feeding `stdin_text` and capturing stdout and stderr.
// Extra environment entries ("NAME=value") are added to the current environment. Kills the
// child and returns DeadlineExceeded after `timeout`.
StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                   const std::string& stdin_text,
                                   const std::vector<std::string>& extra_env,
                                   std::chrono::milliseconds timeout);

}  // namespace tessera::testing
