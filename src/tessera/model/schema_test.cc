#include "tessera/model/schema.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

TableSchema Sample() {
  TableSchema s;
  s.name = "users";
  s.families["cf"].gc_rule = GcRule::MaxNumVersions(3);
  s.families["meta.v2"] = FamilySchema{GcRule::None(), /*in_memory=*/true};
  s.families["old-data_1"].gc_rule =
      GcRule::Union({GcRule::MaxAge(86400000000), GcRule::MaxNumVersions(1)});
  return s;
}

TEST(SchemaTest, FamilyNames) {
  EXPECT_TRUE(ValidateFamilyName("cf").ok());
  EXPECT_TRUE(ValidateFamilyName("a-b_c.D9").ok());
  EXPECT_TRUE(ValidateFamilyName(std::string(64, 'x')).ok());
  for (std::string bad : {std::string(), std::string(65, 'x'), std::string("a b"),
                          std::string("a:b"), std::string("a\0b", 3), std::string("é")}) {
    Status s = ValidateFamilyName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ValidateFamilyName("bad name").message().find("bad name"), std::string::npos);
}

TEST(SchemaTest, TableNames) {
  EXPECT_TRUE(ValidateTableName("users").ok());
  EXPECT_TRUE(ValidateTableName("_t-1.x").ok());
  EXPECT_FALSE(ValidateTableName("").ok());
  EXPECT_FALSE(ValidateTableName("-t").ok());
  EXPECT_FALSE(ValidateTableName("a/b").ok());
  EXPECT_FALSE(ValidateTableName(std::string(51, 't')).ok());
}

TEST(SchemaTest, Find) {
  TableSchema s = Sample();
  ASSERT_NE(s.Find("cf"), nullptr);
  EXPECT_EQ(s.Find("cf")->gc_rule, GcRule::MaxNumVersions(3));
  EXPECT_TRUE(s.Find("meta.v2")->in_memory);
  EXPECT_EQ(s.Find("nope"), nullptr);
  EXPECT_EQ(s.FindGcRule("nope"), nullptr);
  EXPECT_EQ(*s.FindGcRule("cf"), GcRule::MaxNumVersions(3));
  EXPECT_TRUE(s.Validate().ok());
  s.families["bad name"];
  EXPECT_EQ(s.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SchemaTest, EncodeDecode) {
  TableSchema s = Sample();
  StatusOr<TableSchema> d = TableSchema::Decode(s.Encode());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, s);
  EXPECT_EQ(d->DebugString(),
            "table users { cf: versions() > 3, meta.v2: never in_memory, "
            "old-data_1: (age() > 1d || versions() > 1) }");
  TableSchema empty;
  EXPECT_EQ(*TableSchema::Decode(empty.Encode()), empty);
}

TEST(SchemaTest, TableOptionsAndKindsRoundTrip) {
  TableSchema s = Sample();
  s.version = 42;
  s.granularity = TimestampGranularity::kMicros;
  s.deletion_protection = true;
  s.families["inbox"] = FamilySchema{GcRule::None(), false, /*super_columns=*/true,
                                     /*time_sorted=*/true};
  StatusOr<TableSchema> d = TableSchema::Decode(s.Encode());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, s);
  EXPECT_TRUE(d->Find("inbox")->super_columns);
  EXPECT_TRUE(d->Find("inbox")->time_sorted);
}

TEST(SchemaTest, TesseraOptionsRoundTripInFormatFour) {
  TableSchema s = Sample();
  s.version = 3;
  // Without options the schema keeps format 0x03, which the previous version reads.
  EXPECT_EQ(s.Encode()[0], 0x03);
  s.options = TableOptions{"ring:rack:dc1=2,dc2=1", "quorum", "local_quorum", ""};
  const std::string encoded = s.Encode();
  EXPECT_EQ(encoded[0], 0x04);
  StatusOr<TableSchema> d = TableSchema::Decode(encoded);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, s);
  EXPECT_EQ(d->options.placement, "ring:rack:dc1=2,dc2=1");
  // Only one level set: still format 0x04, the others stay empty.
  s.options = TableOptions{"", "", "all", ""};
  d = TableSchema::Decode(s.Encode());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->options, s.options);
  // The options cut short, or a 0x03 schema followed by options bytes, are damage.
  for (size_t len = encoded.size() - 1; encoded.size() - len <= 8; --len) {
    EXPECT_EQ(TableSchema::Decode(encoded.substr(0, len)).status().code(),
              absl::StatusCode::kDataLoss)
        << len;
  }
  std::string as_three = encoded;
  as_three[0] = 0x03;
  EXPECT_EQ(TableSchema::Decode(as_three).status().code(), absl::StatusCode::kDataLoss);
}

TEST(SchemaTest, ACompactionChoiceNeedsFormatFive) {
  TableSchema s = Sample();
  s.options = TableOptions{"tablets:1", "", "", "size_tiered"};
  const std::string encoded = s.Encode();
  EXPECT_EQ(encoded[0], 0x05);
  StatusOr<TableSchema> d = TableSchema::Decode(encoded);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->options, s.options);
  // Without it the schema stays in format 0x04; cut short it is damage.
  s.options.compaction.clear();
  EXPECT_EQ(s.Encode()[0], 0x04);
  EXPECT_EQ(TableSchema::Decode(encoded.substr(0, encoded.size() - 1)).status().code(),
            absl::StatusCode::kDataLoss);
}

// Format 0x02: the current encoding followed by the drop marks the schema held before they
// moved to the tablet (docs/sequence_numbers.md).
std::string FormatTwo(const TableSchema& s, const std::map<std::string, uint64_t>& drops) {
  std::string out = s.Encode();
  out[0] = 0x02;
  PutVarint32(&out, static_cast<uint32_t>(drops.size()));
  for (const auto& [family, sequence] : drops) {
    PutLengthPrefixed(&out, family);
    PutVarint64(&out, sequence);
  }
  return out;
}

TEST(SchemaTest, DecodesFormatTwoWithItsDropMarks) {
  TableSchema s = Sample();
  s.version = 42;
  s.families["inbox"] = FamilySchema{GcRule::None(), false, /*super_columns=*/true,
                                     /*time_sorted=*/true};
  const std::string v2 = FormatTwo(s, {{"gone", 17}, {"inbox", 5}});
  std::map<std::string, uint64_t, std::less<>> drops = {{"stale", 1}};
  StatusOr<TableSchema> d = TableSchema::Decode(v2, &drops);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, s);
  EXPECT_EQ(drops, (std::map<std::string, uint64_t, std::less<>>{{"gone", 17}, {"inbox", 5}}));
  EXPECT_FALSE(drops.contains("cf"));
  // Without a place for them the marks are dropped; a new encoding never writes them.
  ASSERT_TRUE(TableSchema::Decode(v2).ok());
  EXPECT_EQ(TableSchema::Decode(v2)->Encode(), s.Encode());
  EXPECT_TRUE(TableSchema::Decode(s.Encode(), &drops).ok());
  EXPECT_TRUE(drops.empty());
  // Drops out of order, and cut short.
  std::string bad = FormatTwo(s, {{"a", 1}, {"b", 2}});
  std::swap(bad[bad.size() - 5], bad[bad.size() - 2]);
  EXPECT_EQ(TableSchema::Decode(bad).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(TableSchema::Decode(v2.substr(0, v2.size() - 1)).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(SchemaTest, DecodesFormatOne) {
  // Written by the engine before table options existed: format 0x01, one in-memory family.
  std::string v1 = {0x01, 0x01, 't', 0x01, 0x02, 'c', 'f', 0x01};
  std::string rule = GcRule::MaxNumVersions(2).Encode();
  v1.push_back(static_cast<char>(rule.size()));
  v1 += rule;
  StatusOr<TableSchema> d = TableSchema::Decode(v1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->name, "t");
  EXPECT_EQ(d->version, 0u);
  EXPECT_EQ(d->granularity, TimestampGranularity::kMillis);
  ASSERT_NE(d->Find("cf"), nullptr);
  EXPECT_TRUE(d->Find("cf")->in_memory);
  EXPECT_EQ(d->Find("cf")->gc_rule, GcRule::MaxNumVersions(2));
  // Kinds did not exist in format 1.
  v1[7] = 0x03;
  EXPECT_EQ(TableSchema::Decode(v1).status().code(), absl::StatusCode::kDataLoss);
}

TEST(SchemaTest, DecodeRejectsDamage) {
  const std::string good = Sample().Encode();
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_EQ(TableSchema::Decode(good.substr(0, len)).status().code(), absl::StatusCode::kDataLoss)
        << len;
  }
  EXPECT_FALSE(TableSchema::Decode(good + "x").ok());

  // Families out of order: swap the names of an encoded two-family schema.
  TableSchema two;
  two.name = "t";
  two.families["a"];
  two.families["b"];
  std::string enc = two.Encode();
  size_t a = enc.find('a', 3), b = enc.find('b', 3);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  std::swap(enc[a], enc[b]);
  Status st = TableSchema::Decode(enc).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("out of order"), std::string::npos) << st;
  enc[b] = 'b';  // duplicate "b"
  EXPECT_FALSE(TableSchema::Decode(enc).ok());

  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = good;
    bad[rnd.Uniform(bad.size())] = static_cast<char>(rnd.Uniform(256));
    StatusOr<TableSchema> d = TableSchema::Decode(bad);
    if (d.ok()) {
      for (const auto& [family, f] : d->families) {
        EXPECT_TRUE(ValidateFamilyName(family).ok());
        EXPECT_TRUE(f.gc_rule.Validate().ok());
      }
    } else {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
    }
  }
}

}  // namespace
}  // namespace tessera::model
