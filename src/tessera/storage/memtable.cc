#include "tessera/storage/memtable.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "tessera/storage/bloom.h"
#include "tessera/util/coding.h"

namespace tessera::storage {
namespace {

// Decodes the varint32 at `p`. Entries are written by Add(), so the varint is well formed and at
// most 5 bytes long; almost always it is one byte.
inline const char* DecodeLength(const char* p, uint32_t* len) {
  uint32_t b = static_cast<uint8_t>(*p);
  if (b < 128) {
    *len = b;
    return p + 1;
  }
  return GetVarint32Ptr(p, p + 5, len);
}

// The internal key of the entry at `entry`.
inline std::string_view EntryKey(const char* entry) {
  uint32_t len;
  const char* p = DecodeLength(entry, &len);
  return std::string_view(p, len);
}

inline std::string_view EntryValue(const char* entry) {
  std::string_view key = EntryKey(entry);
  uint32_t len;
  const char* p = DecodeLength(key.data() + key.size(), &len);
  return std::string_view(p, len);
}

inline uint64_t LoadBigEndian64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);  // coding.h assumes a little-endian host too
}

}  // namespace

// The search loop calls this ~30 times per Add() or Seek(), so it avoids calls where it can.
inline int MemTable::EntryComparator::operator()(const char* a, const char* b) const {
  uint32_t a_len, b_len;
  a = DecodeLength(a, &a_len);
  b = DecodeLength(b, &b_len);
  // Every key in the table, and every seek key built by MemTableIterator, has a trailer.
  const size_t a_user = a_len - kTrailerSize;
  const size_t b_user = b_len - kTrailerSize;
  const size_t common = std::min(a_user, b_user);
  size_t done = 0;
  if (common >= 8) {
    // Random keys almost always differ in their first 8 bytes: one compare, no memcmp call.
    const uint64_t a8 = LoadBigEndian64(a);
    const uint64_t b8 = LoadBigEndian64(b);
    if (a8 != b8) return a8 < b8 ? -1 : 1;
    done = 8;
  }
  int r = std::memcmp(a + done, b + done, common - done);
  if (r != 0) return r;
  if (a_user != b_user) return a_user < b_user ? -1 : 1;
  // Same user key: the larger (sequence, type) sorts first.
  const uint64_t a_trailer = DecodeFixed64(a + a_user);
  const uint64_t b_trailer = DecodeFixed64(b + b_user);
  if (a_trailer != b_trailer) return a_trailer > b_trailer ? -1 : 1;
  return 0;
}

class MemTable::MemTableIterator final : public Iterator {
 public:
  // `mem` must outlive the iterator.
  explicit MemTableIterator(const MemTable* mem) : mem_(mem), iter_(&mem->table_) {}

  bool Valid() const override { return iter_.Valid(); }
  void SeekToFirst() override { iter_.SeekToFirst(); }
  void SeekToLast() override { iter_.SeekToLast(); }
  void Seek(std::string_view target) override {
    // The skiplist compares entries, so give the target an entry's length prefix: built in
    // inline_ when it fits (a one-row read seeks an iterator made for it, so a heap buffer would
    // be one allocation a read), else in seek_key_, which keeps its capacity.
    const bool whole = target.size() >= kTrailerSize;  // else a user key: add a seek trailer
    const size_t key_size = whole ? target.size() : target.size() + kTrailerSize;
    const size_t needed = kMaxVarint32Bytes + key_size;
    char* buf = inline_;
    if (needed > sizeof(inline_)) {
      seek_key_.resize(needed);
      buf = seek_key_.data();
    }
    char* p = EncodeVarint32(buf, static_cast<uint32_t>(key_size));
    std::memcpy(p, target.data(), target.size());
    if (!whole) {
      EncodeFixed64(p + target.size(), PackSequenceAndType(kMaxSequenceNumber, kValueTypeForSeek));
    }
    if (mem_->SeekThroughRow(buf, std::string_view(p, key_size), &iter_)) return;
    iter_.Seek(buf);
  }
  void Next() override { iter_.Next(); }
  void Prev() override { iter_.Prev(); }
  std::string_view key() const override { return EntryKey(iter_.key()); }
  std::string_view value() const override { return EntryValue(iter_.key()); }
  Status status() const override { return Status(); }

 private:
  static constexpr size_t kMaxVarint32Bytes = 5;
  const MemTable* const mem_;
  Table::Iterator iter_;
  char inline_[128];
  std::string seek_key_;
};

namespace {

constexpr size_t kFilterWordsPerBlock = 8;  // 512 bits: one cache line
constexpr int kFilterProbes = 6;

// The block of `h` and, for each probe, the bit in it: double hashing on h's low half.
template <typename F>
void ForEachFilterBit(uint64_t h, size_t blocks, F&& f) {
  const size_t block = static_cast<size_t>((h >> 32) % blocks) * kFilterWordsPerBlock;
  uint32_t a = static_cast<uint32_t>(h);
  const uint32_t delta = (a >> 17) | (a << 15) | 1;
  for (int i = 0; i < kFilterProbes; ++i) {
    const uint32_t bit = a % 512;
    f(block + bit / 64, uint64_t{1} << (bit % 64));
    a += delta;
  }
}

}  // namespace

void MemTable::FreeDeleter::operator()(void* p) const { std::free(p); }

namespace {

size_t RowSlots(const MemTableOptions& o) {
  if (o.row_index_slots == 0 || o.filter_key_extractor == nullptr) return 0;
  return std::bit_ceil(o.row_index_slots);
}

// A row index slot: an entry's address (user-space addresses fit in 48 bits on the hosts we
// build for; an entry above them is simply not indexed) and a tag of the row's hash.
constexpr int kTagShift = 48;
constexpr uint64_t kAddressMask = (uint64_t{1} << kTagShift) - 1;

inline uint64_t RowSlotValue(const char* entry, uint64_t hash) {
  return (hash >> kTagShift << kTagShift) | reinterpret_cast<uintptr_t>(entry);
}

inline const char* RowSlotEntry(uint64_t slot) {
  return reinterpret_cast<const char*>(slot & kAddressMask);
}

// calloc: the system's zeroed pages, resident only once written.
template <typename T>
T* AllocateZeroed(size_t n) {
  void* p = std::calloc(n, sizeof(T));
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<T*>(p);
}

// Steps along the row from its smallest entry before a seek gives up and searches instead: a
// seek to a row's start takes none, one to a column of a short row a few.
constexpr int kMaxRowSteps = 16;

}  // namespace

MemTable::MemTable(const MemTableOptions& options)
    : arena_(options.arena_block_size, options.usage_total),
      table_(EntryComparator(), &arena_, options.skiplist_seed),
      filter_key_extractor_(options.filter_bits > 0 || options.row_index_slots > 0
                                ? options.filter_key_extractor
                                : nullptr),
      filter_blocks_(filter_key_extractor_ == nullptr ? 0 : (options.filter_bits + 511) / 512),
      filter_bytes_(filter_blocks_ * kFilterWordsPerBlock * sizeof(uint64_t)),
      usage_total_(options.usage_total),
      row_slots_(RowSlots(options)) {
  if (filter_blocks_ > 0) {
    filter_.reset(AllocateZeroed<uint64_t>(filter_blocks_ * kFilterWordsPerBlock));
  }
  if (row_slots_ > 0) row_index_.reset(AllocateZeroed<uint64_t>(row_slots_));
}

MemTable::~MemTable() {
  if (usage_total_ != nullptr) {
    usage_total_->fetch_sub(filter_counted_.load(std::memory_order_relaxed) +
                                row_index_counted_.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
  }
}

void MemTable::CountPage(std::atomic<size_t>* counted, size_t limit) {
  const size_t now = counted->load(std::memory_order_relaxed);
  if (now >= limit) return;
  const size_t page = std::min<size_t>(4096, limit - now);
  counted->store(now + page, std::memory_order_relaxed);
  if (usage_total_ != nullptr) usage_total_->fetch_add(page, std::memory_order_relaxed);
}

size_t MemTable::FindRow(std::string_view row, uint64_t hash, const char** entry) const {
  const uint64_t tag = hash >> kTagShift;
  const size_t mask = row_slots_ - 1;
  size_t i = hash & mask;
  for (size_t probes = 0; probes < row_slots_; ++probes, i = (i + 1) & mask) {
    const uint64_t slot = std::atomic_ref<uint64_t>(row_index_[i]).load(std::memory_order_acquire);
    if (slot == 0) {
      *entry = nullptr;
      return i;
    }
    if ((slot >> kTagShift) == tag &&
        filter_key_extractor_->FilterKey(EntryKey(RowSlotEntry(slot))) == row) {
      *entry = RowSlotEntry(slot);
      return i;
    }
  }
  *entry = nullptr;
  return kNoSlot;
}

void MemTable::IndexRow(const char* entry, std::string_view row, uint64_t hash) {
  const char* first;
  size_t i;
  if (last_row_known_ && row == last_row_) {
    // Another entry of the latest row (a row's cells come together): its slot is known.
    i = last_row_slot_;
    if (i == kNoSlot) return;  // the row is not indexed
    first = RowSlotEntry(std::atomic_ref<uint64_t>(row_index_[i]).load(std::memory_order_relaxed));
  } else {
    i = FindRow(row, hash, &first);
    last_row_known_ = true;
    last_row_ = row;
    last_row_slot_ = kNoSlot;
    if (i == kNoSlot) {
      row_index_whole_.store(false, std::memory_order_release);
      return;
    }
    if (first == nullptr) {
      // A new row: indexed while the index is at most half full (short probes), and while the
      // entry's address fits its slot.
      if (2 * rows_indexed_ >= row_slots_ ||
          (reinterpret_cast<uintptr_t>(entry) >> kTagShift) != 0) {
        row_index_whole_.store(false, std::memory_order_release);
        return;
      }
      ++rows_indexed_;
      CountPage(&row_index_counted_, row_slots_ * sizeof(uint64_t));
    }
    last_row_slot_ = i;
  }
  if (first == nullptr || EntryComparator()(entry, first) < 0) {
    std::atomic_ref<uint64_t>(row_index_[i])
        .store(RowSlotValue(entry, hash), std::memory_order_release);
  }
}

bool MemTable::SeekThroughRow(const char* target, std::string_view internal_target,
                              Table::Iterator* iter) const {
  if (row_slots_ == 0) return false;
  const std::string_view row = filter_key_extractor_->FilterKey(internal_target);
  const char* first;
  FindRow(row, FilterHash(row), &first);
  if (first == nullptr) return false;
  // Every entry before the row's smallest belongs to a smaller row and so sorts before
  // `target`, which starts with the row: the first entry >= target is this one or after it.
  iter->SeekToKey(first);
  for (int step = 0; step < kMaxRowSteps; ++step) {
    if (!iter->Valid() || EntryComparator()(iter->key(), target) >= 0) {
      row_index_seeks_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    iter->Next();
  }
  return false;
}

bool MemTable::MayContain(std::string_view filter_key) const {
  if (row_slots_ > 0 && row_index_whole_.load(std::memory_order_acquire)) {
    const char* first;
    FindRow(filter_key, FilterHash(filter_key), &first);
    return first != nullptr;
  }
  if (filter_ == nullptr) return true;
  bool all = true;
  ForEachFilterBit(FilterHash(filter_key), filter_blocks_, [&](size_t word, uint64_t mask) {
    all &= (std::atomic_ref<uint64_t>(filter_[word]).load(std::memory_order_relaxed) & mask) != 0;
  });
  return all;
}

void MemTable::Add(SequenceNumber seq, ValueType type, std::string_view user_key,
                   std::string_view value) {
  assert(seq <= kMaxSequenceNumber);
  assert(user_key.size() + kTrailerSize <= std::numeric_limits<uint32_t>::max());
  assert(value.size() <= std::numeric_limits<uint32_t>::max());
  const uint32_t key_len = static_cast<uint32_t>(user_key.size() + kTrailerSize);
  const uint32_t value_len = static_cast<uint32_t>(value.size());
  const size_t encoded_len = VarintLength(key_len) + key_len + VarintLength(value_len) + value_len;

  char* const entry = table_.AllocateKey(encoded_len);
  char* p = EncodeVarint32(entry, key_len);
  if (!user_key.empty()) std::memcpy(p, user_key.data(), user_key.size());
  p += user_key.size();
  EncodeFixed64(p, PackSequenceAndType(seq, type));
  p += kTrailerSize;
  p = EncodeVarint32(p, value_len);
  if (value_len != 0) std::memcpy(p, value.data(), value_len);
  assert(p + value_len == entry + encoded_len);

  std::string_view row;
  uint64_t row_hash = 0;
  if (filter_ != nullptr || row_slots_ > 0) {
    row =
        filter_key_extractor_->FilterKey(std::string_view(entry + VarintLength(key_len), key_len));
    row_hash = FilterHash(row);
  }
  if (filter_ != nullptr) {
    // Before the insert: whoever can see the entry sees its bits (the insert publishes with
    // release, and readers synchronize with the writer before they look).
    ForEachFilterBit(row_hash, filter_blocks_, [&](size_t word, uint64_t mask) {
      std::atomic_ref<uint64_t>(filter_[word]).fetch_or(mask, std::memory_order_relaxed);
    });
    CountPage(&filter_counted_, filter_bytes_);
  }
  table_.Insert(entry);
  // After the insert, so that a reader who finds the entry through the index can walk on from
  // it; before Add returns, so that a reader synchronized with the writer finds the row.
  if (row_slots_ > 0) IndexRow(entry, row, row_hash);

  // Single writer: plain read-modify-write is enough; release pairs with the readers' acquire.
  num_entries_.store(num_entries_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (seq < smallest_sequence_.load(std::memory_order_relaxed)) {
    smallest_sequence_.store(seq, std::memory_order_release);
  }
  if (seq > largest_sequence_.load(std::memory_order_relaxed)) {
    largest_sequence_.store(seq, std::memory_order_release);
  }
}

std::unique_ptr<Iterator> MemTable::NewIterator() const {
  return std::make_unique<MemTableIterator>(this);
}

}  // namespace tessera::storage
