#include "tessera/util/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::crc32c {
namespace internal {
uint32_t ExtendPortableForTesting(uint32_t crc, const char* data, size_t n);
}
namespace {

// RFC 3720, appendix B.4.
TEST(Crc32cTest, StandardVectors) {
  std::string buf(32, '\0');
  EXPECT_EQ(0x8a9136aau, Value(buf));
  buf.assign(32, '\xff');
  EXPECT_EQ(0x62a8ab43u, Value(buf));
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(i);
  EXPECT_EQ(0x46dd794eu, Value(buf));
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(31 - i);
  EXPECT_EQ(0x113fdb5cu, Value(buf));
  EXPECT_EQ(0xe3069283u, Value(std::string("123456789")));
}

TEST(Crc32cTest, HardwareAndPortableAgree) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  for (size_t len = 0; len < data.size(); len += 37) {
    EXPECT_EQ(internal::ExtendPortableForTesting(0, data.data(), len), Value(data.data(), len));
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string a = "hello ", b = "world";
  EXPECT_EQ(Value(a + b), Extend(Value(a), b.data(), b.size()));
}

TEST(Crc32cTest, MaskRoundTripAndDiffers) {
  uint32_t crc = Value(std::string("foo"));
  EXPECT_NE(crc, Mask(crc));
  EXPECT_NE(crc, Mask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Unmask(Mask(Mask(crc)))));
}

}  // namespace
}  // namespace tessera::crc32c
