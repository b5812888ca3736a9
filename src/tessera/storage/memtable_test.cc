#include "tessera/storage/memtable.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/table_test_util.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

std::string SeekKey(std::string_view user_key, SequenceNumber seq) {
  return MakeInternalKey(user_key, seq, kValueTypeForSeek);
}

struct Entry {
  std::string user_key;
  SequenceNumber seq;
  ValueType type;
  std::string value;
};

std::vector<Entry> Scan(const MemTable& mem) {
  std::vector<Entry> out;
  auto it = mem.NewIterator();
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ParsedInternalKey parsed;
    EXPECT_TRUE(ParseInternalKey(it->key(), &parsed));
    out.push_back(Entry{std::string(parsed.user_key), parsed.sequence, parsed.type,
                        std::string(it->value())});
  }
  EXPECT_TRUE(it->status().ok());
  return out;
}

TEST(MemTableTest, EmptyTable) {
  MemTable mem;
  EXPECT_TRUE(mem.Empty());
  EXPECT_EQ(mem.NumEntries(), 0u);
  auto it = mem.NewIterator();
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  it->Seek(SeekKey("a", 5));
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(MemTableTest, SameUserKeyNewestFirst) {
  MemTable mem;
  mem.Add(5, ValueType::kValue, "k", "v5");
  mem.Add(9, ValueType::kDeletion, "k", "");
  mem.Add(7, ValueType::kValue, "k", "v7");
  mem.Add(3, ValueType::kValue, "k", "v3");
  mem.Add(4, ValueType::kValue, "j", "j4");
  mem.Add(1, ValueType::kValue, "ka", "ka1");
  mem.Add(8, ValueType::kValue, "", "empty8");
  // Same sequence, different types: larger type first.
  mem.Add(6, ValueType::kValue, "x", "x6v");
  mem.Add(6, ValueType::kDeletion, "x", "");

  EXPECT_EQ(mem.NumEntries(), 9u);
  EXPECT_FALSE(mem.Empty());
  EXPECT_EQ(mem.SmallestSequence(), 1u);
  EXPECT_EQ(mem.LargestSequence(), 9u);

  std::vector<Entry> got = Scan(mem);
  std::vector<std::tuple<std::string, SequenceNumber, ValueType, std::string>> want = {
      {"", 8, ValueType::kValue, "empty8"}, {"j", 4, ValueType::kValue, "j4"},
      {"k", 9, ValueType::kDeletion, ""},   {"k", 7, ValueType::kValue, "v7"},
      {"k", 5, ValueType::kValue, "v5"},    {"k", 3, ValueType::kValue, "v3"},
      {"ka", 1, ValueType::kValue, "ka1"},  {"x", 6, ValueType::kValue, "x6v"},
      {"x", 6, ValueType::kDeletion, ""},
  };
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].user_key, std::get<0>(want[i]));
    EXPECT_EQ(got[i].seq, std::get<1>(want[i]));
    EXPECT_EQ(got[i].type, std::get<2>(want[i]));
    EXPECT_EQ(got[i].value, std::get<3>(want[i]));
  }

  // Backward gives the reverse order.
  auto it = mem.NewIterator();
  it->SeekToLast();
  for (size_t i = want.size(); i-- > 0;) {
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->value(), std::get<3>(want[i]));
    it->Prev();
  }
  EXPECT_FALSE(it->Valid());
}

// Seek(user_key, seq, kValueTypeForSeek) lands on the newest entry of user_key with sequence <=
// seq, or on the next user key when there is none.
TEST(MemTableTest, SeekFindsNewestVisibleEntry) {
  MemTable mem;
  mem.Add(10, ValueType::kValue, "b", "b10");
  mem.Add(20, ValueType::kValue, "b", "b20");
  mem.Add(30, ValueType::kDeletion, "b", "");
  mem.Add(15, ValueType::kValue, "c", "c15");
  mem.Add(5, ValueType::kValue, "a", "a5");

  auto it = mem.NewIterator();
  auto expect_at = [&](std::string_view user_key, SequenceNumber seq, std::string_view want_user,
                       SequenceNumber want_seq) {
    SCOPED_TRACE(::testing::Message() << "seek " << user_key << "@" << seq);
    it->Seek(SeekKey(user_key, seq));
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(ExtractUserKey(it->key()), want_user);
    EXPECT_EQ(ExtractSequence(it->key()), want_seq);
  };
  expect_at("b", 100, "b", 30);
  expect_at("b", 30, "b", 30);
  expect_at("b", 29, "b", 20);
  expect_at("b", 20, "b", 20);
  expect_at("b", 19, "b", 10);
  expect_at("b", 10, "b", 10);
  expect_at("b", 9, "c", 15);  // nothing of b visible at 9
  expect_at("a", kMaxSequenceNumber, "a", 5);
  expect_at("", 1, "a", 5);
  expect_at("bb", 1, "c", 15);
  it->Seek(SeekKey("c", 14));
  EXPECT_FALSE(it->Valid());
  it->Seek(SeekKey("d", 100));
  EXPECT_FALSE(it->Valid());

  // A target shorter than a trailer is a bare user key.
  it->Seek("b");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "");
  EXPECT_EQ(ExtractSequence(it->key()), 30u);
  it->Seek("");
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "a5");

  // Prev from a seek position.
  it->Seek(SeekKey("b", 19));
  it->Prev();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->value(), "b20");
}

// Random entries (binary keys, long keys and values needing multi-byte varints) against a std::map
// ordered by InternalKeyComparator.
TEST(MemTableTest, MatchesModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "TESSERA_SEED=" << seed);
  Random rnd(seed);
  struct Less {
    bool operator()(const std::string& a, const std::string& b) const {
      return InternalKeyComparator()->Compare(a, b) < 0;
    }
  };
  std::map<std::string, std::string, Less> model;
  MemTableOptions options;
  options.arena_block_size = 4096;  // exercise many blocks and large-allocation fallbacks
  options.skiplist_seed = rnd.Next64();
  MemTable mem(options);
  SequenceNumber seq = 1;
  for (int i = 0; i < 3000; i++) {
    std::string user_key = rnd.OneIn(50) ? rnd.Bytes(200 + rnd.Uniform(300))
                                         : rnd.Bytes(rnd.Uniform(4));  // many shared user keys
    std::string value = rnd.OneIn(100) ? rnd.Bytes(5000) : rnd.Bytes(rnd.Uniform(20));
    ValueType type = rnd.OneIn(5) ? ValueType::kDeletion : ValueType::kValue;
    model[MakeInternalKey(user_key, seq, type)] = value;
    mem.Add(seq, type, user_key, value);
    seq += 1 + rnd.Uniform(3);
  }
  EXPECT_EQ(mem.NumEntries(), model.size());
  EXPECT_GT(mem.ApproximateMemoryUsage(), 3000u * 16);

  auto it = mem.NewIterator();
  it->SeekToFirst();
  for (const auto& [k, v] : model) {
    ASSERT_TRUE(it->Valid());
    ASSERT_EQ(it->key(), k);
    ASSERT_EQ(it->value(), v);
    it->Next();
  }
  EXPECT_FALSE(it->Valid());

  for (int i = 0; i < 1000; i++) {
    std::string target =
        MakeInternalKey(rnd.Bytes(rnd.Uniform(4)), rnd.Uniform(seq + 1), kValueTypeForSeek);
    it->Seek(target);
    auto m = model.lower_bound(target);
    ASSERT_EQ(it->Valid(), m != model.end());
    if (it->Valid()) {
      ASSERT_EQ(it->key(), m->first);
    }
  }
}

// Thread CPU time: on a shared machine wall time mostly measures the other processes.
double ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// Every added filter key may match; absent ones rarely do; no filter means always may.
TEST(MemTableTest, FilterHasNoFalseNegativesAndFewFalsePositives) {
  testing::InternalRowExtractorForTesting extractor;
  MemTableOptions o;
  o.filter_key_extractor = &extractor;
  o.filter_bits = 20 * 2000;
  MemTable mem(o);
  EXPECT_FALSE(mem.MayContain("row0"));
  for (int i = 0; i < 2000; ++i) {
    const std::string row = "row" + std::to_string(i);
    mem.Add(2 * i + 1, ValueType::kValue, row + "/a", "v");
    mem.Add(2 * i + 2, ValueType::kDeletion, row + "/b", "");
  }
  int false_positives = 0;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_TRUE(mem.MayContain("row" + std::to_string(i))) << i;
    false_positives += mem.MayContain("absent" + std::to_string(i));
  }
  EXPECT_LT(false_positives, 2000 / 50) << "more than 2% false positives at 20 bits per key";
  EXPECT_TRUE(MemTable().MayContain("anything"));
  MemTableOptions no_extractor;
  no_extractor.filter_bits = 1 << 16;
  EXPECT_TRUE(MemTable(no_extractor).MayContain("anything"));
}

// The filter's memory is the memtable's: a page per entry up to its size, in its usage and in
// the shared total until the memtable goes. An empty memtable's untouched filter costs nothing.
TEST(MemTableTest, FilterMemoryIsCounted) {
  testing::InternalRowExtractorForTesting extractor;
  auto total = std::make_shared<std::atomic<size_t>>(0);
  MemTableOptions o;
  o.usage_total = total;
  o.arena_block_size = 4096;
  o.filter_key_extractor = &extractor;
  o.filter_bits = 1 << 20;  // 128 KiB
  {
    MemTable with_filter(o);
    const size_t empty_usage = with_filter.ApproximateMemoryUsage();
    EXPECT_LT(empty_usage, size_t{8} << 10);
    EXPECT_EQ(empty_usage, total->load());
    with_filter.Add(1, ValueType::kValue, "r/", "v");
    EXPECT_GE(with_filter.ApproximateMemoryUsage(), empty_usage + 4096);
    for (int i = 0; i < 100; ++i) {
      with_filter.Add(2 + i, ValueType::kValue, "r" + std::to_string(i) + "/", "v");
    }
    EXPECT_GE(with_filter.ApproximateMemoryUsage(), size_t{128} << 10);  // all of it, at most
    EXPECT_LT(with_filter.ApproximateMemoryUsage(), size_t{160} << 10);
    EXPECT_EQ(with_filter.ApproximateMemoryUsage(), total->load());
  }
  EXPECT_EQ(0u, total->load());
  o.filter_bits = 0;
  MemTable without(o);
  for (int i = 0; i < 100; ++i)
    without.Add(1 + i, ValueType::kValue, "r" + std::to_string(i) + "/", "v");
  EXPECT_LT(without.ApproximateMemoryUsage(), size_t{32} << 10);  // the arena alone
  EXPECT_EQ(without.ApproximateMemoryUsage(), total->load());
}

// A reader that finds an entry the writer is adding concurrently also finds its filter bits.
TEST(MemTableTest, FilterBitsAreVisibleWithTheirEntry) {
  testing::InternalRowExtractorForTesting extractor;
  MemTableOptions o;
  o.filter_key_extractor = &extractor;
  o.filter_bits = 1 << 15;
  MemTable mem(o);
  constexpr int kN = 5000;
  std::atomic<int> added{0};
  std::thread reader([&] {
    Random rnd(7);
    for (int checks = 0; checks < 20000 && added.load() < kN; ++checks) {
      const int i = static_cast<int>(rnd.Uniform(kN));
      const std::string row = "r" + std::to_string(i);
      auto it = mem.NewIterator();
      it->Seek(SeekKey(row + "/", kMaxSequenceNumber));
      if (it->Valid() && ExtractUserKey(it->key()) == row + "/") {
        ASSERT_TRUE(mem.MayContain(row)) << row;
      }
    }
  });
  for (int i = 0; i < kN; ++i) {
    mem.Add(i + 1, ValueType::kValue, "r" + std::to_string(i) + "/", "v");
    added.store(i + 1);
  }
  reader.join();
}

// The row index's extractor must be prefix-free: the row is the user key up to and with its
// first '/', so "r1/" is no prefix of "r10/".
class PrefixFreeRowExtractor final : public FilterKeyExtractor {
 public:
  std::string_view FilterKey(std::string_view key) const override {
    const std::string_view user = ExtractUserKey(key);
    const size_t slash = user.find('/');
    return slash == std::string_view::npos ? user : user.substr(0, slash + 1);
  }
  const char* Name() const override { return "test.prefix-free-row"; }
};

// Where `it` stands after Seek(target), and the next two entries: "" past the end.
std::vector<std::string> SeekAndNext(const MemTable& mem, const std::string& target) {
  std::vector<std::string> out;
  auto it = mem.NewIterator();
  it->Seek(target);
  for (int i = 0; i < 3; ++i) {
    out.push_back(it->Valid() ? std::string(it->key()) : "");
    if (!it->Valid()) break;
    it->Next();
  }
  return out;
}

// A seek through the row index lands where a search of the skiplist does: row starts of rows
// held and not held, keys inside rows (before, between and after their entries, past the
// steps the index walks), row limits and bare user keys; rows whose entries came out of order;
// an index with room for every row, and one full after 8 rows (the others are searched).
TEST(MemTableTest, RowIndexSeeksLandWhereASearchDoes) {
  PrefixFreeRowExtractor extractor;
  auto column = [](uint32_t c) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "c%03u", c);
    return std::string(buf);
  };
  for (const size_t slots : {size_t{200}, size_t{16}}) {
    SCOPED_TRACE(::testing::Message() << slots << " slots");
    MemTableOptions indexed_options;
    indexed_options.filter_key_extractor = &extractor;
    indexed_options.row_index_slots = slots;  // rounded up to 256, or 16
    MemTable indexed(indexed_options);
    MemTable plain;
    Random rnd(2027);
    SequenceNumber seq = 0;
    for (int i = 0; i < 3000; ++i) {
      // Rows r0/..r199/, every other one held; row r7/ has many entries (more than the steps).
      const uint32_t r = rnd.OneIn(10) ? 7 : 2 * rnd.Uniform(100) + 1;
      const std::string key = "r" + std::to_string(r) + "/" + column(rnd.Uniform(300));
      const ValueType type = rnd.OneIn(5) ? ValueType::kDeletion : ValueType::kValue;
      ++seq;
      indexed.Add(seq, type, key, "v" + std::to_string(seq));
      plain.Add(seq, type, key, "v" + std::to_string(seq));
    }
    int compared = 0;
    for (uint32_t r = 0; r < 200; ++r) {
      const std::string row = "r" + std::to_string(r) + "/";
      std::vector<std::string> targets = {SeekKey(row, kMaxSequenceNumber),
                                          SeekKey(row, rnd.Uniform(seq + 1)), row,
                                          SeekKey(row + "\xff", kMaxSequenceNumber)};
      for (int k = 0; k < 4; ++k) {
        targets.push_back(SeekKey(row + column(rnd.Uniform(300)), rnd.Uniform(seq + 2)));
      }
      for (const std::string& target : targets) {
        ASSERT_EQ(SeekAndNext(plain, target), SeekAndNext(indexed, target))
            << "row " << row << ", target of " << target.size() << " bytes";
        ++compared;
      }
    }
    // Most seeks into held rows go through the index when it holds them all; none into rows
    // not held.
    const uint64_t through_index = indexed.RowIndexSeeks();
    EXPECT_GT(through_index, slots == 16 ? 10u : 300u);
    EXPECT_LT(through_index, static_cast<uint64_t>(compared) / (slots == 16 ? 10 : 2));
    EXPECT_EQ(0u, plain.RowIndexSeeks());
  }
}

// While the row index holds every row, MayContain answers from it, exactly; once it leaves a
// row out (at half full), from the filter, still without a false negative.
TEST(MemTableTest, MayContainIsExactWhileTheRowIndexHoldsEveryRow) {
  PrefixFreeRowExtractor extractor;
  MemTableOptions o;
  o.filter_key_extractor = &extractor;
  o.filter_bits = 512;      // one block of a small filter: false positives are many
  o.row_index_slots = 256;  // indexes the first 128 rows
  MemTable mem(o);
  auto row = [](const char* prefix, int i) { return prefix + std::to_string(i) + "/"; };
  auto absent_matches = [&] {
    int matches = 0;
    for (int i = 0; i < 1000; ++i) matches += mem.MayContain(row("absent", i));
    return matches;
  };
  SequenceNumber seq = 0;
  for (int i = 0; i < 100; ++i) {
    mem.Add(++seq, ValueType::kValue, row("r", i) + "a", "v");
    mem.Add(++seq, ValueType::kDeletion, row("r", i) + "b", "");
  }
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(mem.MayContain(row("r", i))) << i;
  EXPECT_EQ(absent_matches(), 0);
  for (int i = 100; i < 300; ++i) mem.Add(++seq, ValueType::kValue, row("r", i) + "a", "v");
  for (int i = 0; i < 300; ++i) EXPECT_TRUE(mem.MayContain(row("r", i))) << i;
  EXPECT_GT(absent_matches(), 100) << "the filter answers once the index left rows out";
}

// A reader that synchronized with the writer finds, through the index, every entry added so
// far: each new entry of a row here is the row's smallest, so the row's start must move.
TEST(MemTableTest, RowIndexSeesEveryEntryAddedBeforeTheSeek) {
  PrefixFreeRowExtractor extractor;
  MemTableOptions o;
  o.filter_key_extractor = &extractor;
  o.row_index_slots = 128;
  MemTable mem(o);
  constexpr int kRows = 50;
  constexpr int kN = 20000;
  auto key_of = [](int i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "r%d/c%06d", i % kRows, kN - i);  // smaller as i grows
    return std::string(buf);
  };
  std::atomic<int> added{0};
  std::thread reader([&] {
    Random rnd(11);
    // While the writer writes, and at least 1000 seeks (a slow reader, as under TSAN, may
    // start after the writer is done; a fast one may spin before the writer's first entry).
    // Only seeks count against the bound: the wait for the first entry ends with the writer's.
    for (int seeks = 0; seeks < 20000 && (added.load() < kN || seeks < 1000);) {
      const int done = added.load(std::memory_order_acquire);
      if (done == 0) {
        std::this_thread::yield();
        continue;
      }
      const int r = static_cast<int>(rnd.Uniform(std::min(done, kRows)));
      ++seeks;
      const int latest = r + (done - 1 - r) / kRows * kRows;  // the row's latest entry added
      const std::string row = "r" + std::to_string(r) + "/";
      auto it = mem.NewIterator();
      it->Seek(SeekKey(row, kMaxSequenceNumber));
      ASSERT_TRUE(it->Valid()) << row;
      const std::string_view found = ExtractUserKey(it->key());
      ASSERT_TRUE(found.starts_with(row)) << found;
      ASSERT_LE(found, key_of(latest)) << row << " after " << done << " entries";
    }
  });
  for (int i = 0; i < kN; ++i) {
    mem.Add(i + 1, ValueType::kValue, key_of(i), "v");
    added.store(i + 1, std::memory_order_release);
  }
  reader.join();
  EXPECT_GT(mem.RowIndexSeeks(), 0u);
}

// The index's buckets are counted as the filter is: a page per row indexed, up to their size,
// and given back with the memtable.
TEST(MemTableTest, RowIndexMemoryIsCounted) {
  PrefixFreeRowExtractor extractor;
  auto total = std::make_shared<std::atomic<size_t>>(0);
  MemTableOptions o;
  o.usage_total = total;
  o.arena_block_size = 4096;
  o.filter_key_extractor = &extractor;
  o.row_index_slots = 8192;  // 64 KiB
  {
    MemTable mem(o);
    EXPECT_LT(mem.ApproximateMemoryUsage(), size_t{8} << 10);
    for (int i = 0; i < 5; ++i) {
      mem.Add(1 + i, ValueType::kValue, "r/c" + std::to_string(i), "v");  // one row
    }
    EXPECT_LT(mem.ApproximateMemoryUsage(), size_t{16} << 10);
    for (int i = 0; i < 100; ++i) {
      mem.Add(10 + i, ValueType::kValue, "r" + std::to_string(i) + "/", "v");
    }
    EXPECT_GE(mem.ApproximateMemoryUsage(), size_t{64} << 10);
    EXPECT_LT(mem.ApproximateMemoryUsage(), size_t{96} << 10);
    EXPECT_EQ(mem.ApproximateMemoryUsage(), total->load());
  }
  EXPECT_EQ(0u, total->load());
}

// Not a benchmark (bench/ has those) and asserts nothing about time: prints what an Add of a
// 16-byte key and a 100-byte value costs, so that regressions show in test logs.
TEST(MemTableTest, AddTiming) {
  constexpr int kN = 100000;
  Random rnd(301);
  std::vector<std::string> random_keys(kN), sequential_keys(kN);
  for (int i = 0; i < kN; i++) {
    random_keys[i] = rnd.Bytes(16);
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016d", i);
    sequential_keys[i].assign(buf, 16);
  }
  const std::string value = rnd.Bytes(100);

  for (const auto* keys : {&random_keys, &sequential_keys}) {
    MemTable mem;
    const double start = ThreadCpuNanos();
    for (int i = 0; i < kN; i++) mem.Add(i + 1, ValueType::kValue, (*keys)[i], value);
    const double ns = ThreadCpuNanos() - start;
    std::printf(
        "MemTable::Add, %s 16-byte keys + 100-byte values: %.0f ns/op (CPU time) over "
        "%d entries, %zu bytes of arena\n",
        keys == &random_keys ? "random" : "sequential", ns / kN, kN, mem.ApproximateMemoryUsage());
    EXPECT_EQ(mem.NumEntries(), static_cast<uint64_t>(kN));
  }
}

}  // namespace
}  // namespace tessera::storage
