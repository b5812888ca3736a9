// HOST:PORT parsing (issue 9: `--listen 127.0.0.1:99999` served on a random port).
#include "tessera/util/host_port.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string Error(std::string_view text, PortZero zero = PortZero::kRefused) {
  StatusOr<HostPort> hp = ParseHostPort(text, zero);
  EXPECT_FALSE(hp.ok()) << text << " parsed as " << hp->ToString();
  EXPECT_EQ(hp.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(hp.status().message());
}

TEST(HostPortTest, ParsesNamesAddressesAndBracketedIpv6) {
  StatusOr<HostPort> hp = ParseHostPort("127.0.0.1:8086");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8086);
  EXPECT_EQ(hp->ToString(), "127.0.0.1:8086");

  hp = ParseHostPort("node-1.example_dc.local:65535");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->port, 65535);

  hp = ParseHostPort("[::1]:7000");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "::1");
  EXPECT_TRUE(hp->is_ipv6());
  EXPECT_EQ(hp->ToString(), "[::1]:7000");
}

TEST(HostPortTest, PortZeroOnlyWhereItPicksAFreePort) {
  StatusOr<HostPort> hp = ParseHostPort("127.0.0.1:0", PortZero::kPicksFreePort);
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->port, 0);
  EXPECT_THAT(Error("127.0.0.1:0"), HasSubstr("port 0"));
}

TEST(HostPortTest, RefusesOutOfRangeAndNonNumericPorts) {
  EXPECT_EQ(Error("127.0.0.1:99999", PortZero::kPicksFreePort),
            "\"127.0.0.1:99999\" is not HOST:PORT: port 99999 is out of range (0..65535)");
  EXPECT_THAT(Error("127.0.0.1:65536"), HasSubstr("out of range (1..65535)"));
  EXPECT_THAT(Error("127.0.0.1:123456"), HasSubstr("is not a number"));
  EXPECT_THAT(Error("127.0.0.1:http"), HasSubstr("port \"http\" is not a number"));
  EXPECT_THAT(Error("127.0.0.1:-1"), HasSubstr("is not a number"));
  EXPECT_THAT(Error("127.0.0.1:"), HasSubstr("the port is empty"));
  EXPECT_THAT(Error("127.0.0.1"), HasSubstr("no :PORT"));
}

TEST(HostPortTest, RefusesBadHosts) {
  EXPECT_THAT(Error(""), HasSubstr("empty"));
  EXPECT_THAT(Error(":8086"), HasSubstr("the host is empty"));
  EXPECT_THAT(Error("a b:8086"), HasSubstr("not a host name"));
  EXPECT_THAT(Error("etcd://h:1"), HasSubstr("not a host name"));
  EXPECT_THAT(Error("::1:8086"), HasSubstr("needs brackets, as in [::1]:8086"));
  EXPECT_THAT(Error("[::1"), HasSubstr("no closing"));
  EXPECT_THAT(Error("[nope]:1"), HasSubstr("not an IPv6 address"));
  EXPECT_THAT(Error("[::1]8086"), HasSubstr("no :PORT"));
}

TEST(HostPortTest, Lists) {
  StatusOr<std::vector<HostPort>> list = ParseHostPortList("h1:1, h2:2,[::1]:3");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].ToString(), "h2:2");
  EXPECT_EQ((*list)[2].ToString(), "[::1]:3");
  EXPECT_FALSE(ParseHostPortList("").ok());
  EXPECT_FALSE(ParseHostPortList("h1:1,").ok());
  EXPECT_THAT(std::string(ParseHostPortList("h1:1,h2:99999").status().message()),
              HasSubstr("\"h2:99999\""));
}

}  // namespace
}  // namespace tessera
