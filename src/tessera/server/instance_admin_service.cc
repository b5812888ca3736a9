#include "tessera/server/instance_admin_service.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tessera/server/app_profile_levels.h"
#include "tessera/server/grpc_status.h"
#include "tessera/server/list_pages.h"
#include "tessera/util/logging.h"

namespace tessera::server {

namespace {

namespace admin = ::google::bigtable::admin::v2;

constexpr std::string_view kProjects = "projects/";
constexpr std::string_view kInstances = "/instances/";
constexpr std::string_view kClusters = "/clusters/";

rpc::UnaryReactor* Unsupported(rpc::ServerContext* context, std::string_view rpc,
                                      std::string_view why) {
  return Reply(context, absl::UnimplementedError(
                            tessera::StrCat(rpc, " is not supported by Tessera: ", why)));
}

// InvalidArgument unless `name` is "projects/P" with a non-empty P without '/'.
Status ValidateProjectName(std::string_view name) {
  const std::string_view project =
      name.substr(0, kProjects.size()) == kProjects ? name.substr(kProjects.size()) : "";
  if (project.empty() || project.find('/') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        tessera::StrCat("project name \"", name, "\" must look like projects/P"));
  }
  return Status();
}

// "projects/p" of "projects/p/instances/i". REQUIRES: catalog::ValidateInstanceName(instance) is
// OK.
std::string ProjectOf(std::string_view instance) {
  return std::string(instance.substr(0, instance.find(kInstances)));
}

bool IsWildcardInstance(std::string_view instance) { return instance.ends_with("/instances/-"); }

admin::Instance InstanceProto(const std::string& name) {
  admin::Instance instance;
  instance.set_name(name);
  instance.set_display_name(name.substr(name.rfind('/') + 1));
  instance.set_state(admin::Instance::READY);
  instance.set_type(admin::Instance::PRODUCTION);
  return instance;
}

admin::Cluster ClusterProto(const std::string& instance, const ClusterView& view) {
  admin::Cluster cluster;
  cluster.set_name(tessera::StrCat(instance, kClusters, view.id));
  cluster.set_location(tessera::StrCat(ProjectOf(instance), "/locations/", view.zone));
  cluster.set_state(view.serving ? admin::Cluster::READY : admin::Cluster::STATE_NOT_KNOWN);
  cluster.set_serve_nodes(view.serve_nodes);
  cluster.set_node_scaling_factor(admin::Cluster::NODE_SCALING_FACTOR_1X);
  cluster.set_default_storage_type(admin::SSD);
  return cluster;
}

Status BadProfile(const AppProfileName& name, std::string_view what) {
  return absl::InvalidArgumentError(tessera::StrCat("app profile \"", name.Full(), "\": ", what));
}

// InvalidArgument unless `path` is an update_mask path UpdateAppProfile takes, and a routing
// path names the routing policy `given` sets (the Go client sends the policy's field name).
Status CheckMaskPath(const AppProfileName& name, const std::string& path,
                     const admin::AppProfile& given) {
  static const std::set<std::string, std::less<>> kPaths = {"description",
                                                            "multi_cluster_routing_use_any",
                                                            "single_cluster_routing",
                                                            "standard_isolation",
                                                            "priority",
                                                            "data_boost_isolation_read_only"};
  if (!kPaths.contains(path)) {
    return BadProfile(name,
                      tessera::StrCat("update_mask path \"", path,
                                      "\" is not one of description, "
                                      "multi_cluster_routing_use_any, single_cluster_routing, "
                                      "standard_isolation, priority"));
  }
  if ((path == "multi_cluster_routing_use_any" && !given.has_multi_cluster_routing_use_any()) ||
      (path == "single_cluster_routing" && !given.has_single_cluster_routing())) {
    return BadProfile(name, tessera::StrCat("update_mask names \"", path,
                                            "\" but the request's profile does not set it"));
  }
  return Status();
}

// Copies the field `path` names from `given` to `profile`. Besides CheckMaskPath's paths, the
// oneof names "routing_policy" and "isolation" (an empty mask) replace the whole oneof.
void ApplyMaskPath(const std::string& path, const admin::AppProfile& given,
                   admin::AppProfile* profile) {
  if (path == "description") {
    profile->set_description(given.description());
  } else if (path == "multi_cluster_routing_use_any" ||
             (path == "routing_policy" && given.has_multi_cluster_routing_use_any())) {
    *profile->mutable_multi_cluster_routing_use_any() = given.multi_cluster_routing_use_any();
  } else if (path == "single_cluster_routing" ||
             (path == "routing_policy" && given.has_single_cluster_routing())) {
    *profile->mutable_single_cluster_routing() = given.single_cluster_routing();
  } else if (path == "routing_policy") {
    profile->clear_routing_policy();  // NormalizeProfile refuses it: a profile needs one
  } else if (path == "standard_isolation" ||
             (path == "isolation" && given.has_standard_isolation())) {
    *profile->mutable_standard_isolation() = given.standard_isolation();
  } else if (path == "priority") {
    profile->mutable_standard_isolation()->set_priority(
        given.has_standard_isolation() ? given.standard_isolation().priority() : given.priority());
  } else if (path == "data_boost_isolation_read_only" ||
             (path == "isolation" && given.has_data_boost_isolation_read_only())) {
    *profile->mutable_data_boost_isolation_read_only() = given.data_boost_isolation_read_only();
  } else if (path == "isolation") {
    profile->clear_isolation();
    if (given.isolation_case() == admin::AppProfile::kPriority) {
      profile->set_priority(given.priority());
    }
  }
}

}  // namespace

// --- Instances and clusters -------------------------------------------------------------------

StatusOr<std::vector<std::string>> InstanceAdminService::InstancesOf(const std::string& project) {
  std::set<std::string> instances;
  const std::string prefix = project + std::string(kInstances);
  for (const auto& table : catalog_->ListAllTables()) {
    if (table->name.instance.starts_with(prefix)) instances.insert(table->name.instance);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> with_profiles, profiles_->ListInstances(project));
  instances.insert(with_profiles.begin(), with_profiles.end());
  return std::vector<std::string>(instances.begin(), instances.end());
}

Status InstanceAdminService::CheckInstanceExists(const std::string& instance) {
  if (!catalog_->ListTables(instance).empty()) return Status();
  ASSIGN_OR_RETURN(std::vector<admin::AppProfile> profiles, profiles_->List(instance));
  if (!profiles.empty()) return Status();
  return absl::NotFoundError(tessera::StrCat(
      "instance \"", instance,
      "\" not found (in Tessera an instance exists while it holds a table or an app profile)"));
}

StatusOr<admin::ListInstancesResponse> InstanceAdminService::DoListInstances(
    const admin::ListInstancesRequest& request) {
  RETURN_IF_ERROR(ValidateProjectName(request.parent()));
  ASSIGN_OR_RETURN(std::vector<std::string> instances, InstancesOf(request.parent()));
  admin::ListInstancesResponse response;
  for (const std::string& name : instances) *response.add_instances() = InstanceProto(name);
  return response;
}

StatusOr<admin::Instance> InstanceAdminService::DoGetInstance(
    const admin::GetInstanceRequest& request) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(request.name()));
  if (IsWildcardInstance(request.name())) {
    return absl::InvalidArgumentError(
        tessera::StrCat("GetInstance needs one instance, not \"", request.name(), "\""));
  }
  RETURN_IF_ERROR(CheckInstanceExists(request.name()));
  return InstanceProto(request.name());
}

StatusOr<admin::ListClustersResponse> InstanceAdminService::DoListClusters(
    const admin::ListClustersRequest& request) {
  const std::string& parent = request.parent();
  RETURN_IF_ERROR(catalog::ValidateInstanceName(parent));
  std::vector<std::string> instances;
  if (IsWildcardInstance(parent)) {
    ASSIGN_OR_RETURN(instances, InstancesOf(ProjectOf(parent)));
  } else {
    RETURN_IF_ERROR(CheckInstanceExists(parent));
    instances.push_back(parent);
  }
  const ClusterView view = cluster_();
  admin::ListClustersResponse response;
  for (const std::string& instance : instances) {
    *response.add_clusters() = ClusterProto(instance, view);
  }
  return response;
}

StatusOr<admin::Cluster> InstanceAdminService::DoGetCluster(
    const admin::GetClusterRequest& request) {
  const std::string& name = request.name();
  const size_t pos = name.rfind(kClusters);
  const std::string instance = name.substr(0, pos == std::string::npos ? 0 : pos);
  if (pos == std::string::npos || !catalog::ValidateInstanceName(instance).ok() ||
      IsWildcardInstance(instance)) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "cluster name \"", name, "\" must look like projects/P/instances/I/clusters/C"));
  }
  const ClusterView view = cluster_();
  const std::string id = name.substr(pos + kClusters.size());
  if (id != view.id) {
    return absl::NotFoundError(tessera::StrCat(
        "cluster \"", name, "\" not found (the Tessera cluster is \"", view.id, "\")"));
  }
  RETURN_IF_ERROR(CheckInstanceExists(instance));
  return ClusterProto(instance, view);
}

// --- App profiles -----------------------------------------------------------------------------

Status InstanceAdminService::NormalizeProfile(const AppProfileName& name,
                                              admin::AppProfile* profile) const {
  const std::string cluster_id = cluster_().id;
  auto check_cluster = [&](const std::string& id) {
    if (id == cluster_id) return Status();
    return absl::InvalidArgumentError(
        tessera::StrCat("app profile \"", name.Full(), "\" routes to cluster \"", id,
                        "\", which does not exist (the Tessera cluster is \"", cluster_id, "\")"));
  };
  switch (profile->routing_policy_case()) {
    case admin::AppProfile::kMultiClusterRoutingUseAny:
      for (const std::string& id : profile->multi_cluster_routing_use_any().cluster_ids()) {
        RETURN_IF_ERROR(check_cluster(id));
      }
      break;
    case admin::AppProfile::kSingleClusterRouting:
      RETURN_IF_ERROR(check_cluster(profile->single_cluster_routing().cluster_id()));
      break;
    case admin::AppProfile::ROUTING_POLICY_NOT_SET:
      return BadProfile(name,
                        "needs a routing policy (multi_cluster_routing_use_any or "
                        "single_cluster_routing)");
  }
  switch (profile->isolation_case()) {
    case admin::AppProfile::kPriority: {
      // The deprecated field stands for standard_isolation.priority (the API's rule).
      const admin::AppProfile::Priority priority = profile->priority();
      profile->mutable_standard_isolation()->set_priority(priority);
      break;
    }
    case admin::AppProfile::kDataBoostIsolationReadOnly:
      return absl::UnimplementedError(tessera::StrCat(
          "app profile \"", name.Full(), "\": Data Boost isolation is not supported by Tessera"));
    case admin::AppProfile::kStandardIsolation:
    case admin::AppProfile::ISOLATION_NOT_SET:
      break;
  }
  if (StatusOr<ProfileLevels> levels = LevelsOf(*profile); !levels.ok()) {
    return BadProfile(name, std::string(levels.status().message()));
  }
  admin::AppProfile::StandardIsolation* isolation = profile->mutable_standard_isolation();
  if (!admin::AppProfile::Priority_IsValid(isolation->priority())) {
    return BadProfile(name, tessera::StrCat("unknown priority ", isolation->priority()));
  }
  if (isolation->priority() == admin::AppProfile::PRIORITY_UNSPECIFIED) {
    isolation->set_priority(admin::AppProfile::PRIORITY_HIGH);
  }
  return Status();
}

StatusOr<admin::AppProfile> InstanceAdminService::DoCreateAppProfile(
    const admin::CreateAppProfileRequest& request) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(request.parent()));
  if (IsWildcardInstance(request.parent())) {
    return absl::InvalidArgumentError(
        tessera::StrCat("CreateAppProfile needs one instance, not \"", request.parent(), "\""));
  }
  RETURN_IF_ERROR(ValidateAppProfileId(request.app_profile_id()));
  const AppProfileName name{request.parent(), request.app_profile_id()};
  if (BuiltInProfileLevels(request.app_profile_id()).has_value()) {
    return absl::AlreadyExistsError(tessera::StrCat(
        "app profile \"", name.Full(), "\" already exists: \"", request.app_profile_id(),
        "\" is built in (app profiles one, quorum, all, local_quorum, primary and default)"));
  }
  admin::AppProfile profile = request.app_profile();
  RETURN_IF_ERROR(NormalizeProfile(name, &profile));
  ASSIGN_OR_RETURN(admin::AppProfile created, profiles_->Create(name, std::move(profile)));
  if (profile_changed_) profile_changed_(name);
  TLOG_INFO("admin: created app profile {}", created.name());
  return created;
}

StatusOr<admin::AppProfile> InstanceAdminService::DoGetAppProfile(
    const admin::GetAppProfileRequest& request) {
  ASSIGN_OR_RETURN(AppProfileName name, AppProfileName::Parse(request.name()));
  return profiles_->Get(name);
}

StatusOr<admin::ListAppProfilesResponse> InstanceAdminService::DoListAppProfiles(
    const admin::ListAppProfilesRequest& request) {
  RETURN_IF_ERROR(catalog::ValidateInstanceName(request.parent()));
  ASSIGN_OR_RETURN(const int page_size, ListPageSize(request.page_size()));
  // The page token is the full name of the last profile of the previous page.
  const std::string& after = request.page_token();
  RETURN_IF_ERROR(CheckListPageToken(after, AppProfileName::Parse(after).ok()));
  ASSIGN_OR_RETURN(std::vector<admin::AppProfile> profiles, profiles_->List(request.parent()));
  admin::ListAppProfilesResponse response;
  for (admin::AppProfile& profile : profiles) {
    if (!after.empty() && profile.name() <= after) continue;
    if (response.app_profiles_size() == page_size) {
      response.set_next_page_token(response.app_profiles(page_size - 1).name());
      break;
    }
    *response.add_app_profiles() = std::move(profile);
  }
  return response;
}

StatusOr<::google::longrunning::Operation> InstanceAdminService::DoUpdateAppProfile(
    const admin::UpdateAppProfileRequest& request) {
  const admin::AppProfile& given = request.app_profile();
  ASSIGN_OR_RETURN(AppProfileName name, AppProfileName::Parse(given.name()));
  std::vector<std::string> paths(request.update_mask().paths().begin(),
                                 request.update_mask().paths().end());
  // Checked before anything is read, so a bad request fails alike whether or not it exists.
  for (const std::string& path : paths) RETURN_IF_ERROR(CheckMaskPath(name, path, given));
  if (paths.empty()) paths = {"description", "routing_policy", "isolation"};  // the API's rule
  auto change = [&](admin::AppProfile* profile) -> Status {
    for (const std::string& path : paths) ApplyMaskPath(path, given, profile);
    return NormalizeProfile(name, profile);
  };
  ASSIGN_OR_RETURN(admin::AppProfile updated, profiles_->Update(name, given.etag(), change));
  if (profile_changed_) profile_changed_(name);
  TLOG_INFO("admin: updated app profile {} (etag {})", updated.name(), updated.etag());
  ::google::longrunning::Operation op;
  op.set_name(tessera::StrCat("operations/", updated.name(), "/update/", updated.etag()));
  op.mutable_metadata()->PackFrom(admin::UpdateAppProfileMetadata());
  op.set_done(true);
  op.mutable_response()->PackFrom(updated);
  return op;
}

Status InstanceAdminService::DoDeleteAppProfile(const admin::DeleteAppProfileRequest& request) {
  ASSIGN_OR_RETURN(AppProfileName name, AppProfileName::Parse(request.name()));
  RETURN_IF_ERROR(profiles_->Delete(name));
  if (profile_changed_) profile_changed_(name);
  TLOG_INFO("admin: deleted app profile {}", request.name());
  return Status();
}

// --- gRPC handlers ----------------------------------------------------------------------------
// Each served one asks the serving check first: a node without its lock-service session
// refuses every call, as the data and table-admin services do.

Status InstanceAdminService::CheckServing() const {
  return serving_check_ ? serving_check_() : Status();
}

void InstanceAdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService =
      ::google::bigtable::admin::v2::BigtableInstanceAdmin::service_full_name();
  services->Add(kService, "ListInstances", this, &InstanceAdminService::ListInstances, executor);
  services->Add(kService, "GetInstance", this, &InstanceAdminService::GetInstance, executor);
  services->Add(kService, "ListClusters", this, &InstanceAdminService::ListClusters, executor);
  services->Add(kService, "GetCluster", this, &InstanceAdminService::GetCluster, executor);
  services->Add(kService, "CreateAppProfile", this, &InstanceAdminService::CreateAppProfile, executor);
  services->Add(kService, "GetAppProfile", this, &InstanceAdminService::GetAppProfile, executor);
  services->Add(kService, "ListAppProfiles", this, &InstanceAdminService::ListAppProfiles, executor);
  services->Add(kService, "UpdateAppProfile", this, &InstanceAdminService::UpdateAppProfile, executor);
  services->Add(kService, "DeleteAppProfile", this, &InstanceAdminService::DeleteAppProfile, executor);
  services->Add(kService, "CreateInstance", this, &InstanceAdminService::CreateInstance, executor);
  services->Add(kService, "UpdateInstance", this, &InstanceAdminService::UpdateInstance, executor);
  services->Add(kService, "PartialUpdateInstance", this, &InstanceAdminService::PartialUpdateInstance, executor);
  services->Add(kService, "DeleteInstance", this, &InstanceAdminService::DeleteInstance, executor);
  services->Add(kService, "CreateCluster", this, &InstanceAdminService::CreateCluster, executor);
  services->Add(kService, "UpdateCluster", this, &InstanceAdminService::UpdateCluster, executor);
  services->Add(kService, "PartialUpdateCluster", this, &InstanceAdminService::PartialUpdateCluster, executor);
  services->Add(kService, "DeleteCluster", this, &InstanceAdminService::DeleteCluster, executor);
}

rpc::UnaryReactor* InstanceAdminService::ListInstances(
    rpc::ServerContext* context, const admin::ListInstancesRequest* request,
    admin::ListInstancesResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoListInstances(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::GetInstance(
    rpc::ServerContext* context, const admin::GetInstanceRequest* request,
    admin::Instance* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoGetInstance(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::ListClusters(
    rpc::ServerContext* context, const admin::ListClustersRequest* request,
    admin::ListClustersResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoListClusters(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::GetCluster(rpc::ServerContext* context,
                                                           const admin::GetClusterRequest* request,
                                                           admin::Cluster* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoGetCluster(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::CreateAppProfile(
    rpc::ServerContext* context, const admin::CreateAppProfileRequest* request,
    admin::AppProfile* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoCreateAppProfile(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::GetAppProfile(
    rpc::ServerContext* context, const admin::GetAppProfileRequest* request,
    admin::AppProfile* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoGetAppProfile(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::ListAppProfiles(
    rpc::ServerContext* context, const admin::ListAppProfilesRequest* request,
    admin::ListAppProfilesResponse* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoListAppProfiles(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::UpdateAppProfile(
    rpc::ServerContext* context, const admin::UpdateAppProfileRequest* request,
    ::google::longrunning::Operation* response) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoUpdateAppProfile(*request), response);
}

rpc::UnaryReactor* InstanceAdminService::DeleteAppProfile(
    rpc::ServerContext* context, const admin::DeleteAppProfileRequest* request,
    ::google::protobuf::Empty*) {
  if (Status serving = CheckServing(); !serving.ok()) return Reply(context, serving);
  return Reply(context, DoDeleteAppProfile(*request));
}

namespace {
constexpr std::string_view kNoInstanceObjects =
    "an instance exists while it holds a table or an app profile";
constexpr std::string_view kOneCluster =
    "the Tessera cluster is every instance's one cluster; its nodes join and leave through "
    "the lock service (see docs/cluster_membership.md)";
}  // namespace

rpc::UnaryReactor* InstanceAdminService::CreateInstance(rpc::ServerContext* context,
                                                               const admin::CreateInstanceRequest*,
                                                               ::google::longrunning::Operation*) {
  return Unsupported(context, "CreateInstance", kNoInstanceObjects);
}

rpc::UnaryReactor* InstanceAdminService::UpdateInstance(rpc::ServerContext* context,
                                                               const admin::Instance*,
                                                               admin::Instance*) {
  return Unsupported(context, "UpdateInstance", kNoInstanceObjects);
}

rpc::UnaryReactor* InstanceAdminService::PartialUpdateInstance(
    rpc::ServerContext* context, const admin::PartialUpdateInstanceRequest*,
    ::google::longrunning::Operation*) {
  return Unsupported(context, "PartialUpdateInstance", kNoInstanceObjects);
}

rpc::UnaryReactor* InstanceAdminService::DeleteInstance(rpc::ServerContext* context,
                                                               const admin::DeleteInstanceRequest*,
                                                               ::google::protobuf::Empty*) {
  return Unsupported(context, "DeleteInstance", kNoInstanceObjects);
}

rpc::UnaryReactor* InstanceAdminService::CreateCluster(rpc::ServerContext* context,
                                                              const admin::CreateClusterRequest*,
                                                              ::google::longrunning::Operation*) {
  return Unsupported(context, "CreateCluster", kOneCluster);
}

rpc::UnaryReactor* InstanceAdminService::UpdateCluster(rpc::ServerContext* context,
                                                              const admin::Cluster*,
                                                              ::google::longrunning::Operation*) {
  return Unsupported(context, "UpdateCluster", kOneCluster);
}

rpc::UnaryReactor* InstanceAdminService::PartialUpdateCluster(
    rpc::ServerContext* context, const admin::PartialUpdateClusterRequest*,
    ::google::longrunning::Operation*) {
  return Unsupported(context, "PartialUpdateCluster", kOneCluster);
}

rpc::UnaryReactor* InstanceAdminService::DeleteCluster(rpc::ServerContext* context,
                                                              const admin::DeleteClusterRequest*,
                                                              ::google::protobuf::Empty*) {
  return Unsupported(context, "DeleteCluster", kOneCluster);
}

}  // namespace tessera::server
