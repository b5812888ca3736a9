// The engine calls replication needs (tablet/engine.h, docs/sequence_numbers.md "Numbers given
// by a primary"): ApplyBatch and the numbers it returns, ApplyReplicated with its skips, gaps and
// concurrent callers, LastSequence, and the durable replica epoch; each across restarts and
// crashes, and on a data folder of the previous version (tests/fixtures/engine_v1).
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/tablet/tablet_manager.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::RowMutation;
using tablet::Engine;
using tablet::SequenceRange;
using tablet::TabletDescriptor;
using tablet::TabletId;
using tablet::TabletManager;
// std::span takes no braced list before C++26.
using Batch = std::vector<RowMutation>;

TabletDescriptor Descriptor() {
  TabletDescriptor d;
  d.table = "t";
  d.end_row = "z";
  d.schema = MakeSchema("t", {{"f", GcRule::None()}, {"g", GcRule::None()}});
  return d;
}

RowMutation Set(std::string_view row, std::string_view value) {
  RowMutation m(row);
  m.SetCell("f", "q", 1, value);
  return m;
}

// Two entries: f:q and g:q.
RowMutation SetBoth(std::string_view row, std::string_view value) {
  RowMutation m(row);
  m.SetCell("f", "q", 1, value).SetCell("g", "q", 1, value);
  return m;
}

// Every raw entry of the tablet: sequence -> value (entries written twice, in a memtable and in
// its flushed file, must agree).
std::map<uint64_t, std::string> Entries(Engine* engine, TabletId id) {
  std::map<uint64_t, std::string> out;
  StatusOr<std::shared_ptr<tablet::Tablet>> t = static_cast<TabletManager*>(engine)->tablet(id);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return out;
  StatusOr<std::unique_ptr<tablet::EntryIterator>> it = (*t)->NewEntryIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  for (; (*it)->Valid(); (*it)->Next()) {
    auto [pos, inserted] = out.emplace((*it)->sequence(), std::string((*it)->value()));
    EXPECT_TRUE(inserted || pos->second == (*it)->value()) << "sequence " << (*it)->sequence();
  }
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  return out;
}

std::vector<uint64_t> Keys(const std::map<uint64_t, std::string>& m) {
  std::vector<uint64_t> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

// "row family:qualifier=value" for every visible cell of the tablet.
std::vector<std::string> Lines(const Engine& engine, TabletId id) {
  std::vector<std::string> out;
  StatusOr<std::vector<model::Row>> rows = ScanAll(engine, id, {});
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return out;
  for (const model::Row& row : *rows) {
    for (const model::Cell& c : row.cells) {
      out.push_back(StrCat(row.key, " ", c.family, ":", c.qualifier, "=", c.value));
    }
  }
  return out;
}

class EngineReplicationTest : public EngineTestBase {
 protected:
  EngineReplicationTest() : EngineTestBase("/primary") {}

  uint64_t Last(Engine* engine, TabletId id) {
    StatusOr<uint64_t> last = engine->LastSequence(id);
    EXPECT_TRUE(last.ok()) << last.status();
    return last.value_or(0);
  }
  uint64_t Last(TabletId id) { return Last(engine_.get(), id); }

  // ApplyReplicated, which must succeed, returning the tablet's last sequence.
  uint64_t Replicate(Engine* engine, TabletId id, uint64_t first,
                     const std::vector<RowMutation>& batch) {
    StatusOr<uint64_t> last = engine->ApplyReplicated(id, first, batch);
    EXPECT_TRUE(last.ok()) << last.status();
    return last.value_or(0);
  }
  uint64_t Replicate(TabletId id, uint64_t first, const std::vector<RowMutation>& batch) {
    return Replicate(engine_.get(), id, first, batch);
  }

  // A second engine on the same file system, in its own folder.
  std::unique_ptr<Engine> OpenReplica() {
    tablet::EngineOptions o = options_;
    o.dir = "/replica";
    StatusOr<std::unique_ptr<Engine>> e = Engine::Open(o, env_);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  // Kills the engine without a clean close: what was not synced is lost. Then opens again.
  void CrashAndReopen() {
    fs_.FailAfterOps(0);
    (void)engine_->Close();
    engine_.reset();
    fs_.SimulateCrash();
    ASSERT_NO_FATAL_FAILURE(Open());
  }
};

// ------------------------------------------------------------------------------------------
// ApplyBatch

TEST_F(EngineReplicationTest, ABatchIsNumberedInOrderAndReturnsItsNumbers) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Put(2, "x", "f", "q", 1, "other tablet"));
  // The same row twice: the later mutation (a delete of g) comes after the earlier one.
  RowMutation delete_g("a");
  delete_g.DeleteFromFamily("g");
  const std::vector<RowMutation> batch = {SetBoth("a", "1"), Set("b", "2"), delete_g};
  StatusOr<SequenceRange> r = engine_->ApplyBatch(1, batch);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((SequenceRange{1, 4}), *r);
  EXPECT_EQ(4u, Last(1));
  EXPECT_EQ(1u, Last(2));
  const std::map<uint64_t, std::string> entries = Entries(engine_.get(), 1);
  EXPECT_EQ(Range(1, 4), Keys(entries));
  EXPECT_EQ("1", entries.at(1));
  EXPECT_EQ("1", entries.at(2));
  EXPECT_EQ("2", entries.at(3));
  EXPECT_EQ((std::vector<std::string>{"a f:q=1", "b f:q=2"}), Lines(*engine_, 1));
  // The next write, single or batched, continues the numbers.
  ASSERT_TRUE(engine_->Apply(1, Set("c", "3")).ok());
  r = engine_->ApplyBatch(1, Batch{Set("d", "4")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((SequenceRange{6, 6}), *r);
  // And a restart keeps them.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(6u, Last(1));
  EXPECT_EQ(Range(1, 6), Keys(Entries(engine_.get(), 1)));
}

TEST_F(EngineReplicationTest, ABatchIsOneLogAppendAndOneSync) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Put(1, "first", "f", "q", 1, "v"));  // the segment exists
  int64_t before = fs_.MutatingOpsForTesting();
  ASSERT_NO_FATAL_FAILURE(Put(1, "one", "f", "q", 1, "v"));
  const int64_t one = fs_.MutatingOpsForTesting() - before;
  EXPECT_EQ(2, one);  // append, fdatasync
  std::vector<RowMutation> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(Set(StrCat("r", i), "v"));
  before = fs_.MutatingOpsForTesting();
  ASSERT_TRUE(engine_->ApplyBatch(1, batch).ok());
  EXPECT_EQ(one, fs_.MutatingOpsForTesting() - before);
}

TEST_F(EngineReplicationTest, AnInvalidMutationFailsTheWholeBatchAndIsNamed) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  RowMutation unknown_family("b");
  unknown_family.SetCell("nope", "q", 1, "v");
  StatusOr<SequenceRange> r =
      engine_->ApplyBatch(1, Batch{Set("a", "1"), unknown_family, Set("c", "")});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(std::string::npos, r.status().message().find("mutation 1 of 3")) << r.status();
  r = engine_->ApplyBatch(1, Batch{Set("a", "1"), Set("zz", "outside")});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(std::string::npos, r.status().message().find("mutation 1 of 2")) << r.status();
  r = engine_->ApplyBatch(1, Batch{});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  StatusOr<uint64_t> rep = engine_->ApplyReplicated(1, 1, Batch{Set("a", "1"), unknown_family});
  EXPECT_TRUE(absl::IsInvalidArgument(rep.status())) << rep.status();
  EXPECT_TRUE(absl::IsNotFound(engine_->ApplyBatch(9, Batch{Set("a", "1")}).status()));
  EXPECT_TRUE(absl::IsNotFound(engine_->LastSequence(9).status()));
  EXPECT_EQ(0u, Last(1));
  EXPECT_TRUE(Lines(*engine_, 1).empty());
}

// Concurrent batches of one tablet take disjoint, dense ranges; each range holds its batch.
TEST_F(EngineReplicationTest, ConcurrentBatchesTakeDisjointRanges) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  constexpr int kThreads = 4, kBatches = 50;
  std::vector<std::vector<std::pair<SequenceRange, std::vector<std::string>>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<RowMutation> batch;
        std::vector<std::string> values;
        for (int i = 0; i <= (t + b) % 3; ++i) {
          values.push_back(StrCat(t, "-", b, "-", i));
          batch.push_back(Set("row", values.back()));
        }
        StatusOr<SequenceRange> r = engine_->ApplyBatch(1, batch);
        ASSERT_TRUE(r.ok()) << r.status();
        got[t].emplace_back(*r, std::move(values));
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::map<uint64_t, std::string> entries = Entries(engine_.get(), 1);
  std::vector<SequenceRange> ranges;
  for (const auto& per_thread : got) {
    for (const auto& [range, values] : per_thread) {
      ranges.push_back(range);
      ASSERT_EQ(values.size(), range.last - range.first + 1);
      for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], entries.at(range.first + i));
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const SequenceRange& a, const SequenceRange& b) { return a.first < b.first; });
  uint64_t next = 1;
  for (const SequenceRange& r : ranges) {
    EXPECT_EQ(next, r.first);
    next = r.last + 1;
  }
  EXPECT_EQ(next - 1, Last(1));
  EXPECT_EQ(Range(1, Last(1)), Keys(entries));
}

// ------------------------------------------------------------------------------------------
// ApplyReplicated

// A replica fed the primary's batches with the primary's numbers holds the same entries under
// the same numbers, though it also holds another tablet the primary does not.
TEST_F(EngineReplicationTest, AReplicaHoldsThePrimarysNumbers) {
  ASSERT_NO_FATAL_FAILURE(Open());
  std::unique_ptr<Engine> replica = OpenReplica();
  ASSERT_NE(nullptr, replica);
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_TRUE(replica->CreateTablet(1, Descriptor()).ok());
  ASSERT_TRUE(replica->CreateTablet(2, Descriptor()).ok());
  for (int i = 0; i < 20; ++i) {
    std::vector<RowMutation> batch = {SetBoth(StrCat("r", i % 7), StrCat(i))};
    if (i % 3 == 0) batch.push_back(RowMutation(StrCat("r", (i + 1) % 7)).DeleteFromRow());
    if (i % 4 == 0) batch.push_back(Set(StrCat("r", i % 7), StrCat("again", i)));
    StatusOr<SequenceRange> r = engine_->ApplyBatch(1, batch);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(replica->Apply(2, Set("local", StrCat(i))).ok());  // the replica's own tablet
    EXPECT_EQ(r->last, Replicate(replica.get(), 1, r->first, batch));
    if (i == 10) {  // a flush drops shadowed entries: at the same number on both
      ASSERT_TRUE(engine_->Flush(1).ok());
      ASSERT_TRUE(replica->Flush(1).ok());
    }
  }
  EXPECT_EQ(Last(1), Last(replica.get(), 1));
  EXPECT_EQ(Entries(engine_.get(), 1), Entries(replica.get(), 1));
  EXPECT_EQ(Lines(*engine_, 1), Lines(*replica, 1));
  EXPECT_EQ(20u, Last(replica.get(), 2));
  ASSERT_TRUE(replica->Close().ok());
}

TEST_F(EngineReplicationTest, RetransmitsAreSkippedAndGapsRefused) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  const RowMutation m1 = Set("a", "1"), m2 = SetBoth("b", "2"), m3 = Set("c", "3");
  EXPECT_EQ(3u, Replicate(1, 1, {m1, m2}));  // m1 at 1, m2 at 2..3
  // The same batch again: skipped whole.
  EXPECT_EQ(3u, Replicate(1, 1, {m1, m2}));
  // Overlapping: m2 skipped, m3 applied at 4.
  EXPECT_EQ(4u, Replicate(1, 2, {m2, m3}));
  const std::map<uint64_t, std::string> entries = {{1, "1"}, {2, "2"}, {3, "2"}, {4, "3"}};
  EXPECT_EQ(entries, Entries(engine_.get(), 1));

  // A gap: the message says so, and the expected sequence reads back without parsing.
  StatusOr<uint64_t> r = engine_->ApplyReplicated(1, 6, Batch{Set("d", "4")});
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_NE(std::string::npos, r.status().message().find("gap")) << r.status();
  EXPECT_NE(std::string::npos, r.status().message().find("expected sequence 5")) << r.status();
  EXPECT_EQ(std::optional<uint64_t>(5), tablet::ReplicationGapExpected(r.status()));
  EXPECT_EQ(4u, Last(1));
  // m3 at 4 skipped, "late" at 5 follows on.
  EXPECT_EQ(5u, Replicate(1, 4, {m3, Set("late", "x")}));
  // Both at or below the tablet's sequence: skipped, whatever they hold.
  EXPECT_EQ(5u, Replicate(1, 4, {Set("other", "y"), Set("other", "z")}));
  EXPECT_EQ("x", Entries(engine_.get(), 1).at(5));

  // A mutation of two entries at 5..6 while the tablet is at 5: half of it cannot be there.
  r = engine_->ApplyReplicated(1, 5, Batch{SetBoth("f", "6")});
  EXPECT_TRUE(absl::IsInternal(r.status())) << r.status();
  EXPECT_NE(std::string::npos, r.status().message().find("mutation 0")) << r.status();
  EXPECT_EQ(std::nullopt, tablet::ReplicationGapExpected(r.status()));
  EXPECT_EQ(std::nullopt, tablet::ReplicationGapExpected(Status()));
  // Numbers outside 1 .. 2^56 - 1 are refused.
  r = engine_->ApplyReplicated(1, 0, Batch{m1});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  r = engine_->ApplyReplicated(1, storage::kMaxSequenceNumber, Batch{m2});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_EQ(5u, Last(1));
  // After refusals the next write still follows on, primary-numbered or not.
  EXPECT_EQ(6u, Replicate(1, 6, {Set("g", "7")}));
  ASSERT_TRUE(engine_->Apply(1, Set("h", "8")).ok());
  EXPECT_EQ(7u, Last(1));
  EXPECT_EQ(Range(1, 7), Keys(Entries(engine_.get(), 1)));
}

// Several threads send the same batches in the same order, as a primary retransmitting on many
// streams would: every call succeeds (a batch another thread applied first is skipped as a
// duplicate, whether it was in the same write group or an earlier one), and each number is
// applied exactly once.
TEST_F(EngineReplicationTest, ConcurrentReplicatedCallsApplyEachNumberOnce) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  constexpr int kThreads = 4, kBatches = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int b = 0; b < kBatches; ++b) {
        const std::vector<RowMutation> batch = {Set("a", StrCat(b, "-0")), Set("b", StrCat(b))};
        StatusOr<uint64_t> last = engine_->ApplyReplicated(1, 1 + 2 * b, batch);
        if (!last.ok() || *last < 2u * (b + 1)) {
          ADD_FAILURE() << "batch " << b << ": " << last.status() << " " << last.value_or(0);
          ++failures;
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(0, failures.load());
  const std::map<uint64_t, std::string> entries = Entries(engine_.get(), 1);
  ASSERT_EQ(Range(1, 2 * kBatches), Keys(entries));
  for (int b = 0; b < kBatches; ++b) {
    EXPECT_EQ(StrCat(b, "-0"), entries.at(1 + 2 * b));
    EXPECT_EQ(StrCat(b), entries.at(2 + 2 * b));
  }
  EXPECT_EQ(2u * kBatches, Last(1));
}

// Two racing calls with the same first sequence but other contents (a deposed primary and its
// successor, should the caller's epoch check let both through): exactly one batch is applied.
TEST_F(EngineReplicationTest, OfTwoRacingBatchesWithTheSameNumbersExactlyOneIsApplied) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  for (int round = 0; round < 50; ++round) {
    const uint64_t first = Last(1) + 1;
    std::atomic<bool> go{false};
    StatusOr<uint64_t> results[2];
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) {
        }
        results[t] = engine_->ApplyReplicated(1, first, Batch{Set("r", StrCat("writer", t))});
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    ASSERT_TRUE(results[0].ok()) << results[0].status();
    ASSERT_TRUE(results[1].ok()) << results[1].status();
    EXPECT_EQ(first, *results[0]);
    EXPECT_EQ(first, *results[1]);
    const std::map<uint64_t, std::string> entries = Entries(engine_.get(), 1);
    ASSERT_EQ(Range(1, first), Keys(entries));
    EXPECT_TRUE(entries.at(first) == "writer0" || entries.at(first) == "writer1");
  }
}

// ------------------------------------------------------------------------------------------
// Recovery

TEST_F(EngineReplicationTest, ACrashKeepsEveryAcknowledgedNumberAndRetransmitsAreSkipped) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  std::vector<std::vector<RowMutation>> batches;
  std::vector<uint64_t> firsts;
  uint64_t next = 1;
  for (int b = 0; b < 30; ++b) {
    batches.push_back({SetBoth(StrCat("r", b % 5), StrCat(b)), Set(StrCat("s", b), StrCat(b))});
    firsts.push_back(next);
    next = Replicate(1, next, batches.back()) + 1;
    if (b == 12) {
      ASSERT_TRUE(engine_->Flush(1).ok());  // some numbers come back from a file
    }
  }
  const uint64_t acked = next - 1;
  EXPECT_EQ(90u, acked);
  const std::map<uint64_t, std::string> entries = Entries(engine_.get(), 1);
  const std::vector<std::string> lines = Lines(*engine_, 1);
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_EQ(acked, Last(1));
  EXPECT_EQ(entries, Entries(engine_.get(), 1));
  EXPECT_EQ(lines, Lines(*engine_, 1));
  // The primary, unsure what arrived, sends everything again: all skipped.
  for (size_t b = 0; b < batches.size(); ++b) EXPECT_EQ(acked, Replicate(1, firsts[b], batches[b]));
  EXPECT_EQ(entries, Entries(engine_.get(), 1));

  // A write that fails as the process dies is not there after the restart; its retransmit is.
  fs_.FailAfterOps(0);
  EXPECT_FALSE(engine_->ApplyReplicated(1, acked + 1, Batch{Set("lost", "x")}).ok());
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_EQ(acked, Last(1));
  EXPECT_EQ(acked + 1, Replicate(1, acked + 1, {Set("lost", "x")}));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(acked + 1, Last(1));
  std::map<uint64_t, std::string> with_lost = entries;
  with_lost[acked + 1] = "x";
  EXPECT_EQ(with_lost, Entries(engine_.get(), 1));
}

// A failed fdatasync after the records were appended whole: the commit log's repair keeps
// them, so recovery replays them. Their numbers stay used (the write may have been applied),
// never given to the next write: two records of one number would replay into one tablet.
TEST_F(EngineReplicationTest, AFailedSyncKeepsItsNumbers) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "f", "q", 1, "first"));
  fs_.FailAfterOps(1);  // the append succeeds, the fdatasync fails
  EXPECT_FALSE(engine_->ApplyReplicated(1, 2, Batch{Set("b", "sync failed")}).ok());
  fs_.FailAfterOps(-1);
  EXPECT_EQ(2u, Last(1));
  EXPECT_EQ(2u, Replicate(1, 2, {Set("b", "sync failed")}));  // the retransmit: a duplicate
  fs_.FailAfterOps(1);
  EXPECT_FALSE(engine_->Apply(1, Set("c", "sync failed too")).ok());
  fs_.FailAfterOps(-1);
  StatusOr<SequenceRange> next = engine_->ApplyBatch(1, Batch{Set("d", "next")});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((SequenceRange{4, 4}), *next);
  const std::map<uint64_t, std::string> entries = {
      {1, "first"}, {2, "sync failed"}, {3, "sync failed too"}, {4, "next"}};
  EXPECT_EQ(entries, Entries(engine_.get(), 1));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(4u, Last(1));
  EXPECT_EQ(entries, Entries(engine_.get(), 1));
}

// ------------------------------------------------------------------------------------------
// The replica epoch

TEST_F(EngineReplicationTest, TheReplicaEpochIsDurableAndNeverLowered) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  EXPECT_EQ(0u, *engine_->GetReplicaEpoch(1));
  ASSERT_TRUE(engine_->RaiseReplicaEpoch(1, 3).ok());
  EXPECT_EQ(3u, *engine_->GetReplicaEpoch(1));
  EXPECT_EQ(0u, *engine_->GetReplicaEpoch(2));
  const int64_t before = fs_.MutatingOpsForTesting();
  EXPECT_TRUE(engine_->RaiseReplicaEpoch(1, 3).ok());  // equal: nothing written
  EXPECT_EQ(before, fs_.MutatingOpsForTesting());
  Status s = engine_->RaiseReplicaEpoch(1, 2);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(std::string::npos, s.message().find("epoch 3")) << s;
  EXPECT_NE(std::string::npos, s.message().find("to 2")) << s;
  EXPECT_TRUE(absl::IsNotFound(engine_->RaiseReplicaEpoch(9, 1)));
  EXPECT_TRUE(absl::IsNotFound(engine_->GetReplicaEpoch(9).status()));

  // Durable before it returns: a crash right after keeps it.
  ASSERT_TRUE(engine_->RaiseReplicaEpoch(2, 7).ok());
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_EQ(3u, *engine_->GetReplicaEpoch(1));
  EXPECT_EQ(7u, *engine_->GetReplicaEpoch(2));
  // Kept by schema changes, truncation, flushes and a clean restart.
  ASSERT_TRUE(engine_->UpdateSchema(1, MakeSchema("t", {{"f", GcRule::None()}})).ok());
  ASSERT_NO_FATAL_FAILURE(Put(1, "a", "f", "q", 1, "v"));
  ASSERT_TRUE(engine_->Flush(1).ok());
  ASSERT_TRUE(engine_->TruncateTablet(1).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(3u, *engine_->GetReplicaEpoch(1));
  // A failed manifest write leaves the epoch as it was.
  fs_.FailAfterOps(0);
  EXPECT_FALSE(engine_->RaiseReplicaEpoch(1, 4).ok());
  EXPECT_EQ(3u, *engine_->GetReplicaEpoch(1));
  ASSERT_NO_FATAL_FAILURE(CrashAndReopen());
  EXPECT_EQ(3u, *engine_->GetReplicaEpoch(1));
  // A tablet dropped and created again starts at 0.
  ASSERT_TRUE(engine_->DropTablet(2).ok());
  ASSERT_NO_FATAL_FAILURE(Create(2, Descriptor()));
  EXPECT_EQ(0u, *engine_->GetReplicaEpoch(2));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(0u, *engine_->GetReplicaEpoch(2));
}

// Concurrent raises: the epoch only grows, and ends at the largest asked for.
TEST_F(EngineReplicationTest, ConcurrentRaisesKeepTheLargest) {
  ASSERT_NO_FATAL_FAILURE(Open());
  ASSERT_NO_FATAL_FAILURE(Create(1, Descriptor()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      uint64_t seen = 0;
      for (uint64_t e = 1 + t; e <= 40; e += 4) {
        Status s = engine_->RaiseReplicaEpoch(1, e);
        EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s)) << s;
        const uint64_t now = *engine_->GetReplicaEpoch(1);
        EXPECT_GE(now, seen);
        EXPECT_GE(now, s.ok() ? e : 0);
        seen = now;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(40u, *engine_->GetReplicaEpoch(1));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(40u, *engine_->GetReplicaEpoch(1));
}

// ------------------------------------------------------------------------------------------
// A data folder of the previous version

TEST(EngineReplicationLegacyTest, AFolderOfThePreviousVersionTakesReplicatedWritesAndEpochs) {
  TempDir dir("engine-v1-replication");
  std::filesystem::copy(std::string(TESSERA_FIXTURES_DIR) + "/engine_v1", dir.path(),
                        std::filesystem::copy_options::recursive);
  tablet::EngineOptions options;
  options.dir = dir.path();
  StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((std::vector<TabletId>{1, 2, 3, 4}), (*engine)->ListTablets());
  for (TabletId id : (*engine)->ListTablets()) EXPECT_EQ(0u, *(*engine)->GetReplicaEpoch(id));
  EXPECT_EQ(20u, *(*engine)->LastSequence(1));  // engine_sequence_test.cc says why
  StatusOr<uint64_t> last =
      (*engine)->ApplyReplicated(1, 21, Batch{RowMutation("e-new").SetCell("f", "q", 1, "v")});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(21u, *last);
  ASSERT_TRUE((*engine)->RaiseReplicaEpoch(1, 2).ok());
  ASSERT_TRUE((*engine)->Close().ok());
  engine->reset();
  engine = Engine::Open(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ(2u, *(*engine)->GetReplicaEpoch(1));
  EXPECT_EQ(0u, *(*engine)->GetReplicaEpoch(2));
  EXPECT_EQ(21u, *(*engine)->LastSequence(1));
  StatusOr<std::optional<model::Row>> row = (*engine)->ReadRow(1, "e-new", {});
  ASSERT_TRUE(row.ok() && row->has_value()) << row.status();
}

}  // namespace
}  // namespace tessera::test
