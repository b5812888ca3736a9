// ReadRowsChunker: turns filtered rows into the google.bigtable.v2.ReadRowsResponse stream, as
// the CellChunk rules require (docs/row_filters.md, bigtable-api.md §5.1):
//
//   * the first chunk of a row sets row_key, family_name and qualifier (the qualifier is
//     present even when empty); later chunks of the row leave out row_key, and family_name /
//     qualifier unless they change (a new family always comes with its qualifier);
//   * timestamp_micros and labels are set on a cell's first chunk only;
//   * a value longer than max_chunk_value_bytes is split; every chunk but the last carries
//     value_size = the whole value's length, the last one value_size 0;
//   * commit_row is set on the row's last chunk (never on a chunk with value_size > 0).
//
// Responses hold whole rows: a response is closed only after a row's commit_row, once its
// chunks add up to target_response_bytes, so many small rows share a response and a big row
// has one of its own. The API allows a row to span responses, but the Go client (cbt) checks at
// the end of every response that no row is left open ("invalid state for end of stream"), so
// a row spans responses only when it alone is larger than max_response_bytes — a size no
// client's receive limit admits in one message anyway. The server loop:
//
//   for each row: filter it; if cells are left, chunker.AddRow(std::move(row));
//                 while (chunker.HasFullResponse()) Send(chunker.TakeResponse());
//   chunker.Finish(stats or nullptr);
//   while (!chunker.empty()) Send(chunker.TakeResponse());
//
// Rows must be given in the order they are to be sent (increasing keys, or decreasing for a
// reversed scan); the chunker does not sort or check order.
//
// Thread-safety: not thread-safe; one per ReadRows call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "google/bigtable/v2/bigtable.pb.h"
#include "tessera/model/row.h"

namespace tessera::server {

struct ChunkerOptions {
  // --- performance ---
  // Values longer than this are split over several chunks. Must be > 0.
  size_t max_chunk_value_bytes = 1 << 20;
  // A response is closed at the first row boundary once its chunks add up to at least this
  // (approximate wire bytes). Must be > 0.
  size_t target_response_bytes = 1 << 20;
  // A response is closed mid-row only when it reaches this; only a row larger than this spans
  // responses. The official clients accept messages of 256 MiB (Go, Java) or any size (Node,
  // Python); the server's send limit must be above this. Must be >= target_response_bytes.
  size_t max_response_bytes = 128 << 20;
};

class ReadRowsChunker {
 public:
  explicit ReadRowsChunker(ChunkerOptions options = {});

  // Appends the chunks of `row` to the pending responses.
  // REQUIRES: row.key is non-empty, row.cells is non-empty, every value is shorter than 2 GiB,
  // Finish() has not been called.
  void AddRow(model::Row row);

  // Queues a response holding only `key` as last_scanned_row_key, after everything added so
  // far: lets the client's resume point pass rows that were scanned but filtered out. It
  // counts as a full response. REQUIRES: Finish() has not been called.
  void AddLastScannedRowKey(std::string_view key);

  // Closes the stream: the open response becomes takeable, and when `stats` is not null a
  // last response carrying only request_stats is queued (clients look for the stats in the
  // last message). REQUIRES: not called before.
  void Finish(const google::bigtable::v2::RequestStats* stats);

  // True if a response is complete and should be sent now.
  bool HasFullResponse() const;
  // True if nothing is pending: no response, complete or open.
  bool empty() const { return closed_.empty() && open_chunks_ == 0; }

  // Removes and returns the oldest pending response: a complete one if any, else the open one
  // (which the server sends when it wants to flush early, e.g. at the end).
  // REQUIRES: !empty().
  google::bigtable::v2::ReadRowsResponse TakeResponse();

  // Totals since construction, for request stats and tests.
  int64_t rows_added() const { return rows_added_; }
  int64_t cells_added() const { return cells_added_; }

 private:
  google::bigtable::v2::ReadRowsResponse::CellChunk* NewChunk();
  void CloseOpenResponse();

  const ChunkerOptions options_;
  std::deque<google::bigtable::v2::ReadRowsResponse> closed_;
  google::bigtable::v2::ReadRowsResponse open_;
  int open_chunks_ = 0;    // chunks in open_
  size_t open_bytes_ = 0;  // estimated wire size of open_
  int64_t rows_added_ = 0;
  int64_t cells_added_ = 0;
};

}  // namespace tessera::server
