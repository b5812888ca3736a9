// App profiles as consistency levels (docs/replication.md, "Consistency levels through app
// profiles"): what a data request's app profile asks of the replicas.
//
// A profile carries a read and a write level in its Tessera extension
// (AppProfile.tessera_options, proto/tessera/v1/app_profile_options.proto). `cbt
// createappprofile` can only set a description, so the description may carry them instead, as
// the words `read_consistency=LEVEL` and `write_consistency=LEVEL`; the extension wins where
// both are given. Level names as replication/consistency.h spells them.
//
// Built-in ids, which always work and cannot be created:
//   one           writes ONE,          reads ONE
//   quorum        writes QUORUM,       reads QUORUM
//   all           writes ALL,          reads PRIMARY
//   local_quorum  writes LOCAL_QUORUM, reads QUORUM
//   primary       writes QUORUM,       reads PRIMARY
// "" and "default" (every Bigtable instance's default profile) set nothing: the table's and
// then the node's defaults apply.
//
// An id that is neither built in nor a stored profile of the request's instance is NOT_FOUND
// naming it (production's code for a profile that does not exist).
//
// Thread-safety: AppProfileLevels is safe to call from many threads at once; the functions
// are pure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "google/bigtable/admin/v2/instance.pb.h"
#include "tessera/replication/consistency.h"
#include "tessera/util/clock.h"
#include "tessera/util/status.h"

namespace tessera::server {

// The levels one profile asks for; unset: the defaults.
struct ProfileLevels {
  std::optional<replication::ReadLevel> read;
  std::optional<replication::WriteLevel> write;
  friend bool operator==(const ProfileLevels&, const ProfileLevels&) = default;
};

// The levels of a built-in id (above); nullopt for any other id.
std::optional<ProfileLevels> BuiltInProfileLevels(std::string_view id);

// The levels `profile` carries (its extension, else its description's words).
// InvalidArgument naming the field and the value for a level name that is not one.
StatusOr<ProfileLevels> LevelsOf(const ::google::bigtable::admin::v2::AppProfile& profile);

// Resolves request app profiles to levels, caching what it read from the lock service for
// `cache_us` (a profile changed on another node takes effect within that time here).
class AppProfileLevels {
 public:
  // Reads one stored profile: NotFound when there is none, Unavailable when the lock service
  // cannot say. `instance` is "projects/p/instances/i".
  using Fetch = std::function<StatusOr<::google::bigtable::admin::v2::AppProfile>(
      const std::string& instance, const std::string& id)>;

  AppProfileLevels(Fetch fetch, Clock* clock, int64_t cache_us = 5'000'000)
      : fetch_(std::move(fetch)), clock_(clock), cache_us_(cache_us) {}

  // The levels of profile `id` of `instance` for one request. NotFound 'app profile "…" not
  // found'; what Fetch answers otherwise; InvalidArgument for a stored profile whose levels
  // do not parse.
  StatusOr<ProfileLevels> Resolve(std::string_view instance, std::string_view id);

  // Forgets what is cached of one profile (after this node changed it).
  void Forget(std::string_view instance, std::string_view id);

 private:
  struct Entry {
    ProfileLevels levels;
    int64_t fetched_at_us = 0;
  };

  const Fetch fetch_;
  Clock* const clock_;
  const int64_t cache_us_;
  absl::Mutex mu_;
  // By instance + '\0' + id.
  std::map<std::string, Entry> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::server
