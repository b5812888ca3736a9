// DataService: the Cloud Bigtable v2 data API (google.bigtable.v2.Bigtable) over the catalog's
// tables, through replication::TableAccess. docs/server.md ("The data path") describes the
// behaviour in full; in short:
//
//   ReadRows            RowSet (keys and ranges, deduplicated and ordered), rows_limit, reversed,
//                       the whole RowFilter language (row_filter_proto.h), request stats; streamed
//                       one response at a time with flow control, large values split into chunks
//   SampleRowKeys       tablet boundaries and the engine's samples, cumulative offsets, "" last
//   MutateRow(s)        validated as production does (mutation_builder.h); a status per entry
//   CheckAndMutateRow   predicate and mutation atomic on the row
//   ReadModifyWriteRow  append / 64-bit big-endian increment, atomic on the row
//   PingAndWarm         validates the instance name
// Every other RPC of the service answers UNIMPLEMENTED (the generated base class does that).
//
// The service converts requests to model types (row sets, compiled filters, mutations,
// read-modify-write rules), validating them with Bigtable's messages, and converts the answers
// back; every operation on rows goes through the injected replication::TableAccess
// (docs/replication.md), which routes rows, locks them and does the read-modify-write and
// check-and-mutate semantics.
//
// Each request runs with the consistency levels of its app profile (the request's
// app_profile_id, else the app_profile_id of its x-goog-request-params header;
// app_profile_levels.h) and the client's deadline as its timeout.
//
// Errors carry the codes a Bigtable client expects: NOT_FOUND for a missing table or family
// (never a retryable code for a permanent error), INVALID_ARGUMENT for malformed requests,
// UNIMPLEMENTED for authorized and materialized views; engine errors keep their code
// (UNAVAILABLE only for real I/O trouble, RESOURCE_EXHAUSTED, DATA_LOSS).
//
// Threads: the RPC handlers start on the node's gRPC loop (rpc/loop.h) and return at once; the
// work (engine reads and writes, which may wait for disk) runs on the injected Executor, so the
// loop never blocks on I/O — except reads with inline_reads, served from memtables and the
// block cache. With a null executor the work runs inline on the loop (tests and tools).
//
// Thread-safety: gRPC calls the handlers from many threads at once; the service is safe for
// that. Its own state is constant after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/replication/table_access.h"
#include "tessera/rpc/server.h"
#include "tessera/server/access_control.h"
#include "tessera/server/app_profile_levels.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor.h"

namespace tessera::server {

struct DataServiceOptions {
  // --- behaviour ---
  // ReadRows splits a cell value into pieces of at most this many bytes (CellChunk.value with
  // value_size), all in its row's response. > 0.
  size_t read_chunk_bytes = 1 << 20;
  // SampleRowKeys reports a key about every this many bytes of a tablet (besides the tablet
  // boundaries). > 0.
  uint64_t sample_every_bytes = 64ull << 20;
  // Asked before every data request; a non-OK status is the request's answer. A cluster node
  // answers Unavailable while it has no lock-service session, as a Bigtable tablet server stops
  // serving when it loses its Chubby lock. Optional (unset: always serving).
  std::function<Status()> serving_check;
  // Asked when a request names a table this node does not have: brings the node's tables up to
  // date with the cluster's schema, after which the table is looked up once more. A cluster
  // node mirrors the schema from the lock service's watch, which may lag a CreateTable that
  // another node has already answered. Optional (unset: NotFound at once).
  std::function<Status()> refresh_schema;
  // The consistency levels of a request's app profile (app_profile_levels.h): (instance
  // "projects/p/instances/i", profile id) -> levels, or the error the request gets (NotFound
  // for an unknown profile). Null: only the built-in ids set levels, any other id is accepted
  // and sets none.
  std::function<StatusOr<ProfileLevels>(std::string_view instance, std::string_view id)>
      profile_levels;
  // With --auth: every request's principal (set by the AuthGate) must hold what the request
  // needs on the families it reads and writes (data_authorization.h); PERMISSION_DENIED
  // otherwise, checked once the table is resolved and before any read or write. A MutateRows
  // entry refused fails alone. Null: no checks. Must outlive the service.
  const AccessControl* access_control = nullptr;

  // --- performance ---
  // ReadRows steps run on the gRPC loop's thread instead of the executor. Saves two thread
  // hand-offs per read (most reads are served from the block cache); a read that must go to
  // disk then holds a gRPC thread for that long. A step that waits for another node
  // (RowStream::SetWaker) holds none: it goes on from the thread the answer arrives on.
  bool inline_reads = false;
  // MutateRow applies its write on the gRPC loop's thread instead of the executor: no
  // hand-off, but the thread waits for the commit log's group commit (fdatasync in batch
  // mode). Either way a wait for other nodes holds no thread (TableAccess::MutateAsync).
  bool inline_writes = false;
  // A ReadRowsResponse is sent at the first row boundary once it holds about this many bytes
  // of chunks (responses hold whole rows, as cbt requires: read_rows_chunker.h)...
  size_t read_response_bytes = 1 << 20;
  // ...and a row larger than this alone spans responses. Below the server's send limit.
  size_t read_response_max_bytes = 128 << 20;
  // ...or this many rows, whichever comes first. > 0.
  size_t read_response_rows = 1000;
  // A ReadRows step reads at most this many rows (or opens this many scans and point reads)
  // before it yields its thread, so a scan whose filter drops most rows, or a RowSet of many
  // absent keys, does not hold a thread for long. > 0.
  size_t read_rows_per_step = 4096;
  // MutateRows spreads one request's tablets (each tablet's entries one batch) over up to this
  // many executor tasks, so that their writes run and group-commit together. 1 = one task.
  // Ignored without an executor.
  int mutate_rows_parallelism = 8;
};

class DataService final {
 public:
  // `catalog`, `access` and `clock` must outlive the service. `executor` (may be null: work
  // inline) must outlive every RPC the service runs, i.e. stay alive until the gRPC server has
  // shut down.
  DataService(catalog::TableCatalog* catalog, replication::TableAccess* access, Clock* clock,
              Executor* executor, DataServiceOptions options = DataServiceOptions());
  ~DataService();

  DataService(const DataService&) = delete;
  DataService& operator=(const DataService&) = delete;

  // Registers every method of google.bigtable.v2.Bigtable; handlers start on the loop thread.
  void Register(rpc::Services* services);

  rpc::WriteReactor<google::bigtable::v2::ReadRowsResponse>* ReadRows(
      rpc::ServerContext* context,
      const google::bigtable::v2::ReadRowsRequest* request);
  rpc::WriteReactor<google::bigtable::v2::SampleRowKeysResponse>* SampleRowKeys(
      rpc::ServerContext* context,
      const google::bigtable::v2::SampleRowKeysRequest* request);
  rpc::UnaryReactor* MutateRow(rpc::ServerContext* context,
                                      const google::bigtable::v2::MutateRowRequest* request,
                                      google::bigtable::v2::MutateRowResponse* response);
  rpc::WriteReactor<google::bigtable::v2::MutateRowsResponse>* MutateRows(
      rpc::ServerContext* context,
      const google::bigtable::v2::MutateRowsRequest* request);
  rpc::UnaryReactor* CheckAndMutateRow(
      rpc::ServerContext* context,
      const google::bigtable::v2::CheckAndMutateRowRequest* request,
      google::bigtable::v2::CheckAndMutateRowResponse* response);
  rpc::UnaryReactor* PingAndWarm(
      rpc::ServerContext* context, const google::bigtable::v2::PingAndWarmRequest* request,
      google::bigtable::v2::PingAndWarmResponse* response);
  rpc::UnaryReactor* ReadModifyWriteRow(
      rpc::ServerContext* context,
      const google::bigtable::v2::ReadModifyWriteRowRequest* request,
      google::bigtable::v2::ReadModifyWriteRowResponse* response);

  // The implementation, shared with the reactors (data_service.cc).
  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::server
