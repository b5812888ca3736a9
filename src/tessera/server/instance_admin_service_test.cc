#include "tessera/server/instance_admin_service.h"

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/testing/rpc_server.h"
#include "tessera/testing/mem_tables.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using Stub = admin::BigtableInstanceAdmin::Stub;

constexpr char kInstance[] = "projects/p/instances/i";
constexpr char kProf1[] = "projects/p/instances/i/appProfiles/prof1";

// One node serving the instance-admin service (and the fallback) over in-process gRPC: its
// engine and catalog on its own memory file system, its AppProfileStore on a session of the
// lock service it is given. Stop() then Start() is a restart (the file systems survive).
class Node {
 public:
  Node(coord::LockService* service, ClusterView view) : view_(view), service_(service) {}
  ~Node() { Stop(); }

  void Start() {
    Status opened = testing::OpenMemTables(&fs_, &clock_, &engine_, &catalog_);
    ASSERT_TRUE(opened.ok()) << opened;
    auto store = AppProfileStore::Open(AppProfileStoreOptions{});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto session = service_->CreateSession(coord::SessionOptions{});
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = *std::move(session);
    store_->Attach(session_.get());
    service = std::make_unique<InstanceAdminService>(catalog_.get(), store_.get(),
                                                     [this] { return view_; });
    server_ = std::make_unique<testing::RpcServer>();
    service->Register(server_->services(), /*executor=*/nullptr);
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
    channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub = admin::BigtableInstanceAdmin::NewStub(channel);
  }

  void Stop() {
    stub.reset();
    channel.reset();
    if (server_ != nullptr) {
      server_->Shutdown(5000);
      server_.reset();
    }
    service.reset();
    store_.reset();
    session_.reset();
    catalog_.reset();
    if (engine_ != nullptr) (void)engine_->Close();
    engine_.reset();
  }

  void CreateTable(const std::string& instance, const std::string& id) {
    model::TableSchema schema;
    schema.name = id;
    ASSERT_TRUE(catalog_->CreateTable(instance, schema, {}).ok());
  }

  AppProfileStore* store() { return store_.get(); }
  ClusterView view_;
  std::unique_ptr<InstanceAdminService> service;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<Stub> stub;

 private:
  coord::LockService* const service_;
  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<tablet::Engine> engine_;
  std::unique_ptr<catalog::TableCatalog> catalog_;
  std::unique_ptr<coord::Session> session_;
  std::unique_ptr<AppProfileStore> store_;
  std::unique_ptr<testing::RpcServer> server_;
};

// A unary call through a stub method, as a StatusOr.
template <typename Request, typename Response>
StatusOr<Response> Call(Stub* stub,
                        grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                     Response*),
                        const Request& request) {
  grpc::ClientContext context;
  Response response;
  grpc::Status s = (stub->*method)(&context, request, &response);
  if (!s.ok()) return Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return response;
}

admin::CreateAppProfileRequest CreateRequest(const std::string& id, const std::string& desc) {
  admin::CreateAppProfileRequest r;
  r.set_parent(kInstance);
  r.set_app_profile_id(id);
  r.mutable_app_profile()->set_description(desc);
  r.mutable_app_profile()->mutable_multi_cluster_routing_use_any();
  return r;
}

class InstanceAdminServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OpenLockService();
    node_ =
        std::make_unique<Node>(lock_service_.get(), ClusterView{"tessera-test", "dc7", 3, true});
    node_->Start();
  }
  void TearDown() override {
    nodes_.clear();
    node_.reset();
    lock_service_.reset();
  }
  void OpenLockService() {
    coord::EmbeddedLockServiceOptions options;
    options.fs = &coord_fs_;
    options.clock = SystemClock();
    options.dir = "/db/coord";
    auto service = coord::EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    lock_service_ = *std::move(service);
  }
  Stub* stub() { return node_->stub.get(); }

  MemFileSystem coord_fs_;
  std::unique_ptr<coord::EmbeddedLockService> lock_service_;
  std::unique_ptr<Node> node_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(InstanceAdminServiceTest, InstancesAreThoseHoldingTablesOrProfiles) {
  node_->CreateTable("projects/p/instances/i", "t1");
  node_->CreateTable("projects/p/instances/i", "t2");
  node_->CreateTable("projects/p/instances/j", "t");
  node_->CreateTable("projects/q/instances/k", "t");
  auto created = node_->service->DoCreateAppProfile([] {
    admin::CreateAppProfileRequest r = CreateRequest("prof", "");
    r.set_parent("projects/p/instances/profiles-only");
    return r;
  }());
  ASSERT_TRUE(created.ok()) << created.status();

  admin::ListInstancesRequest list;
  list.set_parent("projects/p");
  auto listed = Call(stub(), &Stub::ListInstances, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> names;
  for (const auto& instance : listed->instances()) {
    names.push_back(instance.name());
    EXPECT_EQ(instance.state(), admin::Instance::READY);
    EXPECT_EQ(instance.type(), admin::Instance::PRODUCTION);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"projects/p/instances/i", "projects/p/instances/j",
                                             "projects/p/instances/profiles-only"}));
  EXPECT_EQ(listed->instances(0).display_name(), "i");

  admin::GetInstanceRequest get;
  get.set_name("projects/q/instances/k");
  auto got = Call(stub(), &Stub::GetInstance, get);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name(), "projects/q/instances/k");
  get.set_name("projects/p/instances/nosuch");
  got = Call(stub(), &Stub::GetInstance, get);
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_NE(got.status().message().find("instance \"projects/p/instances/nosuch\" not found"),
            std::string_view::npos);

  list.set_parent("projects/p/instances/i");
  EXPECT_TRUE(absl::IsInvalidArgument(Call(stub(), &Stub::ListInstances, list).status()));
  list.set_parent("projects/nothing");
  EXPECT_EQ(Call(stub(), &Stub::ListInstances, list)->instances_size(), 0);
}

TEST_F(InstanceAdminServiceTest, TheTesseraClusterIsEveryInstancesOneCluster) {
  node_->CreateTable("projects/p/instances/i", "t");
  node_->CreateTable("projects/p/instances/j", "t");
  admin::ListClustersRequest list;
  list.set_parent(kInstance);
  auto listed = Call(stub(), &Stub::ListClusters, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->clusters_size(), 1);
  const admin::Cluster& c = listed->clusters(0);
  EXPECT_EQ(c.name(), "projects/p/instances/i/clusters/tessera-test");
  EXPECT_EQ(c.location(), "projects/p/locations/dc7");
  EXPECT_EQ(c.serve_nodes(), 3);
  EXPECT_EQ(c.state(), admin::Cluster::READY);
  EXPECT_EQ(c.default_storage_type(), admin::SSD);

  list.set_parent("projects/p/instances/-");
  listed = Call(stub(), &Stub::ListClusters, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->clusters_size(), 2);
  EXPECT_EQ(listed->clusters(1).name(), "projects/p/instances/j/clusters/tessera-test");

  list.set_parent("projects/p/instances/nosuch");
  EXPECT_TRUE(absl::IsNotFound(Call(stub(), &Stub::ListClusters, list).status()));

  admin::GetClusterRequest get;
  get.set_name("projects/p/instances/i/clusters/tessera-test");
  auto got = Call(stub(), &Stub::GetCluster, get);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->serve_nodes(), 3);
  get.set_name("projects/p/instances/i/clusters/other");
  got = Call(stub(), &Stub::GetCluster, get);
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_NE(got.status().message().find("\"projects/p/instances/i/clusters/other\""),
            std::string_view::npos);
  get.set_name("projects/p/instances/i");
  EXPECT_TRUE(absl::IsInvalidArgument(Call(stub(), &Stub::GetCluster, get).status()));

  // A node that lost its session says so.
  node_->view_.serving = false;
  got = Call(stub(), &Stub::GetCluster, [] {
    admin::GetClusterRequest r;
    r.set_name("projects/p/instances/i/clusters/tessera-test");
    return r;
  }());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state(), admin::Cluster::STATE_NOT_KNOWN);
}

TEST_F(InstanceAdminServiceTest, AppProfileLifecycle) {
  auto created = Call(stub(), &Stub::CreateAppProfile, CreateRequest("prof1", "desc"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->name(), kProf1);
  EXPECT_EQ(created->description(), "desc");
  EXPECT_FALSE(created->etag().empty());
  EXPECT_TRUE(created->has_multi_cluster_routing_use_any());
  EXPECT_EQ(created->standard_isolation().priority(), admin::AppProfile::PRIORITY_HIGH);

  auto again = Call(stub(), &Stub::CreateAppProfile, CreateRequest("prof1", "x"));
  EXPECT_EQ(again.status(),
            absl::AlreadyExistsError("app profile \"projects/p/instances/i/appProfiles/prof1\" "
                                     "already exists"));
  admin::CreateAppProfileRequest no_routing = CreateRequest("prof2", "");
  no_routing.mutable_app_profile()->clear_routing_policy();
  auto refused = Call(stub(), &Stub::CreateAppProfile, no_routing);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("appProfiles/prof2\": needs a routing policy"),
            std::string_view::npos)
      << refused.status();
  admin::CreateAppProfileRequest elsewhere = CreateRequest("prof2", "");
  elsewhere.mutable_app_profile()->mutable_single_cluster_routing()->set_cluster_id("c9");
  refused = Call(stub(), &Stub::CreateAppProfile, elsewhere);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("cluster \"c9\""), std::string_view::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(
      Call(stub(), &Stub::CreateAppProfile, CreateRequest("bad id", "")).status()));
  admin::CreateAppProfileRequest single = CreateRequest("prof2", "single");
  single.mutable_app_profile()->mutable_single_cluster_routing()->set_cluster_id("tessera-test");
  single.mutable_app_profile()->set_priority(admin::AppProfile::PRIORITY_LOW);
  auto second = Call(stub(), &Stub::CreateAppProfile, single);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->standard_isolation().priority(), admin::AppProfile::PRIORITY_LOW);

  // List, one per page.
  admin::ListAppProfilesRequest list;
  list.set_parent(kInstance);
  list.set_page_size(1);
  auto page = Call(stub(), &Stub::ListAppProfiles, list);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->app_profiles_size(), 1);
  EXPECT_EQ(page->app_profiles(0).name(), kProf1);
  list.set_page_token(page->next_page_token());
  page = Call(stub(), &Stub::ListAppProfiles, list);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->app_profiles_size(), 1);
  EXPECT_EQ(page->app_profiles(0).description(), "single");
  EXPECT_EQ(page->next_page_token(), "");
  list.set_page_size(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(Call(stub(), &Stub::ListAppProfiles, list).status()));

  // Update as cbt sends it: description and the routing named in the mask.
  admin::UpdateAppProfileRequest update;
  update.mutable_app_profile()->set_name(kProf1);
  update.mutable_app_profile()->set_description("new desc");
  update.mutable_app_profile()->mutable_multi_cluster_routing_use_any();
  update.mutable_update_mask()->add_paths("description");
  update.mutable_update_mask()->add_paths("multi_cluster_routing_use_any");
  auto op = Call(stub(), &Stub::UpdateAppProfile, update);
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(op->done());
  admin::AppProfile updated;
  ASSERT_TRUE(op->response().UnpackTo(&updated));
  EXPECT_EQ(updated.description(), "new desc");
  EXPECT_NE(updated.etag(), created->etag());
  admin::GetAppProfileRequest get;
  get.set_name(kProf1);
  EXPECT_EQ(Call(stub(), &Stub::GetAppProfile, get)->description(), "new desc");

  // A stale etag, an unknown mask path, a missing profile.
  update.mutable_app_profile()->set_etag(created->etag());
  EXPECT_TRUE(absl::IsAborted(Call(stub(), &Stub::UpdateAppProfile, update).status()));
  update.mutable_app_profile()->clear_etag();
  update.mutable_update_mask()->add_paths("name");
  auto bad = Call(stub(), &Stub::UpdateAppProfile, update);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("update_mask path \"name\""), std::string_view::npos);
  update.mutable_update_mask()->mutable_paths()->RemoveLast();
  update.mutable_app_profile()->set_name("projects/p/instances/i/appProfiles/nosuch");
  EXPECT_TRUE(absl::IsNotFound(Call(stub(), &Stub::UpdateAppProfile, update).status()));

  // An empty mask replaces every field (the API's rule); a routing path must match the policy.
  admin::UpdateAppProfileRequest replace;
  replace.mutable_app_profile()->set_name(kProf1);
  replace.mutable_app_profile()->set_description("replaced");
  replace.mutable_app_profile()->mutable_single_cluster_routing()->set_cluster_id("tessera-test");
  op = Call(stub(), &Stub::UpdateAppProfile, replace);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->response().UnpackTo(&updated));
  EXPECT_EQ(updated.description(), "replaced");
  EXPECT_EQ(updated.single_cluster_routing().cluster_id(), "tessera-test");
  EXPECT_EQ(updated.standard_isolation().priority(), admin::AppProfile::PRIORITY_HIGH);
  replace.mutable_update_mask()->add_paths("multi_cluster_routing_use_any");
  EXPECT_TRUE(absl::IsInvalidArgument(Call(stub(), &Stub::UpdateAppProfile, replace).status()));
  replace.mutable_app_profile()->clear_routing_policy();
  replace.clear_update_mask();
  auto unrouted = Call(stub(), &Stub::UpdateAppProfile, replace);
  EXPECT_TRUE(absl::IsInvalidArgument(unrouted.status())) << unrouted.status();
  EXPECT_EQ(Call(stub(), &Stub::GetAppProfile, get)->description(), "replaced");

  admin::DeleteAppProfileRequest del;
  del.set_name(kProf1);
  del.set_ignore_warnings(true);
  ASSERT_TRUE(Call(stub(), &Stub::DeleteAppProfile, del).ok());
  auto gone = Call(stub(), &Stub::GetAppProfile, get);
  EXPECT_EQ(
      gone.status(),
      absl::NotFoundError("app profile \"projects/p/instances/i/appProfiles/prof1\" not found"));
  EXPECT_TRUE(absl::IsNotFound(Call(stub(), &Stub::DeleteAppProfile, del).status()));
}

TEST_F(InstanceAdminServiceTest, AProfileCarriesConsistencyLevelsAndBuiltInIdsAreTaken) {
  // cbt can only set a description: the levels may ride in it.
  auto created = Call(stub(), &Stub::CreateAppProfile,
                      CreateRequest("batch", "read_consistency=one write_consistency=all"));
  ASSERT_TRUE(created.ok()) << created.status();
  admin::CreateAppProfileRequest extension = CreateRequest("reports", "");
  extension.mutable_app_profile()->mutable_tessera_options()->set_read_consistency("quorum");
  created = Call(stub(), &Stub::CreateAppProfile, extension);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->tessera_options().read_consistency(), "quorum");  // kept and returned

  auto bad = Call(stub(), &Stub::CreateAppProfile,
                  CreateRequest("typo", "write_consistency=quorom"));
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("write_consistency \"quorom\" is not a consistency"),
            std::string_view::npos)
      << bad.status();
  for (const char* id : {"one", "quorum", "all", "local_quorum", "primary", "default"}) {
    auto taken = Call(stub(), &Stub::CreateAppProfile, CreateRequest(id, ""));
    EXPECT_TRUE(absl::IsAlreadyExists(taken.status())) << id << ": " << taken.status();
  }
}

TEST_F(InstanceAdminServiceTest, ProfilesSurviveARestart) {
  ASSERT_TRUE(Call(stub(), &Stub::CreateAppProfile, CreateRequest("prof1", "kept")).ok());
  node_->Stop();
  lock_service_.reset();
  OpenLockService();
  node_ = std::make_unique<Node>(lock_service_.get(), ClusterView{});
  node_->Start();
  admin::GetAppProfileRequest get;
  get.set_name(kProf1);
  auto got = Call(stub(), &Stub::GetAppProfile, get);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->description(), "kept");
  admin::ListInstancesRequest list;
  list.set_parent("projects/p");
  EXPECT_EQ(Call(stub(), &Stub::ListInstances, list)->instances(0).name(), kInstance);
}

TEST_F(InstanceAdminServiceTest, EveryNodeOfAClusterSeesEveryProfile) {
  // Two more nodes on the same lock service (each with its own engine): a cluster.
  for (int i = 0; i < 2; ++i) {
    nodes_.push_back(std::make_unique<Node>(lock_service_.get(), ClusterView{"tessera-test"}));
    nodes_.back()->Start();
  }
  ASSERT_TRUE(Call(stub(), &Stub::CreateAppProfile, CreateRequest("prof1", "from node 0")).ok());
  admin::GetAppProfileRequest get;
  get.set_name(kProf1);
  for (auto& n : nodes_) {
    auto got = Call(n->stub.get(), &Stub::GetAppProfile, get);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->description(), "from node 0");
  }
  // The profile's instance exists on every node, though none has a table in it.
  admin::ListInstancesRequest list;
  list.set_parent("projects/p");
  EXPECT_EQ(Call(nodes_[1]->stub.get(), &Stub::ListInstances, list)->instances_size(), 1);

  admin::UpdateAppProfileRequest update;
  update.mutable_app_profile()->set_name(kProf1);
  update.mutable_app_profile()->set_description("changed on another node");
  update.mutable_update_mask()->add_paths("description");
  ASSERT_TRUE(Call(nodes_[0]->stub.get(), &Stub::UpdateAppProfile, update).ok());
  EXPECT_EQ(Call(stub(), &Stub::GetAppProfile, get)->description(), "changed on another node");
  admin::DeleteAppProfileRequest del;
  del.set_name(kProf1);
  ASSERT_TRUE(Call(nodes_[1]->stub.get(), &Stub::DeleteAppProfile, del).ok());
  EXPECT_TRUE(absl::IsNotFound(Call(stub(), &Stub::GetAppProfile, get).status()));

  // A node without a session refuses rather than guessing.
  nodes_[0]->store()->Detach();
  EXPECT_TRUE(absl::IsUnavailable(Call(nodes_[0]->stub.get(), &Stub::GetAppProfile, get).status()));
}

TEST_F(InstanceAdminServiceTest, UnsupportedRpcsAnswerUnimplementedNamingThemselves) {
  auto created = Call(stub(), &Stub::CreateInstance, admin::CreateInstanceRequest());
  EXPECT_TRUE(absl::IsUnimplemented(created.status()));
  EXPECT_EQ(created.status().message().substr(0, 42), "CreateInstance is not supported by Tessera");
  auto deleted = Call(stub(), &Stub::DeleteCluster, admin::DeleteClusterRequest());
  EXPECT_TRUE(absl::IsUnimplemented(deleted.status()));
  EXPECT_EQ(deleted.status().message().substr(0, 41), "DeleteCluster is not supported by Tessera");
  auto resized = Call(stub(), &Stub::PartialUpdateCluster, admin::PartialUpdateClusterRequest());
  EXPECT_TRUE(absl::IsUnimplemented(resized.status()));
  EXPECT_NE(resized.status().message().find("PartialUpdateCluster"), std::string_view::npos);

  // A method the service does not declare reaches the fallback.
  grpc::GenericStub generic(node_->channel);
  grpc::ClientContext context;
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&context, "/google.bigtable.admin.v2.BigtableInstanceAdmin/GetIamPolicy",
                    grpc::StubOptions(), &request, &response,
                    [&done](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status s = done.get_future().get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(s.error_message(),
            "GetIamPolicy (google.bigtable.admin.v2.BigtableInstanceAdmin) is not supported by "
            "Tessera");
  EXPECT_EQ(rpc::UnimplementedMessage("odd"), "method \"odd\" is not supported by Tessera");
}

}  // namespace
}  // namespace tessera::server
