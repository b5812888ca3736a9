// The in-memory write buffer of the engine: a sorted set of internal keys (dbformat.h) with their
// values, held in an Arena until the memtable is flushed to an SSTable and dropped. Entries are
// ordered like InternalKeyComparator(): user key bytewise ascending, then (sequence << 8 | type)
// descending, so the newest version of a user key comes first.
//
// Each entry is one Arena allocation, stored inline in its skiplist node (skiplist.h):
//
//   entry := varint32(internal_key_len) internal_key varint32(value_len) value
//   internal_key := user_key fixed64_le((sequence << 8) | type)
//
// With a filter key extractor, a bloom filter over rows answers MayContain(), and a hash index
// from each row to its smallest entry lets a Seek() into a row start there (MemTableOptions).
//
// Thread-safety:
//   - Add() requires external synchronization among writers (the engine's write leader).
//   - Everything else may be called from any thread, concurrently with Add() and each other.
//   - Iterators returned by NewIterator() point into the memtable's memory and must not outlive it:
//     the engine holds a std::shared_ptr<MemTable> for as long as any of its iterators is alive.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tessera/storage/dbformat.h"
#include "tessera/storage/filter_key.h"
#include "tessera/storage/iterator.h"
#include "tessera/storage/skiplist.h"
#include "tessera/util/arena.h"

namespace tessera::storage {

struct MemTableOptions {
  // Largest size of the Arena blocks that hold entries and skiplist nodes, in bytes: blocks start
  // at 4 KiB and double up to it (arena.h). Default 1 MiB. Fixed for the life of a memtable.
  size_t arena_block_size = size_t{1} << 20;
  // If set, the memtable's arena counts its memory into this counter too, for as long as the
  // memtable lives: one counter shared by many memtables holds their total (arena.h).
  std::shared_ptr<std::atomic<size_t>> usage_total;
  // Seeds the skiplist's node heights. Only the shape of the skiplist depends on it.
  uint64_t skiplist_seed = 0x7e55e7a;
  // A bloom filter over the filter keys of the entries (as an SSTable's, filter_key.h), so that
  // a read of a key the memtable does not hold costs one cache line instead of a skiplist
  // search (RocksDB's memtable bloom). Off when either is unset. `filter_bits` is rounded up
  // to 512; its memory is taken zeroed from the system, and counted (in the memtable's usage
  // and usage_total) a page per entry added, up to its size: pages never touched cost nothing.
  const FilterKeyExtractor* filter_key_extractor = nullptr;
  size_t filter_bits = 0;
  // A hash index from each row (filter key) to the row's smallest entry, so that a Seek() into
  // a row the memtable holds starts at that entry instead of searching the skiplist from its
  // head: one or two cache misses instead of one per level and step, ~30 in a large memtable
  // (a one-row read's seek was 15 % of a server's CPU). Off when 0 or without an extractor.
  // Open addressing: rounded up to a power of two, 8 bytes each, taken zeroed from the system
  // and counted like the filter (a page per row indexed, up to its size); at most half of the
  // slots hold rows, and the rows added after that are not indexed (their seeks search). The
  // extractor must then give, for every key, a prefix of its user key, and no key's filter key
  // may be a proper prefix of another's (the engine's rows are: a row prefix ends with its
  // terminator), so that the entries of a row are contiguous and every key of a smaller row
  // sorts before any key that starts with the row.
  size_t row_index_slots = 0;
};

class MemTable {
 public:
  explicit MemTable(const MemTableOptions& options = MemTableOptions());
  MemTable(const MemTable&) = delete;
  MemTable& operator=(const MemTable&) = delete;
  ~MemTable();

  // Adds the entry (user_key, seq, type) -> value. Both views are copied.
  // REQUIRES: external synchronization among writers (the engine's write leader); no entry with
  // the same user key, sequence and type was added before; seq <= kMaxSequenceNumber.
  void Add(SequenceNumber seq, ValueType type, std::string_view user_key, std::string_view value);

  // An iterator over all entries in internal-key order: key() is the internal key, value() the
  // value; both stay valid as long as the memtable. Seek() takes an internal key, e.g.
  // MakeInternalKey(user_key, seq, kValueTypeForSeek) positions at the newest entry of user_key
  // with sequence <= seq (or at the next user key). A Seek() target shorter than the 8-byte
  // trailer is treated as a bare user key (positions at its newest entry).
  // The iterator may be used concurrently with Add(): it sees every entry added before it was
  // positioned and possibly some added since. It must not outlive the memtable.
  std::unique_ptr<Iterator> NewIterator() const;

  // False when no entry added so far has `filter_key` as its filter key; true when one may
  // have (always, without a filter or row index). Sees at least every entry added before the
  // caller synchronized with the writer (as an iterator does). While the row index holds every
  // row added, it answers exactly, in the cache lines a seek into the row reads next; the bloom
  // filter answers once a row was left out of it.
  bool MayContain(std::string_view filter_key) const;

  // Bytes of memory held (arena blocks, including skiplist nodes, and the filter). Grows in
  // whole blocks.
  size_t ApproximateMemoryUsage() const {
    return arena_.MemoryUsage() + filter_counted_.load(std::memory_order_relaxed) +
           row_index_counted_.load(std::memory_order_relaxed);
  }

  // Seeks done through the row index (tests, statistics).
  uint64_t RowIndexSeeks() const { return row_index_seeks_.load(std::memory_order_relaxed); }

  uint64_t NumEntries() const { return num_entries_.load(std::memory_order_acquire); }
  bool Empty() const { return NumEntries() == 0; }

  // The smallest and largest sequence numbers added so far. Meaningless when Empty()
  // (kMaxSequenceNumber and 0 respectively).
  SequenceNumber SmallestSequence() const {
    return smallest_sequence_.load(std::memory_order_acquire);
  }
  SequenceNumber LargestSequence() const {
    return largest_sequence_.load(std::memory_order_acquire);
  }

 private:
  class MemTableIterator;

  // Orders entries (pointers to their varint length prefix) by internal key. Defined inline in
  // the .cc, the only place the skiplist is instantiated, so that it inlines into the search loop.
  struct EntryComparator {
    int operator()(const char* a, const char* b) const;
  };
  using Table = SkipList<EntryComparator>;

  // The row index's slot of `row` (whose FilterHash is `hash`): the one that holds it (*entry
  // set to its smallest entry), else the empty one where it would go (*entry null). kNoSlot
  // when neither was found (only when the index is full).
  static constexpr size_t kNoSlot = ~size_t{0};
  size_t FindRow(std::string_view row, uint64_t hash, const char** entry) const;
  // Writer only: records `entry` (just inserted) under its row.
  void IndexRow(const char* entry, std::string_view row, uint64_t hash);
  // Positions `iter` at the first entry >= `target` (an entry-shaped search key whose internal
  // key is `internal_target`) through the row index, if it can; false: search instead.
  bool SeekThroughRow(const char* target, std::string_view internal_target,
                      Table::Iterator* iter) const;
  // Counts one more page of a lazily touched allocation of `limit` bytes (filter, row index).
  void CountPage(std::atomic<size_t>* counted, size_t limit);

  // Declared before table_, which allocates from it.
  Arena arena_;
  // Written by the single writer; readers go through the skiplist's lock-free protocol.
  Table table_;

  // The filter's 512-bit blocks (null without a filter): bits set by the writer before the
  // entry is inserted, read by anyone, through std::atomic_ref.
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  const FilterKeyExtractor* const filter_key_extractor_;
  const size_t filter_blocks_;
  std::unique_ptr<uint64_t[], FreeDeleter> filter_;
  const size_t filter_bytes_;
  // The filter memory counted as the memtable's (and into usage_total_ until it goes): a page
  // per entry added, up to filter_bytes_ -- a bound on the pages the entries' bits touched;
  // pages never written cost nothing. Written by the writer, read by anyone.
  std::atomic<size_t> filter_counted_{0};
  const std::shared_ptr<std::atomic<size_t>> usage_total_;  // may be null

  // The row index's slots (null without one): 0 when empty, else the row's smallest entry in
  // the low 48 bits and the top 16 bits of the row's hash above them; read through
  // std::atomic_ref. Memory counted in row_index_counted_ as filter_counted_ counts the filter's.
  const size_t row_slots_;  // a power of two, or 0
  std::unique_ptr<uint64_t[], FreeDeleter> row_index_;
  std::atomic<size_t> row_index_counted_{0};
  // Writer only: rows indexed so far, and the row of the latest Add and its slot (kNoSlot:
  // not indexed).
  size_t rows_indexed_ = 0;
  bool last_row_known_ = false;
  std::string_view last_row_;
  size_t last_row_slot_ = kNoSlot;
  mutable std::atomic<uint64_t> row_index_seeks_{0};
  // True while every row added so far is in the row index (set false by the writer, before
  // the Add that left a row out returns).
  std::atomic<bool> row_index_whole_{true};

  // Written by the single writer, read by anyone.
  std::atomic<uint64_t> num_entries_{0};
  std::atomic<SequenceNumber> smallest_sequence_{kMaxSequenceNumber};
  std::atomic<SequenceNumber> largest_sequence_{0};
};

}  // namespace tessera::storage
