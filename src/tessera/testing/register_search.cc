#include "tessera/testing/register_search.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "tessera/util/coding.h"

namespace tessera::testing {
namespace {

// The counter an increment sees in `value`, or nullopt when the value is not a counter.
std::optional<uint64_t> Counter(const RegisterValue& value) {
  if (!value.has_value()) return 0;
  if (value->size() != 8) return std::nullopt;
  return DecodeBigEndian64(value->data());
}

// A bitset over operations.
void Set(std::vector<uint64_t>* bits, int i) { (*bits)[i / 64] |= uint64_t{1} << (i % 64); }
void Clear(std::vector<uint64_t>* bits, int i) { (*bits)[i / 64] &= ~(uint64_t{1} << (i % 64)); }
bool IsSubset(const uint64_t* a, const uint64_t* b, int words) {
  for (int w = 0; w < words; ++w) {
    if ((a[w] & ~b[w]) != 0) return false;
  }
  return true;
}

// The configurations seen. A configuration is (D, s, I): the definite operations linearized,
// the state, the indeterminate operations linearized. (D, s, I) makes every (D, s, I') with
// I a subset of I' redundant: what I' allows next, I allows too, and the operations of I' \ I
// can go after everything else. So per key (D, s) the memo keeps the minimal sets I seen.
class ConfigMemo {
 public:
  ConfigMemo(int key_words, int set_words)
      : key_words_(key_words), set_words_(set_words), slots_(1024, kEmpty) {}

  // Records the configuration `key` = (D bits, state id), `set` = I bits; false when a recorded
  // configuration makes it redundant.
  bool Insert(const std::vector<uint64_t>& key, const std::vector<uint64_t>& set) {
    if ((keys_ + 1) * 2 > slots_.size()) Grow();
    size_t slot = Find(key.data());
    bool fresh = slots_[slot] == kEmpty;
    if (fresh) {
      slots_[slot] = static_cast<uint32_t>(keys_++);
      arena_.insert(arena_.end(), key.begin(), key.end());
      sets_.emplace_back();
    } else if (set_words_ == 0) {
      return false;
    }
    std::vector<uint64_t>& sets = sets_[slots_[slot]];
    size_t kept = 0;
    for (size_t at = 0; at < sets.size(); at += set_words_) {
      if (IsSubset(&sets[at], set.data(), set_words_)) return false;
      if (IsSubset(set.data(), &sets[at], set_words_)) continue;  // now redundant itself
      std::copy(sets.begin() + at, sets.begin() + at + set_words_, sets.begin() + kept);
      kept += set_words_;
    }
    sets.resize(kept);
    sets.insert(sets.end(), set.begin(), set.end());
    ++configs_;
    return true;
  }
  int64_t size() const { return configs_; }

 private:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();

  size_t Hash(const uint64_t* key) const {
    return absl::HashOf(absl::MakeConstSpan(key, key_words_));
  }
  // The slot holding `key`, or the empty slot where it goes.
  size_t Find(const uint64_t* key) const {
    size_t mask = slots_.size() - 1;
    for (size_t slot = Hash(key) & mask;; slot = (slot + 1) & mask) {
      if (slots_[slot] == kEmpty) return slot;
      const uint64_t* there = &arena_[static_cast<size_t>(slots_[slot]) * key_words_];
      if (std::equal(there, there + key_words_, key)) return slot;
    }
  }
  void Grow() {
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(old.size() * 2, kEmpty);
    for (uint32_t index : old) {
      if (index != kEmpty) slots_[Find(&arena_[static_cast<size_t>(index) * key_words_])] = index;
    }
  }

  const int key_words_;
  const int set_words_;
  size_t keys_ = 0;
  int64_t configs_ = 0;
  std::vector<uint64_t> arena_;              // the keys, key_words_ each
  std::vector<std::vector<uint64_t>> sets_;  // per key: its minimal sets, set_words_ each
  std::vector<uint32_t> slots_;              // indexes of keys, open addressing
};

// Wing & Gong / Lowe's just-in-time linearization over one key's operations (the header),
// as a depth-first search whose frames each hold the operations that may take effect next:
// the calls before the first completion still in the list. The search ends well as soon as
// every definite operation is linearized: the indeterminate ones left take effect afterwards,
// where nothing sees them. That same fact ("an indeterminate operation can always be moved
// to the very end instead") makes each reduction sound, since any linearization can be
// rewritten into one the reduced search still tries:
// - definite candidates are tried first (an order only: it makes the memo's minimal sets
//   small early, so that later supersets are dropped);
// - an indeterminate operation that would leave the state as it is is not tried: the same
//   linearization without it, and it at the end, is tried;
// - no write right after an indeterminate operation: the write hides it, so the same order
//   with the indeterminate operation moved to the end reaches the same state;
// - of equal indeterminate operations (kind and arguments) only the earliest invoked is a
//   candidate: a linearization that uses a later one can use the earlier in its place, which
//   was invoked by then too;
// - the memo's subset rule (ConfigMemo).
class KeySearch {
 public:
  explicit KeySearch(const std::vector<KeyOp>& ops) : ops_(ops), call_node_(ops.size()) {
    // Nodes: 0 = head, 1 = tail, then a call and a completion per operation, in time order.
    struct Event {
      Stamp at;
      int op;
      bool call;
    };
    std::vector<Event> events;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      events.push_back({ops[i].invoke, i, true});
      events.push_back({ops[i].complete, i, false});
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.at < b.at; });
    size_t n = events.size() + 2;
    prev_.resize(n);
    next_.resize(n);
    op_.assign(n, -1);
    match_.assign(n, -1);
    int last = kHead;
    for (size_t i = 0; i < events.size(); ++i) {
      int node = static_cast<int>(i) + 2;
      op_[node] = events[i].op;
      if (events[i].call) {
        call_node_[events[i].op] = node;
      } else {
        match_[call_node_[events[i].op]] = node;
      }
      next_[last] = node;
      prev_[node] = last;
      last = node;
    }
    next_[last] = kTail;
    prev_[kTail] = last;
    // Bits: definite operations in D, indeterminate ones in I; classes of equal operations.
    absl::flat_hash_map<std::tuple<ClientOpKind, RegisterValue, RegisterValue, int64_t>, int>
        classes;
    for (const KeyOp& op : ops) {
      int& count = op.indeterminate ? indeterminate_ : definite_;
      bit_.push_back(count++);
      class_.push_back(op.indeterminate ? classes
                                              .try_emplace({op.op().kind, op.op().value,
                                                            op.op().expected, op.op().delta},
                                                           static_cast<int>(classes.size()))
                                              .first->second
                                        : -1);
    }
    class_seen_.assign(classes.size(), 0);
    Intern(std::nullopt);  // state 0: the key before any operation
    for (const KeyOp& op : ops) {
      Move move;
      move.kind = op.op().kind;
      move.delta = op.op().delta;
      switch (move.kind) {
        case ClientOpKind::kWrite:
          move.value = Intern(op.op().value);
          break;
        case ClientOpKind::kRead:
          move.value = Intern(op.result().value);
          break;
        case ClientOpKind::kIncrement:
          if (!op.indeterminate) {
            move.value = Intern(op.result().value);
            move.result_counter = counters_[move.value];
          }
          break;
        case ClientOpKind::kCheckAndSet:
          move.value = Intern(op.op().value);
          move.expected = Intern(op.op().expected);
          move.matched = !op.indeterminate && op.result().matched;
          break;
      }
      moves_.push_back(move);
    }
  }

  SearchOutcome Run(int64_t max_states) {
    if (definite_ == 0) return SearchOutcome::kLinearizable;
    int key_words = (definite_ + 63) / 64;
    ConfigMemo memo(key_words + 1, (indeterminate_ + 63) / 64);
    std::vector<uint64_t> key(key_words + 1, 0);  // D, then the state id
    std::vector<uint64_t> set((indeterminate_ + 63) / 64, 0);
    int definite_left = definite_;
    // The top frame's candidates are candidates[begin, end); next is the next to try.
    struct Frame {
      int op;  // the operation linearized to reach this frame; -1 at the root
      int state;
      size_t begin;
      size_t next;
    };
    std::vector<Frame> frames = {{-1, 0, 0, 0}};
    std::vector<int> candidates;
    AppendCandidates(&candidates);
    while (!frames.empty()) {
      Frame& top = frames.back();
      if (top.next == candidates.size()) {  // every choice from here failed: undo the last one
        if (top.op >= 0) {
          Mark(top.op, false, &key, &set);
          Unlift(call_node_[top.op]);
          if (!ops_[top.op].indeterminate) ++definite_left;
        }
        candidates.resize(top.begin);
        frames.pop_back();
        continue;
      }
      int op = candidates[top.next++];
      int state = top.state;
      // A write right after an indeterminate operation makes that operation's effect dead:
      // the same write without it (tried from the frame below) covers this.
      if (top.op >= 0 && ops_[top.op].indeterminate && ops_[op].op().kind == ClientOpKind::kWrite) {
        continue;
      }
      int next_state = Step(op, state);
      if (next_state < 0 || (ops_[op].indeterminate && next_state == state)) continue;
      Mark(op, true, &key, &set);
      key[key_words] = static_cast<uint64_t>(next_state);
      if (!memo.Insert(key, set)) {
        Mark(op, false, &key, &set);
        continue;
      }
      states_visited_ = memo.size();
      if (states_visited_ > max_states) return SearchOutcome::kOutOfStates;
      Lift(call_node_[op]);
      if (!ops_[op].indeterminate && --definite_left == 0) return SearchOutcome::kLinearizable;
      frames.push_back({op, next_state, candidates.size(), candidates.size()});
      AppendCandidates(&candidates);
    }
    return SearchOutcome::kNotLinearizable;
  }

  int64_t states_visited() const { return states_visited_; }

 private:
  static constexpr int kHead = 0;
  static constexpr int kTail = 1;

  // Appends the operations that may take effect next: the calls before the first completion.
  void AppendCandidates(std::vector<int>* candidates) {
    ++generation_;
    size_t first_indeterminate = candidates->size();
    for (int node = next_[kHead]; node != kTail && match_[node] >= 0; node = next_[node]) {
      int op = op_[node];
      if (!ops_[op].indeterminate) {
        candidates->insert(candidates->begin() + first_indeterminate++, op);
      } else if (class_seen_[class_[op]] != generation_) {
        class_seen_[class_[op]] = generation_;
        candidates->push_back(op);
      }
    }
  }
  void Mark(int op, bool linearized, std::vector<uint64_t>* key, std::vector<uint64_t>* set) {
    std::vector<uint64_t>* bits = ops_[op].indeterminate ? set : key;
    if (linearized) {
      Set(bits, bit_[op]);
    } else {
      Clear(bits, bit_[op]);
    }
  }
  // The model (history.h) on interned states: the state after operation `op` takes effect on
  // `state` with the answer it got, or -1 when it cannot. An indeterminate operation can always
  // take effect (one that would fail changes nothing).
  int Step(int op, int state) {
    const Move& move = moves_[op];
    bool indeterminate = ops_[op].indeterminate;
    switch (move.kind) {
      case ClientOpKind::kWrite:
        return move.value;
      case ClientOpKind::kRead:
        return state == move.value ? state : -1;
      case ClientOpKind::kIncrement: {
        const std::optional<uint64_t>& counter = counters_[state];
        if (!counter.has_value()) return indeterminate ? state : -1;
        uint64_t sum = *counter + static_cast<uint64_t>(move.delta);
        if (indeterminate) return Intern(BigEndian64String(sum));
        return move.result_counter == sum ? move.value : -1;
      }
      case ClientOpKind::kCheckAndSet: {
        bool matches = state == move.expected;
        if (!indeterminate && move.matched != matches) return -1;
        return matches ? move.value : state;
      }
    }
    return -1;
  }
  int Intern(const RegisterValue& value) {
    auto [it, inserted] = state_ids_.try_emplace(value, static_cast<int>(counters_.size()));
    if (inserted) counters_.push_back(Counter(value));
    return it->second;
  }
  void Unlink(int node) {
    next_[prev_[node]] = next_[node];
    prev_[next_[node]] = prev_[node];
  }
  void Relink(int node) {
    next_[prev_[node]] = node;
    prev_[next_[node]] = node;
  }
  // Takes a linearized operation's call and completion out of the list; Unlift puts them back
  // (in reverse order, so the links they kept are valid again).
  void Lift(int call) {
    Unlink(call);
    Unlink(match_[call]);
  }
  void Unlift(int call) {
    Relink(match_[call]);
    Relink(call);
  }

  const std::vector<KeyOp>& ops_;
  std::vector<int> prev_, next_;
  std::vector<int> op_;         // the operation of a node
  std::vector<int> match_;      // a call's completion node; -1 for completions
  std::vector<int> call_node_;  // an operation's call node
  int definite_ = 0;
  int indeterminate_ = 0;
  std::vector<int> bit_;    // an operation's bit in D or in I
  std::vector<int> class_;  // an indeterminate operation's class of equal operations
  std::vector<uint64_t> class_seen_;
  uint64_t generation_ = 0;
  // An operation with its values interned: `value` is what a write or check-and-set writes, what
  // a read saw, or the new value an increment answered (then also as `result_counter`).
  struct Move {
    ClientOpKind kind;
    int value = -1;
    int expected = -1;
    int64_t delta = 0;
    std::optional<uint64_t> result_counter;
    bool matched = false;
  };
  std::vector<Move> moves_;
  absl::flat_hash_map<RegisterValue, int> state_ids_;
  std::vector<std::optional<uint64_t>> counters_;  // per state id: the counter it holds
  int64_t states_visited_ = 0;
};

}  // namespace
SearchOutcome SearchKey(const std::vector<KeyOp>& ops, int64_t max_states,
                        int64_t* states_visited) {
  KeySearch search(ops);
  SearchOutcome outcome = search.Run(max_states);
  if (states_visited != nullptr) *states_visited += search.states_visited();
  return outcome;
}

}  // namespace tessera::testing
