// Test-only: a Bigtable-API server as a child process on 127.0.0.1 and a free port, for the
// process-level tests (differential, kill -9). Either `tessera serve` (a data folder the test
// chooses, so it can be killed and restarted on the same data) or the official emulator
// (cbtemulator). Also a gRPC channel and stubs to it, and the ReadRows of a whole stream
// through the client's RowMerger.
//
// Thread-safety: a ServerProcess is used by one thread; the stubs it hands out are thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tessera/client/row_merger.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/status.h"

namespace tessera::integration {

class ServerProcess {
 public:
  // Starts `<tessera_binary> serve --listen 127.0.0.1:0 --port-file <data_dir>/../port-N
  // --data-dir <data_dir> <extra_args...>` and waits (≤ 30 s) for the port file.
  // Unavailable with the log's tail if the process exits or never reports a port.
  static StatusOr<std::unique_ptr<ServerProcess>> StartTessera(
      const std::string& tessera_binary, const std::string& data_dir,
      const std::vector<std::string>& extra_args);

  // Starts `<emulator_binary> -host 127.0.0.1 -port 0` and waits (≤ 30 s) for the line naming
  // its port.
  static StatusOr<std::unique_ptr<ServerProcess>> StartEmulator(
      const std::string& emulator_binary, const std::string& log_dir);

  // Kills the process (SIGKILL) if still running.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // "127.0.0.1:<port>".
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // The last `max_bytes` of the server's stdout+stderr.
  std::string LogTail(size_t max_bytes = 4000) const;

  // SIGTERM, then waits ≤ `timeout`; returns the exit status (128 + signal when killed by
  // one). DeadlineExceeded (after a SIGKILL) if it did not exit in time.
  StatusOr<int> Stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Waits ≤ `timeout` for the process to exit on its own; returns its exit status as Stop()
  // does. DeadlineExceeded if it is still running (it is left running).
  StatusOr<int> WaitExit(std::chrono::milliseconds timeout);
  // SIGKILL and reap. Safe to call twice.
  void Kill();

  // A fresh insecure channel to the server (large messages allowed), whose calls carry the
  // bearer token set with set_token (none by default: a node without --auth).
  std::shared_ptr<grpc::Channel> NewChannel() const;
  void set_token(std::string token) { token_ = std::move(token); }

 private:
  ServerProcess(pid_t pid, std::string endpoint, std::string log_path)
      : pid_(pid), endpoint_(std::move(endpoint)), log_path_(std::move(log_path)) {}

  pid_t pid_;
  bool reaped_ = false;
  const std::string endpoint_;
  const std::string log_path_;
  std::string token_;
};

// The test binaries' own flags, "--NAME=VALUE", after gtest has taken its own: each flag named
// in `flags` is stored in its string; anything else is an error, printed on stderr. `usage` is
// printed too when a flag in `required` is missing. Returns false on any error (exit 2).
bool ParseTestFlags(int argc, char** argv, const std::vector<std::pair<std::string, std::string*>>& flags,
                    const std::vector<std::string>& required, const std::string& usage);

// The main() of a suite that takes only --tessera=<binary>: gtest's flags, then ours, then
// RUN_ALL_TESTS(). Stores the binary in `*tessera_binary`.
int RunTestsWithTesseraBinary(int argc, char** argv, std::string* tessera_binary);

// A scratch directory, removed when destroyed (kept with TESSERA_KEEP_TEST_DIRS=1).
using ::tessera::testing::TempDir;

// Reads a whole ReadRows stream through a RowMerger. The returned status is the RPC's status,
// or Internal naming the broken chunk rule. `metadata`: extra request headers.
Status ReadAllRows(google::bigtable::v2::Bigtable::Stub* stub,
                   const google::bigtable::v2::ReadRowsRequest& request,
                   std::vector<model::Row>* rows,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30),
                   const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The `bigtable-features` header value advertising reverse scans (base64url of
// FeatureFlags{reverse_scans: true}); the emulator serves reversed ReadRows only with it.
inline constexpr char kFeaturesHeader[] = "bigtable-features";
inline constexpr char kReverseScansFeature[] = "CAE=";

// grpc::Status -> absl::Status with the same code and message.
Status FromGrpc(const grpc::Status& status);

// "projects/p/instances/i" and ".../tables/<id>".
inline constexpr char kInstanceName[] = "projects/p/instances/i";
std::string TableName(const std::string& table_id);

}  // namespace tessera::integration
