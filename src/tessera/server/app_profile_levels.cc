#include "tessera/server/app_profile_levels.h"

#include <vector>

#include "absl/strings/str_split.h"

namespace tessera::server {

namespace admin = ::google::bigtable::admin::v2;
using replication::ReadLevel;
using replication::WriteLevel;

std::optional<ProfileLevels> BuiltInProfileLevels(std::string_view id) {
  if (id == "one") return ProfileLevels{ReadLevel::kOne, WriteLevel::kOne};
  if (id == "quorum") return ProfileLevels{ReadLevel::kQuorum, WriteLevel::kQuorum};
  if (id == "all") return ProfileLevels{ReadLevel::kPrimary, WriteLevel::kAll};
  if (id == "local_quorum") return ProfileLevels{ReadLevel::kQuorum, WriteLevel::kLocalQuorum};
  if (id == "primary") return ProfileLevels{ReadLevel::kPrimary, WriteLevel::kQuorum};
  if (id.empty() || id == "default") return ProfileLevels{};
  return std::nullopt;
}

namespace {

Status BadLevel(std::string_view where, std::string_view key, std::string_view value,
                std::string_view allowed) {
  return absl::InvalidArgumentError(StrCat(where, key, " \"", value,
                                           "\" is not a consistency level (one of ", allowed,
                                           ")"));
}

constexpr std::string_view kReadNames = "primary, quorum, one";
constexpr std::string_view kWriteNames = "one, quorum, all, local_quorum";

// `where` prefixes the key in messages ("description's ", "tessera_options.").
Status ParseInto(std::string_view where, std::string_view read_value,
                 std::string_view write_value, ProfileLevels* out) {
  if (!read_value.empty()) {
    out->read = replication::ParseReadLevel(read_value);
    if (!out->read.has_value()) {
      return BadLevel(where, "read_consistency", read_value, kReadNames);
    }
  }
  if (!write_value.empty()) {
    out->write = replication::ParseWriteLevel(write_value);
    if (!out->write.has_value()) {
      return BadLevel(where, "write_consistency", write_value, kWriteNames);
    }
  }
  return Status();
}

std::string CacheKey(std::string_view instance, std::string_view id) {
  return StrCat(instance, std::string_view("\0", 1), id);
}

}  // namespace

StatusOr<ProfileLevels> LevelsOf(const admin::AppProfile& profile) {
  ProfileLevels levels;
  // The description's words first, so that the extension's fields override them.
  absl::string_view read_word, write_word;
  for (absl::string_view word : absl::StrSplit(profile.description(), absl::ByAnyChar(" \t\n,;"),
                                              absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&word, "read_consistency=")) read_word = word;
    if (absl::ConsumePrefix(&word, "write_consistency=")) write_word = word;
  }
  RETURN_IF_ERROR(ParseInto("description's ", std::string_view(read_word.data(), read_word.size()),
                            std::string_view(write_word.data(), write_word.size()), &levels));
  const tessera::v1::AppProfileOptions& options = profile.tessera_options();
  RETURN_IF_ERROR(ParseInto("tessera_options.", options.read_consistency(),
                            options.write_consistency(), &levels));
  return levels;
}

StatusOr<ProfileLevels> AppProfileLevels::Resolve(std::string_view instance, std::string_view id) {
  if (std::optional<ProfileLevels> built_in = BuiltInProfileLevels(id)) return *built_in;
  const int64_t now = clock_->MonotonicMicros();
  {
    absl::MutexLock l(&mu_);
    auto it = cache_.find(CacheKey(instance, id));
    if (it != cache_.end() && now - it->second.fetched_at_us < cache_us_) {
      return it->second.levels;
    }
  }
  StatusOr<admin::AppProfile> profile = fetch_(std::string(instance), std::string(id));
  if (absl::IsNotFound(profile.status())) {
    return absl::NotFoundError(
        StrCat("app profile \"", instance, "/appProfiles/", id, "\" not found"));
  }
  if (!profile.ok()) return profile.status();
  ASSIGN_OR_RETURN(ProfileLevels levels, LevelsOf(*profile));
  absl::MutexLock l(&mu_);
  cache_[CacheKey(instance, id)] = Entry{levels, now};
  return levels;
}

void AppProfileLevels::Forget(std::string_view instance, std::string_view id) {
  absl::MutexLock l(&mu_);
  cache_.erase(CacheKey(instance, id));
}

}  // namespace tessera::server
