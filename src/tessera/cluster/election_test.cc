// The master election on simulated time: many electors over one embedded lock service on a
// ManualClock, stepped in lock-step, with crashes, pauses and restarts chosen from a seed (the
// seed is printed on failure; TESSERA_SEED replays one). Checks safety (never two live masters)
// and liveness (a new master within the lease TTL of the old one's end, plus one step).
#include "tessera/cluster/election.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/coord/embedded_lock_service.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::cluster {
namespace {

constexpr int64_t kTtlMs = 2000;
constexpr int64_t kStepMs = 100;

struct Elector {
  std::shared_ptr<MasterElection> election;
  std::shared_ptr<coord::Session> session;
  bool running = false;  // false: crashed (its session left to expire)
};

class ElectionSim {
 public:
  explicit ElectionSim(uint64_t seed) : random_(seed) {
    coord::EmbeddedLockServiceOptions o;
    o.fs = &fs_;
    o.clock = &clock_;
    o.dir = "/coord";
    o.background_thread = false;
    service_ = std::move(*coord::EmbeddedLockService::Open(o));
  }
  ~ElectionSim() {
    electors_.clear();
    zombies_.clear();
    service_.reset();
  }

  void Start(int n) {
    electors_.resize(n);
    for (int i = 0; i < n; ++i) Restart(i);
  }

  // A new process for elector i: a new session and a fresh elector. The old session (if the
  // old process crashed) is left to expire on its own, as a dead process's lease does.
  void Restart(int i) {
    Elector& e = electors_[i];
    if (e.session != nullptr) zombies_.push_back(std::move(e.session));
    auto election = std::make_shared<MasterElection>("n" + std::to_string(i));
    coord::SessionOptions so;
    so.ttl_ms = kTtlMs;
    std::weak_ptr<MasterElection> weak = election;
    so.on_state_change = [weak](coord::SessionState) {
      if (auto alive = weak.lock()) alive->Demote();
    };
    auto session = service_->CreateSession(so);
    ASSERT_TRUE(session.ok()) << session.status();
    e.session = std::move(*session);
    e.election = std::move(election);
    e.election->Reset(e.session);
    e.running = true;
  }

  // A crash: the process is gone, its session expires when its lease runs out.
  void Crash(int i) {
    Elector& e = electors_[i];
    e.session->StopKeepAliveForTesting();
    e.running = false;
  }

  // One step of simulated time: the clock moves, the service expires leases and delivers
  // callbacks, every running elector steps.
  void Step() {
    clock_.Advance(kStepMs * 1000);
    service_->Poll();
    for (Elector& e : electors_) {
      if (e.running) e.election->Step();
    }
    service_->Poll();
    now_ms_ += kStepMs;
  }

  // Electors that claim mastership and whose session the service still considers alive.
  int LiveMasters() const {
    int n = 0;
    for (const Elector& e : electors_) {
      if (e.running && e.election->is_master() &&
          e.session->state() == coord::SessionState::kAlive) {
        ++n;
      }
    }
    return n;
  }
  int Claimants() const {
    int n = 0;
    for (const Elector& e : electors_) n += e.election != nullptr && e.election->is_master();
    return n;
  }
  int MasterIndex() const {
    for (size_t i = 0; i < electors_.size(); ++i) {
      if (electors_[i].running && electors_[i].election->is_master()) return static_cast<int>(i);
    }
    return -1;
  }
  bool AnyRunning() const {
    for (const Elector& e : electors_) {
      if (e.running) return true;
    }
    return false;
  }

  Random& random() { return random_; }
  std::vector<Elector>& electors() { return electors_; }
  int64_t now_ms() const { return now_ms_; }

 private:
  MemFileSystem fs_;
  ManualClock clock_;
  Random random_;
  std::unique_ptr<coord::EmbeddedLockService> service_;
  std::vector<Elector> electors_;
  std::vector<std::shared_ptr<coord::Session>> zombies_;  // crashed processes' sessions
  int64_t now_ms_ = 0;
};

uint64_t SeedFromEnv(uint64_t fallback) {
  const char* s = std::getenv("TESSERA_SEED");
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : fallback;
}

TEST(ElectionTest, OneMasterAtATimeThroughCrashesAndRestarts) {
  for (uint64_t base = 1; base <= 5; ++base) {
    const uint64_t seed = SeedFromEnv(base);
    SCOPED_TRACE(testing::Message() << "seed " << seed << " (replay: TESSERA_SEED=" << seed
                                    << ")");
    ElectionSim sim(seed);
    sim.Start(5);
    int64_t masterless_since = -1;
    int64_t longest_gap_ms = 0;
    int64_t last_term = 0;
    int takeovers = 0;
    for (int step = 0; step < 6000; ++step) {  // 10 simulated minutes
      // Now and then the master crashes; now and then a crashed elector comes back.
      const int master = sim.MasterIndex();
      if (master >= 0 && sim.random().OneIn(150)) sim.Crash(master);
      for (size_t i = 0; i < sim.electors().size(); ++i) {
        if (!sim.electors()[i].running && sim.random().OneIn(40)) sim.Restart(static_cast<int>(i));
        if (sim.electors()[i].running && static_cast<int>(i) != master &&
            sim.random().OneIn(2000)) {
          sim.Crash(static_cast<int>(i));
        }
      }
      ASSERT_FALSE(::testing::Test::HasFatalFailure());
      sim.Step();
      // Safety: one live master at most, and a crashed master's claim ends with its session.
      ASSERT_LE(sim.LiveMasters(), 1) << "at " << sim.now_ms() << " ms";
      ASSERT_LE(sim.Claimants(), 1) << "at " << sim.now_ms() << " ms";
      const int now_master = sim.MasterIndex();
      if (now_master >= 0) {
        const int64_t term = sim.electors()[now_master].election->term();
        ASSERT_GE(term, last_term) << "terms must not go back";
        if (term > last_term) ++takeovers;
        last_term = term;
        if (masterless_since >= 0) {
          longest_gap_ms = std::max(longest_gap_ms, sim.now_ms() - masterless_since);
        }
        masterless_since = -1;
      } else if (sim.AnyRunning() && masterless_since < 0) {
        masterless_since = sim.now_ms();
      }
    }
    // Liveness: a master's lease ends at most one TTL after its crash, and the next step
    // elects a successor.
    EXPECT_LE(longest_gap_ms, kTtlMs + kStepMs);
    EXPECT_GT(takeovers, 5);
    std::printf("seed %llu: %d terms in %lld simulated s, longest time without a master %lld ms "
                "(TTL %lld ms)\n",
                static_cast<unsigned long long>(seed), takeovers,
                static_cast<long long>(sim.now_ms() / 1000), static_cast<long long>(longest_gap_ms),
                static_cast<long long>(kTtlMs));
    if (SeedFromEnv(0) != 0) break;
  }
}

TEST(ElectionTest, TheMasterFollowsTheDirectory) {
  ElectionSim sim(7);
  sim.Start(2);
  sim.Step();
  const int m = sim.MasterIndex();
  ASSERT_GE(m, 0);
  auto& master = *sim.electors()[m].election;
  EXPECT_TRUE(master.directory().empty());
  coord::PutOptions ephemeral;
  ephemeral.ephemeral = true;
  ASSERT_TRUE(sim.electors()[1 - m].session->Put("nodes/n9", "{}", ephemeral).ok());
  sim.Step();
  EXPECT_EQ(master.directory().count("n9"), 1u);
  sim.Crash(1 - m);
  for (int i = 0; i < kTtlMs / kStepMs + 2; ++i) sim.Step();
  EXPECT_EQ(master.directory().count("n9"), 0u);
}

}  // namespace
}  // namespace tessera::cluster
