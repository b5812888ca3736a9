// The behaviour every LockService backend must show, run as one typed suite against:
//   - the embedded backend in its production mode (real clock, background delivery thread; on a
//     MemFileSystem), and
//   - the etcd backend against a real etcd started for the suite on free 127.0.0.1 ports
//     (skipped, loudly, when /usr/bin/etcd is missing).
// The embedded backend's deterministic ManualClock tests are in embedded_lock_service_test.cc;
// etcd-only failure tests (etcd killed or hung) are in etcd_lock_service_test.cc.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"
#include "tessera/coord/lock_service.h"
#include "tessera/coord/lock_service_test_util.h"
#include "tessera/testing/suite_etcd.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::coord {
namespace {

using testing::Describe;
using testing::Ephemeral;
using testing::EventLog;
using testing::Held;
using testing::IfVersion;
using testing::StateLog;
using testing::WatchLocks;
using testing::WatchName;
using testing::WatchPrefix;

// --- Backends -------------------------------------------------------------------------------

class EmbeddedBackend {
 public:
  static void SetUpSuite() {}
  static void TearDownSuite() {}

  // Empty when the backend can run; else why it is skipped.
  std::string Setup() {
    EmbeddedLockServiceOptions options;
    options.fs = &fs_;
    options.clock = SystemClock();
    options.dir = "/node/coord";
    options.poll_interval_ms = 10;
    options.acquire_retry_ms = 5;
    auto service = EmbeddedLockService::Open(options);
    EXPECT_TRUE(service.ok()) << service.status();
    if (service.ok()) service_ = std::move(*service);
    return "";
  }
  LockService* service() { return service_.get(); }
  // Session TTL used by the tests, and how long expiry may take past it.
  int64_t ttl_ms() const { return 300; }
  int64_t expiry_slack_ms() const { return 500; }

 private:
  MemFileSystem fs_;
  std::unique_ptr<EmbeddedLockService> service_;
};

class EtcdBackend {
 public:
  static void SetUpSuite() { tessera::testing::SuiteEtcd::Start("the etcd lock-service tests"); }
  static void TearDownSuite() { tessera::testing::SuiteEtcd::Stop(); }

  std::string Setup() {
    if (tessera::testing::SuiteEtcd::server() == nullptr) {
      return tessera::testing::SuiteEtcd::skip_reason();
    }
    // Each test in its own key space.
    auto service = tessera::testing::SuiteEtcd::OpenLockService("behaviour");
    EXPECT_TRUE(service.ok()) << service.status();
    if (service.ok()) service_ = std::move(*service);
    return "";
  }
  LockService* service() { return service_.get(); }
  int64_t ttl_ms() const { return 1000; }
  // etcd's keepalive answer may be a third of a TTL old when the local timer starts counting.
  int64_t expiry_slack_ms() const { return 1500; }

 private:
  std::unique_ptr<EtcdLockService> service_;
};

// --- Fixture --------------------------------------------------------------------------------

template <typename Backend>
class LockServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpSuite(); }
  static void TearDownTestSuite() { Backend::TearDownSuite(); }

  void SetUp() override {
    const std::string skip = backend_.Setup();
    if (!skip.empty()) GTEST_SKIP() << "etcd not available: " << skip;
    ASSERT_NE(service(), nullptr);
  }

  LockService* service() { return backend_.service(); }

  std::unique_ptr<Session> NewSession(StateLog* states = nullptr) {
    SessionOptions options;
    options.ttl_ms = backend_.ttl_ms();
    if (states != nullptr) options.on_state_change = states->Callback();
    auto session = service()->CreateSession(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }

  bool Eventually(const std::function<bool()>& pred, int64_t max_ms = 5000) {
    return testing::Eventually(
        pred, [] {}, max_ms);
  }

  // Gives in-flight callbacks time to (wrongly) arrive.
  void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(150)); }

  Backend backend_;
};

using Backends = ::testing::Types<EmbeddedBackend, EtcdBackend>;

class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if constexpr (std::is_same_v<T, EmbeddedBackend>) return "Embedded";
    return "Etcd";
  }
};
TYPED_TEST_SUITE(LockServiceTest, Backends, BackendNames);

// --- Sessions -------------------------------------------------------------------------------

TYPED_TEST(LockServiceTest, SessionLivesUntilClosed) {
  StateLog states;
  auto s = this->NewSession(&states);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->id().valid());
  EXPECT_EQ(s->state(), SessionState::kAlive);
  EXPECT_GE(s->ttl_ms(), this->backend_.ttl_ms());
  auto other = this->NewSession();
  ASSERT_NE(other, nullptr);
  EXPECT_NE(s->id(), other->id());

  ASSERT_TRUE(s->Close().ok());
  EXPECT_EQ(s->state(), SessionState::kExpired);
  EXPECT_TRUE(s->Close().ok()) << "Close is idempotent";
  EXPECT_EQ(s->Get("x").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->Put("x", "v", {}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->TryAcquire("l", "").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->StartWatch(WatchName("x"), [](const WatchEvent&) {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  this->Settle();
  EXPECT_TRUE(states.states().empty()) << "Close does not call on_state_change";
  // The other session is unaffected.
  EXPECT_TRUE(other->Put("x", "v", {}).ok());
}

TYPED_TEST(LockServiceTest, BadArgumentsAreInvalidArgument) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  const auto invalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(s->Get("").status().code(), invalid);
  EXPECT_EQ(s->Get(std::string(kMaxNameBytes + 1, 'n')).status().code(), invalid);
  EXPECT_EQ(s->Put("f", std::string(kMaxValueBytes + 1, 'v'), {}).status().code(), invalid);
  EXPECT_EQ(s->Put("f", "v", IfVersion(-1)).status().code(), invalid);
  EXPECT_EQ(s->Delete("f", -2).code(), invalid);
  EXPECT_EQ(s->TryAcquire("", "v").status().code(), invalid);
  EXPECT_EQ(s->Acquire("l", "v", -1).code(), invalid);
  EXPECT_EQ(s->StartWatch(WatchName(""), [](const WatchEvent&) {}).status().code(), invalid);
  EXPECT_EQ(s->StartWatch(WatchName("x"), nullptr).status().code(), invalid);
  EXPECT_EQ(s->StartWatch(WatchName("x", -1), [](const WatchEvent&) {}).status().code(), invalid);
  SessionOptions bad_ttl;
  bad_ttl.ttl_ms = 0;
  EXPECT_EQ(this->service()->CreateSession(bad_ttl).status().code(), invalid);
  // The largest value is accepted.
  EXPECT_TRUE(s->Put("f", std::string(kMaxValueBytes, 'v'), {}).ok());
}

// --- Locks ----------------------------------------------------------------------------------

TYPED_TEST(LockServiceTest, LockIsExclusive) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->GetLockHolder("master").status().code(), absl::StatusCode::kNotFound);

  ASSERT_EQ(Held(a->TryAcquire("master", "node-a")), "held");
  EXPECT_EQ(Held(b->TryAcquire("master", "node-b")), "not held");
  EXPECT_EQ(Held(a->TryAcquire("master", "again")), "held")
      << "re-acquiring a held lock is a no-op";
  auto holder = b->GetLockHolder("master");
  ASSERT_TRUE(holder.ok()) << holder.status();
  EXPECT_EQ(holder->session, a->id());
  EXPECT_EQ(holder->value, "node-a");
  EXPECT_GT(holder->revision, 0);

  EXPECT_EQ(b->Release("master").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b->Release("never-taken").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(a->Release("master").ok());
  EXPECT_EQ(a->Release("master").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Held(b->TryAcquire("master", "node-b")), "held");
  EXPECT_EQ(Held(a->TryAcquire("master", "node-a")), "not held");
  // Locks and files are separate namespaces.
  EXPECT_EQ(a->Get("master").status().code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(LockServiceTest, AcquireTimesOutWhileHeld) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(Held(a->TryAcquire("l", "a")), "held");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(b->Acquire("l", "b", 200).code(), absl::StatusCode::kDeadlineExceeded);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(190));
  EXPECT_LT(waited, std::chrono::milliseconds(5000));
  EXPECT_EQ(b->Acquire("free", "b", 0).code(), absl::StatusCode::kOk) << "a free lock at once";
}

TYPED_TEST(LockServiceTest, AcquireWaitsForRelease) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(Held(a->TryAcquire("l", "a")), "held");
  std::atomic<bool> done{false};
  Status result;
  std::thread waiter([&] {
    result = b->Acquire("l", "b", 10'000);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load()) << "Acquire returned while the lock was held: " << result;
  const auto released = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->Release("l").ok());
  waiter.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_LT(std::chrono::steady_clock::now() - released, std::chrono::milliseconds(3000));
  auto holder = a->GetLockHolder("l");
  ASSERT_TRUE(holder.ok());
  EXPECT_EQ(holder->session, b->id());
  EXPECT_EQ(holder->value, "b");
}

TYPED_TEST(LockServiceTest, RevokedHolderLosesLockToWaiter) {
  StateLog a_states;
  auto a = this->NewSession(&a_states);
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(Held(a->TryAcquire("master", "a")), "held");
  Status result;
  std::thread waiter([&] { result = b->Acquire("master", "b", 10'000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(this->service()->RevokeSession(a->id()).ok());
  waiter.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(b->GetLockHolder("master")->session, b->id());
  // The revoked holder learns of it (etcd: at its next keepalive, within a third of the TTL).
  EXPECT_TRUE(this->Eventually([&] { return !a_states.states().empty(); },
                               this->backend_.ttl_ms() + this->backend_.expiry_slack_ms()));
  EXPECT_EQ(a_states.states(), std::vector<SessionState>{SessionState::kExpired});
  EXPECT_EQ(a->state(), SessionState::kExpired);
  EXPECT_EQ(a->TryAcquire("master", "a").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->service()->RevokeSession(a->id()).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(a->Close().ok()) << "closing an expired session is fine";
}

TYPED_TEST(LockServiceTest, LeaseExpiryReleasesLocksAndEphemeralFiles) {
  StateLog a_states;
  auto a = this->NewSession(&a_states);
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(Held(a->TryAcquire("master", "a")), "held");
  ASSERT_TRUE(a->Put("servers/a", "addr-a", Ephemeral()).ok());
  ASSERT_TRUE(a->Put("schema", "tables", {}).ok());
  EventLog a_watch;
  auto watch = a->StartWatch(WatchName("elsewhere"), a_watch.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();

  const auto stopped = std::chrono::steady_clock::now();
  a->StopKeepAliveForTesting();
  const int64_t bound_ms = a->ttl_ms() + this->backend_.expiry_slack_ms();
  ASSERT_TRUE(this->Eventually([&] { return !a_states.states().empty(); }, bound_ms + 2000));
  const auto expired_after = a_states.when() - stopped;
  EXPECT_LE(expired_after, std::chrono::milliseconds(bound_ms));
  EXPECT_EQ(a_states.states(), std::vector<SessionState>{SessionState::kExpired});
  // The lock and the ephemeral file went with the lease; the persistent file stayed.
  EXPECT_TRUE(this->Eventually([&] { return b->TryAcquire("master", "b").value_or(false); }));
  EXPECT_TRUE(this->Eventually(
      [&] { return b->Get("servers/a").status().code() == absl::StatusCode::kNotFound; }));
  EXPECT_EQ(b->Get("schema")->value, "tables");
  // Its watch ended with kSessionExpired.
  ASSERT_TRUE(this->Eventually([&] { return a_watch.size() >= 1; }));
  EXPECT_EQ(a_watch.events().back().type, WatchEventType::kSessionExpired)
      << Describe(a_watch.events());
}

TYPED_TEST(LockServiceTest, ManySessionsNeverHoldALockTogether) {
  constexpr int kSessions = 4;
  constexpr int kRounds = 15;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < kSessions; ++i) {
    sessions.push_back(this->NewSession());
    ASSERT_NE(sessions.back(), nullptr);
  }
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> taken{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < kRounds; ++round) {
        Status s = sessions[i]->Acquire("mutex", StrCat("s", i), 10'000);
        if (!s.ok()) {
          ++errors;
          continue;
        }
        if (inside.fetch_add(1) != 0) ++overlaps;
        ++taken;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside.fetch_sub(1);
        if (!sessions[i]->Release("mutex").ok()) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(taken.load(), kSessions * kRounds);
}

// --- Files ----------------------------------------------------------------------------------

TYPED_TEST(LockServiceTest, FilesHaveVersionsAndRevisions) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->Get("cfg").status().code(), absl::StatusCode::kNotFound);
  const std::string binary("a\0b\xff", 4);
  auto v1 = s->Put("cfg", binary, {});
  ASSERT_TRUE(v1.ok()) << v1.status();
  EXPECT_EQ(v1->name, "cfg");
  EXPECT_EQ(v1->value, binary);
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v1->create_revision, v1->mod_revision);
  EXPECT_FALSE(v1->owner.valid());
  auto v2 = s->Put("cfg", "two", {});
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(v2->create_revision, v1->create_revision);
  EXPECT_GT(v2->mod_revision, v1->mod_revision);
  auto got = s->Get("cfg");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value, "two");
  EXPECT_EQ(got->version, 2);
  EXPECT_EQ(got->create_revision, v2->create_revision);
  EXPECT_EQ(got->mod_revision, v2->mod_revision);
  // A deleted file starts again at version 1.
  ASSERT_TRUE(s->Delete("cfg", std::nullopt).ok());
  EXPECT_EQ(s->Get("cfg").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s->Delete("cfg", std::nullopt).code(), absl::StatusCode::kNotFound);
  auto again = s->Put("cfg", "x", {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 1);
  EXPECT_GT(again->create_revision, v2->mod_revision);
}

TYPED_TEST(LockServiceTest, CompareAndSetByVersion) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // 0 = must not exist.
  ASSERT_TRUE(a->Put("root", "r1", IfVersion(0)).ok());
  EXPECT_EQ(b->Put("root", "r1b", IfVersion(0)).status().code(), absl::StatusCode::kAborted);
  auto v2 = b->Put("root", "r2", IfVersion(1));
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->version, 2);
  // A loses the race it thinks it is in.
  EXPECT_EQ(a->Put("root", "r2a", IfVersion(1)).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(a->Get("root")->value, "r2");
  EXPECT_EQ(a->Delete("root", 1).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(a->Get("root")->value, "r2");
  EXPECT_TRUE(a->Delete("root", 2).ok());
  EXPECT_EQ(a->Delete("root", 2).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a->Delete("root", 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a->Put("gone", "x", IfVersion(3)).status().code(), absl::StatusCode::kAborted);
}

TYPED_TEST(LockServiceTest, ListByPrefixIsSortedAndComplete) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  for (const char* name : {"servers/b", "servers/a", "serversx", "tables/t1", "servers/c"}) {
    ASSERT_TRUE(s->Put(name, StrCat("v-", name), {}).ok());
  }
  ASSERT_TRUE(s->Delete("servers/c", std::nullopt).ok());
  auto servers = s->List("servers/");
  ASSERT_TRUE(servers.ok()) << servers.status();
  ASSERT_EQ(servers->files.size(), 2u);
  EXPECT_EQ(servers->files[0].name, "servers/a");
  EXPECT_EQ(servers->files[0].value, "v-servers/a");
  EXPECT_EQ(servers->files[1].name, "servers/b");
  auto all = s->List("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->files.size(), 4u);
  EXPECT_EQ(all->files[2].name, "serversx");
  int64_t max_mod = 0;
  for (const FileInfo& f : all->files) max_mod = std::max(max_mod, f.mod_revision);
  EXPECT_GE(all->revision, max_mod);
  auto none = s->List("zzz");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->files.empty());
}

TYPED_TEST(LockServiceTest, EphemeralFilesBelongToTheirSession) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  auto e = a->Put("servers/a", "addr", Ephemeral());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->owner, a->id());
  EXPECT_EQ(b->Get("servers/a")->owner, a->id());
  ASSERT_TRUE(a->Put("kept", "k", Ephemeral()).ok());
  ASSERT_TRUE(b->Put("kept", "now persistent", {}).ok()) << "a Put decides afresh";
  ASSERT_TRUE(a->Close().ok());
  EXPECT_EQ(b->Get("servers/a").status().code(), absl::StatusCode::kNotFound);
  auto kept = b->Get("kept");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->value, "now persistent");
  EXPECT_FALSE(kept->owner.valid());
}

// --- Watches --------------------------------------------------------------------------------

TYPED_TEST(LockServiceTest, WatchOnANameSeesItsChangesInOrder) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  EventLog log;
  auto watch = s->StartWatch(WatchName("cfg"), log.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();
  auto p1 = s->Put("cfg", "one", {});
  ASSERT_TRUE(s->Put("cfg2", "not watched", {}).ok());
  ASSERT_TRUE(s->Put("cf", "not watched", {}).ok());
  auto p2 = s->Put("cfg", "two", {});
  ASSERT_TRUE(s->Delete("cfg", std::nullopt).ok());
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 3; })) << Describe(log.events());
  this->Settle();
  const auto events = log.events();
  ASSERT_EQ(events.size(), 3u) << Describe(events);
  EXPECT_EQ(events[0].type, WatchEventType::kPut);
  EXPECT_EQ(events[0].name, "cfg");
  EXPECT_EQ(events[0].value, "one");
  EXPECT_EQ(events[0].version, 1);
  EXPECT_EQ(events[0].revision, p1->mod_revision);
  EXPECT_EQ(events[1].value, "two");
  EXPECT_EQ(events[1].version, 2);
  EXPECT_EQ(events[1].revision, p2->mod_revision);
  EXPECT_EQ(events[2].type, WatchEventType::kDelete);
  EXPECT_EQ(events[2].name, "cfg");
  EXPECT_GT(events[2].revision, events[1].revision);
}

TYPED_TEST(LockServiceTest, WatchOnAPrefixSeesEveryNameUnderIt) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EventLog log;
  auto watch = a->StartWatch(WatchPrefix("servers/"), log.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(b->Put("servers/b", "addr-b", Ephemeral()).ok());
  ASSERT_TRUE(a->Put("servers/a", "addr-a", {}).ok());
  ASSERT_TRUE(a->Put("other/x", "no", {}).ok());
  ASSERT_TRUE(a->Delete("servers/a", std::nullopt).ok());
  ASSERT_TRUE(b->Close().ok());  // its ephemeral file goes
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 4; })) << Describe(log.events());
  this->Settle();
  const auto events = log.events();
  ASSERT_EQ(events.size(), 4u) << Describe(events);
  EXPECT_EQ(events[0].name, "servers/b");
  EXPECT_EQ(events[0].owner, b->id());
  EXPECT_EQ(events[1].name, "servers/a");
  EXPECT_EQ(events[2].type, WatchEventType::kDelete);
  EXPECT_EQ(events[2].name, "servers/a");
  EXPECT_EQ(events[3].type, WatchEventType::kDelete);
  EXPECT_EQ(events[3].name, "servers/b");
  for (size_t i = 1; i < events.size(); ++i) EXPECT_GT(events[i].revision, events[i - 1].revision);
}

TYPED_TEST(LockServiceTest, WatchFromAListingRevisionMissesNothing) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Put("dir/a", "1", {}).ok());
  auto listing = s->List("dir/");
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->files.size(), 1u);
  // Changes between the List and the Watch.
  ASSERT_TRUE(s->Put("dir/b", "2", {}).ok());
  ASSERT_TRUE(s->Delete("dir/a", std::nullopt).ok());
  EventLog log;
  auto watch = s->StartWatch(WatchPrefix("dir/", listing->revision + 1), log.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(s->Put("dir/c", "3", {}).ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 3; })) << Describe(log.events());
  this->Settle();
  const auto events = log.events();
  ASSERT_EQ(events.size(), 3u) << Describe(events);
  EXPECT_EQ(events[0].name, "dir/b");
  EXPECT_EQ(events[1].type, WatchEventType::kDelete);
  EXPECT_EQ(events[1].name, "dir/a");
  EXPECT_EQ(events[2].name, "dir/c");
}

TYPED_TEST(LockServiceTest, WatchOnLocksSeesAcquireAndRelease) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EventLog log;
  auto watch = b->StartWatch(WatchLocks("master", false), log.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(a->Put("master", "a file, not the lock", {}).ok());
  ASSERT_EQ(Held(a->TryAcquire("master", "node-a")), "held");
  ASSERT_TRUE(a->Release("master").ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 2; })) << Describe(log.events());
  this->Settle();
  const auto events = log.events();
  ASSERT_EQ(events.size(), 2u) << Describe(events);
  EXPECT_EQ(events[0].type, WatchEventType::kPut);
  EXPECT_EQ(events[0].name, "master");
  EXPECT_EQ(events[0].value, "node-a");
  EXPECT_EQ(events[0].owner, a->id());
  EXPECT_EQ(events[1].type, WatchEventType::kDelete);
}

TYPED_TEST(LockServiceTest, WatchEndsWithSessionExpiry) {
  auto a = this->NewSession();
  auto b = this->NewSession();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EventLog log;
  auto watch = a->StartWatch(WatchName("k"), log.Callback());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(b->Put("k", "1", {}).ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 1; }));
  ASSERT_TRUE(this->service()->RevokeSession(a->id()).ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 2; },
                               a->ttl_ms() + this->backend_.expiry_slack_ms()))
      << Describe(log.events());
  ASSERT_TRUE(b->Put("k", "2", {}).ok());
  this->Settle();
  const auto events = log.events();
  ASSERT_EQ(events.size(), 2u) << "nothing after the expiry:\n" << Describe(events);
  EXPECT_EQ(events[0].value, "1");
  EXPECT_EQ(events[1].type, WatchEventType::kSessionExpired);
}

TYPED_TEST(LockServiceTest, DestroyedWatchIsSilent) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  EventLog log;
  auto watch = s->StartWatch(WatchName("k"), log.Callback());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(s->Put("k", "1", {}).ok());
  ASSERT_TRUE(this->Eventually([&] { return log.size() >= 1; }));
  watch->reset();
  ASSERT_TRUE(s->Put("k", "2", {}).ok());
  this->Settle();
  EXPECT_EQ(log.size(), 1u) << Describe(log.events());
}

TYPED_TEST(LockServiceTest, CallbacksMayCallTheServiceAndDropTheirWatch) {
  auto s = this->NewSession();
  ASSERT_NE(s, nullptr);
  std::atomic<int> calls{0};
  std::string seen;
  std::unique_ptr<Watch> watch;
  absl::Mutex mu;
  auto started = s->StartWatch(WatchName("k"), [&](const WatchEvent& e) {
    ++calls;
    auto got = s->Get("k");  // a call back into the service from the callback
    absl::MutexLock l(&mu);
    seen = got.ok() ? got->value : got.status().ToString();
    watch.reset();  // dropping its own watch from inside the callback
  });
  ASSERT_TRUE(started.ok()) << started.status();
  {
    absl::MutexLock l(&mu);
    watch = std::move(*started);
  }
  ASSERT_TRUE(s->Put("k", "v", {}).ok());
  ASSERT_TRUE(this->Eventually([&] { return calls.load() >= 1; }));
  ASSERT_TRUE(s->Put("k", "w", {}).ok());
  this->Settle();
  EXPECT_EQ(calls.load(), 1);
  absl::MutexLock l(&mu);
  EXPECT_TRUE(seen == "v" || seen == "w") << seen;
  EXPECT_EQ(watch, nullptr);
}

}  // namespace
}  // namespace tessera::coord
