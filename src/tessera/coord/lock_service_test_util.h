// Test-only helpers for lock-service tests: an event recorder for watches and session state,
// a bounded wait, and an embedded service on a given file system for the tests of its users.
//
// Thread-safety: EventLog and StateLog are safe to use from callbacks on any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/lock_service.h"
#include "tessera/util/clock.h"

namespace tessera::coord::testing {

// An embedded lock service kept in `fs` under /coord, on the system clock. `fs` must outlive it.
inline StatusOr<std::unique_ptr<LockService>> OpenEmbeddedForTesting(FileSystem* fs) {
  EmbeddedLockServiceOptions options;
  options.fs = fs;
  options.clock = SystemClock();
  options.dir = "/coord";
  ASSIGN_OR_RETURN(std::unique_ptr<EmbeddedLockService> service,
                   EmbeddedLockService::Open(options));
  return std::unique_ptr<LockService>(std::move(service));
}

// Records the events of one or more watches.
class EventLog {
 public:
  WatchCallback Callback() {
    return [this](const WatchEvent& e) {
      absl::MutexLock l(&mu_);
      events_.push_back(e);
    };
  }
  std::vector<WatchEvent> events() const {
    absl::MutexLock l(&mu_);
    return events_;
  }
  size_t size() const {
    absl::MutexLock l(&mu_);
    return events_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<WatchEvent> events_;
};

// Records session state callbacks with the time they came.
class StateLog {
 public:
  std::function<void(SessionState)> Callback() {
    return [this](SessionState s) {
      absl::MutexLock l(&mu_);
      states_.push_back(s);
      when_ = std::chrono::steady_clock::now();
    };
  }
  std::vector<SessionState> states() const {
    absl::MutexLock l(&mu_);
    return states_;
  }
  std::chrono::steady_clock::time_point when() const {
    absl::MutexLock l(&mu_);
    return when_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<SessionState> states_;
  std::chrono::steady_clock::time_point when_;
};

// Calls `pump` then `pred` every few milliseconds until `pred` holds or `max_ms` of real time
// have passed; returns whether it held.
inline bool Eventually(const std::function<bool()>& pred, const std::function<void()>& pump,
                       int64_t max_ms) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
  while (true) {
    pump();
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Option builders (designated initializers that skip fields make GCC 12 warn).
inline PutOptions Ephemeral() {
  PutOptions o;
  o.ephemeral = true;
  return o;
}
inline PutOptions IfVersion(int64_t version) {
  PutOptions o;
  o.expected_version = version;
  return o;
}
inline WatchOptions WatchName(std::string name, int64_t start_revision = 0) {
  WatchOptions o;
  o.key = std::move(name);
  o.start_revision = start_revision;
  return o;
}
inline WatchOptions WatchPrefix(std::string prefix, int64_t start_revision = 0) {
  WatchOptions o = WatchName(std::move(prefix), start_revision);
  o.prefix = true;
  return o;
}
inline WatchOptions WatchLocks(std::string key, bool prefix) {
  WatchOptions o = WatchName(std::move(key));
  o.target = WatchTarget::kLocks;
  o.prefix = prefix;
  return o;
}

// "held", "not held" or the error: for EXPECT_EQ on TryAcquire's result.
inline std::string Held(const StatusOr<bool>& r) {
  if (!r.ok()) return r.status().ToString();
  return *r ? "held" : "not held";
}

inline std::string Describe(const std::vector<WatchEvent>& events) {
  std::string out;
  for (const WatchEvent& e : events) {
    out += StrCat(WatchEventTypeName(e.type), " '", e.name, "'='", e.value, "' v", e.version,
                  " r", e.revision, " owner ", e.owner.value, "\n");
  }
  return out;
}

}  // namespace tessera::coord::testing
