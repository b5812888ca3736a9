#include "tessera/storage/block.h"

#include "tessera/util/coding.h"

namespace tessera::storage {
namespace {

// Decodes an entry header at [p, limit): shared, unshared and value lengths, and checks that
// the key suffix and value fit before `limit`. Returns the first byte of the key suffix, or
// nullptr when the entry is malformed.
inline const char* DecodeEntry(const char* p, const char* limit, uint32_t* shared,
                               uint32_t* unshared, uint32_t* value_length) {
  if (limit - p < 3) return nullptr;
  *shared = static_cast<uint8_t>(p[0]);
  *unshared = static_cast<uint8_t>(p[1]);
  *value_length = static_cast<uint8_t>(p[2]);
  if ((*shared | *unshared | *value_length) < 128) {
    p += 3;  // the common case: all three fit in one byte
  } else {
    if ((p = GetVarint32Ptr(p, limit, shared)) == nullptr) return nullptr;
    if ((p = GetVarint32Ptr(p, limit, unshared)) == nullptr) return nullptr;
    if ((p = GetVarint32Ptr(p, limit, value_length)) == nullptr) return nullptr;
  }
  if (static_cast<uint64_t>(limit - p) < uint64_t{*unshared} + *value_length) return nullptr;
  return p;
}

}  // namespace

Block::Block(PassKey, BlockContents contents, uint32_t restarts_offset, uint32_t num_restarts)
    : owned_(std::move(contents.owned)),
      data_(contents.data),
      restarts_offset_(restarts_offset),
      num_restarts_(num_restarts) {}

StatusOr<std::shared_ptr<const Block>> Block::Create(BlockContents contents,
                                                     std::string_view file_name, uint64_t offset) {
  const std::string_view data = contents.data;
  if (data.size() < sizeof(uint32_t) || data.size() > kMaxBlockSize) {
    return CorruptionError(file_name, offset, StrCat("bad block size ", data.size()));
  }
  const uint32_t max_restarts = (data.size() - sizeof(uint32_t)) / sizeof(uint32_t);
  const uint32_t num_restarts = DecodeFixed32(data.data() + data.size() - sizeof(uint32_t));
  if (num_restarts > max_restarts) {
    return CorruptionError(file_name, offset,
                           StrCat("bad restart count ", num_restarts, " in block"));
  }
  const uint32_t restarts_offset =
      static_cast<uint32_t>(data.size() - (1 + num_restarts) * sizeof(uint32_t));
  if (restarts_offset > 0) {
    // A block with entries starts with a restart at 0 and has strictly increasing restarts
    // inside the entries; Seek's binary search and Prev rely on this.
    if (num_restarts == 0) return CorruptionError(file_name, offset, "block has no restarts");
    const char* array = data.data() + restarts_offset;
    uint32_t previous = 0;
    for (uint32_t i = 0; i < num_restarts; ++i) {
      const uint32_t r = DecodeFixed32(array + i * sizeof(uint32_t));
      if ((i == 0 && r != 0) || (i > 0 && r <= previous) || r >= restarts_offset) {
        return CorruptionError(file_name, offset, StrCat("bad restart point ", i, " in block"));
      }
      previous = r;
    }
  }
  return std::make_shared<const Block>(PassKey(), std::move(contents), restarts_offset,
                                       num_restarts);
}

std::unique_ptr<Iterator> Block::NewIterator(std::shared_ptr<const Block> block,
                                             const Comparator* comparator,
                                             std::string_view file_name, uint64_t offset) {
  auto iter = std::make_unique<BlockIter>();
  iter->Init(comparator, std::move(block), file_name, offset);
  return iter;
}

void BlockIter::Init(const Comparator* comparator, std::shared_ptr<const Block> block,
                     std::string_view file_name, uint64_t offset) {
  comparator_ = comparator;
  block_ = std::move(block);
  data_ = block_->data_.data();
  restarts_ = block_->restarts_offset_;
  num_restarts_ = block_->num_restarts_;
  file_name_ = file_name;
  block_offset_ = offset;
  status_ = Status();
  MarkEnd();
}

void BlockIter::Clear() {
  block_.reset();
  data_ = nullptr;
  restarts_ = 0;
  num_restarts_ = 0;
  MarkEnd();
}

uint32_t BlockIter::RestartPoint(uint32_t index) const {
  return DecodeFixed32(data_ + restarts_ + index * sizeof(uint32_t));
}

void BlockIter::MarkEnd() {
  current_ = next_ = restarts_;
  restart_index_ = num_restarts_;
  key_ = value_ = {};
  key_in_buf_ = false;
}

void BlockIter::MarkCorrupt(std::string_view what) {
  status_ = CorruptionError(file_name_, block_offset_,
                            StrCat(what, " at byte ", current_, " of the block"));
  MarkEnd();
}

void BlockIter::SeekToRestartPoint(uint32_t index) {
  restart_index_ = index;
  next_ = RestartPoint(index);
  key_ = {};
  key_in_buf_ = false;
}

bool BlockIter::ParseNextEntry() {
  current_ = next_;
  if (current_ >= restarts_) {
    MarkEnd();
    return false;
  }
  uint32_t shared, unshared, value_length;
  const char* p =
      DecodeEntry(data_ + current_, data_ + restarts_, &shared, &unshared, &value_length);
  if (p == nullptr) {
    MarkCorrupt("bad entry");
    return false;
  }
  while (restart_index_ + 1 < num_restarts_ && RestartPoint(restart_index_ + 1) <= current_) {
    ++restart_index_;
  }
  if (shared > key_.size() || (shared != 0 && RestartPoint(restart_index_) == current_)) {
    MarkCorrupt("bad shared key length");
    return false;
  }
  if (shared == 0) {
    key_ = std::string_view(p, unshared);
    key_in_buf_ = false;
  } else {
    if (key_in_buf_) {
      key_buf_.resize(shared);
    } else {
      key_buf_.assign(key_.data(), shared);
      key_in_buf_ = true;
    }
    key_buf_.append(p, unshared);
    key_ = key_buf_;
  }
  value_ = std::string_view(p + unshared, value_length);
  next_ = static_cast<uint32_t>(p + unshared + value_length - data_);
  return true;
}

bool BlockIter::RestartKey(uint32_t index, std::string_view* key) {
  const uint32_t offset = RestartPoint(index);
  uint32_t shared, unshared, value_length;
  const char* p = DecodeEntry(data_ + offset, data_ + restarts_, &shared, &unshared, &value_length);
  if (p == nullptr || shared != 0) {
    current_ = offset;
    MarkCorrupt("bad restart entry");
    return false;
  }
  *key = std::string_view(p, unshared);
  return true;
}

void BlockIter::SeekToFirst() {
  if (!status_.ok() || restarts_ == 0) return MarkEnd();
  SeekToRestartPoint(0);
  ParseNextEntry();
}

void BlockIter::SeekToLast() {
  if (!status_.ok() || restarts_ == 0) return MarkEnd();
  SeekToRestartPoint(num_restarts_ - 1);
  if (!ParseNextEntry()) return;
  while (next_ < restarts_) {
    if (!ParseNextEntry()) return;
  }
}

void BlockIter::Seek(std::string_view target) {
  if (!status_.ok() || restarts_ == 0) return MarkEnd();
  // Find the last restart whose key is < target; the answer is in its interval or, when every
  // key of that interval is < target, is the next restart's first entry.
  uint32_t left = 0;
  uint32_t right = num_restarts_ - 1;
  while (left < right) {
    const uint32_t mid = left + (right - left + 1) / 2;
    std::string_view mid_key;
    if (!RestartKey(mid, &mid_key)) return;
    if (comparator_->Compare(mid_key, target) < 0) {
      left = mid;
    } else {
      right = mid - 1;
    }
  }
  SeekToRestartPoint(left);
  while (ParseNextEntry()) {
    if (comparator_->Compare(key_, target) >= 0) return;
  }
}

void BlockIter::Next() {
  if (!Valid()) return;
  ParseNextEntry();
}

void BlockIter::Prev() {
  if (!Valid()) return;
  // Back up to the last restart before the current entry, then decode forward to the entry
  // just before it. The result's offset is always smaller, so backward loops end.
  const uint32_t original = current_;
  while (RestartPoint(restart_index_) >= original) {
    if (restart_index_ == 0) return MarkEnd();
    --restart_index_;
  }
  SeekToRestartPoint(restart_index_);
  do {
    if (!ParseNextEntry()) return;
  } while (next_ < original);
}

}  // namespace tessera::storage
