// A bump allocator: many small allocations, freed all at once when the arena dies. Memory comes
// in blocks that start small (4 KiB, or block_size if smaller) and double up to block_size
// (default 1 MiB), so that an arena that holds little costs little; requests larger than a
// quarter of block_size get a block of their own.
//
// An arena may also count its blocks into a counter it shares with other arenas (`shared_usage`):
// every block adds its size when it is reserved, and the arena subtracts all of them when it dies.
// The counter thus holds the memory of every live arena that shares it, read with one atomic load.
//
// Thread-safety: Allocate* must be called by one thread at a time (the memtable's writer).
// MemoryUsage() may be called from any thread, and so may the shared counter be read.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace tessera {

class Arena {
 public:
  // The first block is min(kFirstBlockSize, block_size) bytes.
  static constexpr size_t kFirstBlockSize = 4096;

  explicit Arena(size_t block_size = 1 << 20,
                 std::shared_ptr<std::atomic<size_t>> shared_usage = nullptr);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();

  char* Allocate(size_t bytes);
  // Memory aligned to alignof(std::max_align_t) (at least 8).
  char* AllocateAligned(size_t bytes);
  // Bytes reserved from the system so far.
  size_t MemoryUsage() const { return memory_usage_.load(std::memory_order_relaxed); }

 private:
  char* AllocateFallback(size_t bytes);
  char* AllocateNewBlock(size_t bytes);

  const size_t block_size_;
  size_t next_block_size_;  // of the next shared block; doubles up to block_size_
  const std::shared_ptr<std::atomic<size_t>> shared_usage_;  // may be null
  char* alloc_ptr_ = nullptr;
  size_t alloc_bytes_remaining_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> memory_usage_{0};
};

inline char* Arena::Allocate(size_t bytes) {
  if (bytes <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_;
    alloc_ptr_ += bytes;
    alloc_bytes_remaining_ -= bytes;
    return result;
  }
  return AllocateFallback(bytes);
}

}  // namespace tessera
