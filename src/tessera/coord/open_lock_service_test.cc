#include "tessera/coord/open_lock_service.h"

#include "gtest/gtest.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::coord {
namespace {

TEST(OpenLockServiceTest, EmbeddedNeedsADataFolder) {
  MemFileSystem fs;
  ManualClock clock;
  LockServiceConfig config;
  auto none = OpenLockService(config, &fs, &clock);
  EXPECT_TRUE(absl::IsInvalidArgument(none.status())) << none.status();
  config.data_dir = "/data";
  auto opened = OpenLockService(config, &fs, &clock);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->backend_name(), "embedded");
}

TEST(OpenLockServiceTest, AnAddressThatIsNotEtcdIsRefusedByName) {
  for (const char* bad : {"foo://x", "x", "etcd://", "etcd://host", "http://h:port", "h:123456",
                          ":2379", "etcd://h:2379/path", "zookeeper://h:2181", "etcd://h:0",
                          "etcd://h:99999", "etcd://h1:1,", "etcd://h1:1,h2:x",
                          "https://h:2379", "etcd://::1:2379", "h:0", "h:99999",
                          "etcd://a:1,b:x", "etcd://a:1,,b:2", "etcd://a:1,etcd://b:2"}) {
    LockServiceConfig config;
    config.address = bad;
    auto opened = OpenLockService(config);
    EXPECT_TRUE(absl::IsInvalidArgument(opened.status())) << bad << ": " << opened.status();
    EXPECT_NE(opened.status().message().find(bad), std::string_view::npos) << opened.status();
  }
}

TEST(OpenLockServiceTest, EtcdAddressesInEveryAcceptedSpelling) {
  for (const char* good : {"etcd://127.0.0.1:2379", "http://127.0.0.1:2379", "127.0.0.1:2379",
                           "etcd://localhost:2379/",
                           "etcd://127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379",
                           "etcd://localhost:2379,localhost:22379"}) {
    LockServiceConfig config;
    config.address = good;
    auto opened = OpenLockService(config);
    ASSERT_TRUE(opened.ok()) << good << ": " << opened.status();
    EXPECT_EQ((*opened)->backend_name(), "etcd");
  }
}

TEST(OpenLockServiceTest, ParsesEveryMemberOfAnEtcdList) {
  StatusOr<LockServiceAddress> address =
      ParseLockServiceAddress("etcd://10.0.0.1:2379,10.0.0.2:2379, http://10.0.0.3:2379/");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(address->etcd_members.size(), 3u);
  address = ParseLockServiceAddress("http://[::1]:2379,http://localhost:2379");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(address->backend, LockServiceAddress::Backend::kEtcd);
  ASSERT_EQ(address->etcd_members.size(), 2u);
  EXPECT_EQ(address->etcd_members[0].ToString(), "[::1]:2379");
  EXPECT_EQ(address->etcd_members[1].ToString(), "localhost:2379");
  address = ParseLockServiceAddress("embedded");
  ASSERT_TRUE(address.ok()) << address.status();
  EXPECT_EQ(address->backend, LockServiceAddress::Backend::kEmbedded);
  // The reason is the HOST:PORT parser's, after the address as given.
  EXPECT_EQ(ParseLockServiceAddress("etcd://h:99999").status().message(),
            "lock service \"etcd://h:99999\" is neither \"embedded\" nor etcd's address "
            "(etcd://HOST:PORT, http://HOST:PORT or HOST:PORT, several separated by commas): "
            "\"h:99999\" is not HOST:PORT: port 99999 is out of range (1..65535)");
}

}  // namespace
}  // namespace tessera::coord
