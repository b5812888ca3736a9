// A client history of a distributed run, and its linearizability check (docs/simulation.md,
// "Checking histories"). A test records every request its clients send (Invoke) and every
// answer they get (Complete); after the run CheckLinearizable says whether some single order
// of the operations, each taking effect at one instant inside its own interval, explains every
// answer, and CheckNoLostWrites adds final reads to ask whether every acknowledged write
// survived.
//
// The model: one register per key, keys independent (a row of the store is a key; what a test
// writes to a row is one cell). A key holds a RegisterValue: a string, or nullopt ("absent": never
// written, or deleted). Operations on one key:
//   Write(v)                  sets the value (nullopt: deletes it);
//   Read                      returns the value;
//   Increment(d)              treats the value as an 8-byte big-endian int64 (absent = 0), adds d
//                             (wrapping) and returns the new value, like Bigtable's
//                             ReadModifyWriteRow increment; on a value that is not 8 bytes it
//                             fails and changes nothing;
//   CheckAndSet(expected, v)  if the value equals `expected` (nullopt: absent), sets it to v and
//                             answers matched = true; else changes nothing and answers false,
//                             like CheckAndMutateRow with a value-equality predicate.
// Outcomes: kOk (the answer is known), kFailed (the operation certainly did not take effect:
// it constrains nothing and is left out), kIndeterminate (a timeout, an UNAVAILABLE after the
// request was sent, a coordinator that died: it may have taken effect at any instant after its
// invocation, or never; its completion counts as +infinity). A read that did not return ok
// constrains nothing. An operation never completed when the run ended is indeterminate.
//
// Order: an operation A precedes B when A's completion comes before B's invocation; at equal
// times the order in which the History was told decides. So Invoke must be recorded before the
// request leaves the client and Complete after the answer arrived, both in one timeline (in a
// simulation the SimExecutor's time, never a node's drifting clock). Recording an interval
// wider than the real one only makes the check more lenient.
//
// The algorithm: per key (linearizability is compositional: a history is linearizable iff each
// key's sub-history is), Wing & Gong's search with Lowe's just-in-time linearization and a
// memo of configurations (operations linearized, state), as in Knossos and Porcupine. The
// operations' invocations and completions form one list in time order; the search linearizes,
// depth first, one of the operations invoked before the first completion still in the list,
// and backtracks when none fits. So an operation that completed before another was invoked is
// always ordered first, and a configuration seen before is not explored again: a run with few
// concurrent clients costs about (operations x concurrency) steps. Indeterminate operations
// never block the list ("never took effect" is the same as "took effect after everything
// else"), and the search keeps them cheap with reductions that each rest on that fact: it
// tries them after the definite ones, never one that would not change the state, never a write
// right after one of them (that write would hide it), only the earliest invoked of equal ones,
// and a configuration is redundant when one with the same definite operations and state but
// fewer indeterminate ones was seen (register_search.h). The number of configurations is
// bounded per key (CheckLimits); a search that reaches the bound is kInconclusive, which a test
// treats as a failure of its own kind (make the run smaller), never as a pass. Writing a value
// of its own in every write (client and sequence) keeps the search small; many indeterminate
// operations over a few values are what can reach the bound.
//
// The explanation of a violation names the key and a window of operations: the operation X at
// whose completion the key's history stops being linearizable (the shortest failing prefix:
// every prefix of a linearizable history is linearizable, so it is found by bisection), the
// operations concurrent with X, the latest operations that completed before X was invoked (the
// ones that fix the state X must see), and for a read or increment the operations that could
// have produced the value it saw.
//
// Thread-safety: History is safe to use from many threads (a process test's clients);
// CheckLinearizable and CheckNoLostWrites read a snapshot of it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tessera::testing {

// A key's value; nullopt is "absent".
using RegisterValue = std::optional<std::string>;

enum class ClientOpKind { kWrite, kRead, kIncrement, kCheckAndSet };

struct ClientOp {
  ClientOpKind kind = ClientOpKind::kRead;
  std::string key;
  RegisterValue value;  // kWrite: the value written (nullopt: a delete); kCheckAndSet: set on match
  RegisterValue expected;  // kCheckAndSet: the value compared with
  int64_t delta = 0;       // kIncrement

  static ClientOp Write(std::string key, RegisterValue value);
  static ClientOp Delete(std::string key) { return Write(std::move(key), std::nullopt); }
  static ClientOp Read(std::string key);
  static ClientOp Increment(std::string key, int64_t delta);
  static ClientOp CheckAndSet(std::string key, RegisterValue expected, RegisterValue new_value);
};

enum class ClientOutcome { kOk, kFailed, kIndeterminate };

// The answer to a ClientOp. REQUIRES: an ok ClientResult has the shape of its ClientOp's kind (Ok
// for a write, Seen for a read, Incremented for an increment, Matched for a check-and-set).
struct ClientResult {
  ClientOutcome outcome = ClientOutcome::kOk;
  RegisterValue value;   // kRead: the value seen; kIncrement: the new value (8 bytes)
  bool matched = false;  // kCheckAndSet

  static ClientResult Ok() { return ClientResult{}; }
  static ClientResult Failed() { return ClientResult{ClientOutcome::kFailed, std::nullopt, false}; }
  static ClientResult Indeterminate() {
    return ClientResult{ClientOutcome::kIndeterminate, std::nullopt, false};
  }
  static ClientResult Seen(RegisterValue value) {
    return ClientResult{ClientOutcome::kOk, std::move(value), false};
  }
  static ClientResult Incremented(int64_t new_value);
  static ClientResult Matched(bool matched) {
    return ClientResult{ClientOutcome::kOk, std::nullopt, matched};
  }
};

// One recorded operation. `complete_us` and `result` are empty while it is pending. `*_seq`
// are the positions of the Invoke and Complete calls among all the History's calls (ties).
struct HistoryEntry {
  int id = 0;
  int client = 0;
  ClientOp op;
  int64_t invoke_us = 0;
  int64_t invoke_seq = 0;
  std::optional<int64_t> complete_us;
  int64_t complete_seq = 0;
  std::optional<ClientResult> result;
};

// The operations of a run, in invocation order.
class History {
 public:
  History() = default;
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Records that `client` sent `op` at `at_us`; returns the id to complete it with.
  int Invoke(int client, ClientOp op, int64_t at_us);
  // Records the answer to operation `id`. REQUIRES: `id` came from Invoke and was not completed;
  // at_us >= its invocation time; `result` has the shape of the op (see ClientResult).
  void Complete(int id, ClientResult result, int64_t at_us);

  std::vector<HistoryEntry> Entries() const;
  // One line per operation in id order, e.g.
  //   #7 client 2 Increment("c", +1) -> ok 5 [1200us, 1350us]
  std::string Dump() const;

 private:
  mutable absl::Mutex mu_;
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<HistoryEntry> entries_ ABSL_GUARDED_BY(mu_);
};

struct CheckLimits {
  // Configurations (linearized set, state) the search of one key may visit before it gives up
  // with kInconclusive. Each costs about (operations of the key / 8 + 24) bytes. Default: enough
  // for hundreds of operations per key with a handful of indeterminate ones.
  int64_t max_states_per_key = 1'000'000;
};

struct CheckResult {
  enum class Verdict { kLinearizable, kNotLinearizable, kInconclusive };
  Verdict verdict = Verdict::kLinearizable;
  // The first failing key in key order (a violation before an inconclusive key); empty if ok.
  std::string key;
  // Human readable: the key, the window of operations (see above) or why the search stopped,
  // and the other keys that failed.
  std::string explanation;
  // Configurations visited over all keys, for a test to watch the cost.
  int64_t states_visited = 0;

  bool ok() const { return verdict == Verdict::kLinearizable; }
};

// Checks every key of `history`.
CheckResult CheckLinearizable(const History& history, const CheckLimits& limits = {});

// Adds to a copy of `history` one ok Read per key of `final_values` (the value a linearizable
// read of the key saw after the run, once every operation completed or was abandoned), invoked
// and completed at `read_at_us`, and checks it. Beyond CheckLinearizable it names lost writes:
// when a final read cannot be linearized, the explanation lists the acknowledged writes,
// increments and matched check-and-sets of the key that nothing acknowledged superseded and
// whose effect the final read does not show. A key with an acknowledged mutation but no final
// value is a failure too (the test forgot to read it). REQUIRES: read_at_us is later than every
// time recorded in `history`.
CheckResult CheckNoLostWrites(const History& history,
                              const std::map<std::string, RegisterValue>& final_values,
                              int64_t read_at_us, const CheckLimits& limits = {});

}  // namespace tessera::testing
