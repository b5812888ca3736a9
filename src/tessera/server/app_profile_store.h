// AppProfileStore: the app profiles of every instance, kept in the lock service beside the
// table schema. docs/server.md, "The instance admin API and app profiles", has the story.
//
// One persistent file per profile, `<prefix><instance name>/<profile id>` (e.g.
// "app_profiles/projects/p/instances/i/prof1"), whose value is an AppProfileRecord (format
// below). Both modes use it: a single node's embedded lock service keeps persistent files in
// its snapshot in <data-dir>/coord (written atomically through the FileSystem, durable once Put
// returns), so profiles survive restarts; a cluster's etcd is shared, so every node sees every
// profile at once. Reads go to the lock service each time (no mirror): profile calls are rare
// admin calls, and a node never answers from a stale copy.
//
// Changes decide by compare-and-set on the file's version (create: the file must not exist;
// update: the version read), so two nodes changing one profile never lose a write. A profile's
// etag is the lock-service revision of its last change: it changes with every update and is
// never reused, not even by a profile deleted and created again.
//
// Session: like ClusterSchema, the store uses the node's lock-service session, given by
// Attach() after each registration and taken back by Detach() when the session is lost; in
// between every call fails with Unavailable.
//
// Thread-safety: every method is safe to call concurrently. No lock is held across a
// lock-service call; Detach() waits for calls using the session to finish.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "google/bigtable/admin/v2/instance.pb.h"
#include "tessera/coord/lock_service.h"
#include "tessera/util/status.h"

namespace tessera::server {

// The value of a profile's file in the lock service.
//
//   record := format(1 byte = 0x01) lp(settings)
//   settings: the google.bigtable.admin.v2.AppProfile message, serialized, with name and etag
//             cleared (both come from where the record is stored)
// A reader refuses an unknown format byte; a later format (the next issue adds the profile's
// read/write consistency level) takes the next byte value, and readers keep accepting 0x01.
struct AppProfileRecord {
  static constexpr uint8_t kFormat = 0x01;

  ::google::bigtable::admin::v2::AppProfile settings;  // name and etag empty

  std::string Encode() const;
  // DataLoss naming the problem for an empty record, an unknown format, a truncated or
  // unparsable settings message, or trailing bytes.
  static StatusOr<AppProfileRecord> Decode(std::string_view encoded);
};

// InvalidArgument unless `id` matches [_a-zA-Z0-9][-_.a-zA-Z0-9]* and has at most 50 bytes.
Status ValidateAppProfileId(std::string_view id);

// "projects/{p}/instances/{i}/appProfiles/{id}" split in two; InvalidArgument naming the
// problem otherwise.
struct AppProfileName {
  std::string instance;  // "projects/p/instances/i"
  std::string id;

  std::string Full() const { return instance + "/appProfiles/" + id; }
  static StatusOr<AppProfileName> Parse(std::string_view full_name);
};

struct AppProfileStoreOptions {
  // Where profile files live in the lock service. Non-empty; may not change while a cluster
  // runs.
  std::string prefix = "app_profiles/";
  // How many times an update retries a lost compare-and-set before giving up with Aborted.
  int max_attempts = 16;
};

class AppProfileStore {
 public:
  // InvalidArgument for bad options.
  static StatusOr<std::unique_ptr<AppProfileStore>> Open(const AppProfileStoreOptions& options);
  ~AppProfileStore();  // Detach()

  AppProfileStore(const AppProfileStore&) = delete;
  AppProfileStore& operator=(const AppProfileStore&) = delete;

  // Uses `session` from now on. `session` must stay alive until Detach() (or the destructor)
  // returns. Replaces an earlier session (detaching it first).
  void Attach(coord::Session* session);
  // Waits for calls using the session to finish and forgets it. Idempotent.
  void Detach();

  // Every profile returned has its full name and etag set.
  //
  // Stores `settings` (its name and etag are ignored) as profile `name`.
  // AlreadyExists 'app profile "…" already exists'.
  StatusOr<::google::bigtable::admin::v2::AppProfile> Create(
      const AppProfileName& name, ::google::bigtable::admin::v2::AppProfile settings);
  // NotFound 'app profile "…" not found'.
  StatusOr<::google::bigtable::admin::v2::AppProfile> Get(const AppProfileName& name);
  // The profiles of `instance`, by id; `instance` "projects/p/instances/-" means every instance
  // of project p (ordered by full name).
  StatusOr<std::vector<::google::bigtable::admin::v2::AppProfile>> List(std::string_view instance);
  // The names of the instances of project `project` ("projects/p") holding a profile, sorted.
  StatusOr<std::vector<std::string>> ListInstances(std::string_view project);
  // Runs `change` on the stored settings and stores the result. With a non-empty
  // `expected_etag` the change happens only if it is the profile's etag (Aborted otherwise).
  // `change` may run more than once (a lost compare-and-set is retried on the newer settings);
  // its non-OK status is returned unchanged and nothing is stored.
  // NotFound; Aborted (etag mismatch, or lost the race max_attempts times).
  StatusOr<::google::bigtable::admin::v2::AppProfile> Update(
      const AppProfileName& name, std::string_view expected_etag,
      const std::function<Status(::google::bigtable::admin::v2::AppProfile*)>& change);
  // NotFound.
  Status Delete(const AppProfileName& name);

  // Every call above also fails with Unavailable when detached or when the lock service cannot
  // be reached, and with DataLoss naming the file when a stored record is malformed.

  // The lock-service file name of a profile.
  std::string RecordName(const AppProfileName& name) const {
    return options_.prefix + name.instance + "/" + name.id;
  }

 private:
  explicit AppProfileStore(const AppProfileStoreOptions& options) : options_(options) {}

  // The session for one call, or Unavailable when detached; pairs with EndUse().
  StatusOr<coord::Session*> BeginUse();
  void EndUse();
  // The profile a record file holds, with its name and etag.
  StatusOr<::google::bigtable::admin::v2::AppProfile> FromFile(const AppProfileName& name,
                                                               const coord::FileInfo& file) const;
  // Lists files under `key_prefix` and returns their profiles (by file name).
  StatusOr<std::vector<::google::bigtable::admin::v2::AppProfile>> ListUnder(
      const std::string& key_prefix);

  const AppProfileStoreOptions options_;

  // Guards the session and the count of calls using it.
  absl::Mutex mu_;
  coord::Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::server
