// A sorted set of byte-string keys in a skiplist whose nodes live in an Arena: one writer,
// lock-free readers. The memtable is built on it (memtable.h); nothing else in the engine needs it.
//
// Keys are stored inline: AllocateKey(n) returns n bytes placed right after the new node's level-0
// link, the caller writes the key there, then Insert()s that pointer. A search step thus reads the
// link and the start of the key from the same cache line, and a memtable entry is one allocation.
// The list never looks inside keys itself; Compare does:
//   int operator()(const char* a, const char* b) const;   // <0, 0, >0 like memcmp
// It is called with keys from AllocateKey() and with the caller's search keys (Seek, Contains),
// which need not live in the Arena.
//
// Thread-safety:
//   - AllocateKey() and Insert() need external synchronization: one writer at a time.
//   - Contains() and Iterator need none: any number of readers may run concurrently with each
//     other and with the writer.
//   - The SkipList, and the Arena it allocates from, must outlive every Iterator over it.
//
// Invariants (what makes lock-free reading safe):
//   1. Nodes are never removed or freed before the SkipList (and its Arena) is destroyed, and a
//      node's key never changes after the node is published. A reader holding a node pointer can
//      therefore always dereference it.
//   2. A node is published by storing a pointer to it into its predecessor's level-0 link with
//      release semantics, after its key and all of its own links were written. Readers load links
//      with acquire semantics, so a reader that sees a node sees it fully initialized.
//   3. Levels are linked bottom-up, and every level of the list is a sorted sub-list of the level
//      below. A reader may see a node at level 0 but not yet at a higher level; that only makes its
//      search slower, never wrong.
//   4. max_height_ only grows. It is read with relaxed ordering: a reader that sees a new, larger
//      height before the corresponding head links are set finds nullptr at those levels of head_
//      (initialized at construction) and simply drops down a level.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <new>

#include "tessera/util/arena.h"
#include "tessera/util/random.h"

namespace tessera::storage {

template <class Compare>
class SkipList {
 private:
  struct Node;

 public:
  static constexpr int kMaxHeight = 12;
  // Each level holds about 1/kBranching of the nodes of the level below.
  static constexpr int kBranching = 4;

  // `arena` must outlive the SkipList; nodes and keys are taken from it. `seed` drives node heights
  // (the shape of the list, never its contents, depends on it).
  SkipList(Compare cmp, Arena* arena, uint64_t seed);
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // Returns `key_size` bytes of Arena memory, aligned to 8, for a key to be passed to Insert().
  // Memory not inserted is wasted until the Arena dies. REQUIRES: external synchronization.
  char* AllocateKey(size_t key_size);

  // Links `key` into the list.
  // REQUIRES: external synchronization among writers; `key` was returned by this list's
  // AllocateKey(), is filled in and was not inserted before; no key comparing equal to it is in
  // the list (equal keys would make Iterator::Prev skip entries).
  void Insert(const char* key);

  // Whether a key comparing equal to `key` is in the list.
  bool Contains(const char* key) const;

  // A cursor over the list. It sees every key inserted before it was positioned, and may or may
  // not see keys inserted concurrently. Not thread-safe itself: one thread per Iterator.
  class Iterator {
   public:
    // `list` must outlive the iterator. Starts !Valid().
    explicit Iterator(const SkipList* list) : list_(list), node_(nullptr) {}

    bool Valid() const { return node_ != nullptr; }
    // The key, valid as long as the list. REQUIRES: Valid().
    const char* key() const {
      assert(Valid());
      return node_->Key();
    }
    // REQUIRES: Valid().
    void Next() {
      assert(Valid());
      node_ = node_->Next(0);
    }
    // REQUIRES: Valid(). O(log n): links point forward only, so this searches from the head.
    void Prev() {
      assert(Valid());
      node_ = list_->FindLessThan(node_->Key());
      if (node_ == list_->head_) node_ = nullptr;
    }
    // Positions at the first key >= target.
    void Seek(const char* target) { node_ = list_->FindGreaterOrEqual(target, nullptr); }
    // Positions at `key` itself. REQUIRES: `key` was Insert()ed into this list, and the caller
    // synchronized with that Insert (as for any key a search could have found).
    void SeekToKey(const char* key) { node_ = NodeOf(key); }
    void SeekToFirst() { node_ = list_->head_->Next(0); }
    void SeekToLast() {
      node_ = list_->FindLast();
      if (node_ == list_->head_) node_ = nullptr;
    }

   private:
    const SkipList* list_;
    const Node* node_;
  };

 private:
  using Link = std::atomic<Node*>;
  static_assert(sizeof(Link) == sizeof(void*) && alignof(Link) <= 8);

  // Memory layout of a node of height h, from low to high addresses:
  //
  //   link[h-1] ... link[1] link[0] key bytes
  //                         ^ Node*
  //
  // A Node object is just its level-0 link; higher links precede it and the key follows it, so
  // link[0] and the key's first bytes share a cache line. Until Insert(), link[0] holds the
  // node's height (see AllocateKey).
  struct Node {
    Link* LinkAt(int level) { return &base - level; }
    const Link* LinkAt(int level) const { return &base - level; }
    const char* Key() const { return reinterpret_cast<const char*>(this + 1); }

    Node* Next(int level) const { return LinkAt(level)->load(std::memory_order_acquire); }
    void SetNext(int level, Node* x) { LinkAt(level)->store(x, std::memory_order_release); }
    // Relaxed accesses are for the writer (the only thread that changes links, so it always sees
    // its own stores) and for the links of a node not yet published (the publishing store orders
    // them). Readers use them only for prefetch hints, never to reach a node.
    Node* RelaxedNext(int level) const { return LinkAt(level)->load(std::memory_order_relaxed); }
    void RelaxedSetNext(int level, Node* x) { LinkAt(level)->store(x, std::memory_order_relaxed); }

    Link base{nullptr};
  };
  static_assert(sizeof(Node) == sizeof(Link));

  static Node* NodeOf(const char* key) {
    return reinterpret_cast<Node*>(const_cast<char*>(key)) - 1;
  }

  Node* NewNode(int height, size_t key_size);
  int RandomHeight();
  int MaxHeight() const { return max_height_.load(std::memory_order_relaxed); }
  bool Less(const char* a, const char* b) const { return cmp_(a, b) < 0; }

  // The first node with key >= `key`, or nullptr. When `prev` is given, fills prev[level] with the
  // last node before that position at every level below MaxHeight().
  Node* FindGreaterOrEqual(const char* key, Node** prev) const;
  // The last node with key < `key`, or head_.
  Node* FindLessThan(const char* key) const;
  // The last node, or head_ when the list is empty.
  Node* FindLast() const;

  // Constant after construction.
  const Compare cmp_;
  Arena* const arena_;
  Node* const head_;  // height kMaxHeight, no key; never compared

  // Written by the writer only, read by anyone (invariant 4).
  std::atomic<int> max_height_;

  // Writer only.
  Random rnd_;
  // For every level, the last node before the most recently inserted key (head_ at first). When
  // the next key goes right after the previous one (sequential inserts) this is exactly the
  // insertion point at every level and Insert() skips the search.
  Node* last_prev_[kMaxHeight];
};

template <class Compare>
SkipList<Compare>::SkipList(Compare cmp, Arena* arena, uint64_t seed)
    : cmp_(cmp), arena_(arena), head_(NewNode(kMaxHeight, 0)), max_height_(1), rnd_(seed) {
  for (int i = 0; i < kMaxHeight; i++) last_prev_[i] = head_;
}

template <class Compare>
typename SkipList<Compare>::Node* SkipList<Compare>::NewNode(int height, size_t key_size) {
  char* mem = arena_->AllocateAligned(sizeof(Link) * (height - 1) + sizeof(Node) + key_size);
  // Construct the links in place, all nullptr.
  Link* links = reinterpret_cast<Link*>(mem);
  for (int i = 0; i < height - 1; i++) new (&links[i]) Link(nullptr);
  return new (&links[height - 1]) Node();
}

template <class Compare>
int SkipList<Compare>::RandomHeight() {
  static_assert(kBranching == 4, "two random bits per level");
  // One draw gives 64 bits, enough for kMaxHeight - 1 coin flips of probability 1/4 each.
  uint64_t bits = rnd_.Next64();
  int height = 1;
  while (height < kMaxHeight && (bits & 3) == 0) {
    height++;
    bits >>= 2;
  }
  return height;
}

template <class Compare>
char* SkipList<Compare>::AllocateKey(size_t key_size) {
  const int height = RandomHeight();
  Node* x = NewNode(height, key_size);
  // Stash the height in the unpublished link[0] until Insert() needs it.
  x->RelaxedSetNext(0, reinterpret_cast<Node*>(static_cast<uintptr_t>(height)));
  return const_cast<char*>(x->Key());
}

template <class Compare>
typename SkipList<Compare>::Node* SkipList<Compare>::FindGreaterOrEqual(const char* key,
                                                                        Node** prev) const {
  Node* x = head_;
  int level = MaxHeight() - 1;
  // The node that stopped the descent at the level above: it is known to be >= key, so it need
  // not be compared again when the next level leads to it too (common: ~1/4 of the time).
  const Node* known_not_less = nullptr;
  while (true) {
    Node* next = x->Next(level);
    if (next != nullptr && next != known_not_less) {
      // The node after `next` at this level is likely the next one compared.
      __builtin_prefetch(next->RelaxedNext(level));
    }
    if (next != nullptr && next != known_not_less && Less(next->Key(), key)) {
      x = next;
    } else {
      if (prev != nullptr) prev[level] = x;
      if (level == 0) return next;
      known_not_less = next;
      level--;
    }
  }
}

template <class Compare>
typename SkipList<Compare>::Node* SkipList<Compare>::FindLessThan(const char* key) const {
  Node* x = head_;
  int level = MaxHeight() - 1;
  const Node* known_not_less = nullptr;
  while (true) {
    Node* next = x->Next(level);
    if (next != nullptr && next != known_not_less && Less(next->Key(), key)) {
      x = next;
    } else {
      if (level == 0) return x;
      known_not_less = next;
      level--;
    }
  }
}

template <class Compare>
typename SkipList<Compare>::Node* SkipList<Compare>::FindLast() const {
  Node* x = head_;
  int level = MaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (next != nullptr) {
      x = next;
    } else {
      if (level == 0) return x;
      level--;
    }
  }
}

template <class Compare>
void SkipList<Compare>::Insert(const char* key) {
  Node* const x = NodeOf(key);
  const int height = static_cast<int>(reinterpret_cast<uintptr_t>(x->RelaxedNext(0)));
  assert(height >= 1 && height <= kMaxHeight);

  // last_prev_ is the exact insertion point at every level iff `key` goes right after the previous
  // key at level 0: last_prev_[0] is that key's node, and a node between last_prev_[i] and `key`
  // at a higher level would also be one between them at level 0. Otherwise search.
  Node* const last = last_prev_[0];
  Node* const last_next = last->RelaxedNext(0);
  const bool hint_ok = (last == head_ || Less(last->Key(), key)) &&
                       (last_next == nullptr || Less(key, last_next->Key()));
  if (!hint_ok) {
    const int max_height = MaxHeight();
    FindGreaterOrEqual(key, last_prev_);
    for (int i = max_height; i < kMaxHeight; i++) last_prev_[i] = head_;
  }
  assert(last_prev_[0]->RelaxedNext(0) == nullptr ||
         cmp_(key, last_prev_[0]->RelaxedNext(0)->Key()) != 0);

  if (height > MaxHeight()) {
    // Readers may now descend from the new levels before x is linked there (invariant 4).
    max_height_.store(height, std::memory_order_relaxed);
  }

  // x is unreachable until the first SetNext below, so its own links can be written relaxed; the
  // predecessors' links are read relaxed because only this (the single) writer ever changes them.
  for (int i = 0; i < height; i++) x->RelaxedSetNext(i, last_prev_[i]->RelaxedNext(i));
  // Publish bottom-up (invariant 3); each release store makes all of x visible (invariant 2).
  for (int i = 0; i < height; i++) {
    last_prev_[i]->SetNext(i, x);
    last_prev_[i] = x;  // for a following key just after this one
  }
}

template <class Compare>
bool SkipList<Compare>::Contains(const char* key) const {
  Node* x = FindGreaterOrEqual(key, nullptr);
  return x != nullptr && cmp_(key, x->Key()) == 0;
}

}  // namespace tessera::storage
