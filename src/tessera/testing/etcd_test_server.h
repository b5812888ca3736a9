// Test-only: an etcd cluster (Debian's etcd-server, 3.4) of one or more members as child
// processes, each in a fresh temporary data folder, listening on free 127.0.0.1 ports. Started
// with short heartbeat and election timeouts so etcd grants 1 s leases. Used by coord/'s tests
// and by cluster process tests; three members let a test kill one and keep a quorum.
//
// Thread-safety: one thread uses a server object, except that endpoint() and member_endpoint()
// may be read anywhere.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::testing {

struct EtcdTestServerOptions {
  // The etcd binary; empty: $TESSERA_ETCD, else /usr/bin/etcd.
  std::string binary;
  // Where the temporary data folder is made; empty: /dev/shm when writable (etcd fsyncs a lot),
  // else the system temp folder.
  std::string parent_dir;
  // How long Start waits for every member to answer.
  int64_t start_timeout_ms = 20'000;
  // Members of the etcd cluster: 1, or 3 to survive the loss of one. >= 1.
  int members = 1;
};

class EtcdTestServer {
 public:
  // The binary Start would run for `options`.
  static std::string BinaryPath(const EtcdTestServerOptions& options = {});

  // Starts every member and waits until each answers a linearizable read over gRPC (so the
  // cluster has a leader). NotFound if the binary is missing (tests skip on that); Unavailable
  // if it did not come up (the message holds the logs' tails).
  static StatusOr<std::unique_ptr<EtcdTestServer>> Start(const EtcdTestServerOptions& options = {});

  // Kills every member (SIGKILL), reaps them and removes the data folder.
  ~EtcdTestServer();
  EtcdTestServer(const EtcdTestServer&) = delete;
  EtcdTestServer& operator=(const EtcdTestServer&) = delete;

  // Every member's "127.0.0.1:<client port>", comma-separated in member order: what
  // --lock-service etcd://... takes. One member: just its HOST:PORT.
  const std::string& endpoint() const { return endpoint_; }
  int members() const { return static_cast<int>(members_.size()); }
  const std::string& member_endpoint(int i) const { return members_[i].endpoint; }
  // The first member's pid (-1 once killed).
  pid_t pid() const { return members_[0].pid; }

  // The index of the member that leads the etcd cluster now, as the live members report it.
  // Unavailable when none knows a leader.
  StatusOr<int> LeaderMember() const;

  // SIGKILL every member now and reap. Idempotent.
  void Kill();
  // SIGKILL one member and reap. Idempotent.
  void KillMember(int i);
  // SIGSTOP every member (returning once each has stopped) / SIGCONT: a hung service, whose
  // connections stay open and answer nothing.
  void Pause();
  void Resume();

  // The last `bytes` of each member's log, for failure messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  struct Member {
    pid_t pid = -1;
    std::string endpoint;
    std::string log_path;
  };
  EtcdTestServer(std::vector<Member> members, std::string dir);
  static std::string JoinEndpointsOf(const std::vector<Member>& members);

  std::vector<Member> members_;
  const std::string endpoint_;
  const std::string dir_;  // removed at destruction
};

}  // namespace tessera::testing
