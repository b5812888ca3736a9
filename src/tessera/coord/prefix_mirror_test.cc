// PrefixMirror, typed over both lock-service backends as lock_service_behaviour_test.cc is:
// the embedded backend in its production mode (real clock, delivery thread) and the etcd
// backend against a real etcd started for the suite (skipped loudly without /usr/bin/etcd).
// Every wait is bounded (WaitFor, 10 s at most).
#include "tessera/coord/prefix_mirror.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"
#include "tessera/testing/suite_etcd.h"
#include "tessera/testing/test_support.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::coord {
namespace {

using ::tessera::testing::WaitFor;
constexpr int64_t kWaitMs = 10'000;
constexpr char kPrefix[] = "m/";

// --- Backends -------------------------------------------------------------------------------

class EmbeddedBackend {
 public:
  static void SetUpSuite() {}
  static void TearDownSuite() {}

  std::string Setup() {
    EmbeddedLockServiceOptions options;
    options.fs = &fs_;
    options.clock = SystemClock();
    options.dir = "/node/coord";
    options.poll_interval_ms = 10;
    // A watch started more than one change behind gets kReset.
    options.history_limit = 1;
    auto service = EmbeddedLockService::Open(options);
    EXPECT_TRUE(service.ok()) << service.status();
    if (service.ok()) service_ = std::move(*service);
    return "";
  }
  LockService* service() { return service_.get(); }
  // Makes history up to `revision` unavailable to new watches: the history limit already does.
  void Compact(int64_t /*revision*/) {}

 private:
  MemFileSystem fs_;
  std::unique_ptr<EmbeddedLockService> service_;
};

class EtcdBackend {
 public:
  static void SetUpSuite() { tessera::testing::SuiteEtcd::Start("the etcd prefix-mirror tests"); }
  static void TearDownSuite() { tessera::testing::SuiteEtcd::Stop(); }

  std::string Setup() {
    if (tessera::testing::SuiteEtcd::server() == nullptr) {
      return tessera::testing::SuiteEtcd::skip_reason();
    }
    auto service = tessera::testing::SuiteEtcd::OpenLockService("mirror");
    EXPECT_TRUE(service.ok()) << service.status();
    if (service.ok()) service_ = std::move(*service);
    return "";
  }
  LockService* service() { return service_.get(); }
  // Compacts etcd's history up to `revision` (etcdctl, which etcd's package ships), so that a
  // watch starting before it is cancelled by etcd and the backend reports kReset.
  void Compact(int64_t revision) {
    const std::string command = StrCat(
        "ETCDCTL_API=3 etcdctl --endpoints=", tessera::testing::SuiteEtcd::server()->endpoint(),
        " compact ", revision, " >/dev/null 2>&1");
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }

 private:
  std::unique_ptr<EtcdLockService> service_;
};

// --- The owner ------------------------------------------------------------------------------

// Keeps the view it is told, checks the order of watch deliveries, and can refuse or stall.
class Owner final : public MirrorListener {
 public:
  Status OnPut(const FileInfo& file, MirrorCause cause) override {
    if (stall_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms_));
    absl::MutexLock lock(&mu_);
    if (refuse_ == file.name) {
      refuse_.clear();
      return absl::UnavailableError("refused once");
    }
    NoteLocked(file.mod_revision, cause);
    view_[file.name] = file;
    ++puts_[file.name];
    return Status();
  }
  Status OnDelete(const std::string& name, int64_t revision, MirrorCause cause) override {
    absl::MutexLock lock(&mu_);
    NoteLocked(revision, cause);
    EXPECT_EQ(view_.erase(name), 1u) << name << " deleted but not held";
    return Status();
  }
  Status OnSynced(int64_t revision, const std::set<std::string, std::less<>>& live) override {
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      ++synced_;
      std::set<std::string, std::less<>> held;
      for (const auto& entry : view_) held.insert(entry.first);
      EXPECT_EQ(held, live) << "at revision " << revision;
      hook = std::move(on_synced_);
      on_synced_ = nullptr;
    }
    if (hook) hook();
    return Status();
  }
  void OnSessionExpired() override {
    absl::MutexLock lock(&mu_);
    expired_ = true;
  }

  std::map<std::string, FileInfo> view() const {
    absl::MutexLock lock(&mu_);
    return view_;
  }
  int puts(const std::string& name) const {
    absl::MutexLock lock(&mu_);
    auto it = puts_.find(name);
    return it == puts_.end() ? 0 : it->second;
  }
  int deliveries() const {
    absl::MutexLock lock(&mu_);
    return deliveries_;
  }
  int synced() const {
    absl::MutexLock lock(&mu_);
    return synced_;
  }
  bool expired() const {
    absl::MutexLock lock(&mu_);
    return expired_;
  }
  void RefuseOnce(std::string name) {
    absl::MutexLock lock(&mu_);
    refuse_ = std::move(name);
  }
  // Runs once, at the end of the next OnSynced (inside the delivery).
  void OnNextSynced(std::function<void()> hook) {
    absl::MutexLock lock(&mu_);
    on_synced_ = std::move(hook);
  }
  void Stall(int ms) { stall_ms_ = ms; }

 private:
  void NoteLocked(int64_t revision, MirrorCause cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++deliveries_;
    if (cause != MirrorCause::kWatch) return;
    EXPECT_GT(revision, last_watch_revision_) << "watch deliveries out of revision order";
    last_watch_revision_ = revision;
  }

  mutable absl::Mutex mu_;
  std::map<std::string, FileInfo> view_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> puts_ ABSL_GUARDED_BY(mu_);
  int64_t last_watch_revision_ ABSL_GUARDED_BY(mu_) = 0;
  int deliveries_ ABSL_GUARDED_BY(mu_) = 0;
  int synced_ ABSL_GUARDED_BY(mu_) = 0;
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
  std::string refuse_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_synced_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> stall_ms_{0};
};

// "name=value v<version> c<create_revision> m<mod_revision>" per file, for comparing views.
std::string Describe(const std::map<std::string, FileInfo>& files) {
  std::string out;
  for (const auto& [name, f] : files) {
    out += StrCat(name, "=", f.value, " v", f.version, " c", f.create_revision, " m",
                  f.mod_revision, "\n");
  }
  return out;
}

// --- Fixture --------------------------------------------------------------------------------

template <typename Backend>
class PrefixMirrorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::SetUpSuite(); }
  static void TearDownTestSuite() { Backend::TearDownSuite(); }

  void SetUp() override {
    const std::string skip = backend_.Setup();
    if (!skip.empty()) GTEST_SKIP() << "etcd not available: " << skip;
    ASSERT_NE(backend_.service(), nullptr);
    writer_ = NewSession();
    auto mirror = PrefixMirror::Create(
        &owner_, PrefixMirrorOptions{kPrefix, "the test files", "mirror test"});
    ASSERT_TRUE(mirror.ok()) << mirror.status();
    mirror_ = *std::move(mirror);
  }
  void TearDown() override {
    mirror_.reset();
    sessions_.clear();
    writer_.reset();
  }

  std::unique_ptr<Session> NewSession() {
    auto session = backend_.service()->CreateSession(SessionOptions{});
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }
  // A session for the mirror, kept until the test ends.
  Session* MirrorSession() {
    sessions_.push_back(NewSession());
    return sessions_.back().get();
  }

  FileInfo Put(const std::string& name, const std::string& value) {
    auto put = writer_->Put(name, value, PutOptions{});
    EXPECT_TRUE(put.ok()) << put.status();
    return put.ok() ? *put : FileInfo{};
  }
  void Delete(const std::string& name) {
    Status s = writer_->Delete(name, std::nullopt);
    EXPECT_TRUE(s.ok()) << s;
  }

  // The store's files under the prefix, as a view.
  std::map<std::string, FileInfo> Store() {
    std::map<std::string, FileInfo> out;
    auto listing = writer_->List(kPrefix);
    EXPECT_TRUE(listing.ok()) << listing.status();
    if (listing.ok()) {
      for (FileInfo& f : listing->files) out[f.name] = std::move(f);
    }
    return out;
  }
  bool OwnerMatchesStore() { return Describe(owner_.view()) == Describe(Store()); }

  Backend backend_;
  Owner owner_;
  std::unique_ptr<Session> writer_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::unique_ptr<PrefixMirror> mirror_;
};

using Backends = ::testing::Types<EmbeddedBackend, EtcdBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, EmbeddedBackend> ? "Embedded" : "Etcd";
  }
};
TYPED_TEST_SUITE(PrefixMirrorTest, Backends, BackendNames);

// --- Tests ----------------------------------------------------------------------------------

TYPED_TEST(PrefixMirrorTest, StartDeliversTheListingBeforeReturning) {
  this->Put("m/a", "1");
  this->Put("m/b", "1");
  this->Put("m/b", "2");
  this->Put("other/x", "outside the prefix");
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  EXPECT_TRUE(this->mirror_->running());
  EXPECT_EQ(Describe(this->owner_.view()), Describe(this->Store()));
  EXPECT_EQ(this->owner_.view().count("other/x"), 0u);
  EXPECT_EQ(this->owner_.synced(), 1);
  EXPECT_EQ(this->mirror_->GetStats().resyncs, 1u);
  EXPECT_EQ(this->mirror_->Resync().code(), absl::StatusCode::kOk);
  EXPECT_EQ(this->owner_.puts("m/b"), 1);  // the second listing found nothing new
}

TYPED_TEST(PrefixMirrorTest, InterleavedPutsAndDeletesArriveInRevisionOrder) {
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  Random random(TestSeed());
  std::map<std::string, bool> exists;
  for (int i = 0; i < 80; ++i) {
    const std::string name = StrCat("m/", random.Uniform(5));
    if (exists[name] && random.OneIn(3)) {
      this->Delete(name);
      exists[name] = false;
    } else {
      this->Put(name, StrCat("value ", i));
      exists[name] = true;
    }
  }
  // Create, delete and create again in quick succession: the new incarnation wins.
  this->Put("m/again", "first");
  this->Delete("m/again");
  const FileInfo again = this->Put("m/again", "second");
  ASSERT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs))
      << "owner:\n"
      << Describe(this->owner_.view()) << "store:\n"
      << Describe(this->Store());
  EXPECT_EQ(this->owner_.view()["m/again"].create_revision, again.create_revision);
  EXPECT_EQ(this->mirror_->GetStats().failures, 0u);
}

TYPED_TEST(PrefixMirrorTest, HistoryLostBetweenListingAndWatchIsReconciled) {
  this->Put("m/keep", "1");
  this->Put("m/gone", "1");
  // Inside the first listing's delivery, before the watch starts: three changes, then the
  // history they live in is made unavailable, so the watch begins with kReset.
  this->owner_.OnNextSynced([this] {
    this->Put("m/keep", "2");
    this->Delete("m/gone");
    const FileInfo last = this->Put("m/new", "1");
    this->backend_.Compact(last.mod_revision);
  });
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  ASSERT_TRUE(WaitFor([&] { return this->mirror_->GetStats().resyncs >= 2; }, kWaitMs))
      << "no reset was reconciled";
  ASSERT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs))
      << "owner:\n"
      << Describe(this->owner_.view()) << "store:\n"
      << Describe(this->Store());
  // And the watch goes on after the reset.
  this->Put("m/after", "1");
  EXPECT_TRUE(WaitFor([&] { return this->owner_.view().count("m/after") == 1; }, kWaitMs));
}

TYPED_TEST(PrefixMirrorTest, SessionLostMidStreamThenRestartedEndsInTheSameView) {
  Session* first = this->MirrorSession();
  ASSERT_TRUE(this->mirror_->Start(first).ok());
  for (int i = 0; i < 10; ++i) this->Put(StrCat("m/", i), "before");
  ASSERT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs));
  ASSERT_TRUE(this->backend_.service()->RevokeSession(first->id()).ok());
  ASSERT_TRUE(WaitFor([&] { return this->owner_.expired(); }, kWaitMs));
  EXPECT_FALSE(this->mirror_->running());
  EXPECT_EQ(this->mirror_->UseSession().status().code(), absl::StatusCode::kFailedPrecondition);
  // While the owner has no session: changes, deletes, and a file deleted and made again.
  for (int i = 0; i < 10; i += 2) this->Delete(StrCat("m/", i));
  this->Put("m/1", "while away");
  this->Delete("m/3");
  this->Put("m/3", "recreated");
  this->Put("m/new", "while away");
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  EXPECT_EQ(Describe(this->owner_.view()), Describe(this->Store()));  // on return
  this->Delete("m/new");
  EXPECT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs));
}

TYPED_TEST(PrefixMirrorTest, RefusedDeliveryIsDeliveredAgainBeforeTheNextEvent) {
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  this->owner_.RefuseOnce("m/x");
  this->Put("m/x", "1");
  ASSERT_TRUE(WaitFor([&] { return this->mirror_->GetStats().failures == 1; }, kWaitMs));
  EXPECT_EQ(this->owner_.view().count("m/x"), 0u);
  this->Put("m/y", "1");  // re-lists first, which brings m/x
  EXPECT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs))
      << Describe(this->owner_.view());
  EXPECT_EQ(this->owner_.puts("m/y"), 1);
}

TYPED_TEST(PrefixMirrorTest, LocalChangesAreDeliveredAtOnceAndOnlyOnce) {
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  FileInfo put;
  {
    auto use = this->mirror_->UseSession();
    ASSERT_TRUE(use.ok()) << use.status();
    auto made = (*use)->Put("m/local", "mine", PutOptions{});
    ASSERT_TRUE(made.ok()) << made.status();
    put = *made;
  }
  ASSERT_TRUE(this->mirror_->DeliverLocalPut(put).ok());
  EXPECT_EQ(this->owner_.view().count("m/local"), 1u);  // read-your-writes
  this->Put("m/marker", "1");
  ASSERT_TRUE(WaitFor([&] { return this->owner_.view().count("m/marker") == 1; }, kWaitMs));
  EXPECT_EQ(this->owner_.puts("m/local"), 1);  // the watch's copy was a duplicate
  this->Delete("m/local");
  ASSERT_TRUE(this->mirror_->DeliverLocalDelete("m/local", put.mod_revision).ok());
  EXPECT_EQ(this->owner_.view().count("m/local"), 0u);
  // The watch's delete finds nothing to delete (Owner checks every delete held its name).
  this->Put("m/marker", "2");
  EXPECT_TRUE(WaitFor([&] { return this->OwnerMatchesStore(); }, kWaitMs));
}

TYPED_TEST(PrefixMirrorTest, StopWhileEventsAreInFlight) {
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  this->owner_.Stall(2);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200 && !done.load(); ++i) this->Put(StrCat("m/", i % 7), StrCat(i));
  });
  ASSERT_TRUE(WaitFor([&] { return this->owner_.deliveries() >= 5; }, kWaitMs));
  this->mirror_->Stop();
  EXPECT_FALSE(this->mirror_->running());
  const int stopped_at = this->owner_.deliveries();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(this->owner_.deliveries(), stopped_at) << "delivered after Stop()";
  EXPECT_EQ(this->mirror_->Resync().code(), absl::StatusCode::kFailedPrecondition);
  done = true;
  writer.join();
  this->mirror_->Stop();  // idempotent
  // Started again, it catches up with everything it missed.
  this->owner_.Stall(0);
  ASSERT_TRUE(this->mirror_->Start(this->MirrorSession()).ok());
  EXPECT_EQ(Describe(this->owner_.view()), Describe(this->Store()));
}

TEST(PrefixMirrorOptionsTest, BadArgumentsAreRefused) {
  Owner owner;
  EXPECT_EQ(PrefixMirror::Create(nullptr, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      PrefixMirror::Create(&owner, PrefixMirrorOptions{std::string(5000, 'x')}).status().code(),
      absl::StatusCode::kInvalidArgument);
  auto mirror = PrefixMirror::Create(&owner, {});
  ASSERT_TRUE(mirror.ok());
  EXPECT_EQ((*mirror)->Start(nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE((*mirror)->running());
}

TEST(LockServiceCallErrorTest, KeepsInvalidArgumentAndCallsTheRestUnavailable) {
  Status bad = LockServiceCallError("putting", absl::InvalidArgumentError("value too large"));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "putting: value too large");
  Status down = LockServiceCallError("putting", absl::DeadlineExceededError("slow"));
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(down.message(), "lock service: putting: DEADLINE_EXCEEDED: slow");
}

}  // namespace
}  // namespace tessera::coord
