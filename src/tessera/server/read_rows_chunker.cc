#include "tessera/server/read_rows_chunker.h"

#include <algorithm>
#include <utility>

namespace tessera::server {

namespace v2 = google::bigtable::v2;

namespace {
// Rough wire cost of a chunk beyond its variable-length fields (tags, lengths, timestamp).
constexpr size_t kChunkOverheadBytes = 24;
}  // namespace

ReadRowsChunker::ReadRowsChunker(ChunkerOptions options) : options_(options) {}

v2::ReadRowsResponse::CellChunk* ReadRowsChunker::NewChunk() {
  // Mid-row only for a row too large for one message (see the header).
  if (open_bytes_ >= std::max(options_.max_response_bytes, options_.target_response_bytes)) {
    CloseOpenResponse();
  }
  ++open_chunks_;
  return open_.add_chunks();
}

void ReadRowsChunker::CloseOpenResponse() {
  if (open_chunks_ == 0) return;
  closed_.push_back(std::move(open_));
  open_.Clear();
  open_chunks_ = 0;
  open_bytes_ = 0;
}

void ReadRowsChunker::AddRow(model::Row row) {
  const size_t max_piece = std::max<size_t>(options_.max_chunk_value_bytes, 1);
  std::string family;     // of the previous cell
  std::string qualifier;  // of the previous cell
  for (size_t ci = 0; ci < row.cells.size(); ++ci) {
    model::Cell& cell = row.cells[ci];
    const bool first_cell = ci == 0;
    const bool last_cell = ci + 1 == row.cells.size();
    const bool new_family = first_cell || cell.family != family;
    const bool new_column = new_family || cell.qualifier != qualifier;
    if (new_family) family = cell.family;
    if (new_column) qualifier = cell.qualifier;

    const size_t value_size = cell.value.size();
    const size_t pieces = value_size <= max_piece ? 1 : (value_size + max_piece - 1) / max_piece;
    for (size_t p = 0; p < pieces; ++p) {
      v2::ReadRowsResponse::CellChunk* chunk = NewChunk();
      size_t bytes = kChunkOverheadBytes;
      if (p == 0) {
        if (first_cell) {
          chunk->set_row_key(row.key);
          bytes += row.key.size();
        }
        if (new_family) {
          chunk->mutable_family_name()->set_value(cell.family);
          bytes += cell.family.size();
        }
        if (new_column) {
          // Present even when empty: an absent qualifier would mean "same column".
          chunk->mutable_qualifier()->set_value(cell.qualifier);
          bytes += cell.qualifier.size();
        }
        chunk->set_timestamp_micros(cell.timestamp_micros);
        for (auto& label : cell.labels) {
          bytes += label.size() + 2;
          chunk->add_labels(std::move(label));
        }
      }
      if (pieces == 1) {
        bytes += value_size;
        chunk->set_value(std::move(cell.value));
      } else {
        const size_t offset = p * max_piece;
        const size_t len = std::min(max_piece, value_size - offset);
        bytes += len;
        chunk->set_value(cell.value.substr(offset, len));
        if (p + 1 < pieces) chunk->set_value_size(static_cast<int32_t>(value_size));
      }
      if (last_cell && p + 1 == pieces) chunk->set_commit_row(true);
      open_bytes_ += bytes;
    }
  }
  ++rows_added_;
  cells_added_ += static_cast<int64_t>(row.cells.size());
  if (open_bytes_ >= options_.target_response_bytes) CloseOpenResponse();
}

void ReadRowsChunker::AddLastScannedRowKey(std::string_view key) {
  CloseOpenResponse();
  v2::ReadRowsResponse response;
  response.set_last_scanned_row_key(std::string(key));
  closed_.push_back(std::move(response));
}

void ReadRowsChunker::Finish(const v2::RequestStats* stats) {
  CloseOpenResponse();
  if (stats != nullptr) {
    v2::ReadRowsResponse response;
    *response.mutable_request_stats() = *stats;
    closed_.push_back(std::move(response));
  }
}

bool ReadRowsChunker::HasFullResponse() const { return !closed_.empty(); }

v2::ReadRowsResponse ReadRowsChunker::TakeResponse() {
  if (closed_.empty()) CloseOpenResponse();
  if (closed_.empty()) return {};  // REQUIRES violated; an empty response is harmless
  v2::ReadRowsResponse response = std::move(closed_.front());
  closed_.pop_front();
  return response;
}

}  // namespace tessera::server
