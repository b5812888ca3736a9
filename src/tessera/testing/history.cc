#include "tessera/testing/history.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tessera/testing/register_search.h"
#include "tessera/util/coding.h"

namespace tessera::testing {

ClientOp ClientOp::Write(std::string key, RegisterValue value) {
  ClientOp op;
  op.kind = ClientOpKind::kWrite;
  op.key = std::move(key);
  op.value = std::move(value);
  return op;
}

ClientOp ClientOp::Read(std::string key) {
  ClientOp op;
  op.kind = ClientOpKind::kRead;
  op.key = std::move(key);
  return op;
}

ClientOp ClientOp::Increment(std::string key, int64_t delta) {
  ClientOp op;
  op.kind = ClientOpKind::kIncrement;
  op.key = std::move(key);
  op.delta = delta;
  return op;
}

ClientOp ClientOp::CheckAndSet(std::string key, RegisterValue expected, RegisterValue new_value) {
  ClientOp op;
  op.kind = ClientOpKind::kCheckAndSet;
  op.key = std::move(key);
  op.expected = std::move(expected);
  op.value = std::move(new_value);
  return op;
}

ClientResult ClientResult::Incremented(int64_t new_value) {
  return ClientResult{ClientOutcome::kOk, BigEndian64String(static_cast<uint64_t>(new_value)),
                      false};
}

int History::Invoke(int client, ClientOp op, int64_t at_us) {
  absl::MutexLock lock(&mu_);
  HistoryEntry entry;
  entry.id = static_cast<int>(entries_.size());
  entry.client = client;
  entry.op = std::move(op);
  entry.invoke_us = at_us;
  entry.invoke_seq = next_seq_++;
  entries_.push_back(std::move(entry));
  return entries_.back().id;
}

void History::Complete(int id, ClientResult result, int64_t at_us) {
  absl::MutexLock lock(&mu_);
  assert(id >= 0 && id < static_cast<int>(entries_.size()));
  HistoryEntry& entry = entries_[id];
  assert(!entry.result.has_value() && at_us >= entry.invoke_us);
  entry.complete_us = at_us;
  entry.complete_seq = next_seq_++;
  entry.result = std::move(result);
}

std::vector<HistoryEntry> History::Entries() const {
  absl::MutexLock lock(&mu_);
  return entries_;
}

namespace {

// The client id of the reads CheckNoLostWrites adds.
constexpr int kFinalReadClient = -1;

// ---- Formatting ----

std::string FormatValue(const RegisterValue& value) {
  if (!value.has_value()) return "absent";
  bool printable =
      std::all_of(value->begin(), value->end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (value->size() == 8 && !printable) {
    return absl::StrCat("int ", static_cast<int64_t>(DecodeBigEndian64(value->data())));
  }
  return absl::StrCat("\"", absl::CHexEscape(*value), "\"");
}

std::string FormatOp(const ClientOp& op) {
  std::string key = absl::StrCat("\"", absl::CHexEscape(op.key), "\"");
  switch (op.kind) {
    case ClientOpKind::kWrite:
      if (!op.value.has_value()) return absl::StrCat("Delete(", key, ")");
      return absl::StrCat("Write(", key, ", ", FormatValue(op.value), ")");
    case ClientOpKind::kRead:
      return absl::StrCat("Read(", key, ")");
    case ClientOpKind::kIncrement:
      return absl::StrCat("Increment(", key, ", ", op.delta >= 0 ? "+" : "", op.delta, ")");
    case ClientOpKind::kCheckAndSet:
      return absl::StrCat("CheckAndSet(", key, ", ", FormatValue(op.expected), " -> ",
                          FormatValue(op.value), ")");
  }
  return "";
}

std::string FormatResult(const HistoryEntry& entry) {
  if (!entry.result.has_value()) return "pending";
  const ClientResult& result = *entry.result;
  switch (result.outcome) {
    case ClientOutcome::kFailed:
      return "failed";
    case ClientOutcome::kIndeterminate:
      return "indeterminate";
    case ClientOutcome::kOk:
      break;
  }
  switch (entry.op.kind) {
    case ClientOpKind::kRead:
    case ClientOpKind::kIncrement:
      return absl::StrCat("ok ", FormatValue(result.value));
    case ClientOpKind::kCheckAndSet:
      return result.matched ? "ok matched" : "ok not matched";
    case ClientOpKind::kWrite:
      break;
  }
  return "ok";
}

std::string FormatEntry(const HistoryEntry& entry) {
  std::string who = entry.client == kFinalReadClient ? std::string("final read")
                                                     : absl::StrCat("client ", entry.client);
  std::string until =
      entry.complete_us.has_value() ? absl::StrCat(*entry.complete_us, "us]") : std::string("...)");
  return absl::StrCat("#", entry.id, " ", who, " ", FormatOp(entry.op), " -> ", FormatResult(entry),
                      " [", entry.invoke_us, "us, ", until);
}

}  // namespace

std::string History::Dump() const {
  std::string out;
  for (const HistoryEntry& entry : Entries()) absl::StrAppend(&out, FormatEntry(entry), "\n");
  return out;
}

namespace {

// ---- From a history to the keys' searches ----

using KeyOps = std::map<std::string, std::vector<KeyOp>>;

// The operations that constrain the search, per key (see KeyOp). `entries` must outlive it.
KeyOps ByKey(const std::vector<HistoryEntry>& entries) {
  KeyOps by_key;
  for (const HistoryEntry& entry : entries) {
    bool answered = entry.result.has_value();
    if (answered && entry.result->outcome == ClientOutcome::kFailed) continue;
    bool definite = answered && entry.result->outcome == ClientOutcome::kOk;
    if (entry.op.kind == ClientOpKind::kRead && !definite) continue;
    by_key[entry.op.key].push_back(
        KeyOp{&entry, !definite, Stamp{entry.invoke_us, entry.invoke_seq},
              definite ? Stamp{*entry.complete_us, entry.complete_seq} : kNever});
  }
  return by_key;
}

// The key's history as it stood at `cut`: the operations invoked before it, those that had not
// completed by then pending (indeterminate), reads among them left out.
std::vector<KeyOp> Prefix(const std::vector<KeyOp>& ops, Stamp cut) {
  std::vector<KeyOp> prefix;
  for (const KeyOp& op : ops) {
    if (op.invoke >= cut) continue;
    if (op.complete <= cut) {
      prefix.push_back(op);
    } else if (op.op().kind != ClientOpKind::kRead) {
      KeyOp pending = op;
      pending.indeterminate = true;
      pending.complete = kNever;
      prefix.push_back(pending);
    }
  }
  return prefix;
}

// Whether `a` completed before `b` was invoked.
bool Precedes(const KeyOp& a, const KeyOp& b) { return a.complete < b.invoke; }

// An acknowledged operation that changed the value, and the value it left.
std::optional<RegisterValue> AcknowledgedEffect(const KeyOp& op) {
  if (op.indeterminate) return std::nullopt;
  switch (op.op().kind) {
    case ClientOpKind::kWrite:
      return op.op().value;
    case ClientOpKind::kIncrement:
      return op.result().value;
    case ClientOpKind::kCheckAndSet:
      if (op.result().matched) return op.op().value;
      return std::nullopt;
    case ClientOpKind::kRead:
      return std::nullopt;
  }
  return std::nullopt;
}

// Whether `op` can leave `value` behind.
bool CanProduce(const KeyOp& op, const RegisterValue& value) {
  switch (op.op().kind) {
    case ClientOpKind::kWrite:
      return op.op().value == value;
    case ClientOpKind::kIncrement:
      return !op.indeterminate && op.result().value == value;
    case ClientOpKind::kCheckAndSet:
      return (op.indeterminate || op.result().matched) && op.op().value == value;
    case ClientOpKind::kRead:
      return false;
  }
  return false;
}

constexpr size_t kMaxListed = 20;

void AppendOps(std::string* out, const std::string& title, const std::vector<const KeyOp*>& ops) {
  if (ops.empty()) return;
  absl::StrAppend(out, "\n  ", title, ":");
  for (size_t i = 0; i < ops.size() && i < kMaxListed; ++i) {
    absl::StrAppend(out, "\n    ", FormatEntry(*ops[i]->entry));
  }
  if (ops.size() > kMaxListed) absl::StrAppend(out, "\n    ... ", ops.size() - kMaxListed, " more");
}

// Why the key's operations cannot be linearized (the header: the shortest failing prefix, and
// the window of operations around the one that ends it). REQUIRES: `ops` is not linearizable.
std::string ExplainViolation(const std::string& key, const std::vector<KeyOp>& ops,
                             const CheckLimits& limits) {
  // Every completion is a candidate end of the shortest failing prefix; the last one fails
  // (what follows it is only indeterminate operations, which can always go last).
  std::vector<Stamp> cuts;
  for (const KeyOp& op : ops) {
    if (op.complete != kNever) cuts.push_back(op.complete);
  }
  std::sort(cuts.begin(), cuts.end());
  size_t lo = 0, hi = cuts.size() - 1;
  while (lo < hi) {  // an inconclusive prefix counts as failing: the window is then wider
    size_t mid = (lo + hi) / 2;
    if (SearchKey(Prefix(ops, cuts[mid]), limits.max_states_per_key, nullptr) ==
        SearchOutcome::kLinearizable) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  std::vector<KeyOp> prefix = Prefix(ops, cuts[hi]);
  const KeyOp* culprit = nullptr;
  for (const KeyOp& op : prefix) {
    if (op.complete == cuts[hi]) culprit = &op;
  }
  std::vector<const KeyOp*> concurrent, before, sources, lost;
  for (const KeyOp& op : prefix) {
    if (&op == culprit) continue;
    if (!Precedes(op, *culprit) && !Precedes(*culprit, op)) concurrent.push_back(&op);
    if (Precedes(op, *culprit) &&
        std::none_of(prefix.begin(), prefix.end(), [&](const KeyOp& other) {
          return Precedes(op, other) && Precedes(other, *culprit);
        })) {
      before.push_back(&op);
    }
  }
  std::string out = absl::StrCat("key \"", absl::CHexEscape(key),
                                 "\" is not linearizable: its history up to the completion of #",
                                 culprit->entry->id, " cannot be ordered, everything before can",
                                 "\n  cannot be ordered: ", FormatEntry(*culprit->entry));
  AppendOps(&out, "concurrent with it", concurrent);
  AppendOps(&out, "completed last before it was invoked", before);
  if (culprit->op().kind == ClientOpKind::kRead || culprit->op().kind == ClientOpKind::kIncrement) {
    const RegisterValue& seen = culprit->result().value;
    for (const KeyOp& op : prefix) {
      if (&op != culprit && CanProduce(op, seen)) sources.push_back(&op);
    }
    if (sources.empty() && seen.has_value()) {
      absl::StrAppend(&out, "\n  no operation of the key can have produced ", FormatValue(seen));
    }
    AppendOps(&out, absl::StrCat("can have produced ", FormatValue(seen)), sources);
  }
  if (culprit->entry->client == kFinalReadClient) {
    // Acknowledged changes that no acknowledged change followed, not seen by the final read.
    for (const KeyOp& op : prefix) {
      std::optional<RegisterValue> effect = AcknowledgedEffect(op);
      if (!effect.has_value() || *effect == culprit->result().value) continue;
      if (std::none_of(prefix.begin(), prefix.end(), [&](const KeyOp& other) {
            return AcknowledgedEffect(other).has_value() && Precedes(op, other);
          })) {
        lost.push_back(&op);
      }
    }
    AppendOps(&out, "lost: acknowledged, never superseded, not seen by the final read", lost);
  }
  return out;
}

std::string ExplainInconclusive(const std::string& key, const std::vector<KeyOp>& ops,
                                int64_t states) {
  std::vector<std::pair<Stamp, int>> events;
  for (const KeyOp& op : ops) {
    events.push_back({op.invoke, 1});
    events.push_back({op.complete, -1});
  }
  std::sort(events.begin(), events.end());
  int open = 0, most = 0;
  for (const auto& [at, change] : events) most = std::max(most, open += change);
  int indeterminate = static_cast<int>(
      std::count_if(ops.begin(), ops.end(), [](const KeyOp& op) { return op.indeterminate; }));
  return absl::StrCat("key \"", absl::CHexEscape(key), "\": the search gave up after ", states,
                      " configurations (CheckLimits::max_states_per_key) over ", ops.size(),
                      " operations, ", indeterminate, " of them indeterminate, at most ", most,
                      " concurrent");
}

CheckResult CheckEntries(const std::vector<HistoryEntry>& entries, const CheckLimits& limits) {
  CheckResult result;
  KeyOps by_key = ByKey(entries);
  std::vector<std::string> violated, inconclusive;
  std::string inconclusive_explanation;
  for (const auto& [key, ops] : by_key) {
    int64_t states = 0;
    SearchOutcome outcome = SearchKey(ops, limits.max_states_per_key, &states);
    result.states_visited += states;
    if (outcome == SearchOutcome::kNotLinearizable) violated.push_back(key);
    if (outcome == SearchOutcome::kOutOfStates) {
      if (inconclusive.empty()) inconclusive_explanation = ExplainInconclusive(key, ops, states);
      inconclusive.push_back(key);
    }
  }
  if (!violated.empty()) {
    result.verdict = CheckResult::Verdict::kNotLinearizable;
    result.key = violated.front();
    result.explanation = ExplainViolation(result.key, by_key[result.key], limits);
  } else if (!inconclusive.empty()) {
    result.verdict = CheckResult::Verdict::kInconclusive;
    result.key = inconclusive.front();
    result.explanation = inconclusive_explanation;
  }
  auto quoted = [](std::string* out, const std::string& key) {
    absl::StrAppend(out, "\"", absl::CHexEscape(key), "\"");
  };
  if (violated.size() > 1) {
    absl::StrAppend(&result.explanation, "\nalso not linearizable: ",
                    absl::StrJoin(violated.begin() + 1, violated.end(), ", ", quoted));
  }
  if (!violated.empty() && !inconclusive.empty()) {
    absl::StrAppend(&result.explanation,
                    "\ninconclusive: ", absl::StrJoin(inconclusive, ", ", quoted));
  } else if (inconclusive.size() > 1) {
    absl::StrAppend(&result.explanation, "\nalso inconclusive: ",
                    absl::StrJoin(inconclusive.begin() + 1, inconclusive.end(), ", ", quoted));
  }
  return result;
}

}  // namespace

CheckResult CheckLinearizable(const History& history, const CheckLimits& limits) {
  return CheckEntries(history.Entries(), limits);
}

CheckResult CheckNoLostWrites(const History& history,
                              const std::map<std::string, RegisterValue>& final_values,
                              int64_t read_at_us, const CheckLimits& limits) {
  std::vector<HistoryEntry> entries = history.Entries();
  CheckResult misuse;
  misuse.verdict = CheckResult::Verdict::kInconclusive;
  int64_t last_us = std::numeric_limits<int64_t>::min();
  int64_t next_seq = 0;
  std::vector<std::string> unread;
  for (const HistoryEntry& entry : entries) {
    last_us = std::max(last_us, entry.complete_us.value_or(entry.invoke_us));
    next_seq = std::max(next_seq, std::max(entry.invoke_seq, entry.complete_seq) + 1);
    bool acknowledged = entry.op.kind != ClientOpKind::kRead && entry.result.has_value() &&
                        entry.result->outcome == ClientOutcome::kOk;
    if (acknowledged && !final_values.contains(entry.op.key)) {
      unread.push_back(entry.op.key);
    }
  }
  if (!entries.empty() && read_at_us <= last_us) {
    misuse.explanation =
        absl::StrCat("the final reads at ", read_at_us,
                     "us are not after the run, whose last event is at ", last_us, "us");
    return misuse;
  }
  if (!unread.empty()) {
    std::sort(unread.begin(), unread.end());
    unread.erase(std::unique(unread.begin(), unread.end()), unread.end());
    misuse.key = unread.front();
    misuse.explanation = absl::StrCat("no final value for keys with acknowledged writes: ",
                                      absl::StrJoin(unread, ", "));
    return misuse;
  }
  for (const auto& [key, value] : final_values) {
    int64_t invoke_seq = next_seq++;
    entries.push_back(HistoryEntry{.id = static_cast<int>(entries.size()),
                                   .client = kFinalReadClient,
                                   .op = ClientOp::Read(key),
                                   .invoke_us = read_at_us,
                                   .invoke_seq = invoke_seq,
                                   .complete_us = read_at_us,
                                   .complete_seq = next_seq++,
                                   .result = ClientResult::Seen(value)});
  }
  return CheckEntries(entries, limits);
}

}  // namespace tessera::testing
