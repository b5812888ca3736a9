// Coordinator: the node that took a client's request (Cassandra §5.7; docs/replication.md,
// "The write path", "Reads"). It finds the tablet of each row in the table's snapshot, the
// tablet's primary in its configuration (ReplicaNode's copy of the lock service's), and runs
// the operation there — in-process when this node is the primary, else over the RpcChannel —
// and answers with the outcome. The same object serves the calls other coordinators forward
// here (Handle).
//
// At the primary an operation is checked (this node is the primary at the epoch the
// coordinator knew; enough replicas answer for the level; reads: the lease holds), run on
// the node's LocalTableAccess (whose writes go through the ReplicaNode), and answered once
// its writes are committed at the level (reads: once what they saw is committed at QUORUM).
//
// A tablet the cluster did not make (catalog::IsClusterTabletId false: a node's own table that
// joined the cluster) is not replicated: each node runs its operations on its own copy, as
// before the distributed store.
//
// Retries: an answer "not the primary", "stale epoch", "table not known here", or a refusal
// before anything ran, makes the coordinator wait (retry_delay_us, doubling up to
// max_retry_delay_us), read the configuration again and retry, at most max_attempts times
// within the operation's timeout; each try has attempt_timeout_us.
// A write whose request never left (the channel marks the failure NotSent: no connection to
// the primary could be made, as when its node died) is retried like a refusal, so the writes a
// dead primary's coordinators hold wait for the failover instead of failing as "may have been
// applied". A write whose answer was lost is never retried here, not even a Mutate (whose
// timestamps are fixed, so repeating it is harmless to its own cells): applied twice around another
// client's write of the same cell it would take effect twice, which no single order explains (the
// simulation's history check found exactly that). It is reported as it is: Unavailable or
// DeadlineExceeded saying the write may have been applied; the client decides (the Bigtable
// clients retry idempotent mutations, trading that order for availability).
//
// Thread-safety: every method may be called from any thread; callbacks run on the channel's or
// executor's threads (or inline, when the answer is known at once), without locks held.
// Lifetime: a retry waits on the executor, which outlives the coordinator (the server's
// replica threads outlive the store); Stop() answers those waiting ("the node is stopping"),
// waits for one running, and stops the locator's retries likewise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/catalog/table_catalog.h"
#include "tessera/model/row.h"
#include "tessera/model/row_filter.h"
#include "tessera/model/row_mutation.h"
#include "tessera/replication/consistency.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/replication/nearest_replica.h"
#include "tessera/replication/replica_node.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/replication/table_access.h"
#include "tessera/replication/tablet_locator.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"
#include "tessera/util/executor_scope.h"
#include "tessera/util/status.h"

namespace tessera::replication {

inline constexpr std::string_view kForwardMutateMethod = "Forward.Mutate";
inline constexpr std::string_view kForwardCheckAndMutateMethod = "Forward.CheckAndMutate";
inline constexpr std::string_view kForwardReadModifyWriteMethod = "Forward.ReadModifyWrite";
inline constexpr std::string_view kForwardReadMethod = "Forward.Read";
inline constexpr std::string_view kForwardPositionMethod = "Forward.Position";
inline constexpr std::string_view kForwardDropRowRangeMethod = "Forward.DropRowRange";

// Compiles an encoded google.bigtable.v2.RowFilter for `table` (the server's compiler, given
// from above so that this layer does not parse the wire API).
using FilterCompiler = std::function<StatusOr<model::RowFilter>(const catalog::TableInfo& table,
                                                               std::string_view encoded)>;
// The table of that full name as this node's catalog has it; NotFound if it has none.
using TableLookup = std::function<StatusOr<TableSnapshot>(const std::string& full_name)>;

struct CoordinatorOptions {
  // --- behaviour ---
  WriteLevel write_level = WriteLevel::kQuorum;
  ReadLevel read_level = ReadLevel::kPrimary;
  int64_t timeout_us = 10'000'000;
  // One try at the primary: a call not answered within this is lost (and, for Mutate, tried
  // again), so a dead primary costs a try, not the whole timeout.
  int64_t attempt_timeout_us = 1'000'000;
  int max_attempts = 20;
  // The wait before the next try: doubling from retry_delay_us up to max_retry_delay_us.
  int64_t retry_delay_us = 20'000;
  int64_t max_retry_delay_us = 500'000;
  std::string dc;  // this node's data centre (LOCAL_QUORUM), sent on with forwarded calls
  // Where the nodes stand, for reads at ONE (nearest_replica.h). Null: a read at ONE goes to
  // this node's replica, else the primary.
  LocateNode locate;
  // --- performance ---
  int64_t max_page_rows = 1000;
  int64_t max_page_bytes = 1 << 20;
};

// One page of rows of one tablet.
struct ReadPage {
  std::vector<model::Row> rows;
  bool done = false;  // the tablet's share is exhausted, or rows_limit was reached
  std::string last_scanned_key;
  int64_t rows_seen = 0;
  int64_t cells_seen = 0;
  // Where the replica that read it stood (ReplicaNode::Position before and after the read);
  // zeros for a table the cluster did not make.
  uint64_t joined_epoch = 0;
  uint64_t sequence_before = 0;
  uint64_t sequence_after = 0;
};

class Coordinator {
 public:
  // Every pointer must outlive the coordinator; `access` writes through `replicas`.
  Coordinator(ReplicaNode* replicas, LocalTableAccess* access, RpcChannel* channel,
              Executor* executor, Clock* clock, TableLookup lookup, FilterCompiler compile,
              CoordinatorOptions options = {});
  ~Coordinator();  // Stop()

  // Ends the retries: an operation waiting on the executor for its next try finishes at once
  // with Unavailable ("the node is stopping"), one that would wait from now on finishes with
  // its last failure, and a retry that is running is waited for. Operations still run, but
  // are never handed to the executor again. Idempotent and final. REQUIRES: not called from a
  // task of the executor.
  void Stop();

  // The writes take `blocking` (may be null: inline), which runs the operation when this node
  // is the tablet's primary, so that a caller on a thread that must not wait for the commit log
  // does not (the wait for the replicas holds no thread either way).
  void Mutate(TableSnapshot table, model::RowMutation mutation, const AccessOptions& options,
              std::function<void(Status)> done, Executor* blocking = nullptr);
  // Applies `mutations`, all of rows of tablet `tablet_index` of `table`, at the tablet's
  // primary as one batch (LocalTableAccess::MutateRows there: one engine write, one wait for
  // the level; one Forward.Mutate from here). `done` gets one status per mutation, as
  // TableAccess::MutateRows says. Retried only while refused before it ran, like Mutate.
  // REQUIRES: `mutations` non-empty.
  void MutateBatch(TableSnapshot table, size_t tablet_index,
                   std::vector<model::RowMutation> mutations, const AccessOptions& options,
                   std::function<void(std::vector<Status>)> done, Executor* blocking = nullptr);
  // `predicate`: null for "any cell"; a filter that is not pass-all must carry its source
  // (model::RowFilter::source) to be forwarded.
  void CheckAndMutate(TableSnapshot table, std::string row_key,
                      std::shared_ptr<model::RowFilter> predicate, model::RowMutation on_true,
                      model::RowMutation on_false, const AccessOptions& options,
                      std::function<void(StatusOr<bool>)> done, Executor* blocking = nullptr);
  void ReadModifyWrite(TableSnapshot table, std::string row_key,
                       std::vector<ReadModifyWriteRule> rules, int64_t now_micros,
                       size_t max_value_bytes, const AccessOptions& options,
                       std::function<void(StatusOr<model::Row>)> done,
                       Executor* blocking = nullptr);
  // One page of the rows of `ranges` inside tablet `tablet_index` of `table`, after `filter`
  // (null: all), at most `rows_limit` (0: no limit), reversed or not.
  void Read(TableSnapshot table, size_t tablet_index, std::vector<model::RowRange> ranges,
            std::shared_ptr<model::RowFilter> filter, int64_t rows_limit, bool reversed,
            const AccessOptions& options, std::function<void(StatusOr<ReadPage>)> done);

  // Deletes, at the primary of tablet `tablet_index` of `table`, every row of the tablet whose
  // key starts with `prefix` ("" = every row; cells GC may collect but has not count too),
  // each row a write at the options' level. Returns how many rows it deleted. A lost answer
  // is asked again: a second pass deletes only rows written since, as a drop racing with
  // them may.
  void DropRowRange(TableSnapshot table, size_t tablet_index, std::string prefix,
                    const AccessOptions& options, std::function<void(StatusOr<uint64_t>)> done);

  // Serves the Forward.* methods; false (and `respond` untouched) for any other.
  bool Handle(const std::string& from, const std::string& method, std::string& request,
              RpcChannel::Responder& respond);

  const CoordinatorOptions& options() const { return options_; }
  Clock* clock() const { return clock_; }
  // Where this node finds a table's tablets (METADATA, tablet_locator.h). The operations above
  // take a snapshot as the locator answers it.
  TabletLocator* locator() const { return locator_.get(); }

 private:
  // The operation, as it runs at a tablet's primary (or a replica, for a read at ONE or
  // QUORUM).
  struct Op;
  // A page read's parameters and result.
  struct PageState;

  // An operation on `tablet_id` of `table` with `options` filled in from the defaults.
  std::shared_ptr<Op> NewOp(TableSnapshot table, uint64_t tablet_id,
                            const AccessOptions& options, std::string_view method,
                            bool is_read);
  // Runs `op` at its target, retrying as the top of this file says.
  void Run(std::shared_ptr<Op> op);
  void RunOnce(std::shared_ptr<Op> op);
  void Finish(std::shared_ptr<Op> op, Status status, bool maybe_applied);
  // Runs `op` here, as the tablet's primary or replica.
  void RunHere(std::shared_ptr<Op> op,
               std::function<void(Status status, bool maybe_applied)> done);
  void ServeForward(const std::string& method, std::string request, RpcChannel::Responder respond);
  void ServePosition(const std::string& request, RpcChannel::Responder respond);
  // Reads one page of st's ranges on this node into st->page, with this replica's position.
  Status ReadPageHere(const TableSnapshot& table, uint64_t tablet_id, PageState* st);
  // One QUORUM page read of `op`'s tablet (quorum_read.h), the result into st->page.
  void RunQuorumRead(std::shared_ptr<Op> op, std::shared_ptr<PageState> st,
                     const catalog::TabletConfig& config,
                     std::function<void(Status status, bool maybe_applied)> done);
  // Tries `op` again after `delay_us`, as a task of retries_; false (nothing scheduled) once
  // stopped.
  bool RetryLater(const std::shared_ptr<Op>& op, int64_t delay_us);

  ReplicaNode* const replicas_;
  LocalTableAccess* const access_;
  RpcChannel* const channel_;
  Clock* const clock_;
  const TableLookup lookup_;
  const FilterCompiler compile_;
  const CoordinatorOptions options_;

  // The operations waiting on the executor for their next try, and the QUORUM reads' polls
  // (Stop closes it: their tasks call into this object).
  ExecutorScope retries_;
  const std::unique_ptr<TabletLocator> locator_;  // uses this coordinator: declared last
};

}  // namespace tessera::replication
