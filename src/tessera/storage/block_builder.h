// BlockBuilder encodes sorted key/value entries into one block: keys are prefix-compressed
// against the previous key, and every `restart_interval` entries a "restart point" stores its
// key whole, so a reader can binary-search the restarts and decode from there (block.h).
// The encoding is described atop block_builder.cc and in docs/sstable_format.md.
//
// Thread-safety: not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::storage {

class BlockBuilder {
 public:
  // `restart_interval` is clamped to at least 1.
  explicit BlockBuilder(int restart_interval);
  BlockBuilder(const BlockBuilder&) = delete;
  BlockBuilder& operator=(const BlockBuilder&) = delete;

  // Forgets all entries, keeping allocated memory.
  void Reset();

  // REQUIRES: Finish() not called since the last Reset(); `key` sorts after every key added
  // since then (not checked here: the table builder checks); key.size() and value.size() fit
  // in 32 bits and the block stays below 4 GiB.
  void Add(std::string_view key, std::string_view value);

  // Appends the restart array and returns the whole block. The view is valid until the next
  // Reset() or destruction.
  std::string_view Finish();

  // Size of the block if finished now.
  size_t CurrentSizeEstimate() const {
    return buffer_.size() + (restarts_.size() + 1) * sizeof(uint32_t);
  }
  bool empty() const { return num_entries_ == 0; }
  size_t num_entries() const { return num_entries_; }
  // The last key added. REQUIRES: !empty().
  std::string_view last_key() const { return last_key_; }

 private:
  const int restart_interval_;
  std::string buffer_;
  std::vector<uint32_t> restarts_;
  int counter_ = 0;  // entries since the last restart
  size_t num_entries_ = 0;
  std::string last_key_;
};

}  // namespace tessera::storage
