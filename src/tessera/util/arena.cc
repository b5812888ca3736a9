#include "tessera/util/arena.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tessera {

Arena::Arena(size_t block_size, std::shared_ptr<std::atomic<size_t>> shared_usage)
    : block_size_(block_size),
      next_block_size_(std::min(kFirstBlockSize, block_size)),
      shared_usage_(std::move(shared_usage)) {}

Arena::~Arena() {
  if (shared_usage_ != nullptr) {
    shared_usage_->fetch_sub(MemoryUsage(), std::memory_order_relaxed);
  }
}

char* Arena::AllocateFallback(size_t bytes) {
  if (bytes > block_size_ / 4) {
    // A large object gets its own block so the current block's remainder is not wasted.
    return AllocateNewBlock(bytes);
  }
  // While blocks are still small, one may be no bigger than `bytes`: it then holds just that.
  const size_t size = std::max(next_block_size_, bytes);
  next_block_size_ = std::min(next_block_size_ * 2, block_size_);
  alloc_ptr_ = AllocateNewBlock(size);
  alloc_bytes_remaining_ = size;
  char* result = alloc_ptr_;
  alloc_ptr_ += bytes;
  alloc_bytes_remaining_ -= bytes;
  return result;
}

char* Arena::AllocateAligned(size_t bytes) {
  constexpr size_t kAlign = alignof(std::max_align_t) > 8 ? alignof(std::max_align_t) : 8;
  size_t mod = reinterpret_cast<uintptr_t>(alloc_ptr_) & (kAlign - 1);
  size_t slop = (mod == 0 ? 0 : kAlign - mod);
  size_t needed = bytes + slop;
  if (needed <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_ + slop;
    alloc_ptr_ += needed;
    alloc_bytes_remaining_ -= needed;
    return result;
  }
  // New blocks come from new[], which is aligned for max_align_t.
  return AllocateFallback(bytes);
}

char* Arena::AllocateNewBlock(size_t bytes) {
  // new char[] (not make_unique) leaves the block uninitialized: no wasted zero-fill.
  blocks_.push_back(std::unique_ptr<char[]>(new char[bytes]));
  memory_usage_.fetch_add(bytes + sizeof(char*), std::memory_order_relaxed);
  if (shared_usage_ != nullptr) {
    shared_usage_->fetch_add(bytes + sizeof(char*), std::memory_order_relaxed);
  }
  return blocks_.back().get();
}

}  // namespace tessera
