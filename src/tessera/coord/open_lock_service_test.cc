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
                          ":2379", "etcd://h:2379/path", "zookeeper://h:2181", "h:0",
                          "h:99999", "etcd://a:1,b:x", "etcd://a:1,,b:2", "etcd://a:1,",
                          "etcd://a:1,etcd://b:2"}) {
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

}  // namespace
}  // namespace tessera::coord
