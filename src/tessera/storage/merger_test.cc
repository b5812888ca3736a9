#include "tessera/storage/merger.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/memtable.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

using KV = std::pair<std::string, std::string>;

// A test iterator over a sorted vector that may hold equal keys. When `fail_at` is set, reaching
// that position (by any move) makes it !Valid() with a DataLoss status, like a corrupt block.
class VectorIterator final : public Iterator {
 public:
  explicit VectorIterator(std::vector<KV> entries, size_t fail_at = SIZE_MAX)
      : entries_(std::move(entries)), fail_at_(fail_at) {}

  bool Valid() const override { return status_.ok() && pos_ < entries_.size(); }
  void SeekToFirst() override { Move(0); }
  void SeekToLast() override { Move(entries_.empty() ? entries_.size() : entries_.size() - 1); }
  void Seek(std::string_view target) override {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), target,
                               [](const KV& e, std::string_view t) { return e.first < t; });
    Move(it - entries_.begin());
  }
  void Next() override { Move(pos_ + 1); }
  void Prev() override { Move(pos_ == 0 ? entries_.size() : pos_ - 1); }
  std::string_view key() const override { return entries_[pos_].first; }
  std::string_view value() const override { return entries_[pos_].second; }
  Status status() const override { return status_; }

 private:
  void Move(size_t pos) {
    pos_ = pos;
    if (pos == fail_at_) status_ = CorruptionError("child.sst", 4096, "bad block");
  }

  const std::vector<KV> entries_;
  const size_t fail_at_;
  size_t pos_ = SIZE_MAX;
  Status status_;
};

// The current value, or "<end>" when !Valid(): lets a walk stop at the first wrong step.
std::string ValueOrEnd(Iterator* it) {
  return it->Valid() ? std::string(it->value()) : std::string("<end>");
}

std::vector<KV> Collect(Iterator* it) {
  std::vector<KV> out;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.emplace_back(std::string(it->key()), std::string(it->value()));
  }
  return out;
}

TEST(MergerTest, NoChildren) {
  auto it = NewMergingIterator(BytewiseComparator(), {});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(MergerTest, OneChildIsPassedThrough) {
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(std::make_unique<VectorIterator>(std::vector<KV>{{"a", "1"}, {"b", "2"}}));
  Iterator* raw = children[0].get();
  auto it = NewMergingIterator(BytewiseComparator(), std::move(children));
  EXPECT_EQ(it.get(), raw);
  EXPECT_EQ(Collect(it.get()), (std::vector<KV>{{"a", "1"}, {"b", "2"}}));
}

TEST(MergerTest, EqualKeysEarlierChildFirst) {
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(std::make_unique<VectorIterator>(std::vector<KV>{{"b", "0b"}, {"c", "0c"}}));
  children.push_back(std::make_unique<VectorIterator>(std::vector<KV>{{"a", "1a"}, {"b", "1b"}}));
  children.push_back(std::make_unique<VectorIterator>(std::vector<KV>{{"b", "2b"}, {"b", "2b'"}}));
  auto it = NewMergingIterator(BytewiseComparator(), std::move(children));
  std::vector<KV> want = {{"a", "1a"}, {"b", "0b"},  {"b", "1b"},
                          {"b", "2b"}, {"b", "2b'"}, {"c", "0c"}};
  EXPECT_EQ(Collect(it.get()), want);

  // Direction switches in the middle of the equal keys.
  it->Seek("b");
  ASSERT_EQ(ValueOrEnd(it.get()), "0b");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "1b");
  it->Prev();
  ASSERT_EQ(ValueOrEnd(it.get()), "0b");
  it->Prev();
  ASSERT_EQ(ValueOrEnd(it.get()), "1a");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "0b");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "1b");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "2b");
  it->Prev();
  ASSERT_EQ(ValueOrEnd(it.get()), "1b");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "2b");
  it->Next();
  ASSERT_EQ(ValueOrEnd(it.get()), "2b'");
  it->Prev();
  ASSERT_EQ(ValueOrEnd(it.get()), "2b");
}

// Random children (sometimes with equal keys inside one child) against a std::multimap, which
// keeps equal keys in insertion order: child by child, then in child order. Random walks of
// Next/Prev/Seek/SeekToFirst/SeekToLast compare position by position. Child counts cover the
// linear scan (2-4) and the heap (5+).
TEST(MergerTest, MatchesMultimapOnRandomWalks) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "TESSERA_SEED=" << seed);
  Random rnd(seed);
  auto random_key = [&] {
    std::string k;
    size_t len = 1 + rnd.Uniform(3);
    for (size_t i = 0; i < len; i++) k.push_back(static_cast<char>('a' + rnd.Uniform(4)));
    return k;
  };

  for (int round = 0; round < 300; round++) {
    SCOPED_TRACE(round);
    const size_t num_children = rnd.Uniform(11);
    std::multimap<std::string, std::string> model;
    std::vector<std::unique_ptr<Iterator>> children;
    for (size_t c = 0; c < num_children; c++) {
      std::vector<KV> entries;
      size_t n = rnd.OneIn(4) ? 0 : rnd.Uniform(30);
      for (size_t i = 0; i < n; i++) entries.emplace_back(random_key(), "");
      std::stable_sort(entries.begin(), entries.end(),
                       [](const KV& a, const KV& b) { return a.first < b.first; });
      for (size_t i = 0; i < entries.size(); i++) {
        entries[i].second = "c" + std::to_string(c) + "#" + std::to_string(i);
        model.emplace(entries[i].first, entries[i].second);
      }
      children.push_back(std::make_unique<VectorIterator>(std::move(entries)));
    }
    const std::vector<KV> flat(model.begin(), model.end());
    auto it = NewMergingIterator(BytewiseComparator(), std::move(children));

    size_t pos = flat.size();  // == flat.size() means !Valid()
    for (int step = 0; step < 200; step++) {
      SCOPED_TRACE(step);
      const bool valid = pos < flat.size();
      uint64_t op = rnd.Uniform(10);
      if (op < 4 && valid) {
        it->Next();
        pos++;
      } else if (op < 7 && valid) {
        it->Prev();
        pos = pos == 0 ? flat.size() : pos - 1;
      } else if (op < 8) {
        std::string target = random_key();
        it->Seek(target);
        pos = std::lower_bound(flat.begin(), flat.end(), target,
                               [](const KV& e, const std::string& t) { return e.first < t; }) -
              flat.begin();
      } else if (op < 9) {
        it->SeekToFirst();
        pos = 0;
      } else {
        it->SeekToLast();
        pos = flat.empty() ? 0 : flat.size() - 1;
      }
      ASSERT_EQ(it->Valid(), pos < flat.size());
      if (it->Valid()) {
        ASSERT_EQ(it->key(), flat[pos].first);
        ASSERT_EQ(it->value(), flat[pos].second);
      }
      ASSERT_TRUE(it->status().ok());
    }
  }
}

TEST(MergerTest, ChildErrorAtOpen) {
  for (size_t num_good : {1, 3, 7}) {  // linear and heap paths
    SCOPED_TRACE(num_good);
    std::vector<std::unique_ptr<Iterator>> children;
    for (size_t i = 0; i < num_good; i++) {
      children.push_back(std::make_unique<VectorIterator>(std::vector<KV>{{"a", "1"}, {"b", "2"}}));
    }
    children.push_back(NewEmptyIterator(CorruptionError("000007.sst", 123, "bad footer")));
    children.push_back(NewEmptyIterator(absl::UnavailableError("second error, not reported")));
    auto it = NewMergingIterator(BytewiseComparator(), std::move(children));
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid());
    EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(it->status().message().find("000007.sst at offset 123"), std::string::npos);
    it->SeekToLast();
    EXPECT_FALSE(it->Valid());
    it->Seek("a");
    EXPECT_FALSE(it->Valid());
    EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  }
}

// A child failing mid-scan stops the merged iterator there instead of skipping that child's rest.
TEST(MergerTest, ChildErrorMidScanStops) {
  for (size_t num_good : {1, 6}) {
    SCOPED_TRACE(num_good);
    std::vector<std::unique_ptr<Iterator>> children;
    for (size_t i = 0; i < num_good; i++) {
      children.push_back(std::make_unique<VectorIterator>(
          std::vector<KV>{{"a", "g"}, {"c", "g"}, {"e", "g"}, {"g", "g"}}));
    }
    children.push_back(std::make_unique<VectorIterator>(
        std::vector<KV>{{"b", "x"}, {"d", "x"}, {"f", "x"}}, /*fail_at=*/2));
    auto it = NewMergingIterator(BytewiseComparator(), std::move(children));
    it->SeekToFirst();
    std::string keys;
    for (; it->Valid(); it->Next()) {
      if (keys.empty() || keys.back() != it->key()[0]) keys += it->key();
    }
    EXPECT_EQ(keys, "abcd");
    EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  }
}

// Memtables merged under the internal-key comparator: newest memtable first, versions interleave.
TEST(MergerTest, MergesMemTables) {
  auto older = std::make_shared<MemTable>();
  auto newer = std::make_shared<MemTable>();
  older->Add(1, ValueType::kValue, "a", "a1");
  older->Add(2, ValueType::kValue, "b", "b2");
  newer->Add(3, ValueType::kValue, "b", "b3");
  newer->Add(4, ValueType::kValue, "c", "c4");
  older->Add(0, ValueType::kValue, "c", "c0");
  std::vector<std::unique_ptr<Iterator>> children;
  children.push_back(newer->NewIterator());
  children.push_back(older->NewIterator());
  auto it = NewMergingIterator(InternalKeyComparator(), std::move(children));
  std::vector<std::string> values;
  for (const KV& kv : Collect(it.get())) values.push_back(kv.second);
  EXPECT_EQ(values, (std::vector<std::string>{"a1", "b3", "b2", "c4", "c0"}));
  it->Seek(MakeInternalKey("b", 2, kValueTypeForSeek));
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "b2");
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "b3");
}

}  // namespace
}  // namespace tessera::storage
