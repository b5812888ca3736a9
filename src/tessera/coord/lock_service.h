// The lock service: Tessera's Chubby (Bigtable paper §4; ZooKeeper's role in Cassandra). One
// interface, two backends: EmbeddedLockService (in-process, persisted in the node's data folder,
// for a single node) and EtcdLockService (etcd v3 over gRPC, for a cluster). docs/coordination.md
// describes both and how the cluster layer uses them.
//
// The model, after Chubby:
//   - A Session is a client's lease with the service. It stays alive while its keepalives reach
//     the service within the lease time to live (TTL); the backend sends them on its own. When it
//     expires, its locks are released, its ephemeral files are deleted, its watches receive a
//     final kSessionExpired event and SessionOptions::on_state_change is called once with
//     kExpired. Every later call on the session fails with FailedPrecondition. An expired session
//     never comes back: create a new one. The holder learns of expiry no later than the service
//     acts on it (the etcd backend runs a local lease timer that fires even when etcd is
//     unreachable), so a node that stops acting as lock holder when told never overlaps a
//     successor.
//   - Locks are exclusive and named; a holder stores a small value (who it is) with the lock.
//   - Files are small named values with a version (1 at creation, +1 per Put; a Delete ends the
//     file and a new one starts again at 1) and compare-and-set on that version. An ephemeral
//     file belongs to the session that last put it and disappears when that session ends.
//     Lock names and file names are two separate namespaces.
//   - Every change (file put/delete, lock acquire/release) gets a revision from one counter per
//     service, increasing; Listing::revision lets a caller List and then Watch from the next
//     revision without a gap.
//   - A Watch follows one name or one prefix of files, or of locks, and calls back for every
//     change, in revision order, at least once (callers must tolerate seeing a change twice,
//     e.g. around an etcd reconnection), then once with kSessionExpired if its session expires.
//
// Errors (sharp codes):
//   InvalidArgument     bad name, value or option (names the problem)
//   Unavailable         the service cannot be reached or its storage failed; retry may succeed
//                       (embedded: ResourceExhausted when the disk is full)
//   FailedPrecondition  the session has expired or was closed
//   Aborted             a compare-and-set lost (the file's version was not the expected one)
//   NotFound            no such file / the lock is not held (by anyone, or by this session)
//   DeadlineExceeded    Acquire's timeout passed with the lock still held by another session
//
// Thread-safety: LockService, Session and Watch methods may be called from any thread
// concurrently. Callbacks run on a thread owned by the backend, never while a backend lock is
// held, so they may call any method of the service — except that a callback must not destroy the
// Session it belongs to (destroying its own Watch is allowed).
// Lifetimes: every Session and Watch must be destroyed before the LockService that made it. A
// Watch may outlive its Session (it then stays silent).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::coord {

// Limits on what the service stores (Chubby files are small; etcd's default request limit is
// 1.5 MiB).
inline constexpr size_t kMaxNameBytes = 4096;
inline constexpr size_t kMaxValueBytes = 1 << 20;

// Names a session; unique among the sessions of one service (the etcd backend uses the lease ID).
// 0 means "no session".
struct SessionId {
  int64_t value = 0;
  bool valid() const { return value != 0; }
  auto operator<=>(const SessionId&) const = default;
};

enum class SessionState { kAlive, kExpired };
std::string_view SessionStateName(SessionState state);

struct SessionOptions {
  // Lease time to live, milliseconds (default 10 s; fixed for the session's life). The etcd
  // backend rounds it up to whole seconds and etcd may raise it to its minimum (see
  // Session::ttl_ms()). Must be in [1, 3'600'000].
  int64_t ttl_ms = 10'000;
  // Called once, with kExpired, when the session expires (not after Close()). Optional. Runs on a
  // backend thread; see the thread-safety note at the top.
  std::function<void(SessionState)> on_state_change;
};

struct FileInfo {
  std::string name;
  std::string value;
  int64_t version = 0;          // 1 at creation, +1 per Put
  int64_t create_revision = 0;  // revision of the Put that created the file
  int64_t mod_revision = 0;     // revision of the last Put
  SessionId owner;              // an ephemeral file's session; invalid for a persistent file
};

struct LockHolder {
  SessionId session;
  std::string value;  // what the holder passed to TryAcquire/Acquire
  int64_t revision = 0;  // revision of the acquisition
};

struct PutOptions {
  // Ephemeral: deleted when this session ends. Persistent otherwise (survives sessions and, for
  // the embedded backend, restarts). A Put decides afresh: it can turn an ephemeral file into a
  // persistent one and back.
  bool ephemeral = false;
  // Compare-and-set: when set, the Put happens only if the file's current version equals this
  // (0 = the file must not exist); otherwise Aborted.
  std::optional<int64_t> expected_version;
};

// A consistent snapshot of the files under a prefix.
struct Listing {
  std::vector<FileInfo> files;  // sorted by name
  int64_t revision = 0;         // the service's revision when the snapshot was taken
};

enum class WatchTarget { kFiles, kLocks };

struct WatchOptions {
  WatchTarget target = WatchTarget::kFiles;
  // A file (or lock) name, or a prefix of names when `prefix` is true (an empty prefix watches
  // every name of the target).
  std::string key;
  bool prefix = false;
  // Deliver changes with revision >= start_revision; 0 = only changes made after Watch()
  // returns. Use Listing::revision + 1 to continue a List without a gap.
  int64_t start_revision = 0;
};

enum class WatchEventType {
  kPut,             // a file was put / a lock was acquired
  kDelete,          // a file was deleted (or its session ended) / a lock was released
  kSessionExpired,  // the watching session expired; the last event of the watch
  kReset,           // changes were lost: the start revision is older than the history the
                    // backend keeps (or etcd compacted it while the watch was reconnecting).
                    // Re-read with List; the watch continues from the current revision.
};
std::string_view WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kPut;
  std::string name;     // the file or lock (empty for kSessionExpired / kReset)
  std::string value;    // kPut: the new value (locks: the holder's value)
  int64_t version = 0;  // kPut on a file: its new version
  int64_t revision = 0;  // the change's revision (kReset: every change after it will come)
  SessionId owner;       // kPut: the ephemeral file's session / the lock holder
};

// Called for each event of one watch, one at a time, in order. The event lives during the call.
using WatchCallback = std::function<void(const WatchEvent& event)>;

// A registered watch. Destroying it cancels it: when the destructor returns the callback is not
// running (unless the destructor runs inside that callback) and never runs again.
class Watch {
 public:
  virtual ~Watch() = default;
};

class Session {
 public:
  // Closes the session (see Close()) unless it has already ended.
  virtual ~Session() = default;

  virtual SessionId id() const = 0;
  // kExpired once the session has expired or been closed.
  virtual SessionState state() const = 0;
  // The lease TTL in force (as granted; may exceed SessionOptions::ttl_ms).
  virtual int64_t ttl_ms() const = 0;

  // Ends the session now: releases its locks, deletes its ephemeral files, silences its watches
  // (no kSessionExpired; a callback already under way may finish) and does not call
  // on_state_change (unless expiry came first). Idempotent. Unavailable if the service could not
  // be told — the lease then runs out on its own within the TTL.
  virtual Status Close() = 0;

  // --- Locks ---
  // Takes `lock` if it is free: true if this session holds it now (also when it already held
  // it; the stored value is then left as it was), false if another session holds it.
  virtual StatusOr<bool> TryAcquire(std::string_view lock, std::string_view value) = 0;
  // Waits up to `timeout_ms` for `lock`: OK when held, DeadlineExceeded when the time ran out.
  // With the embedded backend on a ManualClock, waiting advances the clock (ManualClock's
  // SleepForMicros does), which is how a test lets a holder's lease run out.
  virtual Status Acquire(std::string_view lock, std::string_view value, int64_t timeout_ms) = 0;
  // NotFound if this session does not hold `lock`.
  virtual Status Release(std::string_view lock) = 0;
  // NotFound if nobody holds `lock`.
  virtual StatusOr<LockHolder> GetLockHolder(std::string_view lock) = 0;

  // --- Files ---
  // NotFound if the file does not exist.
  virtual StatusOr<FileInfo> Get(std::string_view name) = 0;
  // Creates or replaces a file. Returns its new state (value included).
  virtual StatusOr<FileInfo> Put(std::string_view name, std::string_view value,
                                 const PutOptions& options) = 0;
  // NotFound if the file does not exist; Aborted if `expected_version` is set and differs.
  virtual Status Delete(std::string_view name, std::optional<int64_t> expected_version) = 0;
  // Every file whose name starts with `prefix` (empty: all files).
  virtual StatusOr<Listing> List(std::string_view prefix) = 0;

  // --- Watches ---
  // Starts a watch. When this returns OK, every change with revision >= the start revision (or
  // made after this call, when start_revision is 0) will be delivered.
  virtual StatusOr<std::unique_ptr<Watch>> StartWatch(const WatchOptions& options,
                                                      WatchCallback callback) = 0;

  // Test-only: stops renewing the lease, as if the process had hung or lost the network; the
  // session then expires when its TTL runs out.
  virtual void StopKeepAliveForTesting() = 0;
};

class LockService {
 public:
  virtual ~LockService() = default;

  // "embedded" or "etcd".
  virtual std::string_view backend_name() const = 0;

  // Starts a session. InvalidArgument for a bad TTL; Unavailable if the service is unreachable.
  virtual StatusOr<std::unique_ptr<Session>> CreateSession(const SessionOptions& options) = 0;

  // Ends another session at once as if its lease had run out (an operator's or a test's tool;
  // the master may use it to fence a server it has given up on). Its holder learns of it within
  // a third of its TTL (etcd) or at once (embedded). NotFound if no such live session.
  virtual Status RevokeSession(SessionId id) = 0;
};

// Argument checks shared by the backends (InvalidArgument naming the problem).
Status ValidateName(std::string_view what, std::string_view name);
Status ValidatePrefix(std::string_view prefix);
Status ValidateValue(std::string_view value);
Status ValidateTtl(int64_t ttl_ms);
Status ValidateWatchOptions(const WatchOptions& options);

}  // namespace tessera::coord
