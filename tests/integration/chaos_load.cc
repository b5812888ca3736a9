#include "chaos_load.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include "bigtable_calls.h"
#include "absl/strings/numbers.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "tessera/util/status.h"

namespace tessera::integration::chaos {

namespace v2 = ::google::bigtable::v2;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr const char* kCounters[] = {"c-counter", "p-counter", "x-counter"};  // both tablets
constexpr size_t kMaxErrors = 12;

enum class Outcome { kOk, kRetry, kAmbiguous, kFailed };

bool Contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

// Whether a failed non-idempotent call certainly did not run. The server says so by leaving
// out "may have been applied"; gRPC's own UNAVAILABLE may be a refused connection (nothing
// sent) or a connection that broke under the call (it may have run).
bool NothingRan(const grpc::Status& s) {
  const std::string& m = s.error_message();
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE || Contains(m, "may have been applied")) {
    return false;
  }
  if (Contains(m, "failed to connect") || Contains(m, "Connection refused")) return true;
  return !(Contains(m, "Socket closed") || Contains(m, "reset") || Contains(m, "GOAWAY") ||
           Contains(m, "Broken pipe") || Contains(m, "EOF") || Contains(m, "Cancelled"));
}

int64_t DecodeBigEndian(const std::string& bytes) {
  uint64_t v = 0;
  for (unsigned char c : bytes) v = v << 8 | c;
  return static_cast<int64_t>(v);
}

std::string ValueOf(const std::string& key) { return StrCat("v", key); }

}  // namespace

struct ChaosLoad::Client {
  int id = 0;
  std::vector<std::unique_ptr<v2::Bigtable::Stub>> stubs;  // by node index
  std::mt19937_64 random;
  size_t next_node = 0;
  int64_t next_key = 0;
  // Results: this client's thread alone writes them until Stop() joins it.
  LoadTotals totals;
  std::vector<std::string> acked;  // keys acknowledged, value ValueOf(key)
  std::map<std::string, int64_t> increments_acked, increments_ambiguous;
  std::map<std::string, std::vector<int64_t>> returned;  // by acknowledged increments
  int64_t register_acked = -1;                           // the last acknowledged value
  bool register_settled = true;  // no write attempted after register_acked
};

ChaosLoad::ChaosLoad(LoadOptions options) : options_(std::move(options)) {
  for (int i = 0; i < options_.clients; ++i) {
    auto c = std::make_unique<Client>();
    c->id = i;
    c->random.seed(0x5eed + i);
    c->next_node = static_cast<size_t>(i);
    for (const ServerProcess* n : options_.nodes) {
      c->stubs.push_back(v2::Bigtable::NewStub(n->NewChannel()));
    }
    clients_.push_back(std::move(c));
  }
}

ChaosLoad::~ChaosLoad() { Stop(); }

void ChaosLoad::Start() {
  for (auto& c : clients_) threads_.emplace_back([this, c = c.get()] { Run(c); });
}

void ChaosLoad::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

LoadTotals ChaosLoad::Totals() const {
  LoadTotals all;
  for (const auto& c : clients_) {
    const LoadTotals& t = c->totals;
    all.requests += t.requests;
    all.failed += t.failed;
    all.ambiguous += t.ambiguous;
    all.stale_reads += t.stale_reads;
    all.register_writes += t.register_writes;
    all.acked_keys += static_cast<int64_t>(c->acked.size());
    if (t.longest_stall_s > all.longest_stall_s) {
      all.longest_stall_s = t.longest_stall_s;
      all.longest_stall_what = t.longest_stall_what;
    }
    for (const std::string& e : t.errors) {
      if (all.errors.size() < kMaxErrors) all.errors.push_back(StrCat("client ", c->id, ": ", e));
    }
  }
  return all;
}

void ChaosLoad::Run(Client* c) {
  const size_t n_nodes = c->stubs.size();
  auto note = [c](std::string what) {
    if (c->totals.errors.size() < kMaxErrors) c->totals.errors.push_back(std::move(what));
  };
  // The request loop of the Bigtable clients: `attempt(stub, timeout)` through the next node,
  // then the next on kRetry, with backoff, within the budget.
  auto request = [&](const std::string& what, auto attempt) {
    const auto start = Clock::now();
    auto delay = milliseconds(20);
    Outcome out = Outcome::kRetry;
    int attempts = 0;
    for (;;) {
      size_t node = c->next_node++ % n_nodes;
      if (static_cast<int>(node) == options_.avoid_node) node = c->next_node++ % n_nodes;
      const auto left = options_.budget - std::chrono::duration_cast<milliseconds>(
                                              Clock::now() - start);
      if (left <= milliseconds(0)) break;
      ++attempts;
      out = attempt(*c->stubs[node], std::min(left, options_.attempt_timeout));
      if (out != Outcome::kRetry) break;
      const auto jitter = milliseconds(c->random() % (delay.count() / 2 + 1));
      if (Clock::now() - start + delay + jitter >= options_.budget) break;
      std::this_thread::sleep_for(delay + jitter);
      delay = std::min(delay * 2, milliseconds(500));
    }
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    ++c->totals.requests;
    if (out == Outcome::kRetry || out == Outcome::kFailed) ++c->totals.failed;
    if (out == Outcome::kAmbiguous) ++c->totals.ambiguous;
    if (took > c->totals.longest_stall_s) {
      c->totals.longest_stall_s = took;
      c->totals.longest_stall_what =
          StrCat(what, ": ", attempts, " attempts, ", took, " s, ",
                 out == Outcome::kOk ? "answered" : "not answered");
    }
    return out;
  };
  // An idempotent call's outcome.
  auto idempotent = [&](const std::string& what, const grpc::Status& s) {
    if (s.ok()) return Outcome::kOk;
    if (Retryable(s)) return Outcome::kRetry;
    note(StrCat(what, ": ", static_cast<int>(s.error_code()), " ", s.error_message()));
    return Outcome::kFailed;
  };
  auto new_key = [&] {
    const std::string& p = options_.key_prefixes;
    const int64_t k = c->next_key++;
    return StrCat(std::string(1, p[static_cast<size_t>(k) % p.size()]), "/c", c->id, "/", k);
  };

  auto mutate = [&] {
    const std::string key = new_key();
    if (request(StrCat("MutateRow ", key), [&](v2::Bigtable::Stub& stub, milliseconds t) {
          return idempotent(StrCat("MutateRow ", key), WriteRow(stub, key, ValueOf(key), "", t));
        }) == Outcome::kOk) {
      c->acked.push_back(key);
    }
  };

  auto mutate_rows = [&] {
    std::vector<std::string> pending(3 + c->random() % 3);
    for (std::string& k : pending) k = new_key();
    const std::string what = StrCat("MutateRows ", pending.front(), "..");
    request(what, [&](v2::Bigtable::Stub& stub, milliseconds t) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + t);
      v2::MutateRowsRequest req;
      req.set_table_name(kTableName);
      for (const std::string& key : pending) {
        auto* e = req.add_entries();
        e->set_row_key(key);
        auto* set = e->add_mutations()->mutable_set_cell();
        set->set_family_name("cf");
        set->set_column_qualifier("q");
        set->set_timestamp_micros(1000);
        set->set_value(ValueOf(key));
      }
      auto reader = stub.MutateRows(&ctx, req);
      v2::MutateRowsResponse resp;
      std::set<int64_t> done, refused;
      while (reader->Read(&resp)) {
        for (const auto& e : resp.entries()) {
          if (e.index() < 0 || e.index() >= static_cast<int64_t>(pending.size())) continue;
          const auto code = static_cast<grpc::StatusCode>(e.status().code());
          if (code == grpc::StatusCode::OK) {
            done.insert(e.index());
          } else if (!Retryable(grpc::Status(code, ""))) {
            note(StrCat(what, " entry ", pending[e.index()], ": ", e.status().message()));
            refused.insert(e.index());
          }
        }
      }
      const grpc::Status s = reader->Finish();
      std::vector<std::string> left;
      for (size_t i = 0; i < pending.size(); ++i) {
        if (done.count(static_cast<int64_t>(i)) != 0) {
          c->acked.push_back(pending[i]);
        } else if (refused.count(static_cast<int64_t>(i)) == 0) {
          left.push_back(pending[i]);
        }
      }
      pending = std::move(left);
      if (!refused.empty()) return Outcome::kFailed;
      if (pending.empty()) return Outcome::kOk;
      if (!s.ok() && !Retryable(s)) return idempotent(what, s);
      return Outcome::kRetry;
    });
  };

  auto increment = [&] {
    const std::string row = kCounters[c->random() % std::size(kCounters)];
    int64_t value = 0;
    const Outcome out = request(StrCat("ReadModifyWriteRow ", row), [&](v2::Bigtable::Stub& stub,
                                                                         milliseconds t) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + t);
      v2::ReadModifyWriteRowRequest req;
      req.set_table_name(kTableName);
      req.set_row_key(row);
      auto* rule = req.add_rules();
      rule->set_family_name("cf");
      rule->set_column_qualifier("n");
      rule->set_increment_amount(1);
      v2::ReadModifyWriteRowResponse resp;
      const grpc::Status s = stub.ReadModifyWriteRow(&ctx, req, &resp);
      if (s.ok()) {
        if (resp.row().families_size() == 1 && resp.row().families(0).columns_size() == 1 &&
            resp.row().families(0).columns(0).cells_size() == 1) {
          value = DecodeBigEndian(resp.row().families(0).columns(0).cells(0).value());
        } else {
          note(StrCat("ReadModifyWriteRow ", row, " answered ", resp.ShortDebugString()));
        }
        return Outcome::kOk;
      }
      if (NothingRan(s)) return Outcome::kRetry;
      if (Retryable(s)) {
        note(StrCat("ambiguous ReadModifyWriteRow ", row, ": ", static_cast<int>(s.error_code()), " ",
                    s.error_message()));
        return Outcome::kAmbiguous;
      }
      note(StrCat("ReadModifyWriteRow ", row, ": ", static_cast<int>(s.error_code()), " ", s.error_message()));
      return Outcome::kFailed;
    });
    if (out == Outcome::kOk) {
      ++c->increments_acked[row];
      c->returned[row].push_back(value);
    } else if (out == Outcome::kAmbiguous) {
      ++c->increments_ambiguous[row];
    }
  };

  // A read that failed, as a retryable (idempotent) call's outcome.
  auto read_failed = [&](const std::string& key, const Status& status) {
    return idempotent(StrCat("ReadRows ", key),
                      grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                                   std::string(status.message())));
  };

  auto read_acked = [&] {
    if (c->acked.empty()) return mutate();
    const std::string key = c->acked[c->random() % c->acked.size()];
    request(StrCat("ReadRows ", key), [&](v2::Bigtable::Stub& stub, milliseconds t) {
      StatusOr<std::string> v = ReadRow(stub, key, "", t);
      if (!v.ok()) return read_failed(key, v.status());
      if (*v != ValueOf(key)) {
        ++c->totals.stale_reads;
        note(StrCat("stale read of acknowledged ", key, ": \"", *v, "\""));
      }
      return Outcome::kOk;
    });
  };

  auto write_register = [&] {
    const int64_t value = c->register_acked + 1;
    c->register_settled = false;
    const std::string text = StrCat(value);
    const std::string& key = options_.register_key;
    if (request(StrCat("MutateRow ", key, "=", value), [&](v2::Bigtable::Stub& stub,
                                                           milliseconds t) {
          return idempotent(StrCat("MutateRow ", key), WriteRow(stub, key, text, "", t));
        }) != Outcome::kOk) {
      return;
    }
    c->register_acked = value;
    c->register_settled = true;
    ++c->totals.register_writes;
    request(StrCat("ReadRows ", key), [&](v2::Bigtable::Stub& stub, milliseconds t) {
      StatusOr<std::string> v = ReadRow(stub, key, "", t);
      if (!v.ok()) return read_failed(key, v.status());
      int64_t read = -1;
      if (!absl::SimpleAtoi(*v, &read) || read < value) {
        ++c->totals.stale_reads;
        note(StrCat("register ", key, " read \"", *v, "\" after ", value, " was acknowledged"));
      }
      return Outcome::kOk;
    });
  };

  const auto end = Clock::now() + options_.max_duration;
  for (int64_t n = 0; !stop_ && n < options_.max_requests_per_client && Clock::now() < end; ++n) {
    if (!options_.register_key.empty() && c->id == 0) {
      write_register();
      continue;
    }
    switch (n % 8) {
      case 3: mutate_rows(); break;
      case 4: options_.counters ? increment() : mutate(); break;
      case 5:
      case 6: read_acked(); break;
      default: mutate(); break;
    }
  }
}

int64_t ChaosLoad::CheckAcknowledgedKeys(const std::vector<int>& nodes,
                                         const std::string& app_profile, bool quiet) {
  std::map<std::string, std::string> expected;
  for (const auto& c : clients_) {
    for (const std::string& key : c->acked) expected[key] = ValueOf(key);
    if (!options_.register_key.empty() && c->id == 0 && c->register_acked >= 0 &&
        c->register_settled) {
      expected[options_.register_key] = StrCat(c->register_acked);
    }
  }
  int64_t missing = 0;
  for (int i : nodes) {
    auto stub = v2::Bigtable::NewStub(options_.nodes[i]->NewChannel());
    v2::ReadRowsRequest req;
    req.set_table_name(kTableName);
    req.set_app_profile_id(app_profile);
    std::vector<model::Row> rows;
    Status s;
    const auto start = Clock::now();
    auto delay = milliseconds(50);
    do {
      rows.clear();
      s = ReadAllRows(stub.get(), req, &rows, milliseconds(5000));
      if (s.ok() || (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s))) break;
      std::this_thread::sleep_for(delay);
      delay = std::min(delay * 2, milliseconds(1000));
    } while (Clock::now() - start < options_.budget);
    if (!s.ok()) {
      if (!quiet) std::printf("[ chaos ] scan through node %d failed: %s\n", i, s.ToString().c_str());
      missing += static_cast<int64_t>(expected.size());
      continue;
    }
    std::map<std::string, std::string> found;
    for (const model::Row& r : rows) {
      for (const model::Cell& cell : r.cells) {
        if (cell.qualifier == "q") found[r.key] = cell.value;
      }
    }
    int64_t here = 0;
    for (const auto& [key, value] : expected) {
      auto it = found.find(key);
      if (it != found.end() && it->second == value) continue;
      if (!quiet && here < 10) {
        std::printf("[ chaos ] acknowledged %s=%s reads %s through node %d\n", key.c_str(),
                    value.c_str(), it == found.end() ? "nothing" : it->second.c_str(), i);
      }
      ++here;
    }
    missing += here;
  }
  return missing;
}

std::string ChaosLoad::CheckCounters(const std::vector<int>& nodes) {
  std::string json = "{";
  for (const char* row : kCounters) {
    int64_t acked = 0, ambiguous = 0;
    std::vector<int64_t> returned;
    for (const auto& c : clients_) {
      acked += c->increments_acked[row];
      ambiguous += c->increments_ambiguous[row];
      returned.insert(returned.end(), c->returned[row].begin(), c->returned[row].end());
    }
    std::sort(returned.begin(), returned.end());
    if (std::adjacent_find(returned.begin(), returned.end()) != returned.end()) {
      counter_failures_ += StrCat(row, ": two acknowledged increments returned one value; ");
    }
    std::set<int64_t> values;
    for (int i : nodes) {
      auto stub = v2::Bigtable::NewStub(options_.nodes[i]->NewChannel());
      StatusOr<std::string> v = absl::UnavailableError("not read");
      const auto start = Clock::now();
      while (Clock::now() - start < options_.budget) {
        v = ReadRow(*stub, row);
        if (v.ok()) break;
        std::this_thread::sleep_for(milliseconds(100));
      }
      if (!v.ok()) {
        counter_failures_ += StrCat(row, " through node ", i, ": ", v.status().ToString(), "; ");
        continue;
      }
      values.insert(v->empty() ? 0 : DecodeBigEndian(*v));
    }
    const int64_t value = values.empty() ? -1 : *values.begin();
    if (values.size() > 1) counter_failures_ += StrCat(row, ": nodes read different values; ");
    if (value < acked || value > acked + ambiguous) {
      counter_failures_ += StrCat(row, " = ", value, ", acknowledged ", acked, " ambiguous ",
                                  ambiguous, "; ");
    }
    if (!returned.empty() && returned.back() > value) {
      counter_failures_ += StrCat(row, ": an increment returned ", returned.back(),
                                  " above the final ", value, "; ");
    }
    json += StrCat(json.size() > 1 ? "," : "", "\"", row, "\":{\"value\":", value,
                   ",\"acked\":", acked, ",\"ambiguous\":", ambiguous, "}");
  }
  return json + "}";
}

}  // namespace tessera::integration::chaos
