// The embedded backend on simulated time (ManualClock, no background thread: the test calls
// Poll()) and a MemFileSystem: exact lease expiry, Acquire waiting out a lease, watch delivery,
// persistence across reopen and crashes, storage failures, a corrupt snapshot.
#include "tessera/coord/embedded_lock_service.h"

#include "gtest/gtest.h"
#include "tessera/coord/embedded_snapshot.h"
#include "tessera/coord/lock_service_test_util.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::coord {
namespace {

using testing::Describe;
using testing::Ephemeral;
using testing::Held;
using testing::IfVersion;
using testing::WatchLocks;
using testing::WatchName;
using testing::WatchPrefix;
using testing::EventLog;
using testing::StateLog;

constexpr char kDir[] = "/data/coord";
constexpr int64_t kTtlMs = 5000;

class EmbeddedLockServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen(size_t history_limit = 10'000, const std::string& dir = kDir,
              size_t history_bytes_limit = 16 << 20) {
    service_.reset();
    EmbeddedLockServiceOptions options;
    options.fs = &fs_;
    options.clock = &clock_;
    options.dir = dir;
    options.background_thread = false;
    options.history_limit = history_limit;
    options.history_bytes_limit = history_bytes_limit;
    auto service = EmbeddedLockService::Open(options);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = std::move(*service);
  }

  std::unique_ptr<Session> NewSession(StateLog* states = nullptr) {
    SessionOptions options;
    options.ttl_ms = kTtlMs;
    if (states != nullptr) options.on_state_change = states->Callback();
    auto session = service_->CreateSession(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }

  void AdvanceMs(int64_t ms) {
    clock_.Advance(ms * 1000);
    service_->Poll();
  }

  MemFileSystem fs_;
  ManualClock clock_;
  std::unique_ptr<EmbeddedLockService> service_;
};

TEST_F(EmbeddedLockServiceTest, OpenRejectsMissingOptions) {
  EmbeddedLockServiceOptions options;
  EXPECT_EQ(EmbeddedLockService::Open(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.fs = &fs_;
  options.clock = &clock_;
  EXPECT_EQ(EmbeddedLockService::Open(options).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "no dir";
  options.dir = "/x";
  options.poll_interval_ms = 0;
  EXPECT_EQ(EmbeddedLockService::Open(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(EmbeddedLockServiceTest, LeaseExpiresExactlyAtTheTtlAndReleasesLocks) {
  StateLog a_states;
  auto a = NewSession(&a_states);
  auto b = NewSession();
  ASSERT_EQ(Held(a->TryAcquire("master", "a")), "held");
  ASSERT_TRUE(a->Put("servers/a", "addr", Ephemeral()).ok());

  // A live session is renewed however much time passes.
  AdvanceMs(10 * kTtlMs);
  EXPECT_EQ(a->state(), SessionState::kAlive);
  EXPECT_EQ(Held(b->TryAcquire("master", "b")), "not held");

  a->StopKeepAliveForTesting();
  AdvanceMs(kTtlMs - 1);
  EXPECT_EQ(a->state(), SessionState::kAlive);
  EXPECT_TRUE(a_states.states().empty());
  EXPECT_EQ(Held(b->TryAcquire("master", "b")), "not held");
  AdvanceMs(1);
  EXPECT_EQ(a_states.states(), std::vector<SessionState>{SessionState::kExpired});
  EXPECT_EQ(a->state(), SessionState::kExpired);
  EXPECT_EQ(Held(b->TryAcquire("master", "b")), "held");
  EXPECT_EQ(b->Get("servers/a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a->Release("master").code(), absl::StatusCode::kFailedPrecondition);
  AdvanceMs(kTtlMs);
  EXPECT_EQ(a_states.states().size(), 1u) << "the callback fires once";
}

TEST_F(EmbeddedLockServiceTest, AcquireWaitsOutAStoppedHoldersLease) {
  auto a = NewSession();
  auto b = NewSession();
  ASSERT_EQ(Held(a->TryAcquire("master", "a")), "held");
  a->StopKeepAliveForTesting();
  // Shorter than the lease: times out, having advanced the clock by the timeout.
  const int64_t before = clock_.MonotonicMicros();
  EXPECT_EQ(b->Acquire("master", "b", kTtlMs / 2).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(clock_.MonotonicMicros() - before, kTtlMs / 2 * 1000);
  // Long enough: the lease runs out on the way and b gets the lock.
  EXPECT_TRUE(b->Acquire("master", "b", kTtlMs).ok());
  EXPECT_EQ(b->GetLockHolder("master")->session, b->id());
  EXPECT_GE(clock_.MonotonicMicros() - before, kTtlMs * 1000);
}

TEST_F(EmbeddedLockServiceTest, CallbacksRunInPollNotInTheCaller) {
  auto s = NewSession();
  EventLog log;
  auto watch = s->StartWatch(WatchName("k"), log.Callback());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(s->Put("k", "1", {}).ok());
  ASSERT_TRUE(s->Put("k", "2", {}).ok());
  EXPECT_EQ(log.size(), 0u);
  service_->Poll();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log.events()[0].value, "1");
  EXPECT_EQ(log.events()[1].value, "2");
}

TEST_F(EmbeddedLockServiceTest, WatchesFireOnChangeAndOnExpiry) {
  StateLog a_states;
  auto a = NewSession(&a_states);
  auto b = NewSession();
  EventLog files, locks;
  auto fw = a->StartWatch(WatchPrefix("servers/"), files.Callback());
  auto lw = b->StartWatch(WatchLocks("", true),
                          locks.Callback());
  ASSERT_TRUE(fw.ok() && lw.ok());
  ASSERT_TRUE(b->Put("servers/b", "b", Ephemeral()).ok());
  ASSERT_EQ(Held(a->TryAcquire("master", "a")), "held");
  service_->Poll();
  ASSERT_EQ(files.size(), 1u);
  ASSERT_EQ(locks.size(), 1u);

  a->StopKeepAliveForTesting();
  AdvanceMs(kTtlMs);
  // a's watch ends with kSessionExpired; b's lock watch sees a's lock released.
  auto fe = files.events();
  ASSERT_EQ(fe.size(), 2u) << Describe(fe);
  EXPECT_EQ(fe[1].type, WatchEventType::kSessionExpired);
  auto le = locks.events();
  ASSERT_EQ(le.size(), 2u) << Describe(le);
  EXPECT_EQ(le[1].type, WatchEventType::kDelete);
  EXPECT_EQ(le[1].name, "master");
  EXPECT_EQ(a_states.states().size(), 1u);
  // Nothing more reaches the expired session's watch.
  ASSERT_TRUE(b->Put("servers/c", "c", {}).ok());
  service_->Poll();
  EXPECT_EQ(files.size(), 2u);
}

TEST_F(EmbeddedLockServiceTest, WatchStartingBeforeTheKeptHistoryGetsAReset) {
  Reopen(/*history_limit=*/2);
  auto s = NewSession();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->Put("k", StrCat(i), {}).ok());
  const int64_t now = service_->revision();
  EventLog log;
  auto watch = s->StartWatch(WatchName("k", 1), log.Callback());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(s->Put("k", "after", {}).ok());
  service_->Poll();
  auto events = log.events();
  ASSERT_EQ(events.size(), 2u) << Describe(events);
  EXPECT_EQ(events[0].type, WatchEventType::kReset);
  EXPECT_EQ(events[0].revision, now);
  EXPECT_EQ(events[1].value, "after");
  // Within the kept history: replayed exactly.
  EventLog recent;
  auto w2 = s->StartWatch(WatchName("k", now), recent.Callback());
  ASSERT_TRUE(w2.ok());
  service_->Poll();
  ASSERT_EQ(recent.size(), 2u) << Describe(recent.events());
  EXPECT_EQ(recent.events()[0].value, "4");
}

TEST_F(EmbeddedLockServiceTest, HistoryIsBoundedInBytesToo) {
  Reopen(10'000, kDir, /*history_bytes_limit=*/1000);
  auto s = NewSession();
  const int64_t start = service_->revision() + 1;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->Put("k", std::string(400, 'a' + i), {}).ok());
  // Only the last two changes (2 × 401 bytes) fit: an older start gets a reset.
  EventLog old_log, kept_log;
  auto old_watch = s->StartWatch(WatchName("k", start), old_log.Callback());
  auto kept_watch = s->StartWatch(WatchName("k", start + 3), kept_log.Callback());
  ASSERT_TRUE(old_watch.ok() && kept_watch.ok());
  service_->Poll();
  ASSERT_EQ(old_log.size(), 1u) << Describe(old_log.events());
  EXPECT_EQ(old_log.events()[0].type, WatchEventType::kReset);
  ASSERT_EQ(kept_log.size(), 2u) << Describe(kept_log.events());
  EXPECT_EQ(kept_log.events()[1].value, std::string(400, 'e'));
}

TEST_F(EmbeddedLockServiceTest, WatchFromAFutureRevisionSkipsWhatComesBefore) {
  auto s = NewSession();
  const int64_t start = service_->revision() + 3;
  EventLog log;
  auto watch = s->StartWatch(WatchName("k", start), log.Callback());
  ASSERT_TRUE(watch.ok());
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(s->Put("k", StrCat(i), {}).ok());
  service_->Poll();
  auto events = log.events();
  ASSERT_EQ(events.size(), 2u) << Describe(events);
  EXPECT_EQ(events[0].revision, start);
  EXPECT_EQ(events[0].value, "3");
}

TEST_F(EmbeddedLockServiceTest, PersistentFilesSurviveReopenSessionsDoNot) {
  int64_t revision = 0;
  {
    auto s = NewSession();
    ASSERT_TRUE(s->Put("schema/t1", "families", {}).ok());
    ASSERT_TRUE(s->Put("root", "r1", {}).ok());
    ASSERT_TRUE(s->Put("root", "r2", {}).ok());
    ASSERT_TRUE(s->Put("servers/a", "addr", Ephemeral()).ok());
    ASSERT_EQ(Held(s->TryAcquire("master", "a")), "held");
    revision = service_->revision();
    s.reset();
  }
  Reopen();
  auto s = NewSession();
  auto listing = s->List("");
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->files.size(), 2u);
  EXPECT_EQ(listing->files[0].name, "root");
  EXPECT_EQ(listing->files[0].value, "r2");
  EXPECT_EQ(listing->files[0].version, 2);
  EXPECT_EQ(listing->files[1].name, "schema/t1");
  EXPECT_EQ(s->GetLockHolder("master").status().code(), absl::StatusCode::kNotFound);
  auto next = s->Put("root", "r3", IfVersion(2));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version, 3);
  EXPECT_GT(next->mod_revision, listing->files[0].mod_revision);
  EXPECT_GE(service_->revision(), listing->revision);
  EXPECT_LE(listing->revision, revision);
}

TEST_F(EmbeddedLockServiceTest, AcknowledgedChangesSurviveACrash) {
  auto s = NewSession();
  ASSERT_TRUE(s->Put("a", "1", {}).ok());
  ASSERT_TRUE(s->Put("b", "2", {}).ok());
  ASSERT_TRUE(s->Delete("a", std::nullopt).ok());
  ASSERT_TRUE(s->Put("eph", "x", Ephemeral()).ok());
  s.reset();
  service_.reset();
  fs_.SimulateCrash();
  Reopen();
  auto t = NewSession();
  auto listing = t->List("");
  ASSERT_TRUE(listing.ok()) << listing.status();
  ASSERT_EQ(listing->files.size(), 1u);
  EXPECT_EQ(listing->files[0].name, "b");
  EXPECT_EQ(listing->files[0].value, "2");
}

TEST_F(EmbeddedLockServiceTest, EveryCrashPointLeavesTheOldOrTheNewState) {
  // Crash at each mutating file-system step of one Put: after recovery the file is either
  // absent (old state) or present (new state), never anything else, and the service opens.
  for (int64_t ops = 0; ops < 10; ++ops) {
    SCOPED_TRACE(StrCat("crash after ", ops, " file-system ops"));
    const std::string dir = StrCat("/crash-", ops);
    Reopen(10'000, dir);
    auto s = NewSession();
    ASSERT_TRUE(s->Put("base", "b", {}).ok());
    fs_.FailAfterOps(ops);
    const Status put = s->Put("new", "n", {}).status();
    s.reset();
    service_.reset();
    fs_.SimulateCrash();
    Reopen(10'000, dir);
    auto t = NewSession();
    EXPECT_EQ(t->Get("base")->value, "b");
    auto got = t->Get("new");
    if (put.ok()) {
      EXPECT_TRUE(got.ok()) << "an acknowledged Put was lost";
    } else {
      EXPECT_TRUE(got.ok() || got.status().code() == absl::StatusCode::kNotFound);
    }
  }
}

TEST_F(EmbeddedLockServiceTest, AFailedWriteChangesNothing) {
  auto s = NewSession();
  EventLog log;
  auto watch = s->StartWatch(WatchName("k"), log.Callback());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(s->Put("k", "old", {}).ok());
  service_->Poll();
  const int64_t revision = service_->revision();
  fs_.FailAfterOps(0);
  auto failed = s->Put("k", "new", {});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_EQ(s->Delete("k", std::nullopt).code(), absl::StatusCode::kUnavailable);
  service_->Poll();
  EXPECT_EQ(s->Get("k")->value, "old");
  EXPECT_EQ(service_->revision(), revision);
  EXPECT_EQ(log.size(), 1u);
  // Ephemeral files and locks need no disk.
  EXPECT_TRUE(s->Put("eph", "e", Ephemeral()).ok());
  EXPECT_EQ(Held(s->TryAcquire("l", "")), "held");
  fs_.FailAfterOps(-1);
  EXPECT_TRUE(s->Put("k", "new", {}).ok());
}

TEST_F(EmbeddedLockServiceTest, CorruptSnapshotIsDataLoss) {
  {
    auto s = NewSession();
    ASSERT_TRUE(s->Put("a", "value", {}).ok());
  }
  service_.reset();
  const std::string path = StrCat(kDir, "/", kSnapshotFileName);
  ASSERT_TRUE(fs_.FlipBitForTesting(path, 20, 3).ok());
  EmbeddedLockServiceOptions options;
  options.fs = &fs_;
  options.clock = &clock_;
  options.dir = kDir;
  options.background_thread = false;
  auto reopened = EmbeddedLockService::Open(options);
  ASSERT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss) << reopened.status();
  EXPECT_NE(reopened.status().message().find(path), std::string_view::npos)
      << reopened.status();
}

TEST_F(EmbeddedLockServiceTest, UnfinishedSnapshotIsIgnored) {
  {
    auto s = NewSession();
    ASSERT_TRUE(s->Put("a", "1", {}).ok());
  }
  service_.reset();
  const std::string temp = StrCat(kDir, "/", kSnapshotTempFileName);
  ASSERT_TRUE(WriteStringToFile(&fs_, temp, "half a snapshot", true).ok());
  Reopen();
  EXPECT_FALSE(fs_.FileExists(temp));
  auto s = NewSession();
  EXPECT_EQ(s->Get("a")->value, "1");
}

TEST_F(EmbeddedLockServiceTest, RevokeEndsASessionAtOnce) {
  StateLog states;
  auto a = NewSession(&states);
  ASSERT_TRUE(service_->RevokeSession(a->id()).ok());
  service_->Poll();
  EXPECT_EQ(states.states().size(), 1u);
  EXPECT_EQ(service_->RevokeSession(a->id()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(service_->RevokeSession(SessionId{12345}).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::coord
