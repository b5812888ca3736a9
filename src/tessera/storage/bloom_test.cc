#include "tessera/storage/bloom.h"

#include <string>

#include "gtest/gtest.h"
#include "tessera/util/coding.h"

namespace tessera::storage {
namespace {

std::string Key(uint32_t i) {
  std::string k;
  PutFixed32(&k, i);
  return k;
}

std::string BuildFilter(int bits_per_key, uint32_t n, uint32_t first = 0) {
  BloomFilterBuilder builder(bits_per_key);
  for (uint32_t i = 0; i < n; ++i) builder.AddKey(Key(first + i));
  EXPECT_EQ(builder.num_keys(), n);
  std::string filter;
  builder.Finish(&filter);
  EXPECT_EQ(builder.num_keys(), 0u);
  return filter;
}

double FalsePositiveRate(const BloomFilterReader& reader, uint32_t start) {
  int hits = 0;
  constexpr int kProbes = 20000;
  for (uint32_t i = 0; i < kProbes; ++i) hits += reader.KeyMayMatch(Key(start + i));
  return static_cast<double>(hits) / kProbes;
}

TEST(BloomTest, EmptyFilterMatchesNothing) {
  const std::string filter = BuildFilter(10, 0);
  BloomFilterReader reader(filter);
  EXPECT_FALSE(reader.KeyMayMatch("hello"));
  EXPECT_FALSE(reader.KeyMayMatch(""));
}

TEST(BloomTest, NoFalseNegatives) {
  for (uint32_t n : {1u, 10u, 100u, 1000u, 10000u}) {
    const std::string filter = BuildFilter(10, n);
    BloomFilterReader reader(filter);
    for (uint32_t i = 0; i < n; ++i) ASSERT_TRUE(reader.KeyMayMatch(Key(i))) << n << " " << i;
  }
}

TEST(BloomTest, FalsePositiveRateAboutOnePercentAtTenBitsPerKey) {
  for (uint32_t n : {1000u, 10000u, 100000u}) {
    const std::string filter = BuildFilter(10, n);
    EXPECT_LE(filter.size(), n * 10 / 8 + 10);
    BloomFilterReader reader(filter);
    const double rate = FalsePositiveRate(reader, 1u << 30);
    std::printf("n=%u bytes=%zu false positives=%.4f\n", n, filter.size(), rate);
    EXPECT_LT(rate, 0.015) << n;
    EXPECT_GT(rate, 0.002) << n;  // far below theory would mean the filter is not what we think
  }
}

TEST(BloomTest, MoreBitsFewerFalsePositives) {
  const std::string small = BuildFilter(4, 10000);
  const std::string large = BuildFilter(20, 10000);
  const double small_rate = FalsePositiveRate(BloomFilterReader(small), 1u << 30);
  const double large_rate = FalsePositiveRate(BloomFilterReader(large), 1u << 30);
  EXPECT_GT(small_rate, 0.05);
  EXPECT_LT(large_rate, 0.001);
}

TEST(BloomTest, MalformedFilterMatchesEverything) {
  for (std::string filter : {std::string(), std::string("\x01"), std::string(8, '\0') + '\0',
                             std::string(8, '\0') + '\x63'}) {
    BloomFilterReader reader(filter);
    EXPECT_TRUE(reader.KeyMayMatch("anything"));
  }
}

// The hash is part of the file format: these values must never change.
TEST(BloomTest, FilterHashIsStable) {
  EXPECT_EQ(FilterHash(""), 0xe9e0033e3badaf36ull);
  EXPECT_EQ(FilterHash("a"), 0x8074ecf422db7cc8ull);
  EXPECT_EQ(FilterHash("row00001"), 0x7d8c549206766210ull);
  EXPECT_EQ(FilterHash("a somewhat longer key of 33 bytes"), 0xf41cd661020cc915ull);
  EXPECT_NE(FilterHash(std::string("\0", 1)), FilterHash(""));
}

}  // namespace
}  // namespace tessera::storage
