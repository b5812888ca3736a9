// The search behind CheckLinearizable (history.h): whether one key's operations, starting
// from an absent value, can be linearized against the one-register model of history.h. The
// algorithm is Wing & Gong's with Lowe's just-in-time linearization and a memo of
// configurations, as in Knossos and Porcupine, with reductions for indeterminate operations;
// history.h describes it, register_search.cc argues each reduction.
//
// Thread-safety: SearchKey keeps no state between calls; calls may run on several threads.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <vector>

#include "tessera/testing/history.h"

namespace tessera::testing {

// A point of the run's one timeline: time, then the order the History was told.
struct Stamp {
  int64_t us = 0;
  int64_t seq = 0;
  auto operator<=>(const Stamp&) const = default;
};
inline constexpr Stamp kNever{std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::max()};

// One operation of one key as the search sees it. Failed operations and reads without an ok
// answer are left out before; pending and indeterminate ones have `indeterminate` set and
// complete at kNever (their result, if any, is ignored). `entry` is borrowed: the entries of
// the History snapshot being checked, which outlive the search.
struct KeyOp {
  const HistoryEntry* entry;
  bool indeterminate;
  Stamp invoke;
  Stamp complete;

  const ClientOp& op() const { return entry->op; }
  const ClientResult& result() const { return *entry->result; }
};

enum class SearchOutcome { kLinearizable, kNotLinearizable, kOutOfStates };

// Searches for a linearization of `ops`, visiting at most `max_states` configurations (beyond
// that: kOutOfStates), and adds the number visited to *states_visited when it is not null.
// REQUIRES: every op is of one key; an op that is not indeterminate has an ok result of its
// op's shape.
SearchOutcome SearchKey(const std::vector<KeyOp>& ops, int64_t max_states, int64_t* states_visited);

}  // namespace tessera::testing
