// The schema record's format: round trip and every way a record can be malformed.
#include "tessera/catalog/schema_record.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/coding.h"

namespace tessera::catalog {
namespace {

model::TableSchema Schema(std::string name, std::vector<std::string> families) {
  model::TableSchema s;
  s.name = std::move(name);
  for (auto& f : families) s.families[f];
  return s;
}

SchemaRecord SampleRecord() {
  SchemaRecord r;
  r.schema = Schema("t", {"a", "b"});
  r.schema.version = 4;
  r.schema.deletion_protection = true;
  r.schema.families["a"].gc_rule = model::GcRule::MaxNumVersions(3);
  r.split_keys = {"k", "p"};
  r.family_since = {{"a", 1}, {"b", 4}};
  return r;
}

TEST(SchemaRecordTest, RoundTrip) {
  const SchemaRecord r = SampleRecord();
  auto back = SchemaRecord::Decode(r.Encode());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->schema, r.schema);
  EXPECT_EQ(back->split_keys, r.split_keys);
  EXPECT_EQ(back->family_since, r.family_since);
  // No tablet prefix: the first format, which the previous version reads.
  EXPECT_EQ(r.Encode().front(), static_cast<char>(SchemaRecord::kFormat));
  EXPECT_EQ(back->tablet_prefix, 0u);
}

TEST(SchemaRecordTest, TabletPrefixRoundTrip) {
  SchemaRecord r = SampleRecord();
  r.tablet_prefix = (uint64_t{1} << 47) | 12345;
  const std::string bytes = r.Encode();
  EXPECT_EQ(bytes.front(), static_cast<char>(SchemaRecord::kFormatWithTabletPrefix));
  auto back = SchemaRecord::Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tablet_prefix, r.tablet_prefix);
  EXPECT_EQ(back->schema, r.schema);
  EXPECT_EQ(back->split_keys, r.split_keys);
}

TEST(SchemaRecordTest, MalformedIsDataLoss) {
  const std::string good = SampleRecord().Encode();
  auto expect_bad = [](const std::string& bytes, std::string_view what) {
    auto r = SchemaRecord::Decode(bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << what;
    EXPECT_NE(std::string(r.status().message()).find(what), std::string::npos) << r.status();
  };
  expect_bad("", "empty");
  expect_bad(std::string(1, '\x03') + good.substr(1), "unknown format byte 3");
  // Format 0x02 without its prefix, with 0, with 2^48.
  expect_bad(std::string(1, '\x02') + good.substr(1), "truncated tablet prefix");
  expect_bad(std::string(1, '\x02') + good.substr(1) + std::string(1, '\0'), "tablet prefix 0 ");
  SchemaRecord big = SampleRecord();
  big.tablet_prefix = uint64_t{1} << 48;
  expect_bad(big.Encode(), "is not in [1, 2^48)");
  for (size_t cut = 1; cut < good.size(); ++cut) {
    EXPECT_FALSE(SchemaRecord::Decode(good.substr(0, cut)).ok()) << "cut at " << cut;
  }
  expect_bad(good + "x", "1 trailing bytes");
  SchemaRecord r = SampleRecord();
  r.family_since["b"] = 5;  // after the schema's version
  expect_bad(r.Encode(), "created at version 5");
  r = SampleRecord();
  r.family_since.erase("b");
  expect_bad(r.Encode(), "1 family versions for 2 families");
  r = SampleRecord();
  r.family_since = {{"a", 1}, {"c", 1}};
  expect_bad(r.Encode(), "names \"c\"");
  r = SampleRecord();
  r.split_keys = {"p", "k"};
  expect_bad(r.Encode(), "out of order");
  r = SampleRecord();
  r.split_keys = {""};
  expect_bad(r.Encode(), "is empty");
  r = SampleRecord();
  r.schema.version = 0;
  r.family_since.clear();
  r.schema.families.clear();
  expect_bad(r.Encode(), "schema version 0");

  // A schema of format 0x02 (which carried a tablet's drop marks) decodes when it lists none.
  auto with_old_schema = [&](uint32_t drops) {
    std::string schema = SampleRecord().schema.Encode();
    schema[0] = 0x02;
    PutVarint32(&schema, drops);
    for (uint32_t i = 0; i < drops; ++i) {
      PutLengthPrefixed(&schema, "x");
      PutVarint64(&schema, 7);
    }
    std::string_view rest = std::string_view(good).substr(1);
    std::string_view old_schema;
    EXPECT_TRUE(GetLengthPrefixed(&rest, &old_schema));
    std::string bytes = good.substr(0, 1);
    PutLengthPrefixed(&bytes, schema);
    bytes.append(rest);
    return bytes;
  };
  EXPECT_TRUE(SchemaRecord::Decode(with_old_schema(0)).ok());
  expect_bad(with_old_schema(1), "schema lists dropped families");
}

}  // namespace
}  // namespace tessera::catalog
