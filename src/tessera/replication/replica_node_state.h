// The state ReplicaNode keeps per tablet and per peer, shared by the files that implement it
// (replica_node.cc: roles, writes, replication, rebuilds; replica_repair.cc: repair). Included
// only by those files. Every field is guarded as ReplicaNode's comments say: the gate of a
// Tablet by itself, the rest by the node's mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/replica_node.h"

namespace tessera::replication::replica_internal {

inline uint64_t PromisedOf(uint64_t promise) { return promise >> 32; }
inline uint64_t JoinedOf(uint64_t promise) { return promise & 0xffffffffu; }
inline uint64_t MakePromise(uint64_t promised, uint64_t joined) { return promised << 32 | joined; }

inline void RunAll(std::vector<std::function<void()>>* fx) {
  for (auto& f : *fx) f();
  fx->clear();
}

}  // namespace tessera::replication::replica_internal

namespace tessera::replication {

using catalog::TabletConfig;

struct ReplicaNode::HashJob {
  std::unique_ptr<tablet::RowIterator> rows;
  std::function<void(StatusOr<TabletDigest>)> done;
};

// Lets a task the executor runs late find out whether the node still lives, and makes Stop
// wait for a task that is running.
struct ReplicaNode::LifeGuard {
  // False once closed: the task must not touch the node.
  bool Enter() {
    absl::MutexLock l(&mu);
    if (closed) return false;
    ++running;
    return true;
  }
  void Leave() {
    absl::MutexLock l(&mu);
    --running;
  }
  void Reopen() {
    absl::MutexLock l(&mu);
    closed = false;
  }
  // Refuses later Enters, then waits for those that entered to leave.
  void Close() {
    absl::MutexLock l(&mu);
    closed = true;
    mu.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &running));
  }

  absl::Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;
  int running ABSL_GUARDED_BY(mu) = 0;
};

struct ReplicaNode::PendingDigest {
  uint64_t sequence = 0;
  int64_t gc_as_of_micros = 0;
  int64_t deadline_us = 0;  // monotonic: answered BEHIND after it
  RpcChannel::Responder respond;
};

struct ReplicaNode::Peer {
  std::string endpoint;
  bool known = false;  // `acked` was heard from the peer
  uint64_t acked = 0;  // durable on the peer
  uint64_t sent = 0;   // sent up to (acknowledged or in flight)
  bool in_flight = false;
  int64_t last_send_us = std::numeric_limits<int64_t>::min() / 2;
  int64_t lease_until_us = 0;  // on this node's clock
  bool answering = true;       // its last call succeeded (or none failed yet)
  bool stale = false;          // it refused our epoch
  bool rebuild = false;        // it diverged or needs what we no longer retain
  // A rebuild under way: the copy, its id, and the sequence trimming must keep above.
  bool copying = false;
  // > 0: it needs this sequence, which only the hint log holds; the tick sends it (throttled).
  uint64_t hints_from = 0;
  uint64_t copy_id = 0;
  uint64_t copy_sequence = 0;
  uint64_t chunks_sent = 0;
  uint64_t copy_bytes = 0;  // chunk bytes this copy has sent
  std::shared_ptr<tablet::TabletCopySource> source;
  // A chunk the stream throughput holds back: the tick sends it at `until_us`, if its copy is
  // still the one under way.
  struct HeldChunk {
    uint64_t copy_id = 0;
    size_t chunk_bytes = 0;
    bool last = false;
    int64_t until_us = 0;
    std::string request;
  };
  std::optional<HeldChunk> held;
};

struct ReplicaNode::Retained {
  uint64_t last = 0;
  std::string mutation;
  int64_t written_at_us = 0;  // wall time it was retained: the hint window counts from it
};

struct ReplicaNode::HintDelivery {
  uint64_t tablet_id = 0;
  std::string peer;
  uint64_t epoch = 0;
  uint64_t epoch_start_sequence = 0;
  uint64_t from = 0;
  uint64_t budget = 0;  // bytes taken from the delivery budget
};

struct ReplicaNode::Waiter {
  uint64_t sequence = 0;
  WriteLevel level = WriteLevel::kQuorum;
  std::string dc;
  int64_t deadline_us = 0;
  std::function<void(Status)> done;
};

struct ReplicaNode::PendingSeal {
  uint64_t tablet_id = 0;
  int64_t wait_until_us = 0;
  RpcChannel::Responder respond;
};

struct ReplicaNode::Tablet {
  explicit Tablet(uint64_t i) : id(i) {}
  const uint64_t id;
  // Shared by writes (as primary) and applies (as replica), exclusive for role changes.
  absl::Mutex gate;
  // The rest under the node's mu_.
  std::optional<TabletConfig> config;
  bool promise_loaded = false;
  // Named primary while the engine did not hold the tablet yet (its configuration came before
  // the catalog created it here): each Tick tries again until it can act.
  bool lead_pending = false;
  uint64_t promise = 0;
  int64_t granted_until_us = 0;  // leases granted end here (our clock)
  bool primary = false;
  uint64_t epoch = 0;  // the epoch this node is primary of
  std::vector<Peer> peers;
  std::map<uint64_t, Retained> retained;  // first sequence -> mutation
  size_t retained_bytes = 0;
  uint64_t floor = 0;  // sequences <= floor are not retained
  // As a replica: through which sequence every member holds the tablet, as its primary last
  // said (TabletBatch.everyone_has); unknown until one says.
  std::optional<uint64_t> members_have;
  uint64_t last = 0;  // the engine's last sequence, as last seen
  std::vector<Waiter> waiters;
  // Replica side of a rebuild under way: the copy being received and its id.
  std::unique_ptr<tablet::TabletCopySink> sink;
  uint64_t sink_copy_id = 0;
  // Replica side of a repair (replica_repair.cc): a digest asked for at a sequence this copy
  // has not reached yet; the apply that reaches it hashes the copy there.
  std::optional<PendingDigest> digest;
};

}  // namespace tessera::replication
