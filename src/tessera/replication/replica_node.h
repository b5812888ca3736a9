// ReplicaNode: this node's replicas of the cluster's tablets, in the protocol of
// docs/replication.md ("The protocol in detail"). For every tablet whose configuration names
// this node, it is either
//   * the primary (configuration's primary, at the configuration's epoch): it numbers each
//     write (Write, the TabletWriter of the primary's LocalTableAccess), applies it to its
//     engine, retains it and streams it to the other replicas, in sequence order; it counts
//     their acknowledgements (AwaitCommit) and read leases (CheckReadLease); or
//   * a replica: it applies what the primary of an epoch it has not disowned sends, in order
//     and without gaps (Engine::ApplyReplicated), grants read leases, and seals a new epoch
//     for the master (durably refusing the older one, then waiting out its leases).
// The primary retains mutations in memory for peers that have not acknowledged them; what
// leaves the memory while a member still needs it goes to the node's hint log (HintStore), and
// a peer behind the memory is sent it from there on the tick, throttled per node. Replicas keep
// what arrives the same way, above what every member has as the primary says in each batch,
// so a replica that becomes the primary can still bring a member that was away up to date.
// A replica that diverged (the lineage check below) or needs mutations the primary no longer
// retains, in memory or in the hint log, is rebuilt: the primary copies its tablet at a sequence S
// (Engine::BeginTabletCopy) chunk by chunk, the replica replaces its tablet's content with the copy
// at exactly S (Engine::BeginTabletRebuild), and the stream goes on from S + 1.
//
// The durable promise (per tablet, Engine::RaiseReplicaEpoch): promised << 32 | joined, see
// the design. A replica refuses every message of an epoch below `promised`, and joins an
// epoch only if its configuration's lineage allows what it holds (TabletConfig::LineageAllows);
// else it answers DIVERGED and the primary stops sending to it (it needs a rebuild).
//
// Time and threads: no thread of its own. One tick task on the executor (every tick_us) sends
// heartbeats and retries, expires waiters, and answers seals whose wait is over. RPC
// callbacks arrive on the channel's threads. Engine calls are made without the node's mutex
// (they may wait for an fdatasync); role changes of a tablet exclude its writes (a per-tablet
// gate), so a write numbered while this node was primary can never interleave with mutations
// applied as a replica.
//
// Thread-safety: every method may be called from any thread. Callbacks (AwaitCommit's `done`,
// RPC responders) run without the node's locks. Lifetime: destroy (or shut down) the channel
// before the ReplicaNode, so no RPC callback reaches a destroyed node.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/consistency.h"
#include "tessera/replication/hint_log.h"
#include "tessera/replication/hint_store.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/replication/tablet_repair.h"
#include "tessera/replication/tablet_writer.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/rate_limiter.h"
#include "tessera/util/status.h"

namespace tessera::v1 {
class TabletAck;
class TabletBatch;
}  // namespace tessera::v1

namespace tessera::replication {

// Method names on the RpcChannel.
inline constexpr std::string_view kReplicateMethod = "Replicate";
inline constexpr std::string_view kSealMethod = "Seal";
inline constexpr std::string_view kRebuildMethod = "Rebuild";
inline constexpr std::string_view kDigestMethod = "Digest";

struct ReplicaNodeOptions {
  // --- behaviour ---
  // L: a read lease granted by one acknowledgement, on the granting replica's clock.
  int64_t lease_us = 2'000'000;
  // rho: the largest difference of clock rates between two nodes. The primary uses
  // L * (1 - rho) - lease_margin_us of each lease, counted from the sending of the call that
  // earned it.
  double max_clock_drift = 0.1;
  int64_t lease_margin_us = 50'000;
  // A call to a peer that has not answered within this is lost.
  int64_t call_timeout_us = 1'000'000;
  // An idle tablet's primary renews its leases this often (L / 4).
  int64_t heartbeat_us = 500'000;
  // The tick: heartbeats, retries, deadlines and seal answers are looked at this often.
  int64_t tick_us = 50'000;
  // The data centre of a node (for LOCAL_QUORUM: the replicas counted are those whose dc is
  // the coordinator's); null: every node in one. Called with the node's mutex held, so it
  // must be cheap and must not call back into the node (server/node_locations.h).
  std::function<std::string(const std::string& endpoint)> dc_of;
  // Hints (with a hint log; docs/replication.md, "A replica that was away"). A mutation a
  // member has not acknowledged goes to the hint log when it leaves the in-memory retention;
  // a hint written (the mutation's write, wall time) longer than this ago is dropped, and a
  // peer that needs it is rebuilt (Cassandra's max_hint_window).
  int64_t hint_window_us = 3 * 3600 * int64_t{1'000'000};
  // Every tablet's hints on disk together; beyond this the oldest go (their peers are rebuilt).
  uint64_t max_hints_bytes = 1ull << 30;

  // --- performance ---
  size_t max_batch_bytes = 1 << 20;
  // Mutations kept in memory per tablet for peers that have not acknowledged them.
  size_t retained_bytes_per_tablet = 64ull << 20;
  // Hints are sent from the hint log at most this fast, per node: every tablet and peer share
  // it (the live stream, from memory, is not throttled). 0: unthrottled.
  uint64_t hint_delivery_bytes_per_s = 1 << 20;
  // Rebuild copies (streams) leave this node at most this fast, every copy together
  // (Cassandra's stream_throughput_outbound; `tessera admin setstreamthroughput` changes it at
  // run time). 0: unthrottled.
  uint64_t stream_bytes_per_s = 24ull << 20;
};

// This node's streams (rebuild copies), for operators: the copies it sends as a primary and
// receives as a replica, now and since it started.
struct StreamStats {
  size_t sending = 0;          // copies under way from this node
  size_t receiving = 0;        // copies under way into this node
  uint64_t sending_bytes = 0;  // bytes the copies under way have sent so far
  uint64_t sent_bytes_total = 0;
  uint64_t received_bytes_total = 0;
  uint64_t copies_done_total = 0;  // copies this node sent whole
};

// One tablet as this node holds it, for operators (`tessera admin tablets`).
struct TabletReplicaState {
  struct Peer {
    std::string endpoint;
    uint64_t acknowledged = 0;  // durable on the peer, as last heard
    bool answering = true;      // its last call succeeded
    bool leased = false;        // its lease is held now
    bool needs_rebuild = false;
    bool copying = false;  // a rebuild of it is under way
  };
  uint64_t tablet_id = 0;
  uint64_t config_epoch = 0;  // 0: no configuration known
  uint64_t promised_epoch = 0;
  uint64_t joined_epoch = 0;
  bool primary = false;
  uint64_t last_sequence = 0;
  std::vector<Peer> peers;    // primary only
  size_t retained_bytes = 0;  // in memory, for peers that have not acknowledged it
  // Beyond the memory: hints in the hint log (on disk, or waiting to be written).
  uint64_t hint_bytes = 0;
  uint64_t hint_records = 0;
};

// What one node's copy of a tablet holds: the epoch whose stream it last joined (the lineage
// its content belongs to) and its last sequence.
struct ReplicaPosition {
  uint64_t joined_epoch = 0;
  uint64_t last_sequence = 0;
};

class ReplicaNode final : public TabletWriter {
 public:
  // Every pointer must outlive the node. `channel->self()` is this node's endpoint.
  // `hint_log` (may be null: no hints, a peer that needs what memory dropped is rebuilt) is
  // this node's, opened before (its hints of a previous run are delivered again).
  ReplicaNode(tablet::Engine* engine, RpcChannel* channel, Executor* executor, Clock* clock,
              ReplicaNodeOptions options = ReplicaNodeOptions(), HintLog* hint_log = nullptr);
  ~ReplicaNode() override;  // Stop()

  ReplicaNode(const ReplicaNode&) = delete;
  ReplicaNode& operator=(const ReplicaNode&) = delete;

  // Starts the tick. A node grants no lease it cannot remember: it seals nothing for lease_us
  // after Start (its previous incarnation's grants may still run).
  void Start();
  // Stops the tick, fails every waiting request (Unavailable) and unanswered seal. Idempotent.
  void Stop();

  // A mutation this node's engine replayed from its commit log at open (EngineOptions::
  // on_replayed), given before Start in log order: retained, so that after a restart the node
  // can still pass on what its peers had not acknowledged. InvalidArgument if it does not
  // decode.
  Status Restore(uint64_t tablet_id, uint64_t first_sequence, std::string mutation);

  // A configuration read from the lock service (older epochs than the one known are ignored).
  // Makes this node the tablet's primary, or stops it being one.
  void UpdateConfig(const catalog::TabletConfig& config);
  void RemoveConfig(uint64_t tablet_id);
  std::optional<catalog::TabletConfig> GetConfig(uint64_t tablet_id) const;

  // --- the primary's side ---
  // TabletWriter: numbers, applies and queues one row's mutations. FailedPrecondition unless
  // this node is the tablet's primary.
  Status Write(tablet::TabletId id, const model::RowMutation& mutation) override;
  // TabletWriter: the same for a batch, in one engine write; each mutation is retained and
  // sent with its own numbers.
  Status WriteBatch(tablet::TabletId id, std::span<const model::RowMutation> batch) override;
  // OK when this node is the primary of `tablet_id` at `epoch` or a newer one (0: any).
  // Otherwise FailedPrecondition "not the primary" / "stale epoch", naming the epoch known
  // here.
  Status CheckPrimary(uint64_t tablet_id, uint64_t epoch) const;
  // OK when a write at `level` can be acknowledged: enough replicas answer. Unavailable naming
  // the tablet, how many answer and how many the level needs.
  Status CheckWritable(uint64_t tablet_id, WriteLevel level,
                       const std::string& coordinator_dc) const;
  // OK while the primary holds read leases from a majority; Unavailable otherwise.
  Status CheckReadLease(uint64_t tablet_id) const;
  // Runs `done` once every mutation the tablet holds now is durable on as many replicas as
  // `level` asks for: OK; Unavailable if this node stops being the primary first;
  // DeadlineExceeded after `timeout_us` (the mutations may still be applied everywhere).
  void AwaitCommit(uint64_t tablet_id, WriteLevel level, const std::string& coordinator_dc,
                   int64_t timeout_us, std::function<void(Status)> done);

  // --- repair (docs/repair.md; replica_repair.cc) ---
  // As the primary of `tablet_id`: compares every other replica's copy of the tablet with this
  // node's at one sequence (the replicas hash theirs as they reach it, writes go on) and marks
  // each one that differs for a rebuild, which then streams it a copy. `done` gets the report
  // (each replica's outcome) once every replica answered or `timeout_us` ran out, or
  // FailedPrecondition when this node is not the primary, or the engine's error.
  void RepairTablet(uint64_t tablet_id, int64_t timeout_us,
                    std::function<void(StatusOr<TabletRepairReport>)> done);
  RepairStats Repairs() const;

  // --- incoming calls ---
  // Serves kReplicateMethod, kSealMethod, kRebuildMethod and kDigestMethod; false (and
  // `respond` untouched) for any other.
  bool Handle(const std::string& from, const std::string& method, std::string& request,
              RpcChannel::Responder& respond);

  // This node's copy of `tablet_id`: NotFound if it holds none.
  StatusOr<ReplicaPosition> Position(uint64_t tablet_id);

  std::vector<TabletReplicaState> States() const;
  StreamStats Streams() const;
  // The rebuild stream throughput (ReplicaNodeOptions::stream_bytes_per_s), changed at run
  // time: a chunk held back now goes at the next tick, the chunks after it at the new rate.
  // <= 0: unthrottled.
  void SetStreamBytesPerSecond(int64_t bytes_per_second);
  int64_t stream_bytes_per_second() const { return stream_limiter_.bytes_per_second(); }
  const std::string& self() const { return channel_->self(); }

 private:
  struct Peer;
  struct Retained;
  struct Waiter;
  struct PendingSeal;
  struct PendingDigest;
  struct RepairRun;
  struct HashJob;
  struct LifeGuard;
  struct Tablet;
  using Effects = std::vector<std::function<void()>>;

  Tablet* Find(uint64_t id) const;
  Tablet* FindOrAdd(uint64_t id);
  // The tablet's durable promise, read from the engine once. NotFound if it holds no tablet.
  StatusOr<uint64_t> LoadPromise(Tablet* t);
  Status RaisePromise(Tablet* t, uint64_t promise) ABSL_LOCKS_EXCLUDED(mu_);

  // Role changes. REQUIRES: t->gate held exclusively.
  void BecomePrimary(Tablet* t, const catalog::TabletConfig& config, Effects* fx);
  void StepDownLocked(Tablet* t, std::string_view why, Effects* fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Status CheckPrimaryLocked(const Tablet& t, uint64_t epoch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t AcksLocked(const Tablet& t, uint64_t sequence, WriteLevel level, const std::string& dc,
                    size_t* required) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RetainLocked(Tablet* t, uint64_t first, uint64_t last, std::string mutation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops from memory what every member has (MembersHaveLocked); nothing when that is unknown.
  void TrimLocked(Tablet* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // As the primary: every member that is not being rebuilt holds (or will hold, from its copy)
  // the tablet's mutations through this sequence.
  uint64_t EveryoneHasLocked(const Tablet& t) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same as this node knows it: EveryoneHasLocked as the primary; as a replica what the
  // primary last said, or nullopt before it said anything (a primary of an earlier version).
  // What is above it and leaves the memory goes to the hint log, so that a replica that becomes
  // the primary still has what a member that was away lacks.
  std::optional<uint64_t> MembersHaveLocked(const Tablet& t) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tick's hint work, without mu_: drops what every member has, writes what was spilled,
  // applies the window and the size, then sends peers what they wait for from the hint log,
  // within the delivery budget.
  struct HintDelivery;
  void RunHints() ABSL_LOCKS_EXCLUDED(mu_);
  void DeliverHints(const HintDelivery& d) ABSL_LOCKS_EXCLUDED(mu_);
  void PumpLocked(Tablet* t, Effects* fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompleteWaitersLocked(Tablet* t, Effects* fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnReplicateDone(uint64_t tablet_id, std::string peer, uint64_t epoch, uint64_t sent_to,
                       int64_t sent_at_us, StatusOr<std::string> response);

  void HandleReplicate(const std::string& from, const std::string& request,
                       RpcChannel::Responder respond);
  void HandleSeal(const std::string& request, RpcChannel::Responder respond);
  void HandleRebuild(const std::string& request, RpcChannel::Responder respond);
  // The primary's side of a rebuild of `peer`: takes the copy, then sends its chunks one at a
  // time; a failure drops the copy and the next pump starts another.
  void StartCopy(uint64_t tablet_id, const std::string& peer);
  // Reads the next chunk and sends it, or, when the stream throughput says wait, holds it in
  // the peer for the tick to send when its time comes.
  void SendNextChunk(uint64_t tablet_id, const std::string& peer);
  void SendChunk(uint64_t tablet_id, const std::string& peer, uint64_t copy_id, bool last,
                 size_t chunk_bytes, std::string request) ABSL_LOCKS_EXCLUDED(mu_);
  void OnRebuildDone(uint64_t tablet_id, const std::string& peer, uint64_t copy_id, bool last,
                     StatusOr<std::string> response);
  // One tablet's share of a Replicate call, answered in `ack`.
  void ApplyFromPrimary(const v1::TabletBatch& b, v1::TabletAck* ack);
  // Applies `mutations` (numbered from `first`) to the replica `t`, splitting them where a
  // pending digest's sequence falls to hash the copy there. REQUIRES: t->gate held shared.
  StatusOr<uint64_t> ApplyReplicatedAt(Tablet* t, uint64_t first,
                                       std::span<const model::RowMutation> mutations);

  // Repair (replica_repair.cc).
  void HandleDigest(const std::string& request, RpcChannel::Responder respond);
  // Snapshots the copy of `t` now and, if it is at pending.sequence, hashes it on the executor
  // and answers pending.respond; MOVED_PAST otherwise. REQUIRES: t->gate held (shared or not).
  void DigestNow(Tablet* t, PendingDigest pending);
  // Hashes `rows` on the executor, then `done`; Unavailable if the node stops first.
  void HashLater(std::unique_ptr<tablet::RowIterator> rows,
                 std::function<void(StatusOr<TabletDigest>)> done);
  // The tick: a pending digest whose time is over is answered BEHIND.
  void ExpireDigestLocked(Tablet* t, int64_t now, Effects* fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartRepairAttempt(std::shared_ptr<RepairRun> run);
  void FinishRepairAttempt(std::shared_ptr<RepairRun> run);

  void ScheduleTick() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Tick();

  tablet::Engine* const engine_;
  RpcChannel* const channel_;
  Executor* const executor_;
  Clock* const clock_;
  const ReplicaNodeOptions options_;
  // Null without a hint log. Lock order: mu_, then the store's own mutex (Spill, Holds, Stats
  // and TakeBudget under mu_); its file I/O only from the tick and rebuilds, without mu_.
  const std::unique_ptr<HintStore> hints_;
  RateLimiter stream_limiter_;  // thread-safe of its own

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::unique_ptr<Tablet>> tablets_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingSeal> seals_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool ticking_ ABSL_GUARDED_BY(mu_) = false;  // a tick task is running
  TimerId tick_timer_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_copy_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t started_at_us_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stream_sent_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stream_received_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t copies_done_ ABSL_GUARDED_BY(mu_) = 0;
  // Digests waiting for the executor (HashLater), dropped by Stop; the guard keeps a task that
  // runs after Stop from touching the node.
  const std::shared_ptr<LifeGuard> life_;
  std::map<uint64_t, HashJob> hash_jobs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_hash_job_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<uint64_t> repairs_in_progress_{0};
  std::atomic<uint64_t> repair_hashed_bytes_{0};
};

}  // namespace tessera::replication
