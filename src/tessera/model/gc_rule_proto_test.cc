#include "tessera/model/gc_rule_proto.h"

#include "gtest/gtest.h"

namespace tessera::model {
namespace {

namespace btadmin = ::google::bigtable::admin::v2;

TEST(GcRuleProtoTest, RoundTrip) {
  for (const char* text : {"never", "maxversions=3", "maxage=1d12h", "maxage=1d or maxversions=2",
                           "(maxage=1h and maxversions=1) or maxversions=10"}) {
    auto rule = GcRule::Parse(text);
    ASSERT_TRUE(rule.ok()) << text;
    auto back = GcRuleFromProto(GcRuleToProto(*rule), "f");
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(*back, *rule) << text;
  }
}

TEST(GcRuleProtoTest, BadRulesAreRefusedNamingTheFamily) {
  btadmin::GcRule versions;
  versions.set_max_num_versions(0);
  auto r = GcRuleFromProto(versions, "cf");
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("column family cf"), std::string_view::npos);
  btadmin::GcRule age;
  age.mutable_max_age()->set_seconds(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(GcRuleFromProto(age, "cf").status()));
  btadmin::GcRule deep;
  btadmin::GcRule* node = &deep;
  for (int i = 0; i < 100; ++i) node = node->mutable_union_()->add_rules();
  EXPECT_TRUE(absl::IsInvalidArgument(GcRuleFromProto(deep, "cf").status()));
  btadmin::GcRule big;
  for (int i = 0; i < 200; ++i) big.mutable_union_()->add_rules()->set_max_num_versions(1000000);
  auto too_big = GcRuleFromProto(big, "cf");
  EXPECT_NE(too_big.status().message().find("larger than"), std::string_view::npos)
      << too_big.status();
}

TEST(GcRuleProtoTest, EmptyUnionStaysAUnion) {
  btadmin::GcRule empty_union;
  empty_union.mutable_union_();
  auto rule = GcRuleFromProto(empty_union, "f");
  ASSERT_TRUE(rule.ok()) << rule.status();  // an empty union collects nothing
  EXPECT_EQ(rule->kind(), GcRule::Kind::kUnion);
  EXPECT_EQ(GcRuleToProto(*rule).rule_case(), btadmin::GcRule::kUnion);
}

}  // namespace
}  // namespace tessera::model
