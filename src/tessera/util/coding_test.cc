#include "tessera/util/coding.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace tessera {
namespace {

TEST(CodingTest, FixedRoundTrip) {
  std::string s;
  for (uint32_t v = 0; v < 100000; v += 997) PutFixed32(&s, v);
  std::string_view in = s;
  for (uint32_t v = 0; v < 100000; v += 997) {
    uint32_t got;
    ASSERT_TRUE(GetFixed32(&in, &got));
    EXPECT_EQ(v, got);
  }
  EXPECT_TRUE(in.empty());
  uint32_t dummy;
  EXPECT_FALSE(GetFixed32(&in, &dummy));
}

TEST(CodingTest, Varint64RoundTripIncludingEdges) {
  std::vector<uint64_t> values = {0, 1, 127, 128, 255, 16383, 16384,
                                  std::numeric_limits<uint32_t>::max(),
                                  std::numeric_limits<uint64_t>::max()};
  for (int shift = 0; shift < 64; ++shift) {
    uint64_t p = uint64_t{1} << shift;
    values.push_back(p - 1);
    values.push_back(p);
    values.push_back(p + 1);
  }
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  std::string_view in = s;
  for (uint64_t v : values) {
    uint64_t got;
    size_t before = in.size();
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(v, got);
    EXPECT_EQ(VarintLength(v), static_cast<int>(before - in.size()));
  }
}

TEST(CodingTest, TruncatedAndOverlongVarintsFail) {
  std::string s;
  PutVarint64(&s, std::numeric_limits<uint64_t>::max());
  for (size_t len = 0; len < s.size(); ++len) {
    std::string_view in(s.data(), len);
    uint64_t v;
    EXPECT_FALSE(GetVarint64(&in, &v)) << len;
  }
  std::string overlong(11, '\xff');
  std::string_view in = overlong;
  uint64_t v;
  EXPECT_FALSE(GetVarint64(&in, &v));
  std::string too_big_for_32;
  PutVarint64(&too_big_for_32, uint64_t{1} << 33);
  std::string_view in32 = too_big_for_32;
  uint32_t v32;
  EXPECT_FALSE(GetVarint32(&in32, &v32));
}

TEST(CodingTest, LengthPrefixed) {
  std::string s;
  PutLengthPrefixed(&s, "");
  PutLengthPrefixed(&s, "foo");
  PutLengthPrefixed(&s, std::string(200, 'x'));
  std::string_view in = s, r;
  ASSERT_TRUE(GetLengthPrefixed(&in, &r));
  EXPECT_EQ("", r);
  ASSERT_TRUE(GetLengthPrefixed(&in, &r));
  EXPECT_EQ("foo", r);
  ASSERT_TRUE(GetLengthPrefixed(&in, &r));
  EXPECT_EQ(std::string(200, 'x'), r);
  EXPECT_FALSE(GetLengthPrefixed(&in, &r));
  std::string bad;
  PutVarint32(&bad, 10);
  bad += "abc";
  std::string_view bin = bad;
  EXPECT_FALSE(GetLengthPrefixed(&bin, &r));
}

TEST(CodingTest, BigEndianPreservesOrder) {
  char a[8], b[8];
  EncodeBigEndian64(a, 255);
  EncodeBigEndian64(b, 256);
  EXPECT_LT(std::string_view(a, 8), std::string_view(b, 8));
  EXPECT_EQ(256u, DecodeBigEndian64(b));
}

}  // namespace
}  // namespace tessera
