#include "tessera/server/app_profile_levels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::server {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using replication::ReadLevel;
using replication::WriteLevel;
using ::testing::HasSubstr;

TEST(AppProfileLevelsTest, BuiltInIdsAndTheDefault) {
  EXPECT_EQ(BuiltInProfileLevels("one"), (ProfileLevels{ReadLevel::kOne, WriteLevel::kOne}));
  EXPECT_EQ(BuiltInProfileLevels("quorum"),
            (ProfileLevels{ReadLevel::kQuorum, WriteLevel::kQuorum}));
  EXPECT_EQ(BuiltInProfileLevels("all"), (ProfileLevels{ReadLevel::kPrimary, WriteLevel::kAll}));
  EXPECT_EQ(BuiltInProfileLevels("local_quorum"),
            (ProfileLevels{ReadLevel::kQuorum, WriteLevel::kLocalQuorum}));
  EXPECT_EQ(BuiltInProfileLevels("primary"),
            (ProfileLevels{ReadLevel::kPrimary, WriteLevel::kQuorum}));
  EXPECT_EQ(BuiltInProfileLevels(""), ProfileLevels{});
  EXPECT_EQ(BuiltInProfileLevels("default"), ProfileLevels{});
  EXPECT_FALSE(BuiltInProfileLevels("ONE").has_value());
  EXPECT_FALSE(BuiltInProfileLevels("batch").has_value());
}

TEST(AppProfileLevelsTest, LevelsComeFromTheExtensionOrTheDescription) {
  admin::AppProfile p;
  EXPECT_EQ(*LevelsOf(p), ProfileLevels{});
  p.set_description("nightly batch; read_consistency=one write_consistency=all");
  EXPECT_EQ(*LevelsOf(p), (ProfileLevels{ReadLevel::kOne, WriteLevel::kAll}));
  // The extension wins, field by field.
  p.mutable_tessera_options()->set_write_consistency("local_quorum");
  EXPECT_EQ(*LevelsOf(p), (ProfileLevels{ReadLevel::kOne, WriteLevel::kLocalQuorum}));
  p.clear_description();
  EXPECT_EQ(*LevelsOf(p), (ProfileLevels{std::nullopt, WriteLevel::kLocalQuorum}));
}

TEST(AppProfileLevelsTest, ALevelThatIsNoneIsRefusedNamingIt) {
  admin::AppProfile p;
  p.set_description("read_consistency=sometimes");
  StatusOr<ProfileLevels> bad = LevelsOf(p);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("read_consistency \"sometimes\" is not a consistency level"));
  p.clear_description();
  // A read level is not a write level.
  p.mutable_tessera_options()->set_write_consistency("primary");
  bad = LevelsOf(p);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("tessera_options.write_consistency \"primary\""));
}

TEST(AppProfileLevelsTest, StoredProfilesAreCachedAndUnknownOnesAreNotFound) {
  ManualClock clock;
  int fetches = 0;
  admin::AppProfile stored;
  stored.mutable_tessera_options()->set_read_consistency("quorum");
  AppProfileLevels levels(
      [&](const std::string& instance, const std::string& id) -> StatusOr<admin::AppProfile> {
        ++fetches;
        if (instance == "projects/p/instances/i" && id == "reports") return stored;
        return absl::NotFoundError("no such file");
      },
      &clock, /*cache_us=*/1000);
  EXPECT_EQ(*levels.Resolve("projects/p/instances/i", "reports"),
            (ProfileLevels{ReadLevel::kQuorum, std::nullopt}));
  EXPECT_EQ(*levels.Resolve("projects/p/instances/i", "quorum"),
            (ProfileLevels{ReadLevel::kQuorum, WriteLevel::kQuorum}));
  EXPECT_EQ(fetches, 1);  // built-ins are never fetched
  // Within the cache time the change is not seen; after it, it is.
  stored.mutable_tessera_options()->set_read_consistency("one");
  EXPECT_EQ(levels.Resolve("projects/p/instances/i", "reports")->read, ReadLevel::kQuorum);
  EXPECT_EQ(fetches, 1);
  clock.Advance(1000);
  EXPECT_EQ(levels.Resolve("projects/p/instances/i", "reports")->read, ReadLevel::kOne);
  EXPECT_EQ(fetches, 2);
  // Forget drops the cached copy at once.
  stored.mutable_tessera_options()->set_read_consistency("primary");
  levels.Forget("projects/p/instances/i", "reports");
  EXPECT_EQ(levels.Resolve("projects/p/instances/i", "reports")->read, ReadLevel::kPrimary);

  StatusOr<ProfileLevels> missing = levels.Resolve("projects/p/instances/i", "nosuch");
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("app profile \"projects/p/instances/i/appProfiles/nosuch\" not found"));
  // Another instance's profile of the same id is not this one's.
  EXPECT_EQ(levels.Resolve("projects/p/instances/j", "reports").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::server
