#include "tessera/testing/register_search.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "tessera/util/coding.h"

namespace tessera::testing {
namespace {

// The counter an increment sees in `value`, or nullopt when the value is not a counter.
std::optional<uint64_t> Counter(const Value& value) {
  if (!value.has_value()) return 0;
  if (value->size() != 8) return std::nullopt;
  return DecodeBigEndian64(value->data());
}

// Whether `op` can take effect on `state` with the answer it got; if so sets *next to the state
// after it. An indeterminate operation can always take effect (one that would fail changes
// nothing).
bool Step(const KeyOp& op, const Value& state, Value* next) {
  switch (op.op().kind) {
    case OpKind::kWrite:
      *next = op.op().value;
      return true;
    case OpKind::kRead:
      *next = state;
      return op.result().value == state;
    case OpKind::kIncrement: {
      std::optional<uint64_t> counter = Counter(state);
      if (!counter.has_value()) {
        *next = state;
        return op.indeterminate;
      }
      *next = BigEndian64String(*counter + static_cast<uint64_t>(op.op().delta));
      return op.indeterminate || op.result().value == *next;
    }
    case OpKind::kCheckAndSet: {
      bool matches = state == op.op().expected;
      *next = matches ? op.op().value : state;
      return op.indeterminate || op.result().matched == matches;
    }
  }
  return false;
}

// Configurations (linearized bitset, state id) seen, packed in one arena: open addressing over
// indexes into it.
class ConfigSet {
 public:
  explicit ConfigSet(int words) : words_(words), slots_(1024, kEmpty) {}

  // Adds the configuration; false if it was there.
  bool Insert(const std::vector<uint64_t>& config) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    size_t slot = Find(config.data());
    if (slots_[slot] != kEmpty) return false;
    slots_[slot] = static_cast<uint32_t>(count_++);
    arena_.insert(arena_.end(), config.begin(), config.end());
    return true;
  }
  int64_t size() const { return static_cast<int64_t>(count_); }

 private:
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();

  size_t Hash(const uint64_t* config) const {
    return absl::HashOf(absl::MakeConstSpan(config, words_));
  }
  // The slot holding `config`, or the empty slot where it goes.
  size_t Find(const uint64_t* config) const {
    size_t mask = slots_.size() - 1;
    for (size_t slot = Hash(config) & mask;; slot = (slot + 1) & mask) {
      if (slots_[slot] == kEmpty) return slot;
      const uint64_t* there = &arena_[static_cast<size_t>(slots_[slot]) * words_];
      if (std::equal(there, there + words_, config)) return slot;
    }
  }
  void Grow() {
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(old.size() * 2, kEmpty);
    for (uint32_t index : old) {
      if (index != kEmpty) slots_[Find(&arena_[static_cast<size_t>(index) * words_])] = index;
    }
  }

  const int words_;
  size_t count_ = 0;
  std::vector<uint64_t> arena_;
  std::vector<uint32_t> slots_;
};

// Wing & Gong / Lowe's just-in-time linearization over one key's operations (the header).
class KeySearch {
 public:
  explicit KeySearch(const std::vector<KeyOp>& ops) : ops_(ops) {
    // Nodes: 0 = head, 1 = tail, then a call and a return per operation, in time order.
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
    std::vector<int> call_node(ops.size());
    int last = kHead;
    for (size_t i = 0; i < events.size(); ++i) {
      int node = static_cast<int>(i) + 2;
      op_[node] = events[i].op;
      if (events[i].call) {
        call_node[events[i].op] = node;
      } else {
        match_[call_node[events[i].op]] = node;
      }
      next_[last] = node;
      prev_[node] = last;
      last = node;
    }
    next_[last] = kTail;
    prev_[kTail] = last;
  }

  SearchOutcome Run(int64_t max_states) {
    int words = static_cast<int>(ops_.size() + 63) / 64;
    ConfigSet seen(words + 1);
    std::vector<uint64_t> config(words + 1, 0);  // linearized bits, then the state id
    struct Frame {
      int call;
      int state;
    };
    std::vector<Frame> stack;
    int state = Intern(std::nullopt);
    int node = next_[kHead];
    Value after;
    while (next_[kHead] != kTail) {
      if (match_[node] >= 0) {  // a call: try to linearize it here
        int op = op_[node];
        if (Step(ops_[op], states_[state], &after)) {
          int next_state = Intern(after);
          config[op / 64] |= uint64_t{1} << (op % 64);
          config[words] = static_cast<uint64_t>(next_state);
          if (seen.Insert(config)) {
            if (seen.size() > max_states) {
              states_visited_ = seen.size();
              return SearchOutcome::kOutOfStates;
            }
            stack.push_back({node, state});
            state = next_state;
            Lift(node);
            node = next_[kHead];
            continue;
          }
          config[op / 64] &= ~(uint64_t{1} << (op % 64));
        }
        node = next_[node];
      } else {  // the completion of an operation not linearized yet: undo the last choice
        if (stack.empty()) {
          states_visited_ = seen.size();
          return SearchOutcome::kNotLinearizable;
        }
        Frame top = stack.back();
        stack.pop_back();
        state = top.state;
        int op = op_[top.call];
        config[op / 64] &= ~(uint64_t{1} << (op % 64));
        Unlift(top.call);
        node = next_[top.call];
      }
    }
    states_visited_ = seen.size();
    return SearchOutcome::kLinearizable;
  }

  int64_t states_visited() const { return states_visited_; }

 private:
  static constexpr int kHead = 0;
  static constexpr int kTail = 1;

  int Intern(const Value& value) {
    auto [it, inserted] = state_ids_.try_emplace(value, static_cast<int>(states_.size()));
    if (inserted) states_.push_back(value);
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
  std::vector<int> op_;     // the operation of a node
  std::vector<int> match_;  // a call's completion node; -1 for completions
  std::vector<Value> states_;
  absl::flat_hash_map<Value, int> state_ids_;
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
