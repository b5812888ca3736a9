// The Bigtable instance-admin service (google.bigtable.admin.v2.BigtableInstanceAdmin): the
// read side of instances and clusters, and app profiles.
//
// Instances: Tessera has no instance objects. An instance exists while it holds a table or an
// app profile (the table catalog knows full table names, projects/P/instances/I/tables/T; the
// AppProfileStore knows the profiles' instances), so cbt's `createappprofile` works on a fresh
// instance as `createtable` does. ListInstances (parent projects/P) lists them by name,
// GetInstance describes one (NOT_FOUND for another); both are READY PRODUCTION instances whose
// display name is the instance id.
//
// Clusters: the Tessera cluster is the one cluster of every instance. Its id is the cluster
// name (--cluster-name), its location projects/P/locations/<this node's dc>, serve_nodes the
// number of the cluster's nodes this node sees up (itself included), its state READY while this
// node serves (holds its lock-service session), STATE_NOT_KNOWN otherwise; storage SSD, scaling
// 1X. ListClusters takes an instance or projects/P/instances/- (every instance of P).
//
// App profiles: Create, Get, List (paged; instance "-" for all of a project), Update (update
// mask; returns an Operation that is already done, as admin_service's UpdateTable does), Delete
// (ignore_warnings accepted; Tessera has nothing to warn about). Kept in the AppProfileStore
// (app_profile_store.h). A profile needs a routing policy; the clusters it names must be the
// Tessera cluster; an unset priority becomes PRIORITY_HIGH (the API's rule); Data Boost
// isolation is refused as unsupported.
//
// Every other method of the service — instance and cluster changes here, the rest through the
// server's fallback (unimplemented_service.h) — answers UNIMPLEMENTED naming the RPC.
//
// Errors: NOT_FOUND, ALREADY_EXISTS, INVALID_ARGUMENT, ABORTED (etag mismatch), each naming the
// instance, cluster or profile; UNAVAILABLE while the node has no lock-service session.
//
// Thread-safety: gRPC calls the handlers concurrently; state lives in the catalog and the
// store, both thread-safe. Handlers block on the lock service (app profile calls are rare).
#pragma once

#include <functional>
#include <string>

#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "tessera/catalog/table_catalog.h"
#include "tessera/rpc/server.h"
#include "tessera/server/app_profile_store.h"
#include "tessera/util/executor.h"

namespace tessera::server {

// What a node knows of its cluster, for ListClusters and GetCluster.
struct ClusterView {
  std::string id = "tessera";  // the cluster name
  std::string zone = "dc1";    // this node's data centre
  int serve_nodes = 1;         // nodes seen up, this one included
  bool serving = true;         // this node holds its lock-service session
};

class InstanceAdminService final {
 public:
  // `catalog` and `profiles` must outlive the service. `cluster` is called on each cluster
  // call, on the handlers' executor, so it must be thread-safe.
  // `serving_check` is asked before every served gRPC call (not before the Do* methods); a
  // non-OK status is the call's answer, as for the table-admin service.
  // `profile_changed` (may be null) runs after an app profile was created, updated or deleted
  // through this service, so that a node's cache of profiles (app_profile_levels.h) takes the
  // change at once.
  InstanceAdminService(catalog::TableCatalog* catalog, AppProfileStore* profiles,
                       std::function<ClusterView()> cluster,
                       std::function<Status()> serving_check = nullptr,
                       std::function<void(const AppProfileName&)> profile_changed = nullptr)
      : catalog_(catalog),
        profiles_(profiles),
        cluster_(std::move(cluster)),
        serving_check_(std::move(serving_check)),
        profile_changed_(std::move(profile_changed)) {}

  // Registers every method of BigtableInstanceAdmin; the handlers run on `executor` (they
  // read and write the lock service).
  void Register(rpc::Services* services, Executor* executor);

  // --- The logic, callable without gRPC (tests) ---
  StatusOr<::google::bigtable::admin::v2::ListInstancesResponse> DoListInstances(
      const ::google::bigtable::admin::v2::ListInstancesRequest& request);
  StatusOr<::google::bigtable::admin::v2::Instance> DoGetInstance(
      const ::google::bigtable::admin::v2::GetInstanceRequest& request);
  StatusOr<::google::bigtable::admin::v2::ListClustersResponse> DoListClusters(
      const ::google::bigtable::admin::v2::ListClustersRequest& request);
  StatusOr<::google::bigtable::admin::v2::Cluster> DoGetCluster(
      const ::google::bigtable::admin::v2::GetClusterRequest& request);
  StatusOr<::google::bigtable::admin::v2::AppProfile> DoCreateAppProfile(
      const ::google::bigtable::admin::v2::CreateAppProfileRequest& request);
  StatusOr<::google::bigtable::admin::v2::AppProfile> DoGetAppProfile(
      const ::google::bigtable::admin::v2::GetAppProfileRequest& request);
  StatusOr<::google::bigtable::admin::v2::ListAppProfilesResponse> DoListAppProfiles(
      const ::google::bigtable::admin::v2::ListAppProfilesRequest& request);
  StatusOr<::google::longrunning::Operation> DoUpdateAppProfile(
      const ::google::bigtable::admin::v2::UpdateAppProfileRequest& request);
  Status DoDeleteAppProfile(const ::google::bigtable::admin::v2::DeleteAppProfileRequest& request);

  // --- gRPC handlers: served ---
  rpc::UnaryReactor* ListInstances(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::ListInstancesRequest* request,
      ::google::bigtable::admin::v2::ListInstancesResponse* response);
  rpc::UnaryReactor* GetInstance(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::GetInstanceRequest* request,
      ::google::bigtable::admin::v2::Instance* response);
  rpc::UnaryReactor* ListClusters(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::ListClustersRequest* request,
      ::google::bigtable::admin::v2::ListClustersResponse* response);
  rpc::UnaryReactor* GetCluster(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::GetClusterRequest* request,
      ::google::bigtable::admin::v2::Cluster* response);
  rpc::UnaryReactor* CreateAppProfile(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::CreateAppProfileRequest* request,
      ::google::bigtable::admin::v2::AppProfile* response);
  rpc::UnaryReactor* GetAppProfile(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::GetAppProfileRequest* request,
      ::google::bigtable::admin::v2::AppProfile* response);
  rpc::UnaryReactor* ListAppProfiles(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::ListAppProfilesRequest* request,
      ::google::bigtable::admin::v2::ListAppProfilesResponse* response);
  rpc::UnaryReactor* UpdateAppProfile(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::UpdateAppProfileRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* DeleteAppProfile(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::DeleteAppProfileRequest* request,
      ::google::protobuf::Empty* response);

  // --- gRPC handlers: UNIMPLEMENTED, naming the RPC ---
  rpc::UnaryReactor* CreateInstance(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::CreateInstanceRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* UpdateInstance(
      rpc::ServerContext* context, const ::google::bigtable::admin::v2::Instance* request,
      ::google::bigtable::admin::v2::Instance* response);
  rpc::UnaryReactor* PartialUpdateInstance(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::PartialUpdateInstanceRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* DeleteInstance(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::DeleteInstanceRequest* request,
      ::google::protobuf::Empty* response);
  rpc::UnaryReactor* CreateCluster(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::CreateClusterRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* UpdateCluster(rpc::ServerContext* context,
                                          const ::google::bigtable::admin::v2::Cluster* request,
                                          ::google::longrunning::Operation* response);
  rpc::UnaryReactor* PartialUpdateCluster(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::PartialUpdateClusterRequest* request,
      ::google::longrunning::Operation* response);
  rpc::UnaryReactor* DeleteCluster(
      rpc::ServerContext* context,
      const ::google::bigtable::admin::v2::DeleteClusterRequest* request,
      ::google::protobuf::Empty* response);

 private:
  Status CheckServing() const;
  // OK if `instance` holds a table or an app profile; NotFound naming it otherwise.
  Status CheckInstanceExists(const std::string& instance);
  // The instances of `project` ("projects/P"), sorted.
  StatusOr<std::vector<std::string>> InstancesOf(const std::string& project);
  // Checks a profile's settings as Create and Update store them, and fills in the defaults.
  Status NormalizeProfile(const AppProfileName& name,
                          ::google::bigtable::admin::v2::AppProfile* profile) const;

  catalog::TableCatalog* const catalog_;
  AppProfileStore* const profiles_;
  const std::function<ClusterView()> cluster_;
  const std::function<Status()> serving_check_;
  const std::function<void(const AppProfileName&)> profile_changed_;
};

}  // namespace tessera::server
