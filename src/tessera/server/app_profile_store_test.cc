#include "tessera/server/app_profile_store.h"

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"
#include "tessera/testing/etcd_test_server.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::server {
namespace {

namespace admin = ::google::bigtable::admin::v2;
using std::string_literals::operator""s;

const AppProfileName kProf1{"projects/p/instances/i", "prof1"};

admin::AppProfile AnyRouting(const std::string& description) {
  admin::AppProfile p;
  p.set_description(description);
  p.mutable_multi_cluster_routing_use_any();
  return p;
}

// One lock service (the embedded one, on a memory file system that survives reopening) and
// two stores on sessions of their own: two nodes of one cluster.
class AppProfileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenService(); }
  void TearDown() override { CloseService(); }

  void OpenService() {
    coord::EmbeddedLockServiceOptions options;
    options.fs = &fs_;
    options.clock = SystemClock();
    options.dir = "/coord";
    auto service = coord::EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    for (int i = 0; i < 2; ++i) {
      auto store = AppProfileStore::Open(AppProfileStoreOptions{});
      ASSERT_TRUE(store.ok()) << store.status();
      stores_.push_back(*std::move(store));
      auto session = service_->CreateSession(coord::SessionOptions{});
      ASSERT_TRUE(session.ok()) << session.status();
      sessions_.push_back(*std::move(session));
      stores_.back()->Attach(sessions_.back().get());
    }
  }
  // A restart of everything: the stores, the sessions and the service.
  void CloseService() {
    stores_.clear();
    sessions_.clear();
    service_.reset();
  }

  AppProfileStore* node(int i) { return stores_[i].get(); }

  MemFileSystem fs_;
  std::unique_ptr<coord::EmbeddedLockService> service_;
  std::vector<std::unique_ptr<coord::Session>> sessions_;
  std::vector<std::unique_ptr<AppProfileStore>> stores_;
};

TEST(AppProfileRecordTest, RoundTripDropsNameAndEtag) {
  AppProfileRecord record;
  record.settings = AnyRouting("desc");
  record.settings.set_name("projects/p/instances/i/appProfiles/x");
  record.settings.set_etag("7");
  record.settings.mutable_standard_isolation()->set_priority(admin::AppProfile::PRIORITY_LOW);
  const std::string encoded = record.Encode();
  EXPECT_EQ(encoded[0], '\x01');
  auto decoded = AppProfileRecord::Decode(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->settings.description(), "desc");
  EXPECT_TRUE(decoded->settings.has_multi_cluster_routing_use_any());
  EXPECT_EQ(decoded->settings.standard_isolation().priority(), admin::AppProfile::PRIORITY_LOW);
  EXPECT_EQ(decoded->settings.name(), "");
  EXPECT_EQ(decoded->settings.etag(), "");
}

TEST(AppProfileRecordTest, MalformedIsDataLoss) {
  const std::string good = AppProfileRecord{AnyRouting("d")}.Encode();
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "empty"},
      {"unknown format", "\x02" + good.substr(1), "unknown format byte 2"},
      {"truncated", good.substr(0, good.size() - 1), "truncated settings"},
      {"unparsable", "\x01\x02\xff\xff"s, "settings do not parse"},
      {"trailing bytes", good + "x", "1 trailing bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto decoded = AppProfileRecord::Decode(c.bytes);
    ASSERT_FALSE(decoded.ok());
    EXPECT_TRUE(absl::IsDataLoss(decoded.status())) << decoded.status();
    EXPECT_NE(decoded.status().message().find(c.message), std::string_view::npos)
        << decoded.status();
  }
}

TEST(AppProfileNameTest, ParseAndValidate) {
  auto name = AppProfileName::Parse("projects/p/instances/i/appProfiles/prof_1.a-b");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->instance, "projects/p/instances/i");
  EXPECT_EQ(name->id, "prof_1.a-b");
  EXPECT_EQ(name->Full(), "projects/p/instances/i/appProfiles/prof_1.a-b");
  for (const char* bad : {"projects/p/instances/i/appProfiles/", "projects/p/appProfiles/x",
                          "projects/p/instances/i/appProfiles/-x",
                          "projects/p/instances/i/appProfiles/a b", "prof1"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(AppProfileName::Parse(bad).status()));
  }
  EXPECT_TRUE(ValidateAppProfileId(std::string(50, 'a')).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateAppProfileId(std::string(51, 'a'))));
}

TEST_F(AppProfileStoreTest, CreateGetListUpdateDeleteAcrossNodes) {
  auto created = node(0)->Create(kProf1, AnyRouting("first"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->name(), "projects/p/instances/i/appProfiles/prof1");
  EXPECT_FALSE(created->etag().empty());

  // The other node sees it at once (reads go to the lock service).
  auto got = node(1)->Get(kProf1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->description(), "first");
  EXPECT_EQ(got->etag(), created->etag());

  auto again = node(1)->Create(kProf1, AnyRouting("again"));
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_EQ(again.status().message(),
            "app profile \"projects/p/instances/i/appProfiles/prof1\" already exists");

  auto updated = node(1)->Update(kProf1, created->etag(), [](admin::AppProfile* p) {
    p->set_description("second");
    return Status();
  });
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(updated->etag(), created->etag());
  EXPECT_EQ(node(0)->Get(kProf1)->description(), "second");

  // A stale etag loses; a failing change stores nothing.
  auto stale =
      node(0)->Update(kProf1, created->etag(), [](admin::AppProfile*) { return Status(); });
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  auto refused = node(0)->Update(kProf1, "", [](admin::AppProfile* p) {
    p->set_description("never");
    return absl::InvalidArgumentError("no");
  });
  EXPECT_EQ(refused.status(), absl::InvalidArgumentError("no"));
  EXPECT_EQ(node(1)->Get(kProf1)->description(), "second");

  ASSERT_TRUE(node(0)->Create({"projects/p/instances/i", "a"}, AnyRouting("")).ok());
  ASSERT_TRUE(node(0)->Create({"projects/p/instances/j", "z"}, AnyRouting("")).ok());
  ASSERT_TRUE(node(0)->Create({"projects/q/instances/i", "b"}, AnyRouting("")).ok());
  auto list = node(1)->List("projects/p/instances/i");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name(), "projects/p/instances/i/appProfiles/a");
  EXPECT_EQ((*list)[1].name(), "projects/p/instances/i/appProfiles/prof1");
  auto all = node(1)->List("projects/p/instances/-");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 3u);
  auto instances = node(1)->ListInstances("projects/p");
  ASSERT_TRUE(instances.ok()) << instances.status();
  EXPECT_EQ(*instances,
            (std::vector<std::string>{"projects/p/instances/i", "projects/p/instances/j"}));

  ASSERT_TRUE(node(1)->Delete(kProf1).ok());
  EXPECT_EQ(
      node(0)->Get(kProf1).status(),
      absl::NotFoundError("app profile \"projects/p/instances/i/appProfiles/prof1\" not found"));
  EXPECT_TRUE(absl::IsNotFound(node(0)->Delete(kProf1)));
  EXPECT_TRUE(absl::IsNotFound(
      node(0)->Update(kProf1, "", [](admin::AppProfile*) { return Status(); }).status()));

  // Made again, it has an etag never given before.
  auto remade = node(0)->Create(kProf1, AnyRouting("third"));
  ASSERT_TRUE(remade.ok()) << remade.status();
  EXPECT_NE(remade->etag(), created->etag());
  EXPECT_NE(remade->etag(), updated->etag());
}

TEST_F(AppProfileStoreTest, ProfilesSurviveARestart) {
  ASSERT_TRUE(node(0)->Create(kProf1, AnyRouting("kept")).ok());
  auto updated = node(0)->Update(kProf1, "", [](admin::AppProfile* p) {
    p->set_description("kept, updated");
    return Status();
  });
  ASSERT_TRUE(updated.ok()) << updated.status();
  CloseService();
  OpenService();
  auto got = node(1)->Get(kProf1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->description(), "kept, updated");
  EXPECT_EQ(got->etag(), updated->etag());
}

TEST_F(AppProfileStoreTest, ConcurrentUpdatesFromTwoNodesAllLand) {
  ASSERT_TRUE(node(0)->Create(kProf1, AnyRouting("")).ok());
  constexpr int kPerNode = 20;
  std::vector<std::thread> threads;
  for (int n = 0; n < 2; ++n) {
    threads.emplace_back([this, n] {
      for (int i = 0; i < kPerNode; ++i) {
        auto s = node(n)->Update(kProf1, "", [](admin::AppProfile* p) {
          p->set_description(p->description() + "x");
          return Status();
        });
        EXPECT_TRUE(s.ok()) << s.status();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(node(0)->Get(kProf1)->description(), std::string(2 * kPerNode, 'x'));
}

TEST_F(AppProfileStoreTest, DetachedStoreIsUnavailableAndMalformedRecordsAreDataLoss) {
  node(0)->Detach();
  EXPECT_TRUE(absl::IsUnavailable(node(0)->Get(kProf1).status()));
  EXPECT_TRUE(absl::IsUnavailable(node(0)->Create(kProf1, AnyRouting("")).status()));
  EXPECT_TRUE(absl::IsUnavailable(node(0)->List("projects/p/instances/i").status()));
  node(0)->Detach();  // idempotent

  // A record written by hand that is not one.
  ASSERT_TRUE(sessions_[1]->Put(node(1)->RecordName(kProf1), "junk", coord::PutOptions{}).ok());
  auto got = node(1)->Get(kProf1);
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_NE(got.status().message().find("app_profiles/projects/p/instances/i/prof1"),
            std::string_view::npos)
      << got.status();
  // It can still be deleted: there is no other way to clear it.
  EXPECT_TRUE(node(1)->Delete(kProf1).ok());
}

TEST(AppProfileStoreOptionsTest, BadOptionsAreRefused) {
  AppProfileStoreOptions options;
  options.prefix = "";
  EXPECT_TRUE(absl::IsInvalidArgument(AppProfileStore::Open(options).status()));
  options = AppProfileStoreOptions{};
  options.max_attempts = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(AppProfileStore::Open(options).status()));
}

// --- Against a real etcd (cluster mode) ------------------------------------------------------

TEST(AppProfileStoreEtcdTest, TwoNodesShareProfilesThroughEtcd) {
  auto server = testing::EtcdTestServer::Start();
  if (absl::IsNotFound(server.status())) {
    std::fprintf(stderr, "\n*** SKIPPING the etcd app-profile test: %s ***\n\n",
                 server.status().ToString().c_str());
    GTEST_SKIP() << server.status();
  }
  ASSERT_TRUE(server.ok()) << server.status();
  coord::EtcdLockServiceOptions options;
  options.endpoint = (*server)->endpoint();
  options.key_root = "/tessera-test/";
  auto service = coord::EtcdLockService::Open(options);
  ASSERT_TRUE(service.ok()) << service.status();
  {
    std::vector<std::unique_ptr<coord::Session>> sessions;
    std::vector<std::unique_ptr<AppProfileStore>> stores;
    for (int i = 0; i < 2; ++i) {
      auto session = (*service)->CreateSession(coord::SessionOptions{});
      ASSERT_TRUE(session.ok()) << session.status();
      sessions.push_back(*std::move(session));
      stores.push_back(*AppProfileStore::Open(AppProfileStoreOptions{}));
      stores.back()->Attach(sessions.back().get());
    }
    auto created = stores[0]->Create(kProf1, AnyRouting("via etcd"));
    ASSERT_TRUE(created.ok()) << created.status();
    auto got = stores[1]->Get(kProf1);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->description(), "via etcd");
    EXPECT_EQ(got->etag(), created->etag());
    EXPECT_TRUE(absl::IsAlreadyExists(stores[1]->Create(kProf1, AnyRouting("")).status()));
    auto stale = stores[1]->Update(kProf1, "1", [](admin::AppProfile*) { return Status(); });
    EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
    ASSERT_TRUE(stores[1]->Delete(kProf1).ok());
    EXPECT_TRUE(absl::IsNotFound(stores[0]->Get(kProf1).status()));
    stores.clear();
    sessions.clear();
  }
}

}  // namespace
}  // namespace tessera::server
