// `tessera admin ring` from hand-built answers (admin_ring_format.h): ring order, shares, a
// node without a token, a node on the ring that the status does not list, the JSON form.
#include "tessera/cli/admin_ring_format.h"

#include <string>

#include "gtest/gtest.h"
#include "tessera/util/coding.h"

namespace tessera::cli {
namespace {

namespace v1 = ::tessera::v1;

std::string Token(uint64_t top_byte) { return BigEndian64String(top_byte << 56); }

v1::ClusterStatus Status() {
  v1::ClusterStatus s;
  s.set_cluster_name("tessera");
  auto add = [&](const char* endpoint, const char* rack, const char* liveness, const char* status) {
    v1::NodeStatus* n = s.add_nodes();
    n->set_endpoint(endpoint);
    n->set_dc("dc1");
    n->set_rack(rack);
    n->set_liveness(liveness);
    n->set_status(status);
  };
  add("127.0.0.1:8086", "r1", "up", "normal");
  add("127.0.0.1:8087", "r2", "up", "normal");
  add("127.0.0.1:8088", "r1", "down", "shutdown");
  add("127.0.0.1:8089", "r2", "up", "joining");  // no token yet
  return s;
}

v1::Ring Ring() {
  v1::Ring r;
  auto add = [&](const char* endpoint, std::string token) {
    v1::RingToken* t = r.add_tokens();
    t->set_endpoint(endpoint);
    t->set_token(std::move(token));
  };
  add("127.0.0.1:8086", Token(0x80));
  add("127.0.0.1:8087", Token(0x00));
  add("127.0.0.1:8088", Token(0x40));
  add("127.0.0.9:1", Token(0xC0));  // removed from gossip, still on the ring
  return r;
}

TEST(AdminRingFormatTest, NodesInRingOrderWithTheirShares) {
  const std::vector<RingLine> lines = MergeRing(Status(), Ring());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].endpoint, "127.0.0.1:8087");
  EXPECT_EQ(lines[1].endpoint, "127.0.0.1:8088");
  EXPECT_EQ(lines[2].endpoint, "127.0.0.1:8086");
  EXPECT_EQ(lines[3].endpoint, "127.0.0.9:1");
  EXPECT_EQ(lines[4].endpoint, "127.0.0.1:8089");
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(lines[i].owns, 0.25) << i;
  EXPECT_FALSE(lines[4].owns.has_value());
  EXPECT_EQ(lines[3].state, "?");
  EXPECT_EQ(FormatRing("tessera", lines),
            "5 nodes on the ring of cluster tessera\n"
            "ADDRESS         DC   RACK  STATE          OWNS    TOKEN\n"
            "127.0.0.1:8087  dc1  r2    up normal      25.00%  0000000000000000\n"
            "127.0.0.1:8088  dc1  r1    down shutdown  25.00%  4000000000000000\n"
            "127.0.0.1:8086  dc1  r1    up normal      25.00%  8000000000000000\n"
            "127.0.0.9:1     ?    ?     ?              25.00%  c000000000000000\n"
            "127.0.0.1:8089  dc1  r2    up joining     -       -\n");
}

TEST(AdminRingFormatTest, UnevenSharesAndSharedTokens) {
  v1::Ring r;
  for (auto [endpoint, token] :
       {std::pair{"a:1", Token(0x10)}, {"b:1", Token(0x20)}, {"c:1", Token(0x20)}}) {
    v1::RingToken* t = r.add_tokens();
    t->set_endpoint(endpoint);
    t->set_token(token);
  }
  const std::vector<RingLine> lines = MergeRing(v1::ClusterStatus(), r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_DOUBLE_EQ(*lines[0].owns, 1.0 - 1.0 / 16);  // a: from 0x20 round to 0x10
  EXPECT_DOUBLE_EQ(*lines[1].owns, 1.0 / 16);        // b: [0x10, 0x20)
  EXPECT_EQ(lines[2].owns, 0.0);                     // c shares b's token
}

TEST(AdminRingFormatTest, Json) {
  const nlohmann::json j = RingToJson("tessera", MergeRing(Status(), Ring()));
  EXPECT_EQ(j["cluster"], "tessera");
  ASSERT_EQ(j["nodes"].size(), 5u);
  EXPECT_EQ(j["nodes"][0]["endpoint"], "127.0.0.1:8087");
  EXPECT_EQ(j["nodes"][0]["token"], "0000000000000000");
  EXPECT_EQ(j["nodes"][0]["owns"], 0.25);
  EXPECT_EQ(j["nodes"][0]["state"], "up normal");
  EXPECT_TRUE(j["nodes"][4]["token"].is_null());
  EXPECT_TRUE(j["nodes"][4]["owns"].is_null());
}

}  // namespace
}  // namespace tessera::cli
