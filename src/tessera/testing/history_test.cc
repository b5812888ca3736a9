#include "tessera/testing/history.h"

#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tessera/util/coding.h"
#include "tessera/util/random.h"

namespace tessera::testing {
namespace {

using Verdict = CheckResult::Verdict;

constexpr int64_t kPending = -1;

// Records `op` by `client` over [from, to] with `result`; to == kPending leaves it pending.
int Add(History* history, int client, ClientOp op, int64_t from, int64_t to, ClientResult result) {
  int id = history->Invoke(client, std::move(op), from);
  if (to != kPending) history->Complete(id, std::move(result), to);
  return id;
}

std::string Int(int64_t v) { return BigEndian64String(static_cast<uint64_t>(v)); }

void ExpectViolation(const History& history, const std::string& key,
                     const std::vector<int>& named) {
  CheckResult result = CheckLinearizable(history);
  ASSERT_EQ(result.verdict, Verdict::kNotLinearizable) << history.Dump();
  EXPECT_EQ(result.key, key);
  EXPECT_NE(result.explanation.find(absl::StrCat("key \"", key, "\"")), std::string::npos)
      << result.explanation;
  for (int id : named) {
    EXPECT_NE(result.explanation.find(absl::StrCat("#", id, " ")), std::string::npos)
        << "#" << id << " not named in:\n"
        << result.explanation;
  }
}

void ExpectLinearizable(const History& history) {
  CheckResult result = CheckLinearizable(history);
  EXPECT_TRUE(result.ok()) << result.explanation << "\n" << history.Dump();
}

// ---- Writes and reads ----

TEST(HistoryTest, EmptyHistoryIsLinearizable) { ExpectLinearizable(History()); }

TEST(HistoryTest, ReadOfAnUnwrittenKeyIsAbsent) {
  History h;
  Add(&h, 1, ClientOp::Read("k"), 0, 10, ClientResult::Seen(std::nullopt));
  ExpectLinearizable(h);
}

TEST(HistoryTest, StaleReadAfterAnAcknowledgedWrite) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int b = Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Ok());
  int read = Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen("a"));
  ExpectViolation(h, "k", {b, read});
}

TEST(HistoryTest, ReadConcurrentWithAWriteSeesEitherValue) {
  for (const char* seen : {"a", "b"}) {
    History h;
    Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
    Add(&h, 1, ClientOp::Write("k", "b"), 20, 50, ClientResult::Ok());
    Add(&h, 2, ClientOp::Read("k"), 30, 40, ClientResult::Seen(seen));
    ExpectLinearizable(h);
  }
}

TEST(HistoryTest, ReadOfAValueNeverWritten) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int read = Add(&h, 2, ClientOp::Read("k"), 5, 20, ClientResult::Seen("z"));
  ExpectViolation(h, "k", {read});
  EXPECT_NE(CheckLinearizable(h).explanation.find("no operation of the key can have produced"),
            std::string::npos);
}

TEST(HistoryTest, TwoReadsGoingBackInTime) {
  History h;
  int a = Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int b = Add(&h, 1, ClientOp::Write("k", "b"), 20, 100, ClientResult::Ok());
  int first = Add(&h, 2, ClientOp::Read("k"), 30, 40, ClientResult::Seen("b"));
  int second = Add(&h, 3, ClientOp::Read("k"), 50, 60, ClientResult::Seen("a"));
  ExpectViolation(h, "k", {second, first, b, a});
}

TEST(HistoryTest, DeleteMakesTheValueAbsent) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Delete("k"), 20, 30, ClientResult::Ok());
  Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen(std::nullopt));
  ExpectLinearizable(h);
  int stale = Add(&h, 2, ClientOp::Read("k"), 60, 70, ClientResult::Seen("a"));
  ExpectViolation(h, "k", {stale});
}

TEST(HistoryTest, AtEqualTimesTheOrderOfRecordingDecides) {
  History before;  // the write's answer was recorded before the read was sent
  int w = before.Invoke(1, ClientOp::Write("k", "a"), 0);
  before.Complete(w, ClientResult::Ok(), 10);
  int r = before.Invoke(2, ClientOp::Read("k"), 10);
  before.Complete(r, ClientResult::Seen(std::nullopt), 20);
  ExpectViolation(before, "k", {r});

  History overlapping;  // the read was sent before the write's answer was recorded
  w = overlapping.Invoke(1, ClientOp::Write("k", "a"), 0);
  r = overlapping.Invoke(2, ClientOp::Read("k"), 10);
  overlapping.Complete(w, ClientResult::Ok(), 10);
  overlapping.Complete(r, ClientResult::Seen(std::nullopt), 20);
  ExpectLinearizable(overlapping);
}

// ---- Failed, indeterminate and pending operations ----

TEST(HistoryTest, IndeterminateWriteObservedLaterIsFine) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Indeterminate());
  Add(&h, 2, ClientOp::Read("k"), 20, 30, ClientResult::Seen(std::nullopt));
  Add(&h, 2, ClientOp::Read("k"), 100, 110, ClientResult::Seen("a"));
  Add(&h, 2, ClientOp::Read("k"), 120, 130, ClientResult::Seen("a"));
  ExpectLinearizable(h);
}

TEST(HistoryTest, IndeterminateWriteNeverObservedIsFine) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Indeterminate());
  Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen("a"));
  ExpectLinearizable(h);
}

TEST(HistoryTest, IndeterminateWriteObservedThenUnobserved) {
  History h;
  int a = Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int b = Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Indeterminate());
  Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen("b"));
  int unseen = Add(&h, 2, ClientOp::Read("k"), 60, 70, ClientResult::Seen("a"));
  ExpectViolation(h, "k", {unseen, b, a});
}

TEST(HistoryTest, FailedWriteObserved) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Failed());
  int read = Add(&h, 2, ClientOp::Read("k"), 20, 30, ClientResult::Seen("a"));
  ExpectViolation(h, "k", {read});
}

TEST(HistoryTest, FailedAndIndeterminateReadsConstrainNothing) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 2, ClientOp::Read("k"), 20, 30, ClientResult::Failed());
  Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Indeterminate());
  Add(&h, 2, ClientOp::Read("k"), 60, kPending, ClientResult::Ok());
  ExpectLinearizable(h);
}

TEST(HistoryTest, PendingWriteIsIndeterminate) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, kPending, ClientResult::Ok());
  Add(&h, 2, ClientOp::Read("k"), 20, 30, ClientResult::Seen(std::nullopt));
  Add(&h, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen("a"));
  ExpectLinearizable(h);
  int back = Add(&h, 2, ClientOp::Read("k"), 60, 70, ClientResult::Seen(std::nullopt));
  ExpectViolation(h, "k", {back});
}

// ---- Increments ----

TEST(HistoryTest, IncrementsCount) {
  History h;
  Add(&h, 1, ClientOp::Increment("c", 1), 0, 10, ClientResult::Incremented(1));
  Add(&h, 2, ClientOp::Increment("c", 5), 20, 40, ClientResult::Incremented(7));
  Add(&h, 3, ClientOp::Increment("c", 1), 25, 35, ClientResult::Incremented(2));
  Add(&h, 1, ClientOp::Read("c"), 50, 60, ClientResult::Seen(Int(7)));
  Add(&h, 1, ClientOp::Increment("c", -10), 70, 80, ClientResult::Incremented(-3));
  ExpectLinearizable(h);
}

TEST(HistoryTest, LostIncrement) {
  History h;
  int first = Add(&h, 1, ClientOp::Increment("c", 1), 0, 10, ClientResult::Incremented(1));
  int second = Add(&h, 2, ClientOp::Increment("c", 1), 20, 30, ClientResult::Incremented(1));
  ExpectViolation(h, "c", {second, first});
}

TEST(HistoryTest, ConcurrentIncrementsCannotBothSeeZero) {
  History h;
  Add(&h, 1, ClientOp::Increment("c", 1), 0, 30, ClientResult::Incremented(1));
  Add(&h, 2, ClientOp::Increment("c", 1), 10, 20, ClientResult::Incremented(1));
  ExpectViolation(h, "c", {0, 1});
}

TEST(HistoryTest, IncrementAppliedTwice) {
  History h;
  Add(&h, 1, ClientOp::Increment("c", 1), 0, 10, ClientResult::Incremented(1));
  int read = Add(&h, 2, ClientOp::Read("c"), 20, 30, ClientResult::Seen(Int(2)));
  ExpectViolation(h, "c", {read});
}

TEST(HistoryTest, IndeterminateIncrementExplainsASkip) {
  History h;
  Add(&h, 1, ClientOp::Increment("c", 1), 0, 10, ClientResult::Incremented(1));
  Add(&h, 3, ClientOp::Increment("c", 1), 12, 15, ClientResult::Indeterminate());
  Add(&h, 2, ClientOp::Read("c"), 20, 30, ClientResult::Seen(Int(2)));
  Add(&h, 1, ClientOp::Increment("c", 1), 40, 50, ClientResult::Incremented(3));
  ExpectLinearizable(h);
}

TEST(HistoryTest, IncrementOfAValueThatIsNotACounter) {
  History h;
  Add(&h, 1, ClientOp::Write("c", "abc"), 0, 10, ClientResult::Ok());
  Add(&h, 2, ClientOp::Increment("c", 1), 20, 30,
      ClientResult::Indeterminate());  // failed, or never ran
  Add(&h, 2, ClientOp::Read("c"), 40, 50, ClientResult::Seen("abc"));
  ExpectLinearizable(h);
  int ok = Add(&h, 2, ClientOp::Increment("c", 1), 60, 70, ClientResult::Incremented(1));
  ExpectViolation(h, "c", {ok});
}

// ---- Check-and-set ----

TEST(HistoryTest, CheckAndSetMatchesTheCurrentValue) {
  History h;
  Add(&h, 1, ClientOp::CheckAndSet("k", std::nullopt, "a"), 0, 10, ClientResult::Matched(true));
  Add(&h, 2, ClientOp::CheckAndSet("k", std::nullopt, "b"), 20, 30, ClientResult::Matched(false));
  Add(&h, 1, ClientOp::CheckAndSet("k", "a", "c"), 40, 50, ClientResult::Matched(true));
  Add(&h, 2, ClientOp::Read("k"), 60, 70, ClientResult::Seen("c"));
  ExpectLinearizable(h);
}

TEST(HistoryTest, CheckAndSetSucceedsAgainstAValueThatCannotBeCurrent) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int b = Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Ok());
  int cas = Add(&h, 2, ClientOp::CheckAndSet("k", "a", "c"), 40, 50, ClientResult::Matched(true));
  ExpectViolation(h, "k", {cas, b});
}

TEST(HistoryTest, CheckAndSetFailsAgainstTheCurrentValue) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int cas = Add(&h, 2, ClientOp::CheckAndSet("k", "a", "c"), 20, 30, ClientResult::Matched(false));
  ExpectViolation(h, "k", {cas});
}

TEST(HistoryTest, TwoConcurrentCheckAndSetsCannotBothWin) {
  History h;
  Add(&h, 1, ClientOp::CheckAndSet("k", std::nullopt, "a"), 0, 30, ClientResult::Matched(true));
  Add(&h, 2, ClientOp::CheckAndSet("k", std::nullopt, "b"), 10, 20, ClientResult::Matched(true));
  ExpectViolation(h, "k", {0, 1});
  History one_wins;
  Add(&one_wins, 1, ClientOp::CheckAndSet("k", std::nullopt, "a"), 0, 30,
      ClientResult::Matched(true));
  Add(&one_wins, 2, ClientOp::CheckAndSet("k", std::nullopt, "b"), 10, 20,
      ClientResult::Matched(false));
  Add(&one_wins, 2, ClientOp::Read("k"), 40, 50, ClientResult::Seen("a"));
  ExpectLinearizable(one_wins);
}

// ---- Keys, the bound, the report ----

TEST(HistoryTest, KeysAreCheckedApart) {
  History h;
  Add(&h, 1, ClientOp::Write("a", "1"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Write("b", "1"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Write("c", "1"), 0, 10, ClientResult::Ok());
  Add(&h, 2, ClientOp::Read("a"), 20, 30, ClientResult::Seen("1"));
  int stale_b = Add(&h, 2, ClientOp::Read("b"), 20, 30, ClientResult::Seen(std::nullopt));
  Add(&h, 2, ClientOp::Read("c"), 20, 30, ClientResult::Seen("2"));
  ExpectViolation(h, "b", {stale_b});
  EXPECT_NE(CheckLinearizable(h).explanation.find("also not linearizable: \"c\""),
            std::string::npos)
      << CheckLinearizable(h).explanation;
}

// Ten concurrent writes of distinct values, then a read of none of them: the search must try
// every order of the writes before it can say no.
void AddHardHistory(History* h) {
  for (int i = 0; i < 10; ++i) {
    Add(h, i, ClientOp::Write("k", absl::StrCat("v", i)), i, 100 + i, ClientResult::Ok());
  }
  Add(h, 10, ClientOp::Read("k"), 200, 210, ClientResult::Seen("none"));
}

TEST(HistoryTest, TheBoundGivesInconclusive) {
  History h;
  AddHardHistory(&h);
  CheckResult bounded = CheckLinearizable(h, CheckLimits{.max_states_per_key = 100});
  EXPECT_EQ(bounded.verdict, Verdict::kInconclusive);
  EXPECT_FALSE(bounded.ok());
  EXPECT_EQ(bounded.key, "k");
  EXPECT_NE(bounded.explanation.find("gave up after"), std::string::npos) << bounded.explanation;
  EXPECT_NE(bounded.explanation.find("11 operations"), std::string::npos) << bounded.explanation;

  CheckResult full = CheckLinearizable(h);
  EXPECT_EQ(full.verdict, Verdict::kNotLinearizable) << full.explanation;
  EXPECT_GT(full.states_visited, 100);
}

TEST(HistoryTest, DumpListsEveryOperation) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 2, ClientOp::Increment("c", 1), 5, 15, ClientResult::Incremented(5));
  Add(&h, 3, ClientOp::CheckAndSet("k", std::nullopt, "b"), 20, 30, ClientResult::Matched(false));
  Add(&h, 4, ClientOp::Read("k"), 40, kPending, ClientResult::Ok());
  EXPECT_EQ(h.Dump(),
            "#0 client 1 Write(\"k\", \"a\") -> ok [0us, 10us]\n"
            "#1 client 2 Increment(\"c\", +1) -> ok int 5 [5us, 15us]\n"
            "#2 client 3 CheckAndSet(\"k\", absent -> \"b\") -> ok not matched [20us, 30us]\n"
            "#3 client 4 Read(\"k\") -> pending [40us, ...)\n");
}

// ---- No lost writes ----

TEST(HistoryTest, NoLostWritesAcceptsTheLastAcknowledgedWrite) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Ok());
  Add(&h, 2, ClientOp::Write("k", "c"), 25, 35, ClientResult::Indeterminate());
  Add(&h, 1, ClientOp::Increment("n", 1), 0, 10, ClientResult::Incremented(1));
  Add(&h, 2, ClientOp::Increment("n", 1), 5, 15, ClientResult::Incremented(2));
  EXPECT_TRUE(CheckNoLostWrites(h, {{"k", "b"}, {"n", Int(2)}}, 100).ok());
  EXPECT_TRUE(CheckNoLostWrites(h, {{"k", "c"}, {"n", Int(2)}}, 100).ok());
}

TEST(HistoryTest, NoLostWritesNamesTheLostWrite) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  int b = Add(&h, 1, ClientOp::Write("k", "b"), 20, 30, ClientResult::Ok());
  CheckResult result = CheckNoLostWrites(h, {{"k", "a"}}, 100);
  ASSERT_EQ(result.verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(result.key, "k");
  size_t lost = result.explanation.find("lost:");
  ASSERT_NE(lost, std::string::npos) << result.explanation;
  EXPECT_NE(result.explanation.find(absl::StrCat("#", b, " "), lost), std::string::npos)
      << result.explanation;
  EXPECT_NE(result.explanation.find("final read"), std::string::npos) << result.explanation;
}

TEST(HistoryTest, NoLostWritesNamesALostIncrement) {
  History h;
  Add(&h, 1, ClientOp::Increment("n", 1), 0, 10, ClientResult::Incremented(1));
  int second = Add(&h, 2, ClientOp::Increment("n", 1), 20, 30, ClientResult::Incremented(2));
  CheckResult result = CheckNoLostWrites(h, {{"n", Int(1)}}, 100);
  ASSERT_EQ(result.verdict, Verdict::kNotLinearizable);
  size_t lost = result.explanation.find("lost:");
  ASSERT_NE(lost, std::string::npos) << result.explanation;
  EXPECT_NE(result.explanation.find(absl::StrCat("#", second, " "), lost), std::string::npos)
      << result.explanation;
}

TEST(HistoryTest, NoLostWritesNeedsEveryWrittenKeyAndAReadAfterTheRun) {
  History h;
  Add(&h, 1, ClientOp::Write("k", "a"), 0, 10, ClientResult::Ok());
  Add(&h, 1, ClientOp::Write("j", "a"), 0, 10, ClientResult::Failed());
  CheckResult unread = CheckNoLostWrites(h, {}, 100);
  EXPECT_EQ(unread.verdict, Verdict::kInconclusive);
  EXPECT_EQ(unread.key, "k");
  EXPECT_EQ(CheckNoLostWrites(h, {{"k", "a"}}, 10).verdict, Verdict::kInconclusive);
  EXPECT_TRUE(CheckNoLostWrites(h, {{"k", "a"}}, 11).ok());
}

// ---- Randomized: histories of a real register ----

struct GenOp {
  int client;
  ClientOp op;
  int64_t from;
  int64_t to;  // kPending: never completed
  ClientResult result;
};

struct GenOptions {
  int ops = 60;
  int64_t max_window_us = 40;  // each side of the instant the operation took effect
  int indeterminate_in = 20;   // one operation in this many is indeterminate (0: none)
  bool counter_key = false;    // only increments, deletes, reads and check-and-sets of counters
  bool unique_values = false;  // every write and check-and-set writes a value of its own
};

// Runs random operations on one register, operation i taking effect at 10 * i inside a random
// window around it: a linearizable history by construction.
std::vector<GenOp> GenerateKey(Random* rnd, const std::string& key, const GenOptions& options) {
  const std::vector<RegisterValue> values = {"a", "b", "c", Int(3), std::nullopt};
  RegisterValue state;
  std::vector<GenOp> ops;
  for (int i = 0; i < options.ops; ++i) {
    int64_t at = 10 * (i + 1);
    GenOp g{static_cast<int>(rnd->Uniform(8)), ClientOp::Read(key),
            at - static_cast<int64_t>(rnd->Uniform(options.max_window_us + 1)),
            at + static_cast<int64_t>(rnd->Uniform(options.max_window_us + 1)), ClientResult::Ok()};
    bool indeterminate =
        options.indeterminate_in > 0 && rnd->OneIn(static_cast<uint64_t>(options.indeterminate_in));
    bool failed = !indeterminate && rnd->OneIn(30);
    bool applies = !failed && (!indeterminate || rnd->OneIn(2));
    RegisterValue pick = values[rnd->Uniform(values.size())];
    if (options.unique_values && pick.has_value()) pick = absl::StrCat("v", i);
    if (options.counter_key && pick.has_value() && pick->size() != 8) pick = Int(rnd->Uniform(4));
    switch (rnd->Uniform(4)) {
      case 0:
        g.op = ClientOp::Write(key, pick);
        if (applies) state = pick;
        break;
      case 1:
        g.result = ClientResult::Seen(state);
        break;
      case 2: {
        int64_t delta = static_cast<int64_t>(rnd->Uniform(9)) - 3;
        g.op = ClientOp::Increment(key, delta);
        if (state.has_value() && state->size() != 8) {
          failed = !indeterminate;  // Bigtable refuses to increment a value that is not 8 bytes
        } else {
          int64_t next = static_cast<int64_t>(state ? DecodeBigEndian64(state->data()) : 0) + delta;
          g.result = ClientResult::Incremented(next);
          if (applies) state = Int(next);
        }
        break;
      }
      case 3: {
        RegisterValue expected = rnd->OneIn(2) ? state : pick;
        RegisterValue next = values[rnd->Uniform(values.size())];
        if (options.counter_key && next.has_value()) next = Int(rnd->Uniform(4));
        if (options.unique_values && next.has_value()) next = absl::StrCat("v", i);
        g.op = ClientOp::CheckAndSet(key, expected, next);
        g.result = ClientResult::Matched(expected == state);
        if (applies && expected == state) state = next;
        break;
      }
    }
    if (indeterminate) {
      g.result = ClientResult::Indeterminate();
      if (rnd->OneIn(2)) g.to = kPending;
    } else if (failed) {
      g.result = ClientResult::Failed();
    }
    ops.push_back(std::move(g));
  }
  return ops;
}

// Records the operations in time order (an invocation and a completion at one time may be told
// in either order: both are consistent with the instants the operations took effect).
void Record(const std::vector<GenOp>& ops, History* history) {
  struct Event {
    int64_t at;
    size_t op;
    bool complete;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < ops.size(); ++i) {
    events.push_back({ops[i].from, i, false});
    if (ops[i].to != kPending) events.push_back({ops[i].to, i, true});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.at < b.at; });
  std::vector<int> ids(ops.size());
  for (const Event& e : events) {
    if (e.complete) {
      history->Complete(ids[e.op], ops[e.op].result, e.at);
    } else {
      ids[e.op] = history->Invoke(ops[e.op].client, ops[e.op].op, e.at);
    }
  }
}

// The History id each op gets when `ops` is the whole history (ids follow invocations).
std::vector<int> IdsInInvokeOrder(const std::vector<GenOp>& ops) {
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ops[a].from < ops[b].from; });
  std::vector<int> ids(ops.size());
  for (size_t i = 0; i < order.size(); ++i) ids[order[i]] = static_cast<int>(i);
  return ids;
}

bool IsOkRead(const GenOp& g) {
  return g.op.kind == ClientOpKind::kRead && g.to != kPending &&
         g.result.outcome == ClientOutcome::kOk;
}

TEST(HistoryRandomTest, HistoriesOfARealRegisterAreLinearizable) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Random rnd(seed);
    History h;
    for (int k = 0; k < 4; ++k) {
      GenOptions options;
      options.counter_key = k % 2 == 1;
      options.max_window_us = static_cast<int64_t>(rnd.Uniform(60));
      options.indeterminate_in = std::vector<int>{3, 10, 20}[rnd.Uniform(3)];
      options.unique_values = rnd.OneIn(2);
      Record(GenerateKey(&rnd, absl::StrCat("row", k), options), &h);
    }
    CheckResult result = CheckLinearizable(h);
    ASSERT_TRUE(result.ok()) << "seed " << seed << "\n" << result.explanation << "\n" << h.Dump();
  }
}

TEST(HistoryRandomTest, AReadOfAValueNeverWrittenIsCaught) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Random rnd(seed);
    std::vector<GenOp> ops = GenerateKey(&rnd, "row", GenOptions{});
    std::vector<size_t> reads;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (IsOkRead(ops[i])) reads.push_back(i);
    }
    ASSERT_FALSE(reads.empty());
    size_t victim = reads[rnd.Uniform(reads.size())];
    ops[victim].result = ClientResult::Seen("never written");
    History h;
    Record(ops, &h);
    int id = IdsInInvokeOrder(ops)[victim];
    CheckResult result = CheckLinearizable(h);
    ASSERT_EQ(result.verdict, Verdict::kNotLinearizable) << "seed " << seed << "\n" << h.Dump();
    EXPECT_EQ(result.key, "row");
    EXPECT_NE(result.explanation.find(absl::StrCat("#", id, " ")), std::string::npos)
        << "seed " << seed << "\n"
        << result.explanation;
  }
}

// A read that overlaps nothing, right after a write that overlaps nothing (not even the read),
// must see that write: any other value is caught.
TEST(HistoryRandomTest, AStaleReadAfterAnIsolatedWriteIsCaught) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Random rnd(seed);
    GenOptions options;
    options.max_window_us = 8;
    options.indeterminate_in = 0;
    std::vector<GenOp> ops = GenerateKey(&rnd, "row", options);
    for (size_t r = 1; r < ops.size(); ++r) {
      const GenOp& write = ops[r - 1];
      if (!IsOkRead(ops[r]) || write.op.kind != ClientOpKind::kWrite ||
          write.result.outcome != ClientOutcome::kOk) {
        continue;
      }
      bool isolated = write.to < ops[r].from;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (i != r && i != r - 1 && ops[i].to >= write.from && ops[i].from <= ops[r].to) {
          isolated = false;
        }
      }
      if (!isolated) continue;
      std::vector<GenOp> mutated = ops;
      mutated[r].result = ClientResult::Seen(write.op.value == RegisterValue("a") ? "b" : "a");
      History h;
      Record(mutated, &h);
      CheckResult result = CheckLinearizable(h);
      ASSERT_EQ(result.verdict, Verdict::kNotLinearizable) << "seed " << seed << "\n" << h.Dump();
      EXPECT_NE(result.explanation.find(absl::StrCat("#", IdsInInvokeOrder(mutated)[r], " ")),
                std::string::npos)
          << result.explanation;
      ++cases;
      break;
    }
  }
  EXPECT_GT(cases, 20);  // the generator makes such pairs; the test is not vacuous
}

// ---- Against a brute-force oracle ----

// The model of history.h, written again in the plainest way, for the oracle.
bool OracleStep(const HistoryEntry& e, bool indeterminate, RegisterValue* state) {
  switch (e.op.kind) {
    case ClientOpKind::kWrite:
      *state = e.op.value;
      return true;
    case ClientOpKind::kRead:
      return e.result->value == *state;
    case ClientOpKind::kIncrement: {
      if (state->has_value() && (*state)->size() != 8) return indeterminate;
      uint64_t counter = state->has_value() ? DecodeBigEndian64((*state)->data()) : 0;
      RegisterValue next = BigEndian64String(counter + static_cast<uint64_t>(e.op.delta));
      if (!indeterminate && e.result->value != next) return false;
      *state = next;
      return true;
    }
    case ClientOpKind::kCheckAndSet: {
      bool matches = *state == e.op.expected;
      if (!indeterminate && e.result->matched != matches) return false;
      if (matches) *state = e.op.value;
      return true;
    }
  }
  return false;
}

// Tries every order of the operations that respects real time: each definite operation once,
// each indeterminate one at most once.
bool OracleSearch(const std::vector<HistoryEntry>& ops, const std::vector<bool>& definite,
                  std::vector<bool>* placed, const RegisterValue& state) {
  auto precedes = [&](const HistoryEntry& a, const HistoryEntry& b) {
    return std::pair(*a.complete_us, a.complete_seq) < std::pair(b.invoke_us, b.invoke_seq);
  };
  bool all_definite_placed = true;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (definite[i] && !(*placed)[i]) all_definite_placed = false;
  }
  if (all_definite_placed) return true;
  for (size_t i = 0; i < ops.size(); ++i) {
    if ((*placed)[i]) continue;
    bool ready = true;
    for (size_t j = 0; j < ops.size(); ++j) {
      if (j != i && definite[j] && !(*placed)[j] && precedes(ops[j], ops[i])) ready = false;
    }
    RegisterValue next = state;
    if (!ready || !OracleStep(ops[i], !definite[i], &next)) continue;
    (*placed)[i] = true;
    bool found = OracleSearch(ops, definite, placed, next);
    (*placed)[i] = false;
    if (found) return true;
  }
  return false;
}

bool OracleLinearizable(const History& history) {
  std::vector<HistoryEntry> ops;
  std::vector<bool> definite;
  for (const HistoryEntry& e : history.Entries()) {
    bool answered = e.result.has_value();
    if (answered && e.result->outcome == ClientOutcome::kFailed) continue;
    bool ok = answered && e.result->outcome == ClientOutcome::kOk;
    if (e.op.kind == ClientOpKind::kRead && !ok) continue;
    ops.push_back(e);
    definite.push_back(ok);
  }
  std::vector<bool> placed(ops.size(), false);
  return OracleSearch(ops, definite, &placed, std::nullopt);
}

// Small histories with random intervals and random answers, linearizable or not.
std::vector<GenOp> RandomSmallHistory(Random* rnd) {
  const std::vector<RegisterValue> values = {"a", "b", Int(1), std::nullopt};
  auto value = [&] { return values[rnd->Uniform(values.size())]; };
  std::vector<GenOp> ops;
  int n = 2 + static_cast<int>(rnd->Uniform(6));
  for (int i = 0; i < n; ++i) {
    int64_t from = static_cast<int64_t>(rnd->Uniform(40));
    GenOp g{i, ClientOp::Read("k"), from, from + static_cast<int64_t>(rnd->Uniform(20)),
            ClientResult::Ok()};
    switch (rnd->Uniform(4)) {
      case 0:
        g.op = ClientOp::Write("k", value());
        break;
      case 1:
        g.result = ClientResult::Seen(value());
        break;
      case 2:
        g.op = ClientOp::Increment("k", static_cast<int64_t>(rnd->Uniform(3)));
        g.result = ClientResult::Incremented(static_cast<int64_t>(rnd->Uniform(4)));
        break;
      case 3:
        g.op = ClientOp::CheckAndSet("k", value(), value());
        g.result = ClientResult::Matched(rnd->OneIn(2));
        break;
    }
    switch (rnd->Uniform(10)) {
      case 0:
        g.result = ClientResult::Failed();
        break;
      case 1:
        g.result = ClientResult::Indeterminate();
        break;
      case 2:
        g.to = kPending;
        break;
      default:
        break;
    }
    ops.push_back(std::move(g));
  }
  return ops;
}

TEST(HistoryRandomTest, AgreesWithABruteForceOracle) {
  int linearizable = 0, not_linearizable = 0;
  for (uint64_t seed = 1; seed <= 5000; ++seed) {
    Random rnd(seed);
    History h;
    Record(RandomSmallHistory(&rnd), &h);
    bool expected = OracleLinearizable(h);
    CheckResult result = CheckLinearizable(h);
    ASSERT_EQ(result.ok(), expected) << "seed " << seed << "\n"
                                     << result.explanation << "\n"
                                     << h.Dump();
    ++(expected ? linearizable : not_linearizable);
  }
  // Both answers occur often: the comparison is not vacuous.
  EXPECT_GT(linearizable, 1000);
  EXPECT_GT(not_linearizable, 1000);
}

// The size of a simulation's run: 100 keys of 500 operations, about 8 concurrent per key.
TEST(HistoryRandomTest, ASimulationSizedRunIsCheap) {
  Random rnd(42);
  History h;
  for (int k = 0; k < 100; ++k) {
    GenOptions options;
    options.ops = 500;
    options.indeterminate_in = 100;
    options.counter_key = k % 2 == 1;
    Record(GenerateKey(&rnd, absl::StrCat("row", k), options), &h);
  }
  auto start = std::chrono::steady_clock::now();
  CheckResult result = CheckLinearizable(h);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(result.ok()) << result.explanation;
  std::printf("50000 operations checked in %lld ms, %lld configurations\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()),
              static_cast<long long>(result.states_visited));
  // Near-linear: a few configurations per operation, not an exponential search.
  EXPECT_LT(result.states_visited, 20 * 50'000);
}

// A violation at the end of a long history with many indeterminate operations pending: the
// search must rule out every way they could have taken effect, and does within the bound.
TEST(HistoryRandomTest, AViolationAfterManyIndeterminateOperationsIsFound) {
  Random rnd(7);
  GenOptions options;
  options.ops = 500;
  options.indeterminate_in = 50;
  options.unique_values = true;
  std::vector<GenOp> ops = GenerateKey(&rnd, "row", options);
  size_t last_read = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (IsOkRead(ops[i])) last_read = i;
  }
  ASSERT_LT(last_read, ops.size());
  ops[last_read].result = ClientResult::Seen("never written");
  History h;
  Record(ops, &h);
  CheckResult result = CheckLinearizable(h);
  ASSERT_EQ(result.verdict, Verdict::kNotLinearizable) << result.explanation;
  EXPECT_NE(result.explanation.find(absl::StrCat("#", IdsInInvokeOrder(ops)[last_read], " ")),
            std::string::npos)
      << result.explanation;
}

}  // namespace
}  // namespace tessera::testing
