#include "tessera/coord/embedded_snapshot.h"

#include "gtest/gtest.h"
#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::coord {
namespace {

SnapshotContents Sample() {
  SnapshotContents c;
  c.revision = 42;
  c.files.push_back({"root", std::string("\0\xff", 2), 3, 5, 40});
  c.files.push_back({"schema/t1", "families", 1, 41, 41});
  c.files.push_back({"schema/t2", "", 7, 2, 42});
  return c;
}

std::string Encode(const SnapshotContents& c) {
  std::string out;
  EncodeSnapshot(c, &out);
  return out;
}

// Re-seals `data` (whose last 4 bytes are a checksum) with a correct checksum, so a test can
// reach the checks behind the checksum.
std::string Reseal(std::string data) {
  data.resize(data.size() - 4);
  PutFixed32(&data, crc32c::Mask(crc32c::Value(data)));
  return data;
}

TEST(EmbeddedSnapshotTest, RoundTrips) {
  for (const SnapshotContents& c : {SnapshotContents{}, Sample()}) {
    auto decoded = DecodeSnapshot(Encode(c), "snap");
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->revision, c.revision);
    EXPECT_EQ(decoded->files, c.files);
  }
}

TEST(EmbeddedSnapshotTest, EveryTruncationIsDataLoss) {
  const std::string data = Encode(Sample());
  for (size_t n = 0; n < data.size(); ++n) {
    auto decoded = DecodeSnapshot(data.substr(0, n), "snap");
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << "length " << n;
  }
}

TEST(EmbeddedSnapshotTest, EveryBitFlipIsDataLoss) {
  const std::string data = Encode(Sample());
  for (size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = data;
      bad[i] ^= static_cast<char>(1 << bit);
      auto decoded = DecodeSnapshot(bad, "snap");
      ASSERT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss)
          << "byte " << i << " bit " << bit;
      EXPECT_NE(decoded.status().message().find("snap at offset"), std::string_view::npos)
          << decoded.status();
    }
  }
}

TEST(EmbeddedSnapshotTest, NamedProblemsBehindAValidChecksum) {
  struct Case {
    const char* what;
    std::string data;
    const char* message;
  };
  std::vector<Case> cases;
  {
    std::string d = Encode(Sample());
    d[0] = 'X';
    cases.push_back({"magic", Reseal(d), "bad magic"});
  }
  {
    std::string d = Encode(Sample());
    EncodeFixed32(d.data() + 8, 99);
    cases.push_back({"version", Reseal(d), "unknown snapshot format version 99"});
  }
  {
    SnapshotContents c = Sample();
    std::swap(c.files[0], c.files[1]);
    cases.push_back({"order", Encode(c), "out of order"});
  }
  {
    SnapshotContents c = Sample();
    c.files[1].name = c.files[0].name;
    cases.push_back({"duplicate", Encode(c), "out of order or repeated"});
  }
  {
    SnapshotContents c = Sample();
    c.files[0].mod_revision = 43;  // after the snapshot's revision
    cases.push_back({"revision", Encode(c), "impossible"});
  }
  {
    SnapshotContents c = Sample();
    c.files[2].version = 0;
    cases.push_back({"version 0", Encode(c), "impossible"});
  }
  {
    std::string d = Encode(Sample());
    d.insert(d.size() - 4, "zz");
    cases.push_back({"trailing", Reseal(d), "2 trailing bytes"});
  }
  {
    SnapshotContents c;
    c.revision = 1;
    std::string d = Encode(c);
    // Claim a million files in a few bytes.
    std::string body(d.data(), 12);
    PutVarint64(&body, 1);
    PutVarint64(&body, 1'000'000);
    PutFixed32(&body, 0);
    cases.push_back({"count", Reseal(body), "does not fit"});
  }
  for (const Case& c : cases) {
    auto decoded = DecodeSnapshot(c.data, "snap");
    ASSERT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << c.what;
    EXPECT_NE(decoded.status().message().find(c.message), std::string_view::npos)
        << c.what << ": " << decoded.status();
  }
}

}  // namespace
}  // namespace tessera::coord
