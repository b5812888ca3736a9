// ClusterTableAccess: TableAccess (table_access.h) over the node's Coordinator, for the gRPC
// services (docs/replication.md). Each synchronous call runs the coordinator's asynchronous
// operation and waits for its answer, so it must be called from a thread that may block (a
// request thread), never from a task of the executor the coordinator's callbacks run on.
// The asynchronous forms (MutateAsync, MutateRowsAsync, CheckAndMutateAsync,
// ReadModifyWriteAsync) and the read streams given a waker (RowStream::SetWaker) wait on no
// thread: they go on from the thread the answer arrives on, so gRPC's callback threads may
// call them.
//
// Reads: the stream visits the tablets the row set touches in row order (reverse order for a
// reversed read), one page at a time from each tablet's primary (or a replica at ONE), asking
// for what is left of rows_limit and resuming after the last row key it returned (before it,
// reversed), so limits, order and resumption are those of one node. Each page is a consistent
// snapshot of its rows; a scan is not one snapshot as a whole (Bigtable promises rows, not
// scans). Filters must carry their source (model::RowFilter::source) to be sent on.
//
// MutateRows groups the entries by tablet and sends each tablet's as one batch to its primary
// (Coordinator::MutateBatch), all tablets at once, and answers once every tablet has.
//
// Every call first finds the table's tablets through the coordinator's TabletLocator (METADATA,
// cached; tablet_locator.h) and routes by those. SampleRowKeys answers with those tablet
// boundaries and this node's size estimates.
//
// Thread-safety: as TableAccess.
#pragma once

#include <functional>

#include "tessera/replication/coordinator.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/replication/table_access.h"

namespace tessera::replication {

class ClusterTableAccess final : public TableAccess {
 public:
  // `coordinator()` returns the node's coordinator, or null while it has none (the calls then
  // fail with Unavailable). `local` answers SampleRowKeys.
  ClusterTableAccess(std::function<Coordinator*()> coordinator, LocalTableAccess* local);

  Status Mutate(const catalog::TableInfo& table, const model::RowMutation& mutation,
                const AccessOptions& options) override;
  // The asynchronous forms wait for no answer on the calling thread: forwarded, an operation
  // is answered on the channel's thread; at this node, it runs on `blocking`. The synchronous
  // forms are these, waited for.
  void MutateAsync(TableSnapshot table, model::RowMutation mutation,
                   const AccessOptions& options, Executor* blocking,
                   std::function<void(Status)> done) override;
  std::vector<Status> MutateRows(const catalog::TableInfo& table,
                                 std::span<const model::RowMutation> mutations,
                                 const AccessOptions& options) override;
  void MutateRowsAsync(TableSnapshot table, std::vector<model::RowMutation> mutations,
                       const AccessOptions& options, Executor* blocking,
                       std::function<void(std::vector<Status>)> done) override;
  void CheckAndMutateAsync(TableSnapshot table, std::string row_key,
                           std::shared_ptr<model::RowFilter> predicate, model::RowMutation on_true,
                           model::RowMutation on_false, const AccessOptions& options,
                           Executor* blocking, std::function<void(StatusOr<bool>)> done) override;
  void ReadModifyWriteAsync(TableSnapshot table, std::string row_key,
                            std::vector<ReadModifyWriteRule> rules, int64_t now_micros,
                            size_t max_value_bytes, const AccessOptions& options,
                            Executor* blocking,
                            std::function<void(StatusOr<model::Row>)> done) override;
  StatusOr<bool> CheckAndMutate(const catalog::TableInfo& table, std::string_view row_key,
                                model::RowFilter* predicate, const model::RowMutation& on_true,
                                const model::RowMutation& on_false,
                                const AccessOptions& options) override;
  StatusOr<model::Row> ReadModifyWrite(const catalog::TableInfo& table, std::string_view row_key,
                                       const std::vector<ReadModifyWriteRule>& rules,
                                       int64_t now_micros, size_t max_value_bytes,
                                       const AccessOptions& options) override;
  StatusOr<std::unique_ptr<RowStream>> Read(TableSnapshot table, ReadRequest request,
                                            const AccessOptions& options) override;
  StatusOr<std::vector<RowKeySample>> SampleRowKeys(const catalog::TableInfo& table,
                                                    uint64_t every_bytes) override;
  StatusOr<uint64_t> DropRowRange(const catalog::TableInfo& table,
                                  std::string_view prefix,
                                  const AccessOptions& options) override;

 private:
  StatusOr<Coordinator*> Get() const;

  const std::function<Coordinator*()> coordinator_;
  LocalTableAccess* const local_;
};

}  // namespace tessera::replication
