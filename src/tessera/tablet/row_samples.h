// Row samples: where a tablet's data lies in row order, in pieces of roughly known size, for
// Engine::SampleRowKeys. An SSTable gives one piece per data block, read from its index block
// (whose keys are the blocks' last internal keys, so the row of each key ends a block); a
// memtable gives pieces by walking its keys. Neither reads data blocks.
//
// Thread-safety: free functions over their arguments; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/storage/iterator.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::tablet {

// A piece of one source's data: `bytes` of it lie in rows <= `row` (and after the previous
// piece of the same source). `row` is the decoded row key.
struct RowSample {
  std::string row;
  uint64_t bytes = 0;
};

// One piece per data block of the SSTable at `path` (`file_size` bytes): the row of the block's
// last key and the block's stored size. Reads the footer and the index block only. DataLoss
// naming the file when they are damaged or a key there is not a cell key.
StatusOr<std::vector<RowSample>> SampleTableIndex(FileSystem* fs, const std::string& path,
                                                  uint64_t file_size);

// Walks `it` (internal keys of cells, e.g. a memtable) from its first entry, appending a piece
// to `out` whenever at least `piece_bytes` of keys and values were passed, and one for the rest.
// DataLoss when a key is not an internal cell key; the iterator's error otherwise.
Status SampleIterator(storage::Iterator* it, uint64_t piece_bytes, std::vector<RowSample>* out);

}  // namespace tessera::tablet
