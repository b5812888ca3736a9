// TableAccess: the one interface the data and admin services call for every operation on a
// table's rows (docs/replication.md, "The seam: TableAccess"). LocalTableAccess implements it
// over this node's engine; the coordinator of issue 11 will implement it over replicas.
//
// Everything here is a model type or a Status: the services parse and validate the wire
// requests, resolve the table, compile filters and build mutations before calling in, and
// convert what comes back. Rows cross in presented form (qualifiers as clients name them, in
// the order they are returned: model/family_kind.h).
//
// Errors carry the codes a Bigtable client expects: NotFound for a table deleted under the
// call, Unavailable for a server shutting down or I/O trouble, InvalidArgument for a mutation
// storage refuses, FailedPrecondition for an increment of a value that is not 64 bits,
// ResourceExhausted, DataLoss.
//
// Thread-safety: implementations are safe to call from many threads at once. A RowStream is
// not: one reader at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/catalog/table_catalog.h"
#include "tessera/model/row.h"
#include "tessera/model/row_filter.h"
#include "tessera/model/row_mutation.h"
#include "tessera/replication/consistency.h"
#include "tessera/util/executor.h"
#include "tessera/util/status.h"

namespace tessera::replication {

// A snapshot of the table an operation works on (server/table_catalog.h). Operations on a
// table deleted since the snapshot fail with NotFound.
using TableSnapshot = std::shared_ptr<const catalog::TableInfo>;

// How one operation is run, as the client asked (its app profile, its deadline); unset fields
// take the node's defaults. A node serving its own copy of a table (LocalTableAccess, or a
// table the cluster did not make) has one replica and ignores the levels.
struct AccessOptions {
  std::optional<WriteLevel> write_level;
  std::optional<ReadLevel> read_level;
  // The time the client gives the whole operation (a scan: all its pages), from the call;
  // 0: the node's default per operation, and no limit for a scan as a whole.
  int64_t timeout_us = 0;
};

struct ReadRequest {
  model::RowSet rows;
  // Applied to each row in presented form; its pushdown (model/filter_pushdown.h) says what
  // storage must read.
  model::RowFilter filter = model::RowFilter::PassAll();
  // At most this many rows are returned (0 = no limit).
  int64_t rows_limit = 0;
  // Rows in decreasing key order, the ranges of `rows` from the last.
  bool reversed = false;
};

// How far a read got; for request stats and for telling a client where a scan stands.
struct ReadProgress {
  int64_t rows_seen = 0;  // stored rows read, before the filter
  int64_t cells_seen = 0;
  int64_t rows_returned = 0;  // rows with cells left after the filter
  int64_t cells_returned = 0;
  std::string last_scanned_key;  // key of the last stored row read; "" before any
};

enum class ReadStep {
  kRow,    // the step produced a row
  kNoRow,  // the step did some work (opened a scan, read a row the filter emptied) but no row
  kEnd,    // the read is complete: the row set is exhausted or rows_limit rows were returned
  kWait,   // only with a waker (RowStream::SetWaker): the step waits for another node; the
           // stream calls the waker when the next Step can go on
};

// The rows of one Read, in scan order, produced in bounded steps: each step reads at most one
// stored row, or opens one scan or point read, so a caller can yield between steps.
class RowStream {
 public:
  virtual ~RowStream() = default;
  // One step. On kRow, *row holds the row (replaced, not appended to). After kEnd or an error,
  // Step must not be called again.
  virtual StatusOr<ReadStep> Step(model::Row* row) = 0;
  // True once Step has nothing more to return: after kEnd, and right after the kRow of the
  // row that reached rows_limit.
  virtual bool done() const = 0;
  virtual const ReadProgress& progress() const = 0;
  // Makes Step wait for no other node on the calling thread: with a waker set, a step that
  // needs another node's answer asks for it and returns kWait (unless the answer came before
  // Step returned: then it goes on), and the stream calls `wake` once, from the thread the
  // answer arrives on, after which the next Step uses it. Step must not be called between a
  // kWait and its wake. `wake` may go on to destroy the stream: the stream touches nothing
  // after calling it. Returns false for a stream that never waits on another node (it ignores
  // the waker). Call before the first Step.
  virtual bool SetWaker(std::function<void()> /*wake*/) { return false; }
};

// One rule of a read-modify-write, validated by the caller.
struct ReadModifyWriteRule {
  std::string family;
  std::string qualifier;         // presented: what the result and messages name
  std::string stored_qualifier;  // its stored form (model::FamilyKind::ToStored)
  enum class Kind { kAppend, kIncrement } kind = Kind::kAppend;
  std::string append_value;      // kAppend
  int64_t increment_amount = 0;  // kIncrement: 64-bit big-endian two's complement, wraps
};

// A split point of SampleRowKeys: `offset_bytes` of the table's data lie before `row_key`.
struct RowKeySample {
  std::string row_key;  // "" for the last sample: the end of the table
  int64_t offset_bytes = 0;
};

// The indexes of `mutations` by the index of their tablet in `table.tablets`, each tablet's in
// request order: how a MutateRows is cut into one batch per tablet.
inline std::map<size_t, std::vector<size_t>> EntriesByTablet(
    const catalog::TableInfo& table, std::span<const model::RowMutation> mutations) {
  std::map<size_t, std::vector<size_t>> by_tablet;
  for (size_t i = 0; i < mutations.size(); ++i) {
    by_tablet[table.TabletIndexFor(mutations[i].row())].push_back(i);
  }
  return by_tablet;
}

class TableAccess {
 public:
  virtual ~TableAccess() = default;

  // Applies one row's mutations atomically.
  virtual Status Mutate(const catalog::TableInfo& table, const model::RowMutation& mutation,
                        const AccessOptions& options) = 0;

  // Mutate for a caller whose thread must not wait (one of gRPC's callback threads): `done`
  // gets Mutate's outcome, inline or later from another thread. Work that waits on this
  // node's storage (the commit log's fdatasync) runs as a task of `blocking` (null: inline);
  // waits for other nodes hold no thread. The default runs Mutate on `blocking`.
  virtual void MutateAsync(TableSnapshot table, model::RowMutation mutation,
                           const AccessOptions& options, Executor* blocking,
                           std::function<void(Status)> done) {
    RunOn(blocking, [this, table = std::move(table), mutation = std::move(mutation), options,
                     done = std::move(done)] { done(Mutate(*table, mutation, options)); });
  }
  // The same for MutateRows, CheckAndMutate and ReadModifyWrite (`predicate` stays alive
  // until `done` has run).
  virtual void MutateRowsAsync(TableSnapshot table, std::vector<model::RowMutation> mutations,
                               const AccessOptions& options, Executor* blocking,
                               std::function<void(std::vector<Status>)> done) {
    RunOn(blocking, [this, table = std::move(table), mutations = std::move(mutations), options,
                     done = std::move(done)] { done(MutateRows(*table, mutations, options)); });
  }
  virtual void CheckAndMutateAsync(TableSnapshot table, std::string row_key,
                                   std::shared_ptr<model::RowFilter> predicate,
                                   model::RowMutation on_true, model::RowMutation on_false,
                                   const AccessOptions& options, Executor* blocking,
                                   std::function<void(StatusOr<bool>)> done) {
    RunOn(blocking, [this, table = std::move(table), row_key = std::move(row_key),
                     predicate = std::move(predicate), on_true = std::move(on_true),
                     on_false = std::move(on_false), options, done = std::move(done)] {
      done(CheckAndMutate(*table, row_key, predicate.get(), on_true, on_false, options));
    });
  }
  virtual void ReadModifyWriteAsync(TableSnapshot table, std::string row_key,
                                    std::vector<ReadModifyWriteRule> rules, int64_t now_micros,
                                    size_t max_value_bytes, const AccessOptions& options,
                                    Executor* blocking,
                                    std::function<void(StatusOr<model::Row>)> done) {
    RunOn(blocking, [this, table = std::move(table), row_key = std::move(row_key),
                     rules = std::move(rules), now_micros, max_value_bytes, options,
                     done = std::move(done)] {
      done(ReadModifyWrite(*table, row_key, rules, now_micros, max_value_bytes, options));
    });
  }

  // Applies each of `mutations` as Mutate would: each row's mutations atomically, the entries
  // independently of each other (the batch as a whole is not atomic; a reader may see some
  // entries and not yet others). Returns one status per entry, in order. The entries of one
  // tablet are written together: one place in the engine's group commit (one commit-log
  // append, one fdatasync) and, on a cluster, one forwarded call to the tablet's primary and
  // one wait for the write level; tablets may be written in parallel. Entries of one tablet
  // are applied in the given order (a row that repeats ends as its last entry says). An entry
  // that storage refuses (InvalidArgument: an unknown family, a row outside its tablet) fails
  // alone; an error of the commit or of the tablet's primary fails every entry of that tablet
  // that did not fail alone, each of which may have been applied (as for Mutate).
  // REQUIRES: no mutation is empty. The span need live only during the call.
  virtual std::vector<Status> MutateRows(const catalog::TableInfo& table,
                                         std::span<const model::RowMutation> mutations,
                                         const AccessOptions& options) = 0;

  // Atomically on `row_key`: reads the row; it matches when `predicate` (null: any cell) leaves
  // a cell of it; then applies `on_true` if it matched, else `on_false` (an empty mutation
  // applies nothing). Returns whether it matched. REQUIRES: both mutations are of `row_key`.
  virtual StatusOr<bool> CheckAndMutate(const catalog::TableInfo& table, std::string_view row_key,
                                        model::RowFilter* predicate,
                                        const model::RowMutation& on_true,
                                        const model::RowMutation& on_false,
                                        const AccessOptions& options) = 0;

  // Atomically on `row_key`: applies `rules` in order to the newest cell of their columns
  // (append concatenates; increment adds to a 64-bit value, an absent cell counting as 0) and
  // writes each touched column once, with a timestamp of at least `now_micros` that sorts
  // before every existing cell of the column. Returns the row of the new cells (presented
  // qualifiers, one cell per column, in returned order). InvalidArgument if an append would
  // make a value larger than `max_value_bytes`, FailedPrecondition for an increment of a value
  // that is not 8 bytes; nothing is written then. REQUIRES: `rules` non-empty.
  virtual StatusOr<model::Row> ReadModifyWrite(const catalog::TableInfo& table,
                                               std::string_view row_key,
                                               const std::vector<ReadModifyWriteRule>& rules,
                                               int64_t now_micros, size_t max_value_bytes,
                                               const AccessOptions& options) = 0;

  // The rows of request.rows that have cells after request.filter. The stream keeps `table`
  // alive; each tablet is read from a consistent snapshot taken when its scan opens.
  virtual StatusOr<std::unique_ptr<RowStream>> Read(TableSnapshot table, ReadRequest request,
                                                    const AccessOptions& options) = 0;

  // Split points about `every_bytes` of data apart, by increasing key, with non-decreasing
  // cumulative offsets; every tablet boundary is one; the last sample is ("", table size). An
  // empty table has only the last.
  // REQUIRES: every_bytes > 0.
  virtual StatusOr<std::vector<RowKeySample>> SampleRowKeys(const catalog::TableInfo& table,
                                                            uint64_t every_bytes) = 0;

  // Deletes every row whose key starts with `prefix` (every row of the table when `prefix` is
  // empty), each row atomically (a write racing with the drop lands before or after it, whole).
  // Returns the number of rows deleted.
  virtual StatusOr<uint64_t> DropRowRange(const catalog::TableInfo& table,
                                          std::string_view prefix,
                                          const AccessOptions& options) = 0;
};

}  // namespace tessera::replication
