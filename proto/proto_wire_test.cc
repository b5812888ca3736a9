// Checks that our hand-written .proto files match the published Bigtable API on the
// wire: method paths and streaming kinds, field numbers/types/oneofs (through the
// generated descriptors), and hand-encoded bytes that official clients send.

#include <string>
#include <tuple>
#include <string_view>
#include <vector>

#include "absl/strings/escaping.h"
#include "google/bigtable/admin/v2/bigtable_instance_admin.grpc.pb.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "google/bigtable/v2/feature_flags.pb.h"
#include "google/longrunning/operations.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "tessera/v1/family_options.pb.h"

namespace tessera {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;
using std::string_literals::operator""s;

namespace btv2 = google::bigtable::v2;
namespace btadmin = google::bigtable::admin::v2;

enum class Kind { kUnary, kServerStream };

struct MethodSpec {
  const char* path;  // gRPC path: /package.Service/Method
  Kind kind;
  const char* request;
  const char* response;
};

// Resolves "/pkg.Service/Method" through the generated pool and checks its shape.
void ExpectMethod(const MethodSpec& spec) {
  SCOPED_TRACE(spec.path);
  std::string_view path = spec.path;
  ASSERT_EQ(path.front(), '/');
  size_t slash = path.find('/', 1);
  ASSERT_NE(slash, std::string_view::npos);
  std::string service_name(path.substr(1, slash - 1));
  std::string method_name(path.substr(slash + 1));
  const ServiceDescriptor* service =
      DescriptorPool::generated_pool()->FindServiceByName(service_name);
  ASSERT_NE(service, nullptr) << "service not declared";
  const MethodDescriptor* method = service->FindMethodByName(method_name);
  ASSERT_NE(method, nullptr) << "method not declared";
  EXPECT_EQ("/" + service->full_name() + "/" + method->name(), spec.path);
  EXPECT_FALSE(method->client_streaming());
  EXPECT_EQ(method->server_streaming(), spec.kind == Kind::kServerStream);
  EXPECT_EQ(method->input_type()->full_name(), spec.request);
  EXPECT_EQ(method->output_type()->full_name(), spec.response);
}

const google::protobuf::UnknownFieldSet& Unknown(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m);
}

const Descriptor* FindMessage(const std::string& full_name) {
  return DescriptorPool::generated_pool()->FindMessageTypeByName(full_name);
}

struct FieldSpec {
  const char* message;  // full name
  const char* field;
  int number;
  FieldDescriptor::Type type;
  const char* oneof;    // "" when not in a (real) oneof
  const char* type_name = "";  // message/enum full name, for message and enum fields
  bool repeated = false;
};

void ExpectField(const FieldSpec& spec) {
  SCOPED_TRACE(std::string(spec.message) + "." + spec.field);
  const Descriptor* message = FindMessage(spec.message);
  ASSERT_NE(message, nullptr) << "message not declared";
  const FieldDescriptor* field = message->FindFieldByName(spec.field);
  ASSERT_NE(field, nullptr) << "field not declared";
  EXPECT_EQ(field->number(), spec.number);
  EXPECT_EQ(field->type(), spec.type) << field->type_name();
  EXPECT_EQ(field->is_repeated(), spec.repeated);
  const google::protobuf::OneofDescriptor* oneof = field->real_containing_oneof();
  EXPECT_EQ(oneof == nullptr ? "" : oneof->name(), spec.oneof);
  if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
    EXPECT_EQ(field->message_type()->full_name(), spec.type_name);
  } else if (field->type() == FieldDescriptor::TYPE_ENUM) {
    EXPECT_EQ(field->enum_type()->full_name(), spec.type_name);
  }
}

constexpr auto kBool = FieldDescriptor::TYPE_BOOL;
constexpr auto kBytes = FieldDescriptor::TYPE_BYTES;
constexpr auto kString = FieldDescriptor::TYPE_STRING;
constexpr auto kInt32 = FieldDescriptor::TYPE_INT32;
constexpr auto kInt64 = FieldDescriptor::TYPE_INT64;
constexpr auto kDouble = FieldDescriptor::TYPE_DOUBLE;
constexpr auto kMsg = FieldDescriptor::TYPE_MESSAGE;
constexpr auto kEnum = FieldDescriptor::TYPE_ENUM;

TEST(ProtoWireTest, DataServiceMethods) {
  ASSERT_NE(btv2::ReadRowsRequest::descriptor(), nullptr);  // keep bigtable.pb linked
  const std::vector<MethodSpec> methods = {
      {"/google.bigtable.v2.Bigtable/ReadRows", Kind::kServerStream,
       "google.bigtable.v2.ReadRowsRequest", "google.bigtable.v2.ReadRowsResponse"},
      {"/google.bigtable.v2.Bigtable/SampleRowKeys", Kind::kServerStream,
       "google.bigtable.v2.SampleRowKeysRequest", "google.bigtable.v2.SampleRowKeysResponse"},
      {"/google.bigtable.v2.Bigtable/MutateRow", Kind::kUnary,
       "google.bigtable.v2.MutateRowRequest", "google.bigtable.v2.MutateRowResponse"},
      {"/google.bigtable.v2.Bigtable/MutateRows", Kind::kServerStream,
       "google.bigtable.v2.MutateRowsRequest", "google.bigtable.v2.MutateRowsResponse"},
      {"/google.bigtable.v2.Bigtable/CheckAndMutateRow", Kind::kUnary,
       "google.bigtable.v2.CheckAndMutateRowRequest",
       "google.bigtable.v2.CheckAndMutateRowResponse"},
      {"/google.bigtable.v2.Bigtable/PingAndWarm", Kind::kUnary,
       "google.bigtable.v2.PingAndWarmRequest", "google.bigtable.v2.PingAndWarmResponse"},
      {"/google.bigtable.v2.Bigtable/ReadModifyWriteRow", Kind::kUnary,
       "google.bigtable.v2.ReadModifyWriteRowRequest",
       "google.bigtable.v2.ReadModifyWriteRowResponse"},
  };
  for (const MethodSpec& m : methods) ExpectMethod(m);
  // Nothing else is declared, so gRPC answers UNIMPLEMENTED for the rest.
  EXPECT_EQ(DescriptorPool::generated_pool()
                ->FindServiceByName(btv2::Bigtable::service_full_name())
                ->method_count(), static_cast<int>(methods.size()));
  EXPECT_EQ(btv2::Bigtable::service_full_name(), "google.bigtable.v2.Bigtable"s);
}

TEST(ProtoWireTest, TableAdminServiceMethods) {
  // Touch a message of the service's file so the linker keeps that file's generated
  // code (and its descriptor) from the static library.
  ASSERT_NE(btadmin::CreateTableRequest::descriptor(), nullptr);
  const std::vector<MethodSpec> methods = {
      {"/google.bigtable.admin.v2.BigtableTableAdmin/CreateTable", Kind::kUnary,
       "google.bigtable.admin.v2.CreateTableRequest", "google.bigtable.admin.v2.Table"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/ListTables", Kind::kUnary,
       "google.bigtable.admin.v2.ListTablesRequest", "google.bigtable.admin.v2.ListTablesResponse"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/GetTable", Kind::kUnary,
       "google.bigtable.admin.v2.GetTableRequest", "google.bigtable.admin.v2.Table"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/UpdateTable", Kind::kUnary,
       "google.bigtable.admin.v2.UpdateTableRequest", "google.longrunning.Operation"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/DeleteTable", Kind::kUnary,
       "google.bigtable.admin.v2.DeleteTableRequest", "google.protobuf.Empty"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/ModifyColumnFamilies", Kind::kUnary,
       "google.bigtable.admin.v2.ModifyColumnFamiliesRequest", "google.bigtable.admin.v2.Table"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/DropRowRange", Kind::kUnary,
       "google.bigtable.admin.v2.DropRowRangeRequest", "google.protobuf.Empty"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/GenerateConsistencyToken", Kind::kUnary,
       "google.bigtable.admin.v2.GenerateConsistencyTokenRequest",
       "google.bigtable.admin.v2.GenerateConsistencyTokenResponse"},
      {"/google.bigtable.admin.v2.BigtableTableAdmin/CheckConsistency", Kind::kUnary,
       "google.bigtable.admin.v2.CheckConsistencyRequest",
       "google.bigtable.admin.v2.CheckConsistencyResponse"},
  };
  for (const MethodSpec& m : methods) ExpectMethod(m);
  EXPECT_EQ(DescriptorPool::generated_pool()
                ->FindServiceByName(btadmin::BigtableTableAdmin::service_full_name())
                ->method_count(),
            static_cast<int>(methods.size()));
}

TEST(ProtoWireTest, InstanceAdminServiceMethods) {
  ASSERT_NE(btadmin::GetInstanceRequest::descriptor(), nullptr);  // keep the file linked
  constexpr char kSvc[] = "/google.bigtable.admin.v2.BigtableInstanceAdmin/";
  constexpr char kPkg[] = "google.bigtable.admin.v2.";
  struct Rpc {
    const char* method;
    const char* request;   // relative to kPkg unless it starts with "google.protobuf."
    const char* response;  // likewise; "google.longrunning.Operation" is absolute
  };
  const std::vector<Rpc> rpcs = {
      {"CreateInstance", "CreateInstanceRequest", "google.longrunning.Operation"},
      {"GetInstance", "GetInstanceRequest", "Instance"},
      {"ListInstances", "ListInstancesRequest", "ListInstancesResponse"},
      {"UpdateInstance", "Instance", "Instance"},
      {"PartialUpdateInstance", "PartialUpdateInstanceRequest", "google.longrunning.Operation"},
      {"DeleteInstance", "DeleteInstanceRequest", "google.protobuf.Empty"},
      {"CreateCluster", "CreateClusterRequest", "google.longrunning.Operation"},
      {"GetCluster", "GetClusterRequest", "Cluster"},
      {"ListClusters", "ListClustersRequest", "ListClustersResponse"},
      {"UpdateCluster", "Cluster", "google.longrunning.Operation"},
      {"PartialUpdateCluster", "PartialUpdateClusterRequest", "google.longrunning.Operation"},
      {"DeleteCluster", "DeleteClusterRequest", "google.protobuf.Empty"},
      {"CreateAppProfile", "CreateAppProfileRequest", "AppProfile"},
      {"GetAppProfile", "GetAppProfileRequest", "AppProfile"},
      {"ListAppProfiles", "ListAppProfilesRequest", "ListAppProfilesResponse"},
      {"UpdateAppProfile", "UpdateAppProfileRequest", "google.longrunning.Operation"},
      {"DeleteAppProfile", "DeleteAppProfileRequest", "google.protobuf.Empty"},
  };
  auto full = [&](std::string_view name) {
    return name.substr(0, 7) == "google." ? std::string(name) : kPkg + std::string(name);
  };
  for (const Rpc& r : rpcs) {
    const std::string path = kSvc + std::string(r.method);
    const std::string request = full(r.request), response = full(r.response);
    ExpectMethod({path.c_str(), Kind::kUnary, request.c_str(), response.c_str()});
  }
  EXPECT_EQ(DescriptorPool::generated_pool()
                ->FindServiceByName(btadmin::BigtableInstanceAdmin::service_full_name())
                ->method_count(),
            static_cast<int>(rpcs.size()));
}

TEST(ProtoWireTest, InstanceAdminFieldNumbers) {
  const std::string p = "google.bigtable.admin.v2.";
  const std::string inst = p + "Instance", cl = p + "Cluster", ap = p + "AppProfile";
  const std::string multi = ap + ".MultiClusterRoutingUseAny", single = ap + ".SingleClusterRouting";
  const std::string iso = ap + ".StandardIsolation";
  const std::vector<std::tuple<std::string, const char*, int, FieldDescriptor::Type, const char*,
                               std::string, bool>>
      fields = {
          // Instance
          {inst, "name", 1, kString, "", "", false},
          {inst, "display_name", 2, kString, "", "", false},
          {inst, "state", 3, kEnum, "", inst + ".State", false},
          {inst, "type", 4, kEnum, "", inst + ".Type", false},
          {inst, "labels", 5, kMsg, "", inst + ".LabelsEntry", true},
          {inst, "create_time", 7, kMsg, "", "google.protobuf.Timestamp", false},
          {inst, "satisfies_pzs", 8, kBool, "", "", false},
          {inst, "satisfies_pzi", 11, kBool, "", "", false},
          {inst, "tags", 12, kMsg, "", inst + ".TagsEntry", true},
          {inst, "edition", 14, kEnum, "", inst + ".Edition", false},
          // Cluster
          {cl, "name", 1, kString, "", "", false},
          {cl, "location", 2, kString, "", "", false},
          {cl, "state", 3, kEnum, "", cl + ".State", false},
          {cl, "serve_nodes", 4, kInt32, "", "", false},
          {cl, "node_scaling_factor", 9, kEnum, "", cl + ".NodeScalingFactor", false},
          {cl, "cluster_config", 7, kMsg, "config", cl + ".ClusterConfig", false},
          {cl, "default_storage_type", 5, kEnum, "", p + "StorageType", false},
          {cl, "encryption_config", 6, kMsg, "", cl + ".EncryptionConfig", false},
          {cl + ".ClusterConfig", "cluster_autoscaling_config", 1, kMsg, "",
           cl + ".ClusterAutoscalingConfig", false},
          {cl + ".ClusterAutoscalingConfig", "autoscaling_limits", 1, kMsg, "",
           p + "AutoscalingLimits", false},
          {cl + ".ClusterAutoscalingConfig", "autoscaling_targets", 2, kMsg, "",
           p + "AutoscalingTargets", false},
          {p + "AutoscalingLimits", "min_serve_nodes", 1, kInt32, "", "", false},
          {p + "AutoscalingLimits", "max_serve_nodes", 2, kInt32, "", "", false},
          {p + "AutoscalingTargets", "cpu_utilization_percent", 2, kInt32, "", "", false},
          {p + "AutoscalingTargets", "storage_utilization_gib_per_node", 3, kInt32, "", "", false},
          // AppProfile
          {ap, "name", 1, kString, "", "", false},
          {ap, "etag", 2, kString, "", "", false},
          {ap, "description", 3, kString, "", "", false},
          {ap, "multi_cluster_routing_use_any", 5, kMsg, "routing_policy", multi, false},
          {ap, "single_cluster_routing", 6, kMsg, "routing_policy", single, false},
          {ap, "priority", 7, kEnum, "isolation", ap + ".Priority", false},
          {ap, "standard_isolation", 11, kMsg, "isolation", iso, false},
          {ap, "data_boost_isolation_read_only", 10, kMsg, "isolation",
           ap + ".DataBoostIsolationReadOnly", false},
          {multi, "cluster_ids", 1, kString, "", "", true},
          {multi, "row_affinity", 3, kMsg, "affinity", multi + ".RowAffinity", false},
          {single, "cluster_id", 1, kString, "", "", false},
          {single, "allow_transactional_writes", 2, kBool, "", "", false},
          {iso, "priority", 1, kEnum, "", ap + ".Priority", false},
          {iso, "memory_config", 2, kMsg, "", iso + ".MemoryConfig", false},
          {ap + ".DataBoostIsolationReadOnly", "compute_billing_owner", 1, kEnum, "",
           ap + ".DataBoostIsolationReadOnly.ComputeBillingOwner", false},
          // Requests and responses
          {p + "CreateInstanceRequest", "parent", 1, kString, "", "", false},
          {p + "CreateInstanceRequest", "instance_id", 2, kString, "", "", false},
          {p + "CreateInstanceRequest", "instance", 3, kMsg, "", inst, false},
          {p + "CreateInstanceRequest", "clusters", 4, kMsg, "",
           p + "CreateInstanceRequest.ClustersEntry", true},
          {p + "GetInstanceRequest", "name", 1, kString, "", "", false},
          {p + "ListInstancesRequest", "parent", 1, kString, "", "", false},
          {p + "ListInstancesRequest", "page_token", 2, kString, "", "", false},
          {p + "ListInstancesResponse", "instances", 1, kMsg, "", inst, true},
          {p + "ListInstancesResponse", "failed_locations", 2, kString, "", "", true},
          {p + "ListInstancesResponse", "next_page_token", 3, kString, "", "", false},
          {p + "PartialUpdateInstanceRequest", "instance", 1, kMsg, "", inst, false},
          {p + "PartialUpdateInstanceRequest", "update_mask", 2, kMsg, "",
           "google.protobuf.FieldMask", false},
          {p + "DeleteInstanceRequest", "name", 1, kString, "", "", false},
          {p + "CreateClusterRequest", "parent", 1, kString, "", "", false},
          {p + "CreateClusterRequest", "cluster_id", 2, kString, "", "", false},
          {p + "CreateClusterRequest", "cluster", 3, kMsg, "", cl, false},
          {p + "GetClusterRequest", "name", 1, kString, "", "", false},
          {p + "ListClustersRequest", "parent", 1, kString, "", "", false},
          {p + "ListClustersRequest", "page_token", 2, kString, "", "", false},
          {p + "ListClustersResponse", "clusters", 1, kMsg, "", cl, true},
          {p + "ListClustersResponse", "failed_locations", 2, kString, "", "", true},
          {p + "ListClustersResponse", "next_page_token", 3, kString, "", "", false},
          {p + "DeleteClusterRequest", "name", 1, kString, "", "", false},
          {p + "PartialUpdateClusterRequest", "cluster", 1, kMsg, "", cl, false},
          {p + "PartialUpdateClusterRequest", "update_mask", 2, kMsg, "",
           "google.protobuf.FieldMask", false},
          {p + "CreateAppProfileRequest", "parent", 1, kString, "", "", false},
          {p + "CreateAppProfileRequest", "app_profile_id", 2, kString, "", "", false},
          {p + "CreateAppProfileRequest", "app_profile", 3, kMsg, "", ap, false},
          {p + "CreateAppProfileRequest", "ignore_warnings", 4, kBool, "", "", false},
          {p + "GetAppProfileRequest", "name", 1, kString, "", "", false},
          {p + "ListAppProfilesRequest", "parent", 1, kString, "", "", false},
          {p + "ListAppProfilesRequest", "page_size", 3, kInt32, "", "", false},
          {p + "ListAppProfilesRequest", "page_token", 2, kString, "", "", false},
          {p + "ListAppProfilesResponse", "app_profiles", 1, kMsg, "", ap, true},
          {p + "ListAppProfilesResponse", "next_page_token", 2, kString, "", "", false},
          {p + "ListAppProfilesResponse", "failed_locations", 3, kString, "", "", true},
          {p + "UpdateAppProfileRequest", "app_profile", 1, kMsg, "", ap, false},
          {p + "UpdateAppProfileRequest", "update_mask", 2, kMsg, "", "google.protobuf.FieldMask",
           false},
          {p + "UpdateAppProfileRequest", "ignore_warnings", 3, kBool, "", "", false},
          {p + "DeleteAppProfileRequest", "name", 1, kString, "", "", false},
          {p + "DeleteAppProfileRequest", "ignore_warnings", 2, kBool, "", "", false},
      };
  for (const auto& [message, field, number, type, oneof, type_name, repeated] : fields) {
    ExpectField({message.c_str(), field, number, type, oneof, type_name.c_str(), repeated});
  }
  // Enum values the clients print or send.
  EXPECT_EQ(btadmin::Instance::READY, 1);
  EXPECT_EQ(btadmin::Instance::PRODUCTION, 1);
  EXPECT_EQ(btadmin::Cluster::READY, 1);
  EXPECT_EQ(btadmin::Cluster::DISABLED, 4);
  EXPECT_EQ(btadmin::Cluster::NODE_SCALING_FACTOR_1X, 1);
  EXPECT_EQ(btadmin::SSD, 1);
  EXPECT_EQ(btadmin::HDD, 2);
  EXPECT_EQ(btadmin::AppProfile::PRIORITY_HIGH, 3);
}

TEST(ProtoWireTest, HandEncodedAppProfileRequestParses) {
  // CreateAppProfileRequest{parent "projects/p/instances/i" (1), app_profile_id "prof1" (2),
  // app_profile{description "d" (3), multi_cluster_routing_use_any{} (5)} (3)}, as cbt's
  // `createappprofile i prof1 d route-any` sends it.
  const std::string wire = "\x0a\x16projects/p/instances/i\x12\x05prof1\x1a\x05\x1a\x01" "d"
                           "\x2a\x00"s;
  btadmin::CreateAppProfileRequest request;
  ASSERT_TRUE(request.ParseFromString(wire));
  EXPECT_EQ(request.parent(), "projects/p/instances/i");
  EXPECT_EQ(request.app_profile_id(), "prof1");
  EXPECT_EQ(request.app_profile().description(), "d");
  EXPECT_EQ(request.app_profile().routing_policy_case(),
            btadmin::AppProfile::kMultiClusterRoutingUseAny);
  EXPECT_TRUE(Unknown(request).empty());
  EXPECT_EQ(request.SerializeAsString(), wire);
}

TEST(ProtoWireTest, DataApiFieldNumbers) {
  const std::vector<FieldSpec> fields = {
      // ReadRowsRequest
      {"google.bigtable.v2.ReadRowsRequest", "table_name", 1, kString, ""},
      {"google.bigtable.v2.ReadRowsRequest", "rows", 2, kMsg, "", "google.bigtable.v2.RowSet"},
      {"google.bigtable.v2.ReadRowsRequest", "filter", 3, kMsg, "", "google.bigtable.v2.RowFilter"},
      {"google.bigtable.v2.ReadRowsRequest", "rows_limit", 4, kInt64, ""},
      {"google.bigtable.v2.ReadRowsRequest", "app_profile_id", 5, kString, ""},
      {"google.bigtable.v2.ReadRowsRequest", "request_stats_view", 6, kEnum, "",
       "google.bigtable.v2.ReadRowsRequest.RequestStatsView"},
      {"google.bigtable.v2.ReadRowsRequest", "reversed", 7, kBool, ""},
      {"google.bigtable.v2.ReadRowsRequest", "authorized_view_name", 9, kString, ""},
      {"google.bigtable.v2.ReadRowsRequest", "materialized_view_name", 11, kString, ""},
      // ReadRowsResponse and CellChunk
      {"google.bigtable.v2.ReadRowsResponse", "chunks", 1, kMsg, "",
       "google.bigtable.v2.ReadRowsResponse.CellChunk", true},
      {"google.bigtable.v2.ReadRowsResponse", "last_scanned_row_key", 2, kBytes, ""},
      {"google.bigtable.v2.ReadRowsResponse", "request_stats", 3, kMsg, "",
       "google.bigtable.v2.RequestStats"},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "row_key", 1, kBytes, ""},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "family_name", 2, kMsg, "",
       "google.protobuf.StringValue"},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "qualifier", 3, kMsg, "",
       "google.protobuf.BytesValue"},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "timestamp_micros", 4, kInt64, ""},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "labels", 5, kString, "", "", true},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "value", 6, kBytes, ""},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "value_size", 7, kInt32, ""},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "reset_row", 8, kBool, "row_status"},
      {"google.bigtable.v2.ReadRowsResponse.CellChunk", "commit_row", 9, kBool, "row_status"},
      // RowRange / RowSet / ranges
      {"google.bigtable.v2.RowRange", "start_key_closed", 1, kBytes, "start_key"},
      {"google.bigtable.v2.RowRange", "start_key_open", 2, kBytes, "start_key"},
      {"google.bigtable.v2.RowRange", "end_key_open", 3, kBytes, "end_key"},
      {"google.bigtable.v2.RowRange", "end_key_closed", 4, kBytes, "end_key"},
      {"google.bigtable.v2.RowSet", "row_keys", 1, kBytes, "", "", true},
      {"google.bigtable.v2.RowSet", "row_ranges", 2, kMsg, "", "google.bigtable.v2.RowRange",
       true},
      {"google.bigtable.v2.ColumnRange", "start_qualifier_open", 3, kBytes, "start_qualifier"},
      {"google.bigtable.v2.ColumnRange", "end_qualifier_closed", 4, kBytes, "end_qualifier"},
      {"google.bigtable.v2.ValueRange", "end_value_closed", 3, kBytes, "end_value"},
      {"google.bigtable.v2.TimestampRange", "end_timestamp_micros", 2, kInt64, ""},
      // RowFilter: every member of the oneof
      {"google.bigtable.v2.RowFilter", "chain", 1, kMsg, "filter",
       "google.bigtable.v2.RowFilter.Chain"},
      {"google.bigtable.v2.RowFilter", "interleave", 2, kMsg, "filter",
       "google.bigtable.v2.RowFilter.Interleave"},
      {"google.bigtable.v2.RowFilter", "condition", 3, kMsg, "filter",
       "google.bigtable.v2.RowFilter.Condition"},
      {"google.bigtable.v2.RowFilter", "row_key_regex_filter", 4, kBytes, "filter"},
      {"google.bigtable.v2.RowFilter", "family_name_regex_filter", 5, kString, "filter"},
      {"google.bigtable.v2.RowFilter", "column_qualifier_regex_filter", 6, kBytes, "filter"},
      {"google.bigtable.v2.RowFilter", "column_range_filter", 7, kMsg, "filter",
       "google.bigtable.v2.ColumnRange"},
      {"google.bigtable.v2.RowFilter", "timestamp_range_filter", 8, kMsg, "filter",
       "google.bigtable.v2.TimestampRange"},
      {"google.bigtable.v2.RowFilter", "value_regex_filter", 9, kBytes, "filter"},
      {"google.bigtable.v2.RowFilter", "cells_per_row_offset_filter", 10, kInt32, "filter"},
      {"google.bigtable.v2.RowFilter", "cells_per_row_limit_filter", 11, kInt32, "filter"},
      {"google.bigtable.v2.RowFilter", "cells_per_column_limit_filter", 12, kInt32, "filter"},
      {"google.bigtable.v2.RowFilter", "strip_value_transformer", 13, kBool, "filter"},
      {"google.bigtable.v2.RowFilter", "row_sample_filter", 14, kDouble, "filter"},
      {"google.bigtable.v2.RowFilter", "value_range_filter", 15, kMsg, "filter",
       "google.bigtable.v2.ValueRange"},
      {"google.bigtable.v2.RowFilter", "sink", 16, kBool, "filter"},
      {"google.bigtable.v2.RowFilter", "pass_all_filter", 17, kBool, "filter"},
      {"google.bigtable.v2.RowFilter", "block_all_filter", 18, kBool, "filter"},
      {"google.bigtable.v2.RowFilter", "apply_label_transformer", 19, kString, "filter"},
      {"google.bigtable.v2.RowFilter", "value_bitmask_filter", 20, kMsg, "filter",
       "google.bigtable.v2.ValueBitmask"},
      {"google.bigtable.v2.RowFilter.Condition", "false_filter", 3, kMsg, "",
       "google.bigtable.v2.RowFilter"},
      // Mutation
      {"google.bigtable.v2.Mutation", "set_cell", 1, kMsg, "mutation",
       "google.bigtable.v2.Mutation.SetCell"},
      {"google.bigtable.v2.Mutation", "delete_from_column", 2, kMsg, "mutation",
       "google.bigtable.v2.Mutation.DeleteFromColumn"},
      {"google.bigtable.v2.Mutation", "delete_from_family", 3, kMsg, "mutation",
       "google.bigtable.v2.Mutation.DeleteFromFamily"},
      {"google.bigtable.v2.Mutation", "delete_from_row", 4, kMsg, "mutation",
       "google.bigtable.v2.Mutation.DeleteFromRow"},
      {"google.bigtable.v2.Mutation", "add_to_cell", 5, kMsg, "mutation",
       "google.bigtable.v2.Mutation.AddToCell"},
      {"google.bigtable.v2.Mutation", "merge_to_cell", 6, kMsg, "mutation",
       "google.bigtable.v2.Mutation.MergeToCell"},
      {"google.bigtable.v2.Mutation", "timestamp_origin", 7, kEnum, "",
       "google.bigtable.v2.Mutation.TimestampOrigin"},
      {"google.bigtable.v2.Mutation.SetCell", "timestamp_micros", 3, kInt64, ""},
      {"google.bigtable.v2.Mutation.AddToCell", "input", 4, kMsg, "", "google.bigtable.v2.Value"},
      {"google.bigtable.v2.Mutation.DeleteFromColumn", "time_range", 3, kMsg, "",
       "google.bigtable.v2.TimestampRange"},
      {"google.bigtable.v2.Value", "raw_value", 8, kBytes, "kind"},
      {"google.bigtable.v2.Value", "raw_timestamp_micros", 9, kInt64, "kind"},
      {"google.bigtable.v2.Value", "int_value", 6, kInt64, "kind"},
      // Writes
      {"google.bigtable.v2.MutateRowRequest", "idempotency", 8, kMsg, "",
       "google.bigtable.v2.Idempotency"},
      {"google.bigtable.v2.MutateRowRequest", "authorized_view_name", 6, kString, ""},
      {"google.bigtable.v2.MutateRowsRequest", "entries", 2, kMsg, "",
       "google.bigtable.v2.MutateRowsRequest.Entry", true},
      {"google.bigtable.v2.MutateRowsRequest.Entry", "idempotency", 3, kMsg, "",
       "google.bigtable.v2.Idempotency"},
      {"google.bigtable.v2.MutateRowsResponse", "rate_limit_info", 3, kMsg, "",
       "google.bigtable.v2.RateLimitInfo"},
      {"google.bigtable.v2.MutateRowsResponse.Entry", "index", 1, kInt64, ""},
      {"google.bigtable.v2.MutateRowsResponse.Entry", "status", 2, kMsg, "", "google.rpc.Status"},
      {"google.bigtable.v2.CheckAndMutateRowRequest", "true_mutations", 4, kMsg, "",
       "google.bigtable.v2.Mutation", true},
      {"google.bigtable.v2.CheckAndMutateRowRequest", "predicate_filter", 6, kMsg, "",
       "google.bigtable.v2.RowFilter"},
      {"google.bigtable.v2.CheckAndMutateRowRequest", "app_profile_id", 7, kString, ""},
      {"google.bigtable.v2.ReadModifyWriteRule", "append_value", 3, kBytes, "rule"},
      {"google.bigtable.v2.ReadModifyWriteRule", "increment_amount", 4, kInt64, "rule"},
      {"google.bigtable.v2.SampleRowKeysRequest", "row_range", 6, kMsg, "",
       "google.bigtable.v2.RowRange"},
      {"google.bigtable.v2.SampleRowKeysResponse", "offset_bytes", 2, kInt64, ""},
      {"google.bigtable.v2.FeatureFlags", "last_scanned_row_responses", 4, kBool, ""},
      {"google.bigtable.v2.FeatureFlags", "microsecond_timestamp", 14, kBool, ""},
      {"google.bigtable.v2.ReadIterationStats", "cells_returned_count", 4, kInt64, ""},
      {"google.rpc.Status", "details", 3, kMsg, "", "google.protobuf.Any", true},
      {"google.longrunning.Operation", "error", 4, kMsg, "result", "google.rpc.Status"},
      {"google.longrunning.Operation", "response", 5, kMsg, "result", "google.protobuf.Any"},
  };
  for (const FieldSpec& f : fields) ExpectField(f);
}

TEST(ProtoWireTest, AdminApiFieldNumbers) {
  const std::vector<FieldSpec> fields = {
      {"google.bigtable.admin.v2.Table", "name", 1, kString, ""},
      {"google.bigtable.admin.v2.Table", "column_families", 3, kMsg, "",
       "google.bigtable.admin.v2.Table.ColumnFamiliesEntry", true},
      {"google.bigtable.admin.v2.Table", "granularity", 4, kEnum, "",
       "google.bigtable.admin.v2.Table.TimestampGranularity"},
      {"google.bigtable.admin.v2.Table", "change_stream_config", 8, kMsg, "",
       "google.bigtable.admin.v2.ChangeStreamConfig"},
      {"google.bigtable.admin.v2.Table", "deletion_protection", 9, kBool, ""},
      {"google.bigtable.admin.v2.Table", "tessera_options", 536870000, kMsg, "",
       "tessera.v1.TableOptions"},
      {"tessera.v1.TableOptions", "placement", 1, kString, ""},
      {"tessera.v1.TableOptions", "read_consistency", 2, kString, ""},
      {"tessera.v1.TableOptions", "write_consistency", 3, kString, ""},
      {"google.bigtable.admin.v2.ColumnFamily", "gc_rule", 1, kMsg, "",
       "google.bigtable.admin.v2.GcRule"},
      {"google.bigtable.admin.v2.ColumnFamily", "value_type", 3, kMsg, "",
       "google.bigtable.admin.v2.Type"},
      {"google.bigtable.admin.v2.ColumnFamily", "tessera_options", 536870000, kMsg, "",
       "tessera.v1.FamilyOptions"},
      {"google.bigtable.admin.v2.AppProfile", "tessera_options", 536870000, kMsg, "",
       "tessera.v1.AppProfileOptions"},
      {"google.bigtable.admin.v2.GcRule", "max_num_versions", 1, kInt32, "rule"},
      {"google.bigtable.admin.v2.GcRule", "max_age", 2, kMsg, "rule", "google.protobuf.Duration"},
      {"google.bigtable.admin.v2.GcRule", "intersection", 3, kMsg, "rule",
       "google.bigtable.admin.v2.GcRule.Intersection"},
      {"google.bigtable.admin.v2.GcRule", "union", 4, kMsg, "rule",
       "google.bigtable.admin.v2.GcRule.Union"},
      {"google.bigtable.admin.v2.CreateTableRequest", "initial_splits", 4, kMsg, "",
       "google.bigtable.admin.v2.CreateTableRequest.Split", true},
      {"google.bigtable.admin.v2.ListTablesRequest", "page_token", 3, kString, ""},
      {"google.bigtable.admin.v2.ListTablesRequest", "page_size", 4, kInt32, ""},
      {"google.bigtable.admin.v2.ListTablesResponse", "next_page_token", 2, kString, ""},
      {"google.bigtable.admin.v2.UpdateTableRequest", "update_mask", 2, kMsg, "",
       "google.protobuf.FieldMask"},
      {"google.bigtable.admin.v2.ModifyColumnFamiliesRequest", "ignore_warnings", 3, kBool, ""},
      {"google.bigtable.admin.v2.ModifyColumnFamiliesRequest.Modification", "create", 2, kMsg,
       "mod", "google.bigtable.admin.v2.ColumnFamily"},
      {"google.bigtable.admin.v2.ModifyColumnFamiliesRequest.Modification", "update", 3, kMsg,
       "mod", "google.bigtable.admin.v2.ColumnFamily"},
      {"google.bigtable.admin.v2.ModifyColumnFamiliesRequest.Modification", "drop", 4, kBool,
       "mod"},
      {"google.bigtable.admin.v2.ModifyColumnFamiliesRequest.Modification", "update_mask", 6,
       kMsg, "", "google.protobuf.FieldMask"},
      {"google.bigtable.admin.v2.DropRowRangeRequest", "row_key_prefix", 2, kBytes, "target"},
      {"google.bigtable.admin.v2.DropRowRangeRequest", "delete_all_data_from_table", 3, kBool,
       "target"},
      {"google.bigtable.admin.v2.CheckConsistencyRequest", "data_boost_read_local_writes", 4,
       kMsg, "mode", "google.bigtable.admin.v2.DataBoostReadLocalWrites"},
      {"google.bigtable.admin.v2.Type", "int64_type", 5, kMsg, "kind",
       "google.bigtable.admin.v2.Type.Int64"},
      {"google.bigtable.admin.v2.Type", "aggregate_type", 6, kMsg, "kind",
       "google.bigtable.admin.v2.Type.Aggregate"},
      {"google.bigtable.admin.v2.Type", "float32_type", 12, kMsg, "kind",
       "google.bigtable.admin.v2.Type.Float32"},
      {"google.bigtable.admin.v2.Type", "enum_type", 14, kMsg, "kind",
       "google.bigtable.admin.v2.Type.Enum"},
      {"google.bigtable.admin.v2.Type.Aggregate", "hllpp_unique_count", 5, kMsg, "aggregator",
       "google.bigtable.admin.v2.Type.Aggregate.HyperLogLogPlusPlusUniqueCount"},
      {"google.bigtable.admin.v2.Type.Aggregate", "min", 7, kMsg, "aggregator",
       "google.bigtable.admin.v2.Type.Aggregate.Min"},
      {"google.bigtable.admin.v2.Type.Int64.Encoding", "ordered_code_bytes", 2, kMsg, "encoding",
       "google.bigtable.admin.v2.Type.Int64.Encoding.OrderedCodeBytes"},
  };
  for (const FieldSpec& f : fields) ExpectField(f);
  // Every kind of the published Type oneof is declared (numbers 1..14, no gaps).
  const Descriptor* type = btadmin::Type::descriptor();
  ASSERT_EQ(type->oneof_decl_count(), 1);
  EXPECT_EQ(type->oneof_decl(0)->field_count(), 14);
  for (int n = 1; n <= 14; ++n) EXPECT_NE(type->FindFieldByNumber(n), nullptr) << n;
  // Enum values clients compare against.
  EXPECT_EQ(btadmin::Table::MICROS, 2);
  EXPECT_EQ(btadmin::Table::ENCRYPTION_VIEW, 5);
  EXPECT_EQ(btadmin::Table::FULL, 4);
  EXPECT_EQ(btv2::ReadRowsRequest::REQUEST_STATS_FULL, 2);
}

// Bytes below are encoded by hand from the reference tables, independent of protoc.
TEST(ProtoWireTest, HandEncodedRequestsParse) {
  btv2::ReadRowsRequest read;
  // table_name "t" (1), rows_limit 5 (4), reversed (7), materialized_view_name "m" (11).
  ASSERT_TRUE(read.ParseFromString("\x0a\x01t\x20\x05\x38\x01\x5a\x01m"s));
  EXPECT_EQ(read.table_name(), "t");
  EXPECT_EQ(read.rows_limit(), 5);
  EXPECT_TRUE(read.reversed());
  EXPECT_EQ(read.materialized_view_name(), "m");
  EXPECT_TRUE(Unknown(read).empty());

  // Mutation{add_to_cell{family "f", column_qualifier{raw_value "q"}, timestamp{
  // raw_timestamp_micros 7}, input{int_value 3}}}.
  btv2::Mutation m;
  ASSERT_TRUE(m.ParseFromString("\x2a\x10\x0a\x01" "f" "\x12\x03\x42\x01q\x1a\x02\x48\x07"
                                "\x22\x02\x30\x03"s));
  ASSERT_EQ(m.mutation_case(), btv2::Mutation::kAddToCell);
  EXPECT_EQ(m.add_to_cell().family_name(), "f");
  EXPECT_EQ(m.add_to_cell().column_qualifier().raw_value(), "q");
  EXPECT_EQ(m.add_to_cell().timestamp().raw_timestamp_micros(), 7);
  EXPECT_EQ(m.add_to_cell().input().int_value(), 3);

  // RowFilter{chain{filters: [{cells_per_column_limit_filter 1}, {strip_value_transformer}]}}.
  btv2::RowFilter f;
  ASSERT_TRUE(f.ParseFromString("\x0a\x08\x0a\x02\x60\x01\x0a\x02\x68\x01"s));
  ASSERT_EQ(f.filter_case(), btv2::RowFilter::kChain);
  ASSERT_EQ(f.chain().filters_size(), 2);
  EXPECT_EQ(f.chain().filters(0).cells_per_column_limit_filter(), 1);
  EXPECT_TRUE(f.chain().filters(1).strip_value_transformer());

  // ColumnFamily{gc_rule{union{rules: [{max_num_versions 2}, {max_age{seconds 60}}]}},
  //              value_type{aggregate_type{input_type{int64_type{encoding{big_endian_bytes{}}}},
  //                                       sum{}}}}.
  btadmin::ColumnFamily cf;
  ASSERT_TRUE(cf.ParseFromString("\x0a\x0c\x22\x0a\x0a\x02\x08\x02\x0a\x04\x12\x02\x08\x3c"
                                 "\x1a\x0c\x32\x0a\x0a\x06\x2a\x04\x0a\x02\x0a\x00\x22\x00"s));
  ASSERT_EQ(cf.gc_rule().rule_case(), btadmin::GcRule::kUnion);
  ASSERT_EQ(cf.gc_rule().union_().rules_size(), 2);
  EXPECT_EQ(cf.gc_rule().union_().rules(0).max_num_versions(), 2);
  EXPECT_EQ(cf.gc_rule().union_().rules(1).max_age().seconds(), 60);
  ASSERT_EQ(cf.value_type().kind_case(), btadmin::Type::kAggregateType);
  const btadmin::Type::Aggregate& agg = cf.value_type().aggregate_type();
  EXPECT_EQ(agg.aggregator_case(), btadmin::Type::Aggregate::kSum);
  ASSERT_EQ(agg.input_type().kind_case(), btadmin::Type::kInt64Type);
  EXPECT_TRUE(agg.input_type().int64_type().encoding().has_big_endian_bytes());
  EXPECT_FALSE(cf.has_tessera_options());
}

TEST(ProtoWireTest, FeatureFlagsHeaderFromCbt) {
  // `bigtable-features` as cbt sends it: base64url of a serialized FeatureFlags.
  std::string raw;
  ASSERT_TRUE(absl::WebSafeBase64Unescape("CAEgAQ==", &raw));
  EXPECT_EQ(raw, "\x08\x01\x20\x01"s);
  btv2::FeatureFlags flags;
  ASSERT_TRUE(flags.ParseFromString(raw));
  EXPECT_TRUE(flags.reverse_scans());
  EXPECT_TRUE(flags.last_scanned_row_responses());
  EXPECT_FALSE(flags.mutate_rows_rate_limit());
  EXPECT_FALSE(flags.routing_cookie());
  EXPECT_TRUE(Unknown(flags).empty());
}

TEST(ProtoWireTest, EmptyQualifierSurvivesRoundTrip) {
  btv2::ReadRowsResponse response;
  btv2::ReadRowsResponse::CellChunk* chunk = response.add_chunks();
  chunk->set_row_key("r");
  chunk->mutable_family_name()->set_value("f");
  chunk->mutable_qualifier();  // present, value ""
  chunk->set_timestamp_micros(1000);
  chunk->set_value("v");
  chunk->set_commit_row(true);
  // A second chunk continuing the same column: qualifier absent.
  btv2::ReadRowsResponse::CellChunk* next = response.add_chunks();
  next->set_timestamp_micros(0);
  next->set_commit_row(true);

  std::string wire;
  ASSERT_TRUE(response.SerializeToString(&wire));
  // chunk 1: row_key, family {value "f"}, qualifier {} (present, 0 bytes), ts 1000, value, commit.
  const std::string chunk1 =
      "\x0a\x01r\x12\x03\x0a\x01" "f" "\x1a\x00\x20\xe8\x07\x32\x01v\x48\x01"s;
  EXPECT_EQ(wire, "\x0a"s + static_cast<char>(chunk1.size()) + chunk1 + "\x0a\x02\x48\x01"s);

  btv2::ReadRowsResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  ASSERT_EQ(parsed.chunks_size(), 2);
  EXPECT_TRUE(parsed.chunks(0).has_qualifier());
  EXPECT_EQ(parsed.chunks(0).qualifier().value(), "");
  EXPECT_EQ(parsed.chunks(0).family_name().value(), "f");
  EXPECT_EQ(parsed.chunks(0).row_status_case(),
            btv2::ReadRowsResponse::CellChunk::kCommitRow);
  EXPECT_FALSE(parsed.chunks(1).has_qualifier());
  EXPECT_FALSE(parsed.chunks(1).has_family_name());
}

TEST(ProtoWireTest, TesseraFamilyOptionsAreSkippedByOtherParsers) {
  btadmin::ColumnFamily cf;
  cf.mutable_gc_rule()->set_max_num_versions(1);
  cf.mutable_tessera_options()->set_super_columns(true);
  cf.mutable_tessera_options()->set_time_sorted(true);
  std::string wire = cf.SerializeAsString();

  btadmin::ColumnFamily back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_TRUE(back.tessera_options().super_columns());
  EXPECT_TRUE(back.tessera_options().time_sorted());

  // A parser that does not know field 536870000 (as an official client's ColumnFamily
  // does not) accepts the message and keeps the field as unknown.
  google::protobuf::Empty stranger;
  ASSERT_TRUE(stranger.ParseFromString(wire));
  const google::protobuf::UnknownFieldSet& unknown = Unknown(stranger);
  bool found = false;
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == 536870000) found = true;
  }
  EXPECT_TRUE(found);
}

TEST(ProtoWireTest, TesseraTableOptionsAreSkippedByOtherParsers) {
  btadmin::Table table;
  table.set_name("projects/p/instances/i/tables/t");
  table.mutable_tessera_options()->set_placement("ring:rack:3");
  table.mutable_tessera_options()->set_write_consistency("all");
  const std::string wire = table.SerializeAsString();

  btadmin::Table back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(back.tessera_options().placement(), "ring:rack:3");
  EXPECT_EQ(back.tessera_options().write_consistency(), "all");

  google::protobuf::Empty stranger;
  ASSERT_TRUE(stranger.ParseFromString(wire));
  const google::protobuf::UnknownFieldSet& unknown = Unknown(stranger);
  bool found = false;
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == 536870000) found = true;
  }
  EXPECT_TRUE(found);
}

TEST(ProtoWireTest, MutateRowsEntryStatusAndOperation) {
  btv2::MutateRowsResponse response;
  btv2::MutateRowsResponse::Entry* e = response.add_entries();
  e->set_index(3);
  e->mutable_status()->set_code(5);
  e->mutable_status()->set_message("nope");
  // entries{index 3 (1), status{code 5 (1), message "nope" (2)} (2)}
  EXPECT_EQ(response.SerializeAsString(), "\x0a\x0c\x08\x03\x12\x08\x08\x05\x12\x04nope"s);
  EXPECT_FALSE(response.has_rate_limit_info());

  google::longrunning::Operation op;
  op.set_done(true);
  btadmin::Table table;
  table.set_name("projects/p/instances/i/tables/t");
  ASSERT_TRUE(op.mutable_response()->PackFrom(table));
  EXPECT_EQ(op.response().type_url(), "type.googleapis.com/google.bigtable.admin.v2.Table");
  btadmin::Table unpacked;
  ASSERT_TRUE(op.response().UnpackTo(&unpacked));
  EXPECT_EQ(unpacked.name(), table.name());
}

}  // namespace
}  // namespace tessera
