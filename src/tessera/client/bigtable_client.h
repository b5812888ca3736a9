// BigtableClient: a synchronous C++ client for the Cloud Bigtable v2 data API and the table
// admin API, over one insecure gRPC channel to one endpoint (a `tessera serve` node or the
// official emulator), scoped to one instance `projects/P/instances/I`.
//
// Requests and schema pieces are the API's own protos (google::bigtable::v2 / ::admin::v2):
// Mutation, RowSet, RowFilter, GcRule, Table. Rows read come back as tessera::model::Row
// (row_merger.h), rebuilt from the chunk stream with every protocol rule checked.
//
// Errors: a failed RPC returns absl::Status with the gRPC code and the server's message
// unchanged (the numeric codes are the same). A protocol violation by the server in a ReadRows
// stream is Internal (RowMerger). Bad arguments caught before sending are InvalidArgument. The
// client never retries: callers decide.
//
// Deadlines: every call has one, ClientOptions' default for its kind unless the call's
// CallOptions gives another. A ReadRows deadline covers the whole stream.
//
// Thread-safety: thread-safe. Any number of threads may call any method at once; the object
// holds only values fixed at construction plus the gRPC channel and stubs, which are
// thread-safe. A RowReader is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "tessera/client/row_merger.h"
#include "tessera/util/status.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace tessera::client {

namespace btv2 = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

// Timestamp value asking the server to use its own clock (millisecond-truncated) for a cell.
inline constexpr int64_t kServerTime = -1;

struct ClientOptions {
  // host:port of the server. Required.
  std::string endpoint;
  // The instance every table belongs to: tables are projects/<project>/instances/<instance>/
  // tables/<id>.
  std::string project = "p";
  std::string instance = "i";
  // Default deadlines, by kind of call (CallOptions::timeout overrides one call's).
  std::chrono::milliseconds admin_timeout{60'000};    // table and family administration
  std::chrono::milliseconds mutate_timeout{30'000};   // MutateRow(s), CheckAndMutate, RMW
  std::chrono::milliseconds read_timeout{3'600'000};  // a whole ReadRows / SampleRowKeys
  // The largest response message accepted; Bigtable rows may reach 256 MiB.
  int max_receive_message_bytes = 256 << 20;
  // The CA (PEM) the server's TLS certificate is verified against; empty: plaintext.
  std::string tls_ca_pem;
  // Sent as `authorization: Bearer <token>` with every call (a node with --auth); empty: none.
  std::string token;
};

// Per-call settings.
struct CallOptions {
  // Overrides the ClientOptions default for this call; must be positive.
  std::optional<std::chrono::milliseconds> timeout;
};

// A column family for CreateTable / CreateFamily.
struct FamilySpec {
  std::string name;
  btadmin::GcRule gc_rule;      // empty message = keep everything
  bool super_columns = false;   // Tessera: qualifiers "super:column" (tessera_options)
  bool time_sorted = false;     // Tessera: 8-byte big-endian time qualifiers, newest first
};

struct ReadRowsOptions {
  btv2::RowSet rows;            // empty = the whole table
  int64_t limit = 0;            // at most this many rows; 0 = no limit; must be >= 0
  std::optional<btv2::RowFilter> filter;
  bool reversed = false;        // rows in descending key order
};

struct RowKeySample {
  std::string row_key;          // empty in the last sample: the end of the table
  int64_t offset_bytes = 0;
};

class BigtableClient;

// The rows of one ReadRows call, pulled one at a time; the stream is consumed as rows are
// taken, so a scan of any size uses memory for one response at a time. Destroying a reader
// before the end cancels the RPC.
//
// Thread-safety: one thread at a time.
class RowReader {
 public:
  ~RowReader();
  RowReader(const RowReader&) = delete;
  RowReader& operator=(const RowReader&) = delete;

  // Sets *row to the next row and returns true; returns false at the end of the stream. An
  // error (RPC failure, protocol violation) is returned once; later calls return it again.
  StatusOr<bool> Next(model::Row* row);

  // Stops the stream early; the next Next() returns false. Reading thread only.
  void Cancel();

  // Asks gRPC to cancel the call; safe from any thread, also while Next() blocks waiting for
  // the server (an interrupt handler's helper thread, say). Next() then returns Cancelled
  // (or rows that had already arrived, then Cancelled).
  void TryCancel();

 private:
  friend class BigtableClient;
  struct Stream;
  explicit RowReader(std::unique_ptr<Stream> stream);

  std::unique_ptr<Stream> stream_;
};

class BigtableClient {
 public:
  // InvalidArgument if the endpoint, project or instance is empty or a timeout is not
  // positive. Does not connect: the first call does (and fails Unavailable if nobody listens).
  static StatusOr<std::unique_ptr<BigtableClient>> Create(ClientOptions options);

  ~BigtableClient();
  BigtableClient(const BigtableClient&) = delete;
  BigtableClient& operator=(const BigtableClient&) = delete;

  const ClientOptions& options() const { return options_; }
  // "projects/P/instances/I".
  const std::string& instance_name() const { return instance_name_; }
  // "projects/P/instances/I/tables/<table_id>".
  std::string TableName(std::string_view table_id) const;

  // ---- Table admin. `table_id` is the short name ("t1"), not the full resource name. ----

  // Creates a table with the given families and initial split keys (tablet boundaries).
  Status CreateTable(std::string_view table_id, const std::vector<FamilySpec>& families,
                     const std::vector<std::string>& split_keys, const CallOptions& call = {});
  // The same with Tessera's table options (placement, consistency levels, compaction).
  Status CreateTable(std::string_view table_id, const std::vector<FamilySpec>& families,
                     const std::vector<std::string>& split_keys,
                     const ::tessera::v1::TableOptions& tessera_options,
                     const CallOptions& call = {});
  // The ids of the instance's tables, sorted.
  StatusOr<std::vector<std::string>> ListTables(const CallOptions& call = {});
  // The table with its schema (SCHEMA_VIEW): families with GC rules and Tessera options.
  StatusOr<btadmin::Table> GetTable(std::string_view table_id, const CallOptions& call = {});
  Status DeleteTable(std::string_view table_id, const CallOptions& call = {});

  Status CreateFamily(std::string_view table_id, const FamilySpec& family,
                      const CallOptions& call = {});
  // Replaces the family's GC rule (update with update_mask "gc_rule").
  Status UpdateGcRule(std::string_view table_id, std::string_view family,
                      const btadmin::GcRule& rule, const CallOptions& call = {});
  // Drops the family and all its data.
  Status DropFamily(std::string_view table_id, std::string_view family,
                    const CallOptions& call = {});
  // Any list of modifications, applied atomically in order; returns the resulting table.
  StatusOr<btadmin::Table> ModifyColumnFamilies(
      std::string_view table_id,
      const std::vector<btadmin::ModifyColumnFamiliesRequest::Modification>& modifications,
      const CallOptions& call = {});

  // Deletes every row whose key starts with `prefix`. REQUIRES: !prefix.empty() (an empty
  // prefix is InvalidArgument; use DropAllRows).
  Status DropRowsWithPrefix(std::string_view table_id, std::string_view prefix,
                            const CallOptions& call = {});
  Status DropAllRows(std::string_view table_id, const CallOptions& call = {});

  // ---- Data. ----

  // Applies `mutations` to one row, atomically and in order.
  Status MutateRow(std::string_view table_id, std::string_view row_key,
                   const std::vector<btv2::Mutation>& mutations, const CallOptions& call = {});

  struct BulkEntry {
    std::string row_key;
    std::vector<btv2::Mutation> mutations;
  };
  // Applies each entry atomically (entries independently). The outer status fails only if
  // nothing could be attempted properly (RPC failure before any answer, bad arguments); the
  // vector has one status per entry, in the order of `entries`. Requests larger than the API's
  // 100,000-mutation limit are split into several RPCs. An entry the server did not report on
  // (stream broken) gets the stream's error, or Internal if the stream ended cleanly.
  StatusOr<std::vector<Status>> MutateRows(std::string_view table_id,
                                           const std::vector<BulkEntry>& entries,
                                           const CallOptions& call = {});

  // Starts a streaming read. Errors (unknown table, bad filter) surface from Next().
  std::unique_ptr<RowReader> ReadRows(std::string_view table_id, const ReadRowsOptions& options,
                                      const CallOptions& call = {});
  // Streams rows to `on_row` in order. `on_row` returns false to stop early (not an error).
  Status ReadRows(std::string_view table_id, const ReadRowsOptions& options,
                  const std::function<bool(model::Row&&)>& on_row, const CallOptions& call = {});
  // One row, or nullopt if it has no cells (after `filter`).
  StatusOr<std::optional<model::Row>> ReadRow(
      std::string_view table_id, std::string_view row_key,
      const std::optional<btv2::RowFilter>& filter = std::nullopt, const CallOptions& call = {});

  // Applies `true_mutations` if `predicate` yields any cell of the row (no predicate: if the
  // row has any cell), else `false_mutations`; atomic. Returns whether the predicate matched.
  StatusOr<bool> CheckAndMutateRow(std::string_view table_id, std::string_view row_key,
                                   const std::optional<btv2::RowFilter>& predicate,
                                   const std::vector<btv2::Mutation>& true_mutations,
                                   const std::vector<btv2::Mutation>& false_mutations,
                                   const CallOptions& call = {});

  // Applies append / increment rules in order, atomically; returns the new cells of the
  // modified columns (row.key is the row key).
  StatusOr<model::Row> ReadModifyWriteRow(std::string_view table_id, std::string_view row_key,
                                          const std::vector<btv2::ReadModifyWriteRule>& rules,
                                          const CallOptions& call = {});

  // Row keys splitting the table into pieces, with approximate byte offsets, in key order.
  StatusOr<std::vector<RowKeySample>> SampleRowKeys(std::string_view table_id,
                                                    const CallOptions& call = {});

 private:
  friend class RowReader;
  BigtableClient(ClientOptions options, std::unique_ptr<btv2::Bigtable::Stub> data,
                 std::unique_ptr<btadmin::BigtableTableAdmin::Stub> admin);

  void SetDeadline(grpc::ClientContext* context, std::chrono::milliseconds default_timeout,
                   const CallOptions& call) const;
  Status MutateRowsBatch(const std::string& table_name, const std::vector<BulkEntry>& entries,
                         size_t begin, size_t end, const CallOptions& call,
                         std::vector<Status>* statuses);

  // Constant after construction.
  const ClientOptions options_;
  const std::string instance_name_;
  const std::unique_ptr<btv2::Bigtable::Stub> data_;
  const std::unique_ptr<btadmin::BigtableTableAdmin::Stub> admin_;
};

// ---- Building requests. ----

// A SetCell; `timestamp_micros` = kServerTime lets the server choose.
btv2::Mutation SetCellMutation(std::string_view family, std::string_view qualifier,
                               std::string_view value, int64_t timestamp_micros = kServerTime);
// Deletes every version of one column.
btv2::Mutation DeleteColumnMutation(std::string_view family, std::string_view qualifier);
btv2::Mutation DeleteFamilyMutation(std::string_view family);
btv2::Mutation DeleteRowMutation();

btv2::ReadModifyWriteRule AppendRule(std::string_view family, std::string_view qualifier,
                                     std::string_view suffix);
btv2::ReadModifyWriteRule IncrementRule(std::string_view family, std::string_view qualifier,
                                        int64_t amount);

// Row sets: exact keys; [start, end) with an empty end meaning "to the end of the table"; all
// keys starting with `prefix` (empty prefix = every row).
btv2::RowSet RowKeysSet(const std::vector<std::string>& keys);
btv2::RowSet RowRangeSet(std::string_view start_closed, std::string_view end_open);
btv2::RowSet RowPrefixSet(std::string_view prefix);
// The smallest key greater than every key starting with `prefix`; empty when there is none
// (prefix empty or all 0xff bytes).
std::string PrefixSuccessor(std::string_view prefix);

// A regular expression (RE2 and Go syntax alike) that matches exactly the bytes of `literal`,
// for the regex filters: letters and digits stay, other printable ASCII is backslash-escaped,
// any other byte becomes \xHH.
std::string RegexEscape(std::string_view literal);

// Decodes an 8-byte big-endian signed integer (increment results); InvalidArgument naming the
// size otherwise.
StatusOr<int64_t> DecodeBigEndianInt64(std::string_view bytes);
std::string EncodeBigEndianInt64(int64_t value);

}  // namespace tessera::client
