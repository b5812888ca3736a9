// The embedded lock service: the LockService of a single node, in-process. Sessions, locks,
// ephemeral files and watches live in memory; persistent files and the revision counter are kept
// in one snapshot file in `dir` (embedded_snapshot.h), rewritten atomically on each change to a
// persistent file, so a Put that returned OK survives a crash and a reopen. Sessions do not
// survive the process, so after a reopen no lock is held and no ephemeral file exists.
//
// Leases: the service and its sessions share the process, so a session's keepalive cannot get
// lost; a session is renewed continuously until it is closed, revoked, or
// StopKeepAliveForTesting() is called, after which it expires when `clock` passes the TTL.
// Expiry is checked at every call and by Poll().
//
// Callbacks (watch events, session expiry) are queued under the service's mutex and delivered
// in queue order — so per watch in revision order — by the background thread, or, without it,
// by whoever calls Poll(). They never run on a thread that called Put, TryAcquire, etc.
//
// Thread-safety: all methods are thread-safe. A change to a persistent file is written to disk
// while the service's mutex is held (the snapshot must match the order of changes); reads and
// other changes wait for it. Changes to persistent files are expected to be rare (schema, root
// location), as in Chubby.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/coord/lock_service.h"
#include "tessera/util/clock.h"
#include "tessera/util/file_system.h"

namespace tessera::coord {

struct EmbeddedLockServiceOptions {
  // Where the snapshot lives; must outlive the service. Required.
  FileSystem* fs = nullptr;
  // Lease expiry and Acquire timeouts are measured on it (MonotonicMicros); must outlive the
  // service. Required.
  Clock* clock = nullptr;
  // The folder (e.g. "<data-dir>/coord"), created if missing. Required.
  std::string dir;
  // Run a thread that delivers callbacks as soon as they are queued and checks lease expiry
  // every `poll_interval_ms` of real time. Off: nothing happens in the background; call Poll()
  // (tests on a ManualClock do).
  bool background_thread = true;
  int64_t poll_interval_ms = 50;
  // Acquire retries every this many milliseconds of `clock` time (ManualClock: advances it).
  int64_t acquire_retry_ms = 10;
  // Changes kept in memory for watches with a start revision in the past: at most this many,
  // holding at most history_bytes_limit bytes of names and values (the newest is always kept).
  size_t history_limit = 10'000;
  size_t history_bytes_limit = 16 << 20;
};

class EmbeddedLockService final : public LockService {
 public:
  // Opens (or creates) the service's folder and loads its snapshot. DataLoss if the snapshot is
  // corrupt; Unavailable on I/O errors; InvalidArgument for missing options.
  static StatusOr<std::unique_ptr<EmbeddedLockService>> Open(
      const EmbeddedLockServiceOptions& options);

  // REQUIRES: every Session and Watch of this service has been destroyed.
  ~EmbeddedLockService() override;

  std::string_view backend_name() const override { return "embedded"; }
  StatusOr<std::unique_ptr<Session>> CreateSession(const SessionOptions& options) override;
  Status RevokeSession(SessionId id) override;

  // Expires the sessions whose lease has run out on the clock, then runs every queued callback
  // on the calling thread. Harmless alongside the background thread. A callback may call Poll()
  // (it then returns at once: the outer call delivers what is queued).
  void Poll();

  // The current revision (the revision of the last change).
  int64_t revision() const;

  class Impl;  // defined in the .cc; shared with the session and watch objects there

 private:
  explicit EmbeddedLockService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::coord
