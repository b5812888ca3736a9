#include "tessera/storage/merger.h"

#include <cassert>
#include <cstdint>
#include <string_view>
#include <utility>

namespace tessera::storage {
namespace {

// With at most this many children the current one is found by a linear scan; above it, by a binary
// heap. A scan of a few cached keys beats heap bookkeeping, and the heap wins as children grow.
constexpr size_t kMaxLinearChildren = 4;

// Entries are ordered by (key, child index, position within the child) in the forward direction.
// The iterator keeps every positioned child in `live_`, with its current key cached (a child's key
// stays valid until that child moves), and `live_[cur_]` is the child to yield:
//   forward: each child is at its first entry after the current position, cur_ the smallest;
//   reverse: each child is at its last entry before the current position, cur_ the largest.
// In heap mode live_ is a binary heap whose root (cur_ == 0) comes first in the direction.
class MergingIterator final : public Iterator {
 public:
  MergingIterator(const Comparator* cmp, std::vector<std::unique_ptr<Iterator>> children)
      : cmp_(cmp),
        children_(std::move(children)),
        use_heap_(children_.size() > kMaxLinearChildren) {
    live_.reserve(children_.size());
  }

  bool Valid() const override { return !live_.empty(); }

  void SeekToFirst() override {
    for (auto& child : children_) child->SeekToFirst();
    direction_ = Direction::kForward;
    Rebuild();
  }

  void SeekToLast() override {
    for (auto& child : children_) child->SeekToLast();
    direction_ = Direction::kReverse;
    Rebuild();
  }

  void Seek(std::string_view target) override {
    for (auto& child : children_) child->Seek(target);
    direction_ = Direction::kForward;
    Rebuild();
  }

  void Next() override {
    assert(Valid());
    if (direction_ != Direction::kForward) {
      SwitchToForward();
      return;
    }
    children_[live_[cur_].child]->Next();
    AfterCurrentMoved();
  }

  void Prev() override {
    assert(Valid());
    if (direction_ != Direction::kReverse) {
      SwitchToReverse();
      return;
    }
    children_[live_[cur_].child]->Prev();
    AfterCurrentMoved();
  }

  std::string_view key() const override {
    assert(Valid());
    return live_[cur_].key;
  }

  std::string_view value() const override {
    assert(Valid());
    return children_[live_[cur_].child]->value();
  }

  Status status() const override {
    for (const auto& child : children_) {
      Status s = child->status();
      if (!s.ok()) return s;
    }
    return Status();
  }

 private:
  enum class Direction : uint8_t { kForward, kReverse };

  struct Entry {
    std::string_view key;  // children_[child]->key(), cached
    uint32_t child;
  };

  // Whether `a` is yielded before `b` in the current direction.
  bool Before(const Entry& a, const Entry& b) const {
    int r = cmp_->Compare(a.key, b.key);
    if (direction_ == Direction::kForward) return r < 0 || (r == 0 && a.child < b.child);
    return r > 0 || (r == 0 && a.child > b.child);
  }

  bool KeyEquals(const Iterator& it, std::string_view key) const {
    return cmp_->Compare(it.key(), key) == 0;
  }

  // Collects the positioned children after all of them moved.
  void Rebuild() {
    live_.clear();
    for (size_t i = 0; i < children_.size(); i++) {
      Iterator& child = *children_[i];
      if (child.Valid()) {
        live_.push_back(Entry{child.key(), static_cast<uint32_t>(i)});
      } else if (!child.status().ok()) {
        live_.clear();  // stop at the first error, see merger.h
        return;
      }
    }
    if (use_heap_) {
      cur_ = 0;
      for (size_t i = live_.size() / 2; i-- > 0;) SiftDown(i);
    } else {
      FindCurrentLinear();
    }
  }

  // Restores the invariant after the current child (only) moved.
  void AfterCurrentMoved() {
    Entry& e = live_[cur_];
    Iterator& child = *children_[e.child];
    if (child.Valid()) {
      e.key = child.key();
    } else if (!child.status().ok()) {
      live_.clear();
      return;
    } else {
      e = live_.back();
      live_.pop_back();
      if (live_.empty()) return;
    }
    if (use_heap_) {
      SiftDown(0);
    } else {
      FindCurrentLinear();
    }
  }

  void FindCurrentLinear() {
    cur_ = 0;
    for (size_t i = 1; i < live_.size(); i++) {
      if (Before(live_[i], live_[cur_])) cur_ = i;
    }
  }

  void SiftDown(size_t i) {
    const size_t n = live_.size();
    Entry moving = live_[i];
    while (true) {
      size_t first = 2 * i + 1;
      if (first >= n) break;
      if (first + 1 < n && Before(live_[first + 1], live_[first])) first++;
      if (!Before(live_[first], moving)) break;
      live_[i] = live_[first];
      i = first;
    }
    live_[i] = moving;
  }

  // Current position (k, i): repositions every other child at its first entry after (k, i), steps
  // child i forward, and continues forward.
  void SwitchToForward() {
    const uint32_t current = live_[cur_].child;
    const std::string_view k = live_[cur_].key;  // valid until children_[current] moves
    for (uint32_t j = 0; j < children_.size(); j++) {
      if (j == current) continue;
      Iterator& child = *children_[j];
      child.Seek(k);
      if (j < current) {
        // Equal keys of an earlier child come before (k, i): skip them.
        while (child.Valid() && KeyEquals(child, k)) child.Next();
      }
    }
    children_[current]->Next();
    direction_ = Direction::kForward;
    Rebuild();
  }

  // Current position (k, i): repositions every other child at its last entry before (k, i), steps
  // child i back, and continues backward.
  void SwitchToReverse() {
    const uint32_t current = live_[cur_].child;
    const std::string_view k = live_[cur_].key;
    for (uint32_t j = 0; j < children_.size(); j++) {
      if (j == current) continue;
      Iterator& child = *children_[j];
      child.Seek(k);
      if (j < current) {
        // Equal keys of an earlier child come before (k, i): keep them.
        while (child.Valid() && KeyEquals(child, k)) child.Next();
      }
      if (child.Valid()) {
        child.Prev();
      } else if (child.status().ok()) {
        child.SeekToLast();  // every entry of the child is before (k, i)
      }
    }
    children_[current]->Prev();
    direction_ = Direction::kReverse;
    Rebuild();
  }

  const Comparator* const cmp_;
  const std::vector<std::unique_ptr<Iterator>> children_;
  const bool use_heap_;

  Direction direction_ = Direction::kForward;
  std::vector<Entry> live_;  // the positioned children; empty when !Valid()
  size_t cur_ = 0;           // index in live_ of the current entry (0 in heap mode)
};

}  // namespace

std::unique_ptr<Iterator> NewMergingIterator(const Comparator* cmp,
                                             std::vector<std::unique_ptr<Iterator>> children) {
  if (children.empty()) return NewEmptyIterator();
  if (children.size() == 1) return std::move(children[0]);
  return std::make_unique<MergingIterator>(cmp, std::move(children));
}

}  // namespace tessera::storage
