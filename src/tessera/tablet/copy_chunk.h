// The chunks a tablet copy travels in (Engine::BeginTabletCopy, BeginTabletRebuild): a
// self-contained byte string holding a run of a tablet's raw entries in internal-key order.
//
//   chunk  := version entry+ crc
//   version:= one byte, 1
//   entry  := length-prefixed internal key (cell key + 8-byte sequence/type trailer),
//             length-prefixed value (length prefixes are varint32)
//   crc    := fixed32, crc32c::Mask of the crc32c of every byte before it
//
// The checksum covers the whole chunk, so a chunk damaged on the way (or cut short) is refused
// before any of its entries is read. Order inside and across chunks is checked by the sink.
//
// Thread-safety: plain values and functions; no shared state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::tablet {

// Builds one chunk.
class ChunkBuilder {
 public:
  ChunkBuilder();
  void Add(std::string_view internal_key, std::string_view value);
  bool empty() const { return entries_ == 0; }
  // Bytes of the chunk so far, without the checksum.
  size_t size() const { return buffer_.size(); }
  // The encoded chunk (checksum appended). The builder is spent.
  std::string Finish();

 private:
  std::string buffer_;
  size_t entries_ = 0;
};

// One entry of a decoded chunk; the views point into the chunk.
struct ChunkEntry {
  std::string_view internal_key;
  std::string_view value;
};

// The entries of `chunk`, in their order. DataLoss when the checksum does not match, the
// version is unknown, the chunk holds no entry or an entry is cut short.
StatusOr<std::vector<ChunkEntry>> DecodeChunk(std::string_view chunk);

}  // namespace tessera::tablet
