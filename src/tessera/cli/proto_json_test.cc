// `tessera admin status --json` (issue 9: int64 fields printed as strings, "load_bytes":"46303434").
#include "tessera/cli/proto_json.h"

#include <gtest/gtest.h>

#include "google/protobuf/util/json_util.h"
#include "tessera/v1/cluster.pb.h"

namespace tessera::cli {
namespace {

::tessera::v1::ClusterStatus SampleStatus() {
  ::tessera::v1::ClusterStatus s;
  s.set_cluster_name("prod");
  s.set_self("127.0.0.1:8086");
  s.set_master("127.0.0.1:8086");
  s.set_master_term(7);
  s.set_lock_service("etcd");
  s.set_serving(true);
  s.set_refused_messages(3);
  auto* n = s.add_nodes();
  n->set_endpoint("127.0.0.1:8086");
  n->set_liveness("up");
  n->set_phi(0.25);
  n->set_load_bytes(46303434);
  n->set_generation(1764590000);
  n->set_heartbeat(-1);
  n->set_is_self(true);
  s.add_nodes()->set_endpoint("127.0.0.1:8087");  // every other field at its default
  return s;
}

TEST(ProtoJsonTest, SixtyFourBitIntegersAreNumbers) {
  const nlohmann::json j = ProtoToJson(SampleStatus());
  EXPECT_EQ(j["master_term"], 7);
  EXPECT_TRUE(j["master_term"].is_number_integer()) << j.dump();
  EXPECT_EQ(j["refused_messages"], 3u);
  const nlohmann::json& node = j["nodes"][0];
  EXPECT_TRUE(node["load_bytes"].is_number_integer()) << node.dump();
  EXPECT_EQ(node["load_bytes"], 46303434);
  EXPECT_EQ(node["generation"], 1764590000);
  EXPECT_EQ(node["heartbeat"], -1);
  EXPECT_EQ(node["phi"], 0.25);
  EXPECT_EQ(node["is_self"], true);
  EXPECT_NE(j.dump().find("\"load_bytes\":46303434"), std::string::npos) << j.dump();
}

// Every key protobuf's printer (with defaults) writes is there, and nothing else.
TEST(ProtoJsonTest, KeepsEveryFieldOfProtobufsPrinter) {
  const auto status = SampleStatus();
  std::string reference;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(status, &reference, options).ok());
  const nlohmann::json want = nlohmann::json::parse(reference);
  const nlohmann::json got = ProtoToJson(status);
  auto keys = [](const nlohmann::json& o) {
    std::vector<std::string> k;
    for (const auto& [key, value] : o.items()) k.push_back(key);
    return k;
  };
  EXPECT_EQ(keys(got), keys(want));
  ASSERT_EQ(got["nodes"].size(), want["nodes"].size());
  for (size_t i = 0; i < want["nodes"].size(); ++i) {
    EXPECT_EQ(keys(got["nodes"][i]), keys(want["nodes"][i])) << i;
  }
  // Same values, once protobuf's strings are read as numbers.
  EXPECT_EQ(got["nodes"][1]["load_bytes"], 0);
  EXPECT_EQ(want["nodes"][1]["load_bytes"], "0");
  EXPECT_EQ(got["cluster_name"], want["cluster_name"]);
  EXPECT_TRUE(ProtoToJson(::tessera::v1::ClusterStatus())["nodes"].is_array());
}

}  // namespace
}  // namespace tessera::cli
