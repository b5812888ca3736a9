// The etcd v3 lock service: LockService over an etcd 3.4 server (Debian's etcd-server) through
// its gRPC API, with stubs generated from our own wire-compatible protos (proto/etcd/). Why gRPC
// rather than the JSON gateway: docs/coordination.md.
//
// Mapping (every key lives under options.key_root):
//   session        an etcd lease (LeaseGrant with the TTL rounded up to whole seconds; the
//                  session id is the lease id), renewed every TTL/3 over LeaseKeepAlive;
//                  Close() = LeaseRevoke
//   lock L         key <root>l/L, created by a Txn "if create_revision == 0" and attached to the
//                  session's lease, so it goes when the lease goes; value = the holder's value
//   file F         key <root>f/F (ephemeral: attached to the lease); versions, revisions and
//                  compare-and-set are etcd's own (Txn on VERSION)
//   watch          an etcd Watch stream per watch, resumed from the next revision after a
//                  broken connection
//
// The local lease timer: each keepalive is sent at t and, when answered with TTL s, proves the
// lease lives until at least t + s (etcd restarts the TTL when it receives the request, after t).
// The session's local deadline is that bound; when it passes without a newer answer the session
// is expired locally — callbacks fire even when etcd is unreachable, and never later than etcd
// itself would let another session take the locks. Each keepalive is one request/response
// exchange on a LeaseKeepAlive stream whose gRPC deadline is the local deadline, so a hung
// connection cannot hold the timer back.
//
// Threads: one per live session (keepalives, local timer, expiry callback) and one per watch
// (reads its stream and runs its callback). Calls (Get, Put, TryAcquire, …) run on the caller's
// thread with a deadline of rpc_timeout_ms; Unavailable when it passes or etcd is down.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "grpcpp/security/credentials.h"
#include "tessera/coord/lock_service.h"
#include "tessera/rpc/loop.h"
#include "tessera/util/clock.h"

namespace tessera::coord {

struct EtcdLockServiceOptions {
  // etcd's client URL: "127.0.0.1:2379" or "http://127.0.0.1:2379"; for a multi-member etcd,
  // a comma-separated list of HOST:PORTs, host names resolved to IPv4 once at Open. The client
  // talks to the first member that answers and moves to the next when that one dies (gRPC
  // pick_first): sessions, keepalives, watches and calls all move (a call in flight may fail
  // Unavailable; a watch resumes from its next revision). Required.
  std::string endpoint;
  // Prefix of every key this service touches; different clusters sharing one etcd use different
  // roots. Non-empty; conventionally ends with '/'.
  std::string key_root = "/tessera/";
  // Deadline of each unary call (and of StartWatch's wait for etcd's confirmation), ms.
  int64_t rpc_timeout_ms = 2000;
  // Measures lease deadlines (MonotonicMicros); must advance in real time, since etcd does.
  // Must outlive the service.
  Clock* clock = SystemClock();
  // Where the watch streams run (rpc/loop.h): the node's gRPC loop in a server. Null: the
  // service runs a loop of its own.
  rpc::Loop* loop = nullptr;
  // How etcd's client port is reached: TLS credentials (verifying etcd against its CA, and
  // presenting a client certificate when etcd asks for one); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

class EtcdLockService final : public LockService {
 public:
  // Makes the gRPC channel; does not contact etcd (CreateSession does). InvalidArgument for bad
  // options.
  static StatusOr<std::unique_ptr<EtcdLockService>> Open(const EtcdLockServiceOptions& options);

  // REQUIRES: every Session and Watch of this service has been destroyed.
  ~EtcdLockService() override;

  std::string_view backend_name() const override { return "etcd"; }
  StatusOr<std::unique_ptr<Session>> CreateSession(const SessionOptions& options) override;
  // LeaseRevoke of the session's lease.
  Status RevokeSession(SessionId id) override;

  class Client;  // defined in the .cc: stubs, options and call helpers shared with sessions

 private:
  explicit EtcdLockService(std::unique_ptr<Client> client);
  std::unique_ptr<Client> client_;
};

}  // namespace tessera::coord
