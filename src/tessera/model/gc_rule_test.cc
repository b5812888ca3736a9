#include "tessera/model/gc_rule.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/util/random.h"

namespace tessera::model {
namespace {

constexpr int64_t kSecond = 1000000;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kDay = 24 * kHour;

GcRule RandomRule(Random* rnd, int depth) {
  int choice = depth >= 4 ? rnd->Uniform(3) : rnd->Uniform(5);
  switch (choice) {
    case 0:
      return GcRule::None();
    case 1:
      return GcRule::MaxNumVersions(1 + rnd->Uniform(5));
    case 2:
      return GcRule::MaxAge(1 + rnd->Uniform(3 * kDay));
    default: {
      std::vector<GcRule> children;
      int n = 2 + rnd->Uniform(3);
      for (int i = 0; i < n; ++i) children.push_back(RandomRule(rnd, depth + 1));
      return choice == 3 ? GcRule::Union(std::move(children))
                         : GcRule::Intersection(std::move(children));
    }
  }
}

TEST(GcRuleTest, None) {
  GcRule r;
  EXPECT_TRUE(r.is_none());
  EXPECT_FALSE(r.ShouldCollect(1000, 0, 100 * kDay));
  EXPECT_EQ(r.ToString(), "never");
}

TEST(GcRuleTest, MaxNumVersions) {
  GcRule r = GcRule::MaxNumVersions(2);
  EXPECT_FALSE(r.ShouldCollect(0, 0, 0));
  EXPECT_FALSE(r.ShouldCollect(1, 0, 0));
  EXPECT_TRUE(r.ShouldCollect(2, 0, 0));
  EXPECT_TRUE(r.ShouldCollect(3, 0, 0));
  EXPECT_EQ(r.ToString(), "versions() > 2");
}

TEST(GcRuleTest, MaxAge) {
  GcRule r = GcRule::MaxAge(kDay);
  const int64_t now = 1000 * kDay;
  EXPECT_FALSE(r.ShouldCollect(5, now, now));
  EXPECT_FALSE(r.ShouldCollect(5, now - kDay, now));  // exactly the max age: kept
  EXPECT_TRUE(r.ShouldCollect(0, now - kDay - 1, now));
  EXPECT_FALSE(r.ShouldCollect(0, now + kDay, now));  // future timestamp
  // No overflow at the extremes.
  EXPECT_TRUE(r.ShouldCollect(0, std::numeric_limits<int64_t>::min(), now));
  EXPECT_FALSE(
      r.ShouldCollect(0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(r.ToString(), "age() > 1d");
}

TEST(GcRuleTest, UnionAndIntersection) {
  const int64_t now = 1000 * kDay;
  GcRule u = GcRule::Union({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3)});
  GcRule i = GcRule::Intersection({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3)});
  // Young, few versions.
  EXPECT_FALSE(u.ShouldCollect(0, now, now));
  EXPECT_FALSE(i.ShouldCollect(0, now, now));
  // Old, few versions.
  EXPECT_TRUE(u.ShouldCollect(0, now - 2 * kDay, now));
  EXPECT_FALSE(i.ShouldCollect(0, now - 2 * kDay, now));
  // Young, many versions.
  EXPECT_TRUE(u.ShouldCollect(3, now, now));
  EXPECT_FALSE(i.ShouldCollect(3, now, now));
  // Old and many versions.
  EXPECT_TRUE(u.ShouldCollect(3, now - 2 * kDay, now));
  EXPECT_TRUE(i.ShouldCollect(3, now - 2 * kDay, now));
  EXPECT_EQ(u.ToString(), "(age() > 1d || versions() > 3)");
  EXPECT_EQ(i.ToString(), "(age() > 1d && versions() > 3)");
  // Empty lists collect nothing.
  EXPECT_FALSE(GcRule::Union({}).ShouldCollect(100, 0, now));
  EXPECT_FALSE(GcRule::Intersection({}).ShouldCollect(100, 0, now));
  // Nested.
  GcRule nested =
      GcRule::Union({GcRule::Intersection({GcRule::MaxAge(kHour), GcRule::MaxNumVersions(1)}),
                     GcRule::MaxNumVersions(10)});
  EXPECT_TRUE(nested.ShouldCollect(1, now - 2 * kHour, now));
  EXPECT_FALSE(nested.ShouldCollect(1, now, now));
  EXPECT_TRUE(nested.ShouldCollect(10, now, now));
  EXPECT_EQ(nested.ToString(), "((age() > 1h && versions() > 1) || versions() > 10)");
}

TEST(GcRuleTest, Validate) {
  EXPECT_TRUE(GcRule::MaxNumVersions(1).Validate().ok());
  EXPECT_EQ(GcRule::MaxNumVersions(0).Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GcRule::MaxAge(0).Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GcRule::Union({GcRule::MaxAge(-5)}).Validate().code(),
            absl::StatusCode::kInvalidArgument);
  GcRule deep = GcRule::MaxNumVersions(1);
  for (int i = 1; i < GcRule::kMaxDepth; ++i) deep = GcRule::Union({deep});
  EXPECT_TRUE(deep.Validate().ok());
  EXPECT_EQ(GcRule::Union({deep}).Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GcRuleTest, EncodeDecodeRoundTrip) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 500; ++i) {
    GcRule r = RandomRule(&rnd, 1);
    StatusOr<GcRule> d = GcRule::Decode(r.Encode());
    ASSERT_TRUE(d.ok()) << r.ToString() << ": " << d.status();
    EXPECT_EQ(*d, r) << r.ToString();
  }
  // Degenerate lists survive the binary form too.
  EXPECT_EQ(*GcRule::Decode(GcRule::Union({}).Encode()), GcRule::Union({}));
}

TEST(GcRuleTest, DecodeRejectsHostileInput) {
  // Truncations of a valid rule.
  std::string good = GcRule::Union({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3),
                                    GcRule::Intersection({GcRule::None(), GcRule::MaxAge(5)})})
                         .Encode();
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_EQ(GcRule::Decode(good.substr(0, len)).status().code(), absl::StatusCode::kDataLoss)
        << len;
  }
  EXPECT_EQ(GcRule::Decode(good + std::string(1, '\0')).status().code(),
            absl::StatusCode::kDataLoss);
  // Unknown kind; zero versions; zero age; a huge child count.
  EXPECT_FALSE(GcRule::Decode("\x07").ok());
  EXPECT_FALSE(GcRule::Decode(std::string("\x01\x00", 2)).ok());
  EXPECT_FALSE(GcRule::Decode(std::string("\x02\x00", 2)).ok());
  EXPECT_FALSE(GcRule::Decode("\x03\xff\xff\xff\xff\x0f").ok());
  // Nesting: 32 levels decode, 33 do not.
  auto nested = [](int depth) {
    std::string s;
    for (int i = 1; i < depth; ++i) s += "\x03\x01";
    s += std::string("\x00", 1);
    return s;
  };
  EXPECT_TRUE(GcRule::Decode(nested(GcRule::kMaxDepth)).ok());
  EXPECT_EQ(GcRule::Decode(nested(GcRule::kMaxDepth + 1)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_FALSE(GcRule::Decode(nested(100000)).ok());

  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = RandomRule(&rnd, 1).Encode();
    bad[rnd.Uniform(bad.size())] = static_cast<char>(rnd.Uniform(256));
    StatusOr<GcRule> d = GcRule::Decode(bad);
    if (d.ok()) {
      EXPECT_TRUE(d->Validate().ok());
    }
  }
}

TEST(GcRuleTest, Parse) {
  struct Case {
    const char* text;
    GcRule want;
  };
  const Case cases[] = {
      {"never", GcRule::None()},
      {"maxversions=2", GcRule::MaxNumVersions(2)},
      {"  MaxVersions = 2 ", GcRule::MaxNumVersions(2)},
      {"maxage=1d", GcRule::MaxAge(kDay)},
      {"maxage=1d12h", GcRule::MaxAge(kDay + 12 * kHour)},
      {"maxage=250ms", GcRule::MaxAge(250000)},
      {"maxage=1d or maxversions=3",
       GcRule::Union({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3)})},
      {"maxage=1d and maxversions=3",
       GcRule::Intersection({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3)})},
      // "and" binds tighter.
      {"maxversions=1 or maxage=1h and maxversions=5",
       GcRule::Union({GcRule::MaxNumVersions(1),
                      GcRule::Intersection({GcRule::MaxAge(kHour), GcRule::MaxNumVersions(5)})})},
      {"(maxversions=1 or maxage=1h) and maxversions=5",
       GcRule::Intersection({GcRule::Union({GcRule::MaxNumVersions(1), GcRule::MaxAge(kHour)}),
                             GcRule::MaxNumVersions(5)})},
      {"versions() > 2", GcRule::MaxNumVersions(2)},
      {"(age() > 1d || versions() > 3)",
       GcRule::Union({GcRule::MaxAge(kDay), GcRule::MaxNumVersions(3)})},
  };
  for (const Case& c : cases) {
    StatusOr<GcRule> r = GcRule::Parse(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status();
    EXPECT_EQ(*r, c.want) << c.text << " parsed as " << r->ToString();
  }
  const char* bad[] = {"",
                       "maxversions=0",
                       "maxversions=",
                       "maxage=1",
                       "maxage=0s",
                       "maxage=1y",
                       "maxversions=2 or",
                       "(maxversions=2",
                       "and",
                       "maxversions=2 maxage=1d",
                       "max_versions=2",
                       "maxage=1d $",
                       "maxversions=99999999999",
                       "versions() >"};
  for (const char* text : bad) {
    StatusOr<GcRule> r = GcRule::Parse(text);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  std::string deep(1000, '(');
  EXPECT_FALSE(GcRule::Parse(deep + "never" + std::string(1000, ')')).ok());
}

TEST(GcRuleTest, ToStringParsesBack) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 500; ++i) {
    GcRule r = RandomRule(&rnd, 1);
    StatusOr<GcRule> p = GcRule::Parse(r.ToString());
    ASSERT_TRUE(p.ok()) << r.ToString() << ": " << p.status();
    EXPECT_EQ(*p, r) << r.ToString() << " vs " << p->ToString();
  }
}

TEST(GcRuleTest, Durations) {
  EXPECT_EQ(FormatDurationMicros(kDay), "1d");
  EXPECT_EQ(FormatDurationMicros(90 * 60 * kSecond), "1h30m");
  EXPECT_EQ(FormatDurationMicros(1500), "1ms500us");
  EXPECT_EQ(FormatDurationMicros(0), "0s");
  EXPECT_EQ(*ParseDurationMicros("1h30m"), 90 * 60 * kSecond);
  EXPECT_EQ(*ParseDurationMicros("36h"), 36 * kHour);
  EXPECT_EQ(*ParseDurationMicros("10us"), 10);
  EXPECT_FALSE(ParseDurationMicros("").ok());
  EXPECT_FALSE(ParseDurationMicros("h").ok());
  EXPECT_FALSE(ParseDurationMicros("5").ok());
  EXPECT_FALSE(ParseDurationMicros("99999999999999999d").ok());
  EXPECT_FALSE(ParseDurationMicros("107000000d").ok());  // > int64 micros
}

}  // namespace
}  // namespace tessera::model
