// RowMerger: the client side of ReadRows. Fed the ReadRowsResponse messages of one stream in
// order, it rebuilds complete rows from their CellChunks and checks every rule of the chunk
// protocol that Bigtable clients enforce (bigtable-api.md §5.1, the conformance cases of
// googleapis/conformance-tests readrows.json):
//
//   * a new row's first chunk has a non-empty row_key, a family_name and a qualifier, and is
//     not a reset_row;
//   * row keys are strictly increasing (strictly decreasing when reversed) across committed
//     rows and last_scanned_row_key messages; a committed key may not come again;
//   * inside a row, a chunk with a different row_key is refused (a commit is required
//     between row keys); a family_name must come with a qualifier;
//   * every chunk that does not continue a split value starts a new cell (a bare chunk is a
//     cell with timestamp 0 and an empty value, in the current column);
//   * a split value: value_size > 0 on every chunk but the last, the same on each, equal to
//     the final length; continuation chunks carry no row_key, family, qualifier, timestamp or
//     labels; commit_row is refused on a chunk with value_size > 0;
//   * reset_row carries no data at all and needs a row in progress; it drops that row;
//   * at the end of the stream (Finish) no row may be uncommitted.
//
// A violation returns Internal (the server broke the protocol) with a message naming the rule;
// the merger then stays failed and every later call returns the same error.
//
// Thread-safety: not thread-safe; one per stream.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "google/bigtable/v2/bigtable.pb.h"
#include "tessera/model/row.h"
#include "tessera/util/status.h"

namespace tessera::client {

class RowMerger {
 public:
  // `reversed`: the request asked for a reversed scan (keys must decrease).
  explicit RowMerger(bool reversed = false) : reversed_(reversed) {}

  // Consumes one response of the stream. Rows committed by it become available to
  // TakeRow(). On a violation, rows committed before the bad chunk stay available.
  Status Add(const google::bigtable::v2::ReadRowsResponse& response);

  // Call when the stream ended without a gRPC error: fails if a row is left uncommitted.
  Status Finish();

  bool HasRow() const { return !ready_.empty(); }
  // REQUIRES: HasRow(). Rows come out in stream order, each with its cells in the order the
  // server sent them.
  model::Row TakeRow();

  // The furthest key known to be scanned: the last committed row or last_scanned_row_key,
  // whichever came later; empty before either. A retry may resume after it.
  const std::string& last_key() const { return last_key_; }

 private:
  Status Fail(std::string_view rule);
  Status AddChunk(const google::bigtable::v2::ReadRowsResponse::CellChunk& chunk);
  // `key` must come after last_key_ in scan order (or equal it, when allow_equal).
  Status CheckKeyOrder(const std::string& key, bool allow_equal);

  const bool reversed_;
  Status status_;          // sticky failure
  std::deque<model::Row> ready_;  // committed, not yet taken
  std::string last_key_;   // last committed or scanned key
  bool have_last_key_ = false;

  // The row being assembled.
  bool in_row_ = false;
  model::Row row_;
  std::string family_;  // current family and qualifier within row_
  std::string qualifier_;
  // The cell in progress, when its value is split over chunks.
  bool in_split_cell_ = false;
  int64_t split_value_size_ = 0;
};

}  // namespace tessera::client
