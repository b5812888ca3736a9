// Test-only: the concurrent client load of the chaos process tests (chaos_process_test.cc)
// against table r of bigtable_calls.h, and the checks made after it.
//
// Each client thread keeps a channel to every node and sends each request to the next node in
// turn; a request that fails retryably is tried on the next node after a backoff (20 ms,
// doubling to 500 ms, with jitter), until it is answered or its budget (10 s) has passed, as
// the Bigtable clients do. Requests, by kind:
//   - MutateRow of a key of the client's own, value "v<key>", fixed timestamp: idempotent, so
//     retried on UNAVAILABLE and DEADLINE_EXCEEDED;
//   - MutateRows of 3-5 such keys: only the entries that failed retryably are sent again;
//   - ReadModifyWriteRow +1 of cf:n on one of three counter rows (both tablets): not
//     idempotent, so a failure that may have run (its message says "may have been applied", a
//     DEADLINE_EXCEEDED, a connection that broke under the call) is *ambiguous* and ends the
//     request; a refusal that says nothing ran (UNAVAILABLE otherwise) is retried;
//   - a read of a key the client had acknowledged, starting at the next node: it must see it
//     (a miss is a stale read).
// With `register_key` set, client 0 instead writes that key with increasing values (fixed
// timestamp, so the last applied wins) and reads it after each acknowledged write: a value
// older than the last acknowledged one is a stale read (two primaries, or a lost write).
//
// Every loop is bounded: a client stops at Stop(), after max_duration, or after
// max_requests_per_client requests.
//
// Thread-safety: Start, Stop and the checks are called from one thread; Totals and the checks
// REQUIRE Stop() to have returned.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server_process.h"

namespace tessera::integration::chaos {

struct LoadOptions {
  // The cluster's nodes, by index; they must outlive the load (a killed node stays listed:
  // the clients do not know it is gone).
  std::vector<const ServerProcess*> nodes;
  int clients = 4;
  // A node index never sent to (a paused node the test wants to leave alone), or -1.
  int avoid_node = -1;
  // The first letters of the clients' keys: their tablets are the ones written.
  std::string key_prefixes = "bdfhjlnprtvx";
  bool counters = true;
  std::string register_key;  // empty: no register client
  std::chrono::milliseconds budget{10'000};
  std::chrono::milliseconds attempt_timeout{2'000};
  std::chrono::milliseconds max_duration{60'000};
  int64_t max_requests_per_client = 100'000;
};

struct LoadTotals {
  int64_t requests = 0;
  int64_t failed = 0;     // not answered within the budget, or refused for good
  int64_t ambiguous = 0;  // increments that may or may not have run
  int64_t stale_reads = 0;
  int64_t acked_keys = 0;
  int64_t register_writes = 0;
  double longest_stall_s = 0;  // the longest a request took, retries included
  std::string longest_stall_what;
  std::vector<std::string> errors;  // the first few unexpected outcomes, with their messages

  double SuccessRate() const {
    return requests == 0 ? 0 : 1.0 - static_cast<double>(failed + ambiguous) / requests;
  }
};

class ChaosLoad {
 public:
  explicit ChaosLoad(LoadOptions options);
  ~ChaosLoad();  // stops the clients
  ChaosLoad(const ChaosLoad&) = delete;
  ChaosLoad& operator=(const ChaosLoad&) = delete;

  void Start();
  void Stop();
  LoadTotals Totals() const;

  // Scans table r through each node of `nodes` (indexes into LoadOptions::nodes) with
  // `app_profile`, each scan retried within the budget, and counts the acknowledged keys
  // (and the register's last acknowledged value) missing or different there, summed over the
  // nodes; a node whose scan fails counts every key. Missing keys are printed unless `quiet`.
  int64_t CheckAcknowledgedKeys(const std::vector<int>& nodes, const std::string& app_profile,
                                bool quiet = false);

  // Reads each counter through every node of `nodes` and checks: every node reads the same
  // value, in [acknowledged, acknowledged + ambiguous] increments, and the values returned to
  // acknowledged increments are distinct and at most it. Returns a JSON object of the counts
  // per counter; what failed is in CounterFailures().
  std::string CheckCounters(const std::vector<int>& nodes);
  const std::string& CounterFailures() const { return counter_failures_; }

 private:
  struct Client;
  void Run(Client* c);

  const LoadOptions options_;
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<std::thread> threads_;
  std::string counter_failures_;
};

}  // namespace tessera::integration::chaos
