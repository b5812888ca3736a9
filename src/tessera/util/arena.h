// A bump allocator: many small allocations, freed all at once when the arena dies. Memory comes
// in blocks (default 1 MiB); large requests get a block of their own.
//
// Thread-safety: Allocate* must be called by one thread at a time (the memtable's writer).
// MemoryUsage() may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace tessera {

class Arena {
 public:
  explicit Arena(size_t block_size = 1 << 20);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  char* Allocate(size_t bytes);
  // Memory aligned to alignof(std::max_align_t) (at least 8).
  char* AllocateAligned(size_t bytes);
  // Bytes reserved from the system so far.
  size_t MemoryUsage() const { return memory_usage_.load(std::memory_order_relaxed); }

 private:
  char* AllocateFallback(size_t bytes);
  char* AllocateNewBlock(size_t bytes);

  const size_t block_size_;
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
