// Test-only: an etcd server (Debian's etcd-server, 3.4) as a child process, alone in a fresh
// temporary data folder, listening on free 127.0.0.1 ports. Started with a short election
// timeout so etcd grants 1 s leases. Used by coord/'s tests and by cluster process tests.
//
// Thread-safety: one thread uses a server object, except that endpoint() may be read anywhere.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/util/status.h"

namespace tessera::coord::testing {

struct EtcdTestServerOptions {
  // The etcd binary; empty: $TESSERA_ETCD, else /usr/bin/etcd.
  std::string binary;
  // Where the temporary data folder is made; empty: /dev/shm when writable (etcd fsyncs a lot),
  // else the system temp folder.
  std::string parent_dir;
  // How long Start waits for etcd to answer.
  int64_t start_timeout_ms = 20'000;
};

class EtcdTestServer {
 public:
  // The binary Start would run for `options`.
  static std::string BinaryPath(const EtcdTestServerOptions& options = {});

  // Starts etcd and waits until it answers a read over gRPC. NotFound if the binary is missing
  // (tests skip on that); Unavailable if it did not come up (the message holds its log's tail).
  static StatusOr<std::unique_ptr<EtcdTestServer>> Start(const EtcdTestServerOptions& options = {});

  // Kills etcd (SIGKILL), reaps it and removes its data folder.
  ~EtcdTestServer();
  EtcdTestServer(const EtcdTestServer&) = delete;
  EtcdTestServer& operator=(const EtcdTestServer&) = delete;

  // "127.0.0.1:<client port>".
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }

  // SIGKILL now and reap. Idempotent.
  void Kill();
  // SIGSTOP (returning once the process has stopped) / SIGCONT: a hung server, whose
  // connections stay open and answer nothing.
  void Pause();
  void Resume();

  // The last `bytes` of etcd's log, for failure messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  EtcdTestServer(pid_t pid, std::string endpoint, std::string dir)
      : pid_(pid), endpoint_(std::move(endpoint)), dir_(std::move(dir)) {}

  pid_t pid_;
  const std::string endpoint_;
  const std::string dir_;  // removed at destruction
};

}  // namespace tessera::coord::testing
