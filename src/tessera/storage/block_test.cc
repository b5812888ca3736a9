#include "tessera/storage/block.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/block_builder.h"
#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::storage {
namespace {

std::shared_ptr<const Block> MakeBlock(std::string_view bytes) {
  auto owned = std::unique_ptr<char[]>(new char[bytes.size() + 1]);
  std::memcpy(owned.get(), bytes.data(), bytes.size());
  BlockContents contents{std::string_view(owned.get(), bytes.size()), std::move(owned)};
  auto block = Block::Create(std::move(contents), "test.sst", 4096);
  EXPECT_TRUE(block.ok()) << block.status();
  return block.ok() ? *block : nullptr;
}

std::string BuildBlock(const std::map<std::string, std::string>& entries, int restart_interval) {
  BlockBuilder builder(restart_interval);
  for (const auto& [k, v] : entries) builder.Add(k, v);
  return std::string(builder.Finish());
}

std::map<std::string, std::string> RandomEntries(Random* rnd, int n) {
  std::map<std::string, std::string> m;
  std::vector<std::string> prefixes = {"", "a", "row/", "row/family:", "zzzzzzzz"};
  for (int i = 0; i < n; ++i) {
    std::string key = prefixes[rnd->Uniform(prefixes.size())] + rnd->Bytes(rnd->Skewed(5));
    m[key] = rnd->Bytes(rnd->Skewed(7));
  }
  return m;
}

TEST(BlockTest, EmptyBlock) {
  BlockBuilder builder(16);
  EXPECT_TRUE(builder.empty());
  auto block = MakeBlock(builder.Finish());
  ASSERT_NE(block, nullptr);
  auto it = Block::NewIterator(block, BytewiseComparator(), "test.sst", 0);
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_FALSE(it->Valid());
  it->Seek("x");
  EXPECT_FALSE(it->Valid());
  EXPECT_TRUE(it->status().ok());
}

TEST(BlockTest, PrefixCompressionShrinksSharedKeys) {
  std::map<std::string, std::string> m;
  for (int i = 0; i < 100; ++i) m["a-long-common-row-key/column" + std::to_string(1000 + i)] = "v";
  const std::string compressed = BuildBlock(m, 16);
  const std::string plain = BuildBlock(m, 1);
  EXPECT_LT(compressed.size(), plain.size() / 2);
}

// Forward, backward and Seek against a std::map for several restart intervals.
TEST(BlockTest, MatchesModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int interval : {1, 2, 3, 16, 1000}) {
    SCOPED_TRACE(::testing::Message() << "restart_interval=" << interval);
    const auto model = RandomEntries(&rnd, 1 + rnd.Uniform(500));
    auto block = MakeBlock(BuildBlock(model, interval));
    ASSERT_NE(block, nullptr);
    auto it = Block::NewIterator(block, BytewiseComparator(), "test.sst", 0);

    auto m = model.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      ASSERT_NE(m, model.end());
      ASSERT_EQ(it->key(), m->first);
      ASSERT_EQ(it->value(), m->second);
    }
    EXPECT_EQ(m, model.end());

    auto r = model.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++r) {
      ASSERT_NE(r, model.rend());
      ASSERT_EQ(it->key(), r->first);
      ASSERT_EQ(it->value(), r->second);
    }
    EXPECT_EQ(r, model.rend());

    for (int i = 0; i < 200; ++i) {
      std::string target = rnd.OneIn(2) ? std::next(model.begin(), rnd.Uniform(model.size()))->first
                                        : rnd.Bytes(rnd.Skewed(5));
      if (rnd.OneIn(3)) target += '\0';
      auto want = model.lower_bound(target);
      it->Seek(target);
      if (want == model.end()) {
        ASSERT_FALSE(it->Valid());
        continue;
      }
      ASSERT_TRUE(it->Valid());
      ASSERT_EQ(it->key(), want->first);
      // A few steps either way from the seek position.
      if (rnd.OneIn(2)) {
        it->Prev();
        if (want == model.begin()) {
          ASSERT_FALSE(it->Valid());
        } else {
          ASSERT_TRUE(it->Valid());
          ASSERT_EQ(it->key(), std::prev(want)->first);
        }
      } else {
        it->Next();
        auto next = std::next(want);
        ASSERT_EQ(it->Valid(), next != model.end());
        if (it->Valid()) {
          ASSERT_EQ(it->key(), next->first);
        }
      }
    }
    EXPECT_TRUE(it->status().ok());
  }
}

TEST(BlockTest, BadRestartArrayIsDataLoss) {
  std::map<std::string, std::string> m = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  const std::string good = BuildBlock(m, 1);  // restarts 0, x, y
  struct Case {
    const char* name;
    std::string bytes;
  };
  std::vector<Case> cases;
  {
    std::string b = good;
    EncodeFixed32(b.data() + b.size() - 4, 1000);  // too many restarts
    cases.push_back({"restart count", b});
  }
  {
    std::string b = good;
    EncodeFixed32(b.data() + b.size() - 8, 1u << 30);  // last restart out of range
    cases.push_back({"restart past entries", b});
  }
  {
    std::string b = good;
    EncodeFixed32(b.data() + b.size() - 16, 3);  // first restart not at 0
    cases.push_back({"first restart", b});
  }
  {
    std::string b = good;
    EncodeFixed32(b.data() + b.size() - 8, 0);  // not increasing
    cases.push_back({"decreasing restart", b});
  }
  cases.push_back({"too short", "ab"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto owned = std::unique_ptr<char[]>(new char[c.bytes.size() + 1]);
    std::memcpy(owned.get(), c.bytes.data(), c.bytes.size());
    auto block = Block::Create(
        BlockContents{std::string_view(owned.get(), c.bytes.size()), std::move(owned)}, "bad.sst",
        777);
    ASSERT_FALSE(block.ok());
    EXPECT_EQ(block.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(block.status().message().find("bad.sst at offset 777"), absl::string_view::npos)
        << block.status();
  }
}

TEST(BlockTest, BadEntryLengthIsDataLossNotACrash) {
  std::map<std::string, std::string> m = {{"apple", "1"}, {"apricot", "2"}, {"banana", "3"}};
  std::string b = BuildBlock(m, 16);
  // Entry 2 ("apricot") shares 2 bytes with "apple"; claim it shares 50.
  // Entries: [0 5 1 apple 1] then [2 5 1 ricot 2] ...
  ASSERT_EQ(b[9], 2);
  b[9] = 50;
  auto block = MakeBlock(b);
  ASSERT_NE(block, nullptr);
  auto it = Block::NewIterator(block, BytewiseComparator(), "bad.sst", 123);
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key(), "apple");
  it->Next();
  EXPECT_FALSE(it->Valid());
  EXPECT_EQ(it->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(it->status().message().find("bad.sst at offset 123"), absl::string_view::npos);
  // The error is sticky.
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  EXPECT_FALSE(it->status().ok());

  // A value length running past the entries.
  std::string v = BuildBlock(m, 16);
  v[2] = 100;
  auto block2 = MakeBlock(v);
  auto it2 = Block::NewIterator(block2, BytewiseComparator(), "bad.sst", 0);
  it2->SeekToFirst();
  EXPECT_FALSE(it2->Valid());
  EXPECT_EQ(it2->status().code(), absl::StatusCode::kDataLoss);
}

// Random bytes with a plausible restart array: whatever they decode to, iteration ends (forward
// and backward) and never reads out of bounds (run under ASan in CI).
TEST(BlockTest, GarbageNeverCrashesAndIterationEnds) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 2000; ++i) {
    std::string b = rnd.Bytes(rnd.Uniform(200));
    const uint32_t entries = b.size();
    const uint32_t restarts = 1 + rnd.Uniform(4);
    uint32_t r = 0;
    for (uint32_t j = 0; j < restarts && r < entries; ++j) {
      PutFixed32(&b, r);
      r += 1 + rnd.Uniform(40);
    }
    PutFixed32(&b, std::min<uint32_t>(restarts, (b.size() - entries) / 4));
    auto owned = std::unique_ptr<char[]>(new char[b.size()]);
    std::memcpy(owned.get(), b.data(), b.size());
    auto block = Block::Create(
        BlockContents{std::string_view(owned.get(), b.size()), std::move(owned)}, "fuzz.sst", 0);
    if (!block.ok()) continue;
    auto it = Block::NewIterator(*block, BytewiseComparator(), "fuzz.sst", 0);
    int steps = 0;
    for (it->SeekToFirst(); it->Valid() && steps < 1000; it->Next()) ++steps;
    ASSERT_LT(steps, 1000);
    steps = 0;
    for (it->SeekToLast(); it->Valid() && steps < 1000; it->Prev()) ++steps;
    ASSERT_LT(steps, 1000);
    it->Seek(rnd.Bytes(3));
  }
}

}  // namespace
}  // namespace tessera::storage
