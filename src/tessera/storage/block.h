// Block: one decoded (uncompressed, checksum-verified) block of a table, immutable and shared
// between the block cache and any number of iterators through std::shared_ptr<const Block>, so
// evicting it from the cache never frees a block that an iterator still reads.
//
// BlockIter: an Iterator over a block's entries that decodes in place. Values and keys stored
// whole (at restart points) are views into the block; a prefix-compressed key is rebuilt in a
// buffer owned by the iterator and reused, so moving the iterator allocates nothing once the
// buffer has grown to the longest key. Seek binary-searches the restart points.
//
// A block's bytes may be corrupt in ways the checksum did not catch (a crafted file); every
// decoded length and offset is bounds-checked, Create() validates the restart array, and a bad
// entry makes the iterator !Valid() with a DataLoss status naming the file and block offset.
//
// Thread-safety: a Block is immutable and safe to share; a BlockIter is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/storage/comparator.h"
#include "tessera/storage/format.h"
#include "tessera/storage/iterator.h"
#include "tessera/util/status.h"

namespace tessera::storage {

class Block {
 private:
  struct PassKey {};

 public:
  // Validates the restart array of `contents` and returns the block. `contents.data` must stay
  // valid for the block's life (it does when `contents.owned` holds it). Errors are DataLoss
  // naming `file_name` and `offset` (the block's offset in its file).
  static StatusOr<std::shared_ptr<const Block>> Create(BlockContents contents,
                                                       std::string_view file_name, uint64_t offset);

  // An iterator that keeps `block` alive. `file_name` names the file in errors and must outlive
  // the iterator; `offset` is the block's offset in it.
  static std::unique_ptr<Iterator> NewIterator(std::shared_ptr<const Block> block,
                                               const Comparator* comparator,
                                               std::string_view file_name, uint64_t offset);

  std::string_view data() const { return data_; }
  size_t size() const { return data_.size(); }
  // Bytes to charge in the block cache.
  size_t charge() const { return data_.size() + sizeof(Block); }

  // Use Create().
  Block(PassKey, BlockContents contents, uint32_t restarts_offset, uint32_t num_restarts);

 private:
  friend class BlockIter;

  const std::unique_ptr<char[]> owned_;
  const std::string_view data_;
  const uint32_t restarts_offset_;  // where the restart array starts; entries end here
  const uint32_t num_restarts_;
};

class BlockIter final : public Iterator {
 public:
  // Not positioned on any block: !Valid() until Init().
  BlockIter() = default;

  // Positions nowhere (!Valid()) on `block`. `comparator` and `file_name` must outlive the
  // iterator's use of this block; `offset` is the block's offset (named in errors). Clears any
  // previous error.
  void Init(const Comparator* comparator, std::shared_ptr<const Block> block,
            std::string_view file_name, uint64_t offset);
  // Releases the block; !Valid() afterwards.
  void Clear();

  bool Valid() const override { return current_ < restarts_; }
  void SeekToFirst() override;
  void SeekToLast() override;
  void Seek(std::string_view target) override;
  void Next() override;
  void Prev() override;
  // Valid until the iterator moves, is re-initialized or is destroyed.
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  // Sticky: after a corrupt entry the iterator stays !Valid() until Init().
  Status status() const override { return status_; }

 private:
  uint32_t RestartPoint(uint32_t index) const;
  void SeekToRestartPoint(uint32_t index);
  // Decodes the entry at next_ and makes it current. False at the end of the block (now
  // !Valid()) or on corruption (status_ set).
  bool ParseNextEntry();
  // Decodes the whole key stored at restart `index` into *key (a view into the block).
  bool RestartKey(uint32_t index, std::string_view* key);
  void MarkEnd();
  void MarkCorrupt(std::string_view what);

  const Comparator* comparator_ = nullptr;
  std::shared_ptr<const Block> block_;
  const char* data_ = nullptr;
  uint32_t restarts_ = 0;  // offset of the restart array = end of the entries
  uint32_t num_restarts_ = 0;
  uint32_t current_ = 0;        // offset of the current entry; restarts_ when !Valid()
  uint32_t next_ = 0;           // offset of the entry after the current one
  uint32_t restart_index_ = 0;  // the restart interval holding current_
  std::string_view key_;
  std::string_view value_;
  std::string key_buf_;  // holds key_ when it was prefix-compressed
  bool key_in_buf_ = false;
  Status status_;
  std::string_view file_name_;
  uint64_t block_offset_ = 0;
};

}  // namespace tessera::storage
