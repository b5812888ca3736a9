#include "tessera/server/app_profile_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/util/coding.h"

namespace tessera::server {

namespace {

namespace admin = ::google::bigtable::admin::v2;

constexpr size_t kMaxProfileIdBytes = 50;
constexpr std::string_view kAppProfiles = "/appProfiles/";

Status Malformed(std::string_view what) {
  return absl::DataLossError(tessera::StrCat("malformed app profile record: ", what));
}

// A lock-service failure as a caller sees it: the service's own InvalidArgument (a name or
// value over its limits) stays; anything else is the environment (Unavailable).
Status LockServiceError(std::string_view doing, const Status& status) {
  if (absl::IsInvalidArgument(status)) {
    return absl::InvalidArgumentError(tessera::StrCat(doing, ": ", status.message()));
  }
  return absl::UnavailableError(tessera::StrCat("lock service: ", doing, ": ", status.ToString()));
}

Status NotFoundProfile(const AppProfileName& name) {
  return absl::NotFoundError(tessera::StrCat("app profile \"", name.Full(), "\" not found"));
}

bool IsIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

// --- The record and names -------------------------------------------------------------------

std::string AppProfileRecord::Encode() const {
  admin::AppProfile plain = settings;
  plain.clear_name();
  plain.clear_etag();
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  PutLengthPrefixed(&out, plain.SerializeAsString());
  return out;
}

StatusOr<AppProfileRecord> AppProfileRecord::Decode(std::string_view in) {
  if (in.empty()) return Malformed("empty");
  const auto format = static_cast<uint8_t>(in.front());
  if (format != kFormat) {
    return Malformed(tessera::StrCat("unknown format byte ", static_cast<int>(format)));
  }
  in.remove_prefix(1);
  std::string_view encoded;
  if (!GetLengthPrefixed(&in, &encoded)) return Malformed("truncated settings");
  AppProfileRecord record;
  if (!record.settings.ParseFromArray(encoded.data(), static_cast<int>(encoded.size()))) {
    return Malformed("settings do not parse");
  }
  if (!in.empty()) return Malformed(tessera::StrCat(in.size(), " trailing bytes"));
  record.settings.clear_name();
  record.settings.clear_etag();
  return record;
}

Status ValidateAppProfileId(std::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("app profile id is empty");
  if (id.size() > kMaxProfileIdBytes) {
    return absl::InvalidArgumentError(tessera::StrCat("app profile id \"", id.substr(0, 80),
                                                      "\" is longer than ", kMaxProfileIdBytes));
  }
  if (!std::all_of(id.begin(), id.end(), IsIdChar) || id[0] == '-' || id[0] == '.') {
    return absl::InvalidArgumentError(
        tessera::StrCat("app profile id \"", id, "\" must match [_a-zA-Z0-9][-_.a-zA-Z0-9]*"));
  }
  return Status();
}

StatusOr<AppProfileName> AppProfileName::Parse(std::string_view full_name) {
  const size_t pos = full_name.rfind(kAppProfiles);
  if (pos == std::string_view::npos) {
    return absl::InvalidArgumentError(
        tessera::StrCat("app profile name \"", full_name,
                        "\" must look like projects/P/instances/I/appProfiles/ID"));
  }
  AppProfileName name{std::string(full_name.substr(0, pos)),
                      std::string(full_name.substr(pos + kAppProfiles.size()))};
  RETURN_IF_ERROR_CTX(catalog::ValidateInstanceName(name.instance),
                      tessera::StrCat("app profile name \"", full_name, "\""));
  RETURN_IF_ERROR(ValidateAppProfileId(name.id));
  return name;
}

// --- The store ------------------------------------------------------------------------------

StatusOr<std::unique_ptr<AppProfileStore>> AppProfileStore::Open(
    const AppProfileStoreOptions& options) {
  if (options.prefix.empty()) {
    return absl::InvalidArgumentError("AppProfileStoreOptions.prefix is empty");
  }
  RETURN_IF_ERROR(coord::ValidatePrefix(options.prefix));
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "AppProfileStoreOptions.max_attempts must be at least 1, got ", options.max_attempts));
  }
  return std::unique_ptr<AppProfileStore>(new AppProfileStore(options));
}

AppProfileStore::~AppProfileStore() { Detach(); }

void AppProfileStore::Attach(coord::Session* session) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* in_flight) { return *in_flight == 0; }, &in_flight_));
  session_ = session;
}

void AppProfileStore::Detach() { Attach(nullptr); }

StatusOr<coord::Session*> AppProfileStore::BeginUse() {
  absl::MutexLock lock(&mu_);
  if (session_ == nullptr) {
    return absl::UnavailableError(
        "app profiles: this node has no lock-service session (joining or re-registering)");
  }
  ++in_flight_;
  return session_;
}

void AppProfileStore::EndUse() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

StatusOr<admin::AppProfile> AppProfileStore::FromFile(const AppProfileName& name,
                                                      const coord::FileInfo& file) const {
  StatusOr<AppProfileRecord> record = AppProfileRecord::Decode(file.value);
  if (!record.ok()) {
    return absl::DataLossError(
        tessera::StrCat("lock-service file ", file.name, ": ", record.status().message()));
  }
  admin::AppProfile profile = std::move(record->settings);
  profile.set_name(name.Full());
  profile.set_etag(std::to_string(file.mod_revision));
  return profile;
}

StatusOr<admin::AppProfile> AppProfileStore::Create(const AppProfileName& name,
                                                    admin::AppProfile settings) {
  AppProfileRecord record;
  record.settings = std::move(settings);
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  coord::PutOptions put_options;
  put_options.expected_version = 0;
  StatusOr<coord::FileInfo> put = session->Put(RecordName(name), record.Encode(), put_options);
  if (absl::IsAborted(put.status())) {
    return absl::AlreadyExistsError(
        tessera::StrCat("app profile \"", name.Full(), "\" already exists"));
  }
  if (!put.ok()) return LockServiceError("creating an app profile", put.status());
  return FromFile(name, *put);
}

StatusOr<admin::AppProfile> AppProfileStore::Get(const AppProfileName& name) {
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  StatusOr<coord::FileInfo> got = session->Get(RecordName(name));
  if (absl::IsNotFound(got.status())) return NotFoundProfile(name);
  if (!got.ok()) return LockServiceError("reading an app profile", got.status());
  return FromFile(name, *got);
}

StatusOr<std::vector<admin::AppProfile>> AppProfileStore::ListUnder(const std::string& key_prefix) {
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  StatusOr<coord::Listing> listing = session->List(key_prefix);
  if (!listing.ok()) return LockServiceError("listing app profiles", listing.status());
  std::vector<coord::FileInfo> files = std::move(listing->files);
  std::sort(files.begin(), files.end(),
            [](const coord::FileInfo& a, const coord::FileInfo& b) { return a.name < b.name; });
  std::vector<admin::AppProfile> out;
  for (const coord::FileInfo& file : files) {
    // "<prefix><instance>/<id>": the id is after the last '/'.
    const std::string_view rest = std::string_view(file.name).substr(options_.prefix.size());
    const size_t slash = rest.rfind('/');
    if (slash == std::string_view::npos) {
      return absl::DataLossError(
          tessera::StrCat("lock-service file ", file.name, " is not named <instance>/<id>"));
    }
    const AppProfileName name{std::string(rest.substr(0, slash)),
                              std::string(rest.substr(slash + 1))};
    ASSIGN_OR_RETURN(admin::AppProfile profile, FromFile(name, file));
    out.push_back(std::move(profile));
  }
  return out;
}

StatusOr<std::vector<admin::AppProfile>> AppProfileStore::List(std::string_view instance) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(instance));
  std::string key_prefix = options_.prefix + std::string(instance) + "/";
  if (instance.ends_with("/instances/-")) {
    key_prefix = options_.prefix + std::string(instance.substr(0, instance.size() - 1));
  }
  return ListUnder(key_prefix);
}

StatusOr<std::vector<std::string>> AppProfileStore::ListInstances(std::string_view project) {
  ASSIGN_OR_RETURN(std::vector<admin::AppProfile> profiles,
                   ListUnder(options_.prefix + std::string(project) + "/instances/"));
  std::vector<std::string> instances;
  for (const admin::AppProfile& profile : profiles) {
    std::string instance = profile.name().substr(0, profile.name().rfind(kAppProfiles));
    if (instances.empty() || instances.back() != instance) instances.push_back(std::move(instance));
  }
  return instances;
}

StatusOr<admin::AppProfile> AppProfileStore::Update(
    const AppProfileName& name, std::string_view expected_etag,
    const std::function<Status(admin::AppProfile*)>& change) {
  const std::string key = RecordName(name);
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    StatusOr<coord::FileInfo> got = session->Get(key);
    if (absl::IsNotFound(got.status())) return NotFoundProfile(name);
    if (!got.ok()) return LockServiceError("reading an app profile", got.status());
    ASSIGN_OR_RETURN(admin::AppProfile profile, FromFile(name, *got));
    if (!expected_etag.empty() && expected_etag != profile.etag()) {
      return absl::AbortedError(tessera::StrCat("app profile \"", name.Full(), "\" has etag \"",
                                                profile.etag(), "\", not \"", expected_etag,
                                                "\": it changed since it was read"));
    }
    RETURN_IF_ERROR(change(&profile));
    AppProfileRecord record;
    record.settings = std::move(profile);
    coord::PutOptions put_options;
    put_options.expected_version = got->version;
    StatusOr<coord::FileInfo> put = session->Put(key, record.Encode(), put_options);
    if (absl::IsAborted(put.status())) continue;  // changed meanwhile: run `change` again
    if (!put.ok()) return LockServiceError("updating an app profile", put.status());
    return FromFile(name, *put);
  }
  return absl::AbortedError(tessera::StrCat("app profile \"", name.Full(), "\" changed ",
                                            options_.max_attempts,
                                            " times while this update was tried; try again"));
}

Status AppProfileStore::Delete(const AppProfileName& name) {
  ASSIGN_OR_RETURN(coord::Session * session, BeginUse());
  absl::Cleanup end = [this] { EndUse(); };
  Status s = session->Delete(RecordName(name), std::nullopt);
  if (absl::IsNotFound(s)) return NotFoundProfile(name);
  if (!s.ok()) return LockServiceError("deleting an app profile", s);
  return Status();
}

}  // namespace tessera::server
