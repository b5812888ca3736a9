// Block encoding (data, index, metaindex and properties blocks all use it):
//
//   block   := entry* restart:fixed32{num_restarts} num_restarts:fixed32
//   entry   := shared:varint32 unshared:varint32 value_len:varint32
//              key_suffix:byte[unshared] value:byte[value_len]
//
// An entry's key is the first `shared` bytes of the previous entry's key followed by
// key_suffix. Every `restart_interval` entries an entry has shared == 0 and its offset is
// recorded in the restart array (the first entry, at offset 0, is always a restart), so a
// reader can binary-search the restarts' whole keys and decode forward from one. Restart
// offsets are strictly increasing and all lie before the restart array. An empty block has no
// entries and the restart array [0]; readers treat any block whose restart array starts at
// offset 0 as empty.
#include "tessera/storage/block_builder.h"

#include <algorithm>

#include "tessera/util/coding.h"

namespace tessera::storage {

BlockBuilder::BlockBuilder(int restart_interval)
    : restart_interval_(std::max(restart_interval, 1)) {
  restarts_.push_back(0);
}

void BlockBuilder::Reset() {
  buffer_.clear();
  restarts_.clear();
  restarts_.push_back(0);
  counter_ = 0;
  num_entries_ = 0;
  last_key_.clear();
}

void BlockBuilder::Add(std::string_view key, std::string_view value) {
  size_t shared = 0;
  if (counter_ < restart_interval_) {
    const size_t limit = std::min(last_key_.size(), key.size());
    while (shared < limit && last_key_[shared] == key[shared]) ++shared;
  } else {
    restarts_.push_back(static_cast<uint32_t>(buffer_.size()));
    counter_ = 0;
  }
  const size_t unshared = key.size() - shared;

  char header[15];
  char* p = EncodeVarint32(header, static_cast<uint32_t>(shared));
  p = EncodeVarint32(p, static_cast<uint32_t>(unshared));
  p = EncodeVarint32(p, static_cast<uint32_t>(value.size()));
  buffer_.append(header, p - header);
  buffer_.append(key.data() + shared, unshared);
  buffer_.append(value.data(), value.size());

  last_key_.resize(shared);
  last_key_.append(key.data() + shared, unshared);
  ++counter_;
  ++num_entries_;
}

std::string_view BlockBuilder::Finish() {
  for (uint32_t restart : restarts_) PutFixed32(&buffer_, restart);
  PutFixed32(&buffer_, static_cast<uint32_t>(restarts_.size()));
  return buffer_;
}

}  // namespace tessera::storage
