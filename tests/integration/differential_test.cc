// Differential test: one seeded random sequence of Bigtable operations is sent to `tessera
// serve` and to the official emulator (cbtemulator), and every answer is compared: MutateRow,
// MutateRows (per-entry statuses), ReadRows with random row sets, limits, reversed scans and
// filters (rows and cells; now and then a value over 1 MiB), CheckAndMutateRow
// (predicate_matched), ReadModifyWriteRow (the new cells), DropRowRange by prefix, dropping
// and re-creating a family, a few invalid requests (status codes), and the whole table every
// 100 operations and at the end.
//
//   differential_test --tessera=<tessera binary> --emulator=<cbtemulator> [gtest flags]
//   TESSERA_SEED=<n>   replay a seed (printed at the start and on failure)
//   TESSERA_DIFF_OPS=<n>  number of operations (default 2000)
//   TESSERA_DIFF_VERBOSE=1  print every operation
// Exits 77 (skipped) when the emulator is not installed.
//
// The generator produces only requests whose answer the API defines. Where the emulator is
// known to be wrong against the API's contract (bigtable-api.md), the request shapes that
// would expose it are either not generated or compared loosely; each such place is marked
// "EMULATOR EXCEPTION" below with the reference:
//   1. cells_per_row_limit/offset over cells of several families: the emulator walks families
//      in Go map order, nondeterministically (§5.4, §6.6) -> generated only after a filter
//      that keeps a single family.
//   2. strip_value_transformer drops labels in the emulator (§5.4) -> labels and strip are
//      never generated in the same request.
//   3. ReadModifyWriteRow increment of a value that is not 8 bytes: the emulator answers
//      UNKNOWN; the API's answer is INVALID_ARGUMENT or FAILED_PRECONDITION (§5.5) -> both must
//      fail, tessera with one of those two codes.
//   4. Unknown families (UNKNOWN / per-entry INTERNAL in the emulator, NOT_FOUND per the API,
//      §5.3, §5.7), sink and value_bitmask (ignored by the emulator, §5.4, §6.8) and
//      row_sample (random) are not generated. Reversed scans are, with the `bigtable-features`
//      header the emulator requires for them (§4) sent to both servers.
//   5. ReadModifyWriteRow: the emulator keeps the effect of the rules before a failing one
//      (the call is atomic, §5.5) -> a request predicted to fail is cut to its failing rule.
//   6. Filter arguments (a bad regex) are checked only when a row reaches the filter: an
//      empty table answers OK (§5.4, §5.7) -> invalid requests are sent to a non-empty table.
// Not emulator errors but unspecified by the API, so normalized: the order of families inside
// a row (§5.1 item 10) and the mutual order of duplicate cells from an interleave (§5.4);
// ReadModifyWriteRow's cell timestamps come from each server's clock (§5.5), so after each one
// both servers get the same rewrite of the modified columns to a fixed timestamp; MutateRows
// entries for the same row apply in any order (§5.3), so one request never repeats a row.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "google/protobuf/empty.pb.h"
#include "server_process.h"
#include "tessera/util/coding.h"

namespace tessera::integration {
namespace {

namespace btv2 = ::google::bigtable::v2;
namespace btadmin = ::google::bigtable::admin::v2;

std::string g_tessera_binary;
std::string g_emulator_binary;

// --tessera=<a cbtemulator>: the emulator against itself, which checks that the generator
// only produces requests with one defined answer. Tessera-only checks are off then.
bool SelfCheck() { return g_tessera_binary.find("cbtemulator") != std::string::npos; }

constexpr char kTable[] = "diff";
constexpr int64_t kCanonicalTimestamp = 50'000;  // where RMW results are rewritten (µs)

const std::vector<std::string> kRowKeys = {
    "a", "b", "ba", "bb", "bba", "c", std::string("c\0", 2), "c\x01", "d", "e",
    "ea", "eb", "f", "g", "z\xff", "zz"};
const std::vector<std::string> kFamilies = {"f1", "f2", "f3"};
const std::vector<std::string> kQualifiers = {"a", "b", "c", "ab", "", "n", "s"};

std::string BigEndian(int64_t v) { return BigEndian64String(static_cast<uint64_t>(v)); }

const std::vector<std::string> kValues = {
    "", "v", "va", "vb", "x", "hello", "hi", std::string("\0\x01", 2), BigEndian(1),
    BigEndian(-5), BigEndian(1000)};
// Now and then a value larger than a ReadRows chunk, so tessera splits it over chunks.
const std::string kBigValue = "big:" + std::string(1'300'000, 'q');

// A message as text for logs, cut to a readable length (values can be a megabyte).
std::string Text(const google::protobuf::Message& message) {
  std::string text = message.ShortDebugString();
  if (text.size() > 3000) text = StrCat(text.substr(0, 3000), "...(", text.size(), " chars)");
  return text;
}

// ---- the two servers ----

struct Backend {
  std::string name;
  std::unique_ptr<ServerProcess> process;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<btv2::Bigtable::Stub> data;
  std::unique_ptr<btadmin::BigtableTableAdmin::Stub> admin;
};

template <typename Request>
void SetTable(Request* request) {
  request->set_table_name(TableName(kTable));
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

// ---- answers, normalized for comparison ----

using NormalCell = std::tuple<std::string, std::string, int64_t, std::string,
                              std::vector<std::string>>;  // family, qualifier, ts, value, labels

std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (out.size() > 200) {
      out += StrCat("...(", bytes.size(), " bytes)");
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// Checks the order rules inside one row (cells of a family together, qualifiers ascending,
// timestamps descending within a column); returns a description of the first violation.
std::optional<std::string> RowOrderProblem(const client::Row& row) {
  std::vector<std::string> seen_families;
  for (size_t i = 0; i < row.cells.size(); ++i) {
    const client::Cell& c = row.cells[i];
    if (i == 0 || c.family != row.cells[i - 1].family) {
      if (std::find(seen_families.begin(), seen_families.end(), c.family) !=
          seen_families.end()) {
        return StrCat("row ", Printable(row.key), ": family ", c.family, " comes in two runs");
      }
      seen_families.push_back(c.family);
      continue;
    }
    const client::Cell& p = row.cells[i - 1];
    if (c.qualifier < p.qualifier) {
      return StrCat("row ", Printable(row.key), ": qualifier ", Printable(c.qualifier),
                    " after ", Printable(p.qualifier));
    }
    if (c.qualifier == p.qualifier && c.timestamp_micros > p.timestamp_micros) {
      return StrCat("row ", Printable(row.key), " column ", c.family, ":",
                    Printable(c.qualifier), ": timestamp ", c.timestamp_micros, " after ",
                    p.timestamp_micros);
    }
  }
  return std::nullopt;
}

struct NormalRow {
  std::string key;
  std::vector<NormalCell> cells;
  bool operator==(const NormalRow&) const = default;
};

std::vector<NormalRow> Normalize(const std::vector<client::Row>& rows) {
  std::vector<NormalRow> out;
  for (const client::Row& row : rows) {
    NormalRow n{row.key, {}};
    for (const client::Cell& c : row.cells) {
      std::vector<std::string> labels = c.labels;
      std::sort(labels.begin(), labels.end());
      n.cells.emplace_back(c.family, c.qualifier, c.timestamp_micros, c.value, labels);
    }
    std::sort(n.cells.begin(), n.cells.end(), [](const NormalCell& a, const NormalCell& b) {
      // family, qualifier ascending; timestamp descending; then value, labels.
      return std::make_tuple(std::get<0>(a), std::get<1>(a), -std::get<2>(a), std::get<3>(a),
                             std::get<4>(a)) < std::make_tuple(std::get<0>(b), std::get<1>(b),
                                                               -std::get<2>(b), std::get<3>(b),
                                                               std::get<4>(b));
    });
    out.push_back(std::move(n));
  }
  return out;
}

std::string Describe(const std::vector<NormalRow>& rows) {
  std::string out;
  for (const NormalRow& r : rows) {
    out += StrCat("  ", Printable(r.key), "\n");
    for (const NormalCell& c : r.cells) {
      out += StrCat("    ", std::get<0>(c), ":", Printable(std::get<1>(c)), " @", std::get<2>(c),
                    " = \"", Printable(std::get<3>(c)), "\"");
      for (const std::string& l : std::get<4>(c)) out += StrCat(" [", l, "]");
      out += "\n";
    }
  }
  if (rows.empty()) out = "  (no rows)\n";
  return out;
}

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

// ---- the generator ----

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  size_t Uniform(size_t n) { return static_cast<size_t>(rng_() % n); }
  bool OneIn(size_t n) { return Uniform(n) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Uniform(v.size())];
  }

  const std::string& RowKey() { return Pick(kRowKeys); }
  const std::string& Family() { return Pick(kFamilies); }
  const std::string& Qualifier() { return Pick(kQualifiers); }
  const std::string& Value() { return Pick(kValues); }
  // Milliseconds 0..20 as microseconds: the table's granularity is MILLIS.
  int64_t Timestamp() { return static_cast<int64_t>(Uniform(21)) * 1000; }

  btv2::TimestampRange TimeRange() {
    btv2::TimestampRange range;
    int64_t start = OneIn(3) ? 0 : Timestamp();
    range.set_start_timestamp_micros(start);
    if (!OneIn(3)) {  // else end 0 = infinity
      int64_t end = start + 1000 * static_cast<int64_t>(1 + Uniform(8));
      range.set_end_timestamp_micros(end);
    }
    return range;
  }

  btv2::Mutation Mutation() {
    btv2::Mutation m;
    size_t kind = Uniform(20);
    if (kind < 13) {
      auto* set = m.mutable_set_cell();
      set->set_family_name(Family());
      set->set_column_qualifier(Qualifier());
      set->set_timestamp_micros(Timestamp());
      set->set_value(OneIn(150) ? kBigValue : Value());
    } else if (kind < 17) {
      auto* del = m.mutable_delete_from_column();
      del->set_family_name(Family());
      del->set_column_qualifier(Qualifier());
      if (OneIn(2)) *del->mutable_time_range() = TimeRange();
    } else if (kind < 19) {
      m.mutable_delete_from_family()->set_family_name(Family());
    } else {
      m.mutable_delete_from_row();
    }
    return m;
  }

  void Mutations(google::protobuf::RepeatedPtrField<btv2::Mutation>* out, size_t min,
                 size_t max) {
    size_t n = min + Uniform(max - min + 1);
    for (size_t i = 0; i < n; ++i) *out->Add() = Mutation();
  }

  btv2::RowSet RowSet() {
    btv2::RowSet set;
    if (OneIn(4)) return set;  // the whole table
    size_t nkeys = Uniform(4);
    for (size_t i = 0; i < nkeys; ++i) {
      set.add_row_keys(OneIn(5) ? "nosuch" : RowKey());  // duplicates allowed
    }
    size_t nranges = Uniform(3);
    if (nkeys == 0 && nranges == 0) nranges = 1;
    for (size_t i = 0; i < nranges; ++i) *set.add_row_ranges() = RowRange();
    return set;
  }

  btv2::RowRange RowRange() {
    btv2::RowRange range;
    std::string a = RowKey(), b = RowKey();
    if (b < a) std::swap(a, b);
    size_t start_kind = Uniform(3);  // none, closed, open
    size_t end_kind = Uniform(3);    // none, open, closed
    if (a == b && start_kind != 0 && end_kind != 0) {
      // Equal bounds: only [k, k] is a non-empty, valid range; [k, k) is empty but valid too.
      range.set_start_key_closed(a);
      if (OneIn(2)) {
        range.set_end_key_closed(b);
      } else {
        range.set_end_key_open(b);
      }
      return range;
    }
    if (start_kind == 1) range.set_start_key_closed(a);
    if (start_kind == 2) range.set_start_key_open(a);
    if (end_kind == 1) range.set_end_key_open(b);
    if (end_kind == 2) range.set_end_key_closed(b);
    return range;
  }

  struct FilterContext {
    bool allow_strip = true;
  };

  btv2::RowFilter Filter(int depth, const FilterContext& ctx) {
    btv2::RowFilter f;
    size_t kind = Uniform(depth > 0 ? 20 : 15);
    switch (kind) {
      case 0:
        f.set_row_key_regex_filter(
            Pick<std::string>({"a", "b.*", "[a-c].*", ".*a", "z.*", ".*", "(a|ba|c)", "e[ab]?"}));
        break;
      case 1:
        f.set_family_name_regex_filter(Pick<std::string>({"f1", "f[12]", "f.*", "f3", "f2|f3"}));
        break;
      case 2:
        f.set_column_qualifier_regex_filter(
            Pick<std::string>({"a", "b", "a.*", "[bc]", ".*", "n|s", "ab?"}));
        break;
      case 3: {
        auto* r = f.mutable_column_range_filter();
        r->set_family_name(Family());
        std::string a = Qualifier(), b = Qualifier();
        if (b < a) std::swap(a, b);
        size_t sk = Uniform(3), ek = Uniform(3);
        if (a == b && sk != 0 && ek != 0) {
          r->set_start_qualifier_closed(a);
          r->set_end_qualifier_closed(b);
          break;
        }
        if (sk == 1) r->set_start_qualifier_closed(a);
        if (sk == 2) r->set_start_qualifier_open(a);
        if (ek == 1) r->set_end_qualifier_open(b);
        if (ek == 2) r->set_end_qualifier_closed(b);
        break;
      }
      case 4:
        *f.mutable_timestamp_range_filter() = TimeRange();
        break;
      case 5:
        f.set_value_regex_filter(Pick<std::string>({"v.*", "v", "hello", ".*", "x|va", "h.*"}));
        break;
      case 6: {
        auto* r = f.mutable_value_range_filter();
        std::string a = Value(), b = Value();
        if (b < a) std::swap(a, b);
        size_t sk = Uniform(3), ek = Uniform(3);
        if (a == b && sk != 0 && ek != 0) {
          r->set_start_value_closed(a);
          r->set_end_value_closed(b);
          break;
        }
        if (sk == 1) r->set_start_value_closed(a);
        if (sk == 2) r->set_start_value_open(a);
        if (ek == 1) r->set_end_value_open(b);
        if (ek == 2) r->set_end_value_closed(b);
        break;
      }
      case 7:
        f.set_cells_per_column_limit_filter(static_cast<int32_t>(1 + Uniform(3)));
        break;
      case 8:
        if (ctx.allow_strip) {
          f.set_strip_value_transformer(true);
        } else {
          f.set_pass_all_filter(true);
        }
        break;
      case 9:
        f.set_pass_all_filter(true);
        break;
      case 10:
        f.set_block_all_filter(true);
        break;
      case 11:
      case 12: {
        // EMULATOR EXCEPTION 1: per-row cell counting only over a single family.
        auto* chain = f.mutable_chain();
        chain->add_filters()->set_family_name_regex_filter(Family());
        if (OneIn(2)) *chain->add_filters() = Filter(0, ctx);
        if (kind == 11) {
          chain->add_filters()->set_cells_per_row_limit_filter(
              static_cast<int32_t>(1 + Uniform(4)));
        } else {
          chain->add_filters()->set_cells_per_row_offset_filter(
              static_cast<int32_t>(Uniform(4)));
        }
        break;
      }
      case 13:
      case 14:
        f.set_column_qualifier_regex_filter(Qualifier().empty() ? "a" : Qualifier());
        break;
      case 15:
      case 16: {
        auto* chain = f.mutable_chain();
        size_t n = 2 + Uniform(2);
        for (size_t i = 0; i < n; ++i) *chain->add_filters() = Filter(depth - 1, ctx);
        break;
      }
      case 17:
      case 18: {
        auto* inter = f.mutable_interleave();
        size_t n = 2 + Uniform(2);
        for (size_t i = 0; i < n; ++i) *inter->add_filters() = Filter(depth - 1, ctx);
        break;
      }
      default: {
        auto* cond = f.mutable_condition();
        *cond->mutable_predicate_filter() = Filter(depth - 1, ctx);
        if (!OneIn(4)) *cond->mutable_true_filter() = Filter(depth - 1, ctx);
        if (!OneIn(4)) *cond->mutable_false_filter() = Filter(depth - 1, ctx);
        break;
      }
    }
    return f;
  }

  // A filter for a ReadRows request: sometimes none, sometimes labelled branches.
  std::optional<btv2::RowFilter> ReadFilter() {
    if (OneIn(4)) return std::nullopt;
    if (OneIn(6)) {
      // EMULATOR EXCEPTION 2: labels only without strip_value_transformer. One label per cell:
      // each interleave branch labels its own copy.
      FilterContext no_strip{false};
      btv2::RowFilter f;
      auto* inter = f.mutable_interleave();
      size_t n = 2 + Uniform(2);
      for (size_t i = 0; i < n; ++i) {
        auto* chain = inter->add_filters()->mutable_chain();
        *chain->add_filters() = Filter(1, no_strip);
        chain->add_filters()->set_apply_label_transformer(StrCat("l", i));
      }
      return f;
    }
    return Filter(static_cast<int>(Uniform(4)), FilterContext{});
  }

 private:
  std::mt19937_64 rng_;
};

// ---- the test ----

class DifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* seed_env = std::getenv("TESSERA_SEED");
    seed_ = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10)
                                : static_cast<uint64_t>(
                                      std::chrono::system_clock::now().time_since_epoch().count());
    const char* ops_env = std::getenv("TESSERA_DIFF_OPS");
    ops_ = ops_env != nullptr ? std::max(1, std::atoi(ops_env)) : 2000;
    verbose_ = std::getenv("TESSERA_DIFF_VERBOSE") != nullptr;
    std::printf("differential_test: seed %llu (replay with TESSERA_SEED=%llu), %d operations\n",
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_),
                ops_);
    std::fflush(stdout);

    dir_ = std::make_unique<TempDir>("tessera-differential");
    auto tessera = SelfCheck()
                       ? ServerProcess::StartEmulator(g_tessera_binary, dir_->path())
                       // Durability is the kill -9 test's business; periodic sync keeps
                       // this run fast.
                       : ServerProcess::StartTessera(g_tessera_binary, dir_->path() + "/data",
                                                     {"--sync", "periodic"});
    ASSERT_TRUE(tessera.ok()) << tessera.status();
    auto emulator = ServerProcess::StartEmulator(g_emulator_binary, dir_->path());
    ASSERT_TRUE(emulator.ok()) << emulator.status();
    backends_[0].name = "tessera";
    backends_[0].process = std::move(*tessera);
    backends_[1].name = "emulator";
    backends_[1].process = std::move(*emulator);
    for (Backend& b : backends_) {
      b.channel = b.process->NewChannel();
      b.data = btv2::Bigtable::NewStub(b.channel);
      b.admin = btadmin::BigtableTableAdmin::NewStub(b.channel);
    }
  }

  void TearDown() override {
    // Close our connections first: with an idle gRPC C++ client connected, the server's
    // shutdown waits its whole grace period (5 s) for the client to hang up.
    for (Backend& b : backends_) {
      b.data.reset();
      b.admin.reset();
      b.channel.reset();
    }
    if (backends_[0].process != nullptr && !SelfCheck()) {
      const auto stop_start = std::chrono::steady_clock::now();
      auto exit = backends_[0].process->Stop();
      const auto stop_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - stop_start)
                               .count();
      if (verbose_) {
        std::printf("tessera serve stopped in %lld ms\n", static_cast<long long>(stop_ms));
      }
      EXPECT_TRUE(exit.ok() && *exit == 0)
          << "tessera serve did not exit cleanly on SIGTERM: "
          << (exit.ok() ? StrCat("status ", *exit) : exit.status().ToString()) << "\n"
          << backends_[0].process->LogTail();
    }
    if (backends_[1].process != nullptr) backends_[1].process->Kill();
  }

  // Records a failure with the context needed to replay it; the run stops at the first one.
  void Diverged(const std::string& what) {
    std::string history;
    for (const std::string& h : history_) history += StrCat("  ", h, "\n");
    ADD_FAILURE() << "DIVERGENCE at operation " << op_ << " (seed " << seed_
                  << ", replay with TESSERA_SEED=" << seed_ << "):\n"
                  << what << "\nlast operations:\n"
                  << history << "tessera log tail:\n"
                  << backends_[0].process->LogTail(2000);
    diverged_ = true;
  }

  void Note(std::string description) {
    if (verbose_) std::printf("#%d %s\n", op_, description.c_str());
    history_.push_back(std::move(description));
    if (history_.size() > 12) history_.pop_front();
  }

  void CreateTable() {
    for (Backend& b : backends_) {
      btadmin::CreateTableRequest request;
      request.set_parent(kInstanceName);
      request.set_table_id(kTable);
      for (const std::string& f : kFamilies) {
        (*request.mutable_table()->mutable_column_families())[f].mutable_gc_rule();
      }
      request.add_initial_splits()->set_key("c");
      request.add_initial_splits()->set_key("f");
      btadmin::Table table;
      auto context = Context();
      grpc::Status s = b.admin->CreateTable(context.get(), request, &table);
      ASSERT_TRUE(s.ok()) << b.name << " CreateTable: " << s.error_message();
    }
  }

  void MutateRow(Generator& gen) {
    btv2::MutateRowRequest request;
    SetTable(&request);
    request.set_row_key(gen.RowKey());
    gen.Mutations(request.mutable_mutations(), 1, 5);
    Note(StrCat("MutateRow ", Text(request)));
    absl::StatusCode codes[2];
    for (int i = 0; i < 2; ++i) {
      btv2::MutateRowResponse response;
      auto context = Context();
      codes[i] = FromGrpc(backends_[i].data->MutateRow(context.get(), request, &response)).code();
    }
    if (codes[0] != absl::StatusCode::kOk || codes[1] != absl::StatusCode::kOk) {
      Diverged(StrCat("MutateRow (valid) answered tessera ", CodeName(codes[0]), ", emulator ",
                      CodeName(codes[1]), "\nrequest: ", Text(request)));
    }
  }

  void MutateRows(Generator& gen) {
    btv2::MutateRowsRequest request;
    SetTable(&request);
    std::vector<std::string> keys = kRowKeys;
    std::mt19937 shuffle_rng(static_cast<uint32_t>(gen.Uniform(1u << 30)));
    std::shuffle(keys.begin(), keys.end(), shuffle_rng);
    size_t n = 1 + gen.Uniform(5);
    for (size_t i = 0; i < n; ++i) {
      auto* entry = request.add_entries();
      entry->set_row_key(keys[i]);  // distinct rows: entries of one row apply in any order
      gen.Mutations(entry->mutable_mutations(), 1, 4);
    }
    Note(StrCat("MutateRows ", Text(request)));
    for (Backend& b : backends_) {
      auto context = Context();
      auto reader = b.data->MutateRows(context.get(), request);
      btv2::MutateRowsResponse response;
      std::vector<int> codes(n, -1);
      bool status_missing = false;
      while (reader->Read(&response)) {
        for (const auto& e : response.entries()) {
          if (e.index() >= 0 && static_cast<size_t>(e.index()) < n) {
            codes[e.index()] = e.status().code();
          }
          // An entry must carry its status even when OK: the Go client (cbt import) and the
          // Node client dereference it and crash on a missing one.
          if (!e.has_status()) status_missing = true;
        }
      }
      if (status_missing) {
        Diverged(StrCat("MutateRows on ", b.name, ": a response entry has no status field "
                        "(cbt import panics and the Node client throws on that)"));
        return;
      }
      grpc::Status s = reader->Finish();
      if (!s.ok()) {
        Diverged(StrCat("MutateRows (valid) failed on ", b.name, ": ", s.error_message()));
        return;
      }
      for (size_t i = 0; i < n; ++i) {
        if (codes[i] != 0) {
          Diverged(StrCat("MutateRows (valid) entry ", i, " on ", b.name,
                          codes[i] < 0 ? " got no status" : StrCat(" got code ", codes[i]),
                          "\nrequest: ", Text(request)));
          return;
        }
      }
    }
  }

  // Sends `request` to both; compares status codes and, when OK, rows.
  void CompareRead(const btv2::ReadRowsRequest& request, const std::string& what) {
    std::vector<client::Row> rows[2];
    Status status[2];
    // Both get the header the emulator needs for reversed scans (§4); tessera must accept it.
    const std::vector<std::pair<std::string, std::string>> features = {
        {kFeaturesHeader, kReverseScansFeature}};
    for (int i = 0; i < 2; ++i) {
      status[i] = ReadAllRows(backends_[i].data.get(), request, &rows[i],
                              std::chrono::seconds(30), features);
    }
    if (status[0].code() != status[1].code()) {
      Diverged(StrCat(what, ": tessera answered ", status[0].ToString(), ", emulator ",
                      status[1].ToString(), "\nrequest: ", Text(request)));
      return;
    }
    if (!status[0].ok()) {
      if (status[0].code() != absl::StatusCode::kInvalidArgument) {
        Diverged(StrCat(what, ": both failed unexpectedly: tessera ", status[0].ToString(),
                        ", emulator ", status[1].ToString(),
                        "\nrequest: ", Text(request)));
      }
      return;
    }
    for (const client::Row& row : rows[0]) {
      if (auto problem = RowOrderProblem(row)) {
        Diverged(StrCat(what, ": tessera's cell order is wrong: ", *problem,
                        "\nrequest: ", Text(request)));
        return;
      }
    }
    // Row order is part of the answer: the merger checked it is strictly increasing
    // (decreasing when reversed), and Normalize keeps it.
    std::vector<NormalRow> n0 = Normalize(rows[0]), n1 = Normalize(rows[1]);
    rows_compared_ += n0.size();
    if (!n0.empty()) ++nonempty_reads_;
    if (n0 != n1) {
      Diverged(StrCat(what, ": rows differ\nrequest: ", Text(request),
                      "\ntessera:\n", Describe(n0), "emulator:\n", Describe(n1)));
    }
  }

  void ReadRows(Generator& gen) {
    btv2::ReadRowsRequest request;
    SetTable(&request);
    *request.mutable_rows() = gen.RowSet();
    if (gen.OneIn(3)) request.set_rows_limit(static_cast<int64_t>(1 + gen.Uniform(5)));
    if (gen.OneIn(6)) request.set_reversed(true);
    if (auto f = gen.ReadFilter()) *request.mutable_filter() = *f;
    Note(StrCat("ReadRows ", Text(request)));
    CompareRead(request, "ReadRows");
  }

  void CompareWholeTable(const std::string& when) {
    btv2::ReadRowsRequest request;
    SetTable(&request);
    CompareRead(request, StrCat("whole table ", when));
    ++full_compares_;
  }

  void CheckAndMutate(Generator& gen) {
    btv2::CheckAndMutateRowRequest request;
    SetTable(&request);
    request.set_row_key(gen.RowKey());
    if (!gen.OneIn(5)) *request.mutable_predicate_filter() = gen.Filter(2, {});
    gen.Mutations(request.mutable_true_mutations(), 0, 3);
    gen.Mutations(request.mutable_false_mutations(), request.true_mutations_size() == 0 ? 1 : 0,
                  3);
    Note(StrCat("CheckAndMutateRow ", Text(request)));
    btv2::CheckAndMutateRowResponse responses[2];
    absl::StatusCode codes[2];
    for (int i = 0; i < 2; ++i) {
      auto context = Context();
      codes[i] = FromGrpc(backends_[i].data->CheckAndMutateRow(context.get(), request,
                                                                &responses[i]))
                     .code();
    }
    if (codes[0] != absl::StatusCode::kOk || codes[1] != absl::StatusCode::kOk) {
      Diverged(StrCat("CheckAndMutateRow (valid) answered tessera ", CodeName(codes[0]),
                      ", emulator ", CodeName(codes[1]), "\nrequest: ",
                      Text(request)));
      return;
    }
    if (responses[0].predicate_matched() != responses[1].predicate_matched()) {
      Diverged(StrCat("CheckAndMutateRow predicate_matched: tessera ",
                      responses[0].predicate_matched(), ", emulator ",
                      responses[1].predicate_matched(), "\nrequest: ",
                      Text(request)));
    }
  }

  void ReadModifyWrite(Generator& gen) {
    btv2::ReadModifyWriteRowRequest request;
    SetTable(&request);
    request.set_row_key(gen.RowKey());
    size_t n = 1 + gen.Uniform(3);
    for (size_t i = 0; i < n; ++i) {
      auto* rule = request.add_rules();
      rule->set_family_name(gen.Family());
      if (gen.OneIn(2)) {
        rule->set_column_qualifier(gen.OneIn(4) ? gen.Qualifier() : "s");
        rule->set_append_value(gen.Pick<std::string>({"", "x", "yz", "hello"}));
      } else {
        rule->set_column_qualifier(gen.OneIn(4) ? gen.Qualifier() : "n");
        rule->set_increment_amount(gen.Pick<int64_t>({1, -1, 7, 1000, -4000}));
      }
    }
    // EMULATOR EXCEPTION 5: the emulator applies the rules before a failing increment and
    // keeps their effect although the call fails (ReadModifyWriteRow is atomic, §5.5). So a
    // request that will fail (predicted from the row's latest cells) is cut: to its failing
    // rule alone when that rule fails on the stored value (the emulator then fails before
    // changing anything), else to the rules before it (which succeed).
    bool expect_failure = CutFailingRules(&request);
    Note(StrCat("ReadModifyWriteRow ", Text(request)));
    btv2::ReadModifyWriteRowResponse responses[2];
    Status status[2];
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    for (int i = 0; i < 2; ++i) {
      auto context = Context();
      status[i] = FromGrpc(
          backends_[i].data->ReadModifyWriteRow(context.get(), request, &responses[i]));
    }
    if (expect_failure != !status[1].ok()) {
      Diverged(StrCat("ReadModifyWriteRow: the emulator answered ", status[1].ToString(),
                      " but the test predicted ", expect_failure ? "a failure" : "success",
                      "\nrequest: ", Text(request)));
      return;
    }
    if (!status[0].ok() || !status[1].ok()) {
      // EMULATOR EXCEPTION 3: increment of a value that is not 8 bytes long.
      bool tessera_ok_code = status[0].code() == absl::StatusCode::kInvalidArgument ||
                             status[0].code() == absl::StatusCode::kFailedPrecondition;
      if (status[0].ok() || status[1].ok() || (!tessera_ok_code && !SelfCheck())) {
        Diverged(StrCat("ReadModifyWriteRow: tessera ", status[0].ToString(), ", emulator ",
                        status[1].ToString(), "\nrequest: ", Text(request)));
      }
      return;
    }
    // Cells of the answer: same columns and values; timestamps from each server's clock,
    // which must be recent and on the millisecond grid.
    std::vector<std::tuple<std::string, std::string, std::string>> cells[2];
    for (int i = 0; i < 2; ++i) {
      for (const auto& family : responses[i].row().families()) {
        for (const auto& column : family.columns()) {
          if (column.cells_size() != 1) {
            Diverged(StrCat("ReadModifyWriteRow: ", backends_[i].name, " returned ",
                            column.cells_size(), " cells for ", family.name(), ":",
                            Printable(column.qualifier()), " (one expected)"));
            return;
          }
          const auto& cell = column.cells(0);
          if (i == 0 && !SelfCheck() && (cell.timestamp_micros() % 1000 != 0 ||
                         std::abs(cell.timestamp_micros() - now_us) > 3'600'000'000LL)) {
            Diverged(StrCat("ReadModifyWriteRow: tessera's new cell has timestamp ",
                            cell.timestamp_micros(), " (now is about ", now_us, ")"));
            return;
          }
          cells[i].emplace_back(family.name(), column.qualifier(), cell.value());
        }
      }
      std::sort(cells[i].begin(), cells[i].end());
    }
    if (cells[0] != cells[1] || responses[0].row().key() != responses[1].row().key()) {
      Diverged(StrCat("ReadModifyWriteRow answers differ\nrequest: ", Text(request),
                      "\ntessera: ", Text(responses[0]),
                      "\nemulator: ", Text(responses[1])));
      return;
    }
    // Rewrite the modified columns to a fixed timestamp on both servers (see the top).
    btv2::MutateRowRequest rewrite;
    SetTable(&rewrite);
    rewrite.set_row_key(request.row_key());
    for (const auto& [family, qualifier, value] : cells[0]) {
      auto* del = rewrite.add_mutations()->mutable_delete_from_column();
      del->set_family_name(family);
      del->set_column_qualifier(qualifier);
      auto* set = rewrite.add_mutations()->mutable_set_cell();
      set->set_family_name(family);
      set->set_column_qualifier(qualifier);
      set->set_timestamp_micros(kCanonicalTimestamp);
      set->set_value(value);
    }
    for (Backend& b : backends_) {
      btv2::MutateRowResponse response;
      auto context = Context();
      grpc::Status s = b.data->MutateRow(context.get(), rewrite, &response);
      if (!s.ok()) {
        Diverged(StrCat("rewrite after ReadModifyWriteRow failed on ", b.name, ": ",
                        s.error_message()));
        return;
      }
    }
  }

  // Applies the rules of `request` in order to the row's latest cells (read from the
  // emulator) to find the first that fails (an increment of a value that is not 8 bytes), and
  // cuts the request as described in ReadModifyWrite. Returns whether it will fail.
  bool CutFailingRules(btv2::ReadModifyWriteRowRequest* request) {
    btv2::ReadRowsRequest read;
    SetTable(&read);
    read.mutable_rows()->add_row_keys(request->row_key());
    read.mutable_filter()->set_cells_per_column_limit_filter(1);
    std::vector<client::Row> rows;
    Status s = ReadAllRows(backends_[1].data.get(), read, &rows);
    if (!s.ok()) return false;  // the comparison that follows reports the trouble
    std::map<std::pair<std::string, std::string>, std::string> stored;
    for (const client::Row& row : rows) {
      for (const client::Cell& c : row.cells) stored[{c.family, c.qualifier}] = c.value;
    }
    auto latest = stored;
    for (int i = 0; i < request->rules_size(); ++i) {
      const auto& rule = request->rules(i);
      auto column = std::make_pair(rule.family_name(), rule.column_qualifier());
      auto it = latest.find(column);
      if (rule.has_append_value()) {
        latest[column] = (it == latest.end() ? "" : it->second) + rule.append_value();
        continue;
      }
      uint64_t current = 0;
      if (it != latest.end()) {
        if (it->second.size() != 8) {
          auto st = stored.find(column);
          if (st != stored.end() && st->second.size() != 8) {
            btv2::ReadModifyWriteRule failing = rule;
            request->clear_rules();
            *request->add_rules() = failing;
            return true;
          }
          // Fails only because of an append earlier in this request: keep the rules before.
          while (request->rules_size() > i) request->mutable_rules()->RemoveLast();
          return false;
        }
        for (unsigned char c : it->second) current = (current << 8) | c;
      }
      latest[column] =
          BigEndian(static_cast<int64_t>(current + static_cast<uint64_t>(rule.increment_amount())));
    }
    return false;
  }

  // Table admin that changes data: DropRowRange by a (non-empty) prefix, or dropping family f3
  // (which deletes its cells) and creating it again empty.
  void Admin(Generator& gen) {
    const bool drop_rows = gen.OneIn(2);
    const std::string prefix = gen.Pick<std::string>({"b", "c", "e", "z", "bb", "q"});
    std::vector<btadmin::ModifyColumnFamiliesRequest> family_steps;
    if (drop_rows) {
      Note(StrCat("DropRowRange prefix ", Printable(prefix)));
    } else {
      Note("ModifyColumnFamilies drop f3, then create f3");
      btadmin::ModifyColumnFamiliesRequest drop;
      drop.set_name(TableName(kTable));
      auto* d = drop.add_modifications();
      d->set_id("f3");
      d->set_drop(true);
      btadmin::ModifyColumnFamiliesRequest create;
      create.set_name(TableName(kTable));
      auto* c = create.add_modifications();
      c->set_id("f3");
      c->mutable_create()->mutable_gc_rule();
      family_steps = {drop, create};
    }
    for (Backend& b : backends_) {
      grpc::Status s;
      if (drop_rows) {
        btadmin::DropRowRangeRequest request;
        request.set_name(TableName(kTable));
        request.set_row_key_prefix(prefix);
        google::protobuf::Empty empty;
        auto context = Context();
        s = b.admin->DropRowRange(context.get(), request, &empty);
      } else {
        for (const auto& step : family_steps) {
          btadmin::Table table;
          auto context = Context();
          s = b.admin->ModifyColumnFamilies(context.get(), step, &table);
          if (!s.ok()) break;
        }
      }
      if (!s.ok()) {
        Diverged(StrCat(history_.back(), " failed on ", b.name, ": ", s.error_message()));
        return;
      }
    }
  }

  // Requests the API rejects; both must answer INVALID_ARGUMENT.
  void Invalid(Generator& gen) {
    // EMULATOR EXCEPTION 6: the emulator checks a filter's arguments only when a row reaches
    // the filter, so on an empty table a bad regex is OK (the API rejects the request, §5.4,
    // §5.7). The same cell is written to both first, so the table is never empty here.
    btv2::MutateRowRequest sentinel;
    SetTable(&sentinel);
    sentinel.set_row_key("a");
    auto* set = sentinel.add_mutations()->mutable_set_cell();
    set->set_family_name("f1");
    set->set_column_qualifier("a");
    set->set_timestamp_micros(0);
    set->set_value("sentinel");
    Note(StrCat("MutateRow ", Text(sentinel)));
    for (Backend& b : backends_) {
      btv2::MutateRowResponse response;
      auto context = Context();
      grpc::Status s = b.data->MutateRow(context.get(), sentinel, &response);
      if (!s.ok()) {
        Diverged(StrCat("MutateRow (valid) failed on ", b.name, ": ", s.error_message()));
        return;
      }
    }
    btv2::ReadRowsRequest request;
    SetTable(&request);
    switch (gen.Uniform(4)) {
      case 0:
        request.mutable_filter()->set_row_key_regex_filter("a(b");
        break;
      case 1:
        request.mutable_filter()->set_value_regex_filter("[z-a]");
        break;
      case 2: {
        auto* r = request.mutable_rows()->add_row_ranges();
        r->set_start_key_closed("zz");
        r->set_end_key_open("a");
        break;
      }
      default:
        request.mutable_filter()->set_cells_per_row_limit_filter(-1);
        break;
    }
    Note(StrCat("ReadRows (invalid) ", Text(request)));
    std::vector<client::Row> rows;
    for (Backend& b : backends_) {
      rows.clear();
      Status s = ReadAllRows(b.data.get(), request, &rows);
      if (s.code() != absl::StatusCode::kInvalidArgument) {
        Diverged(StrCat("invalid ReadRows on ", b.name, " answered ", s.ToString(),
                        " (INVALID_ARGUMENT expected)\nrequest: ", Text(request)));
        return;
      }
    }
  }

  uint64_t seed_ = 0;
  int ops_ = 0;
  int op_ = 0;
  bool verbose_ = false;
  bool diverged_ = false;
  int full_compares_ = 0;
  size_t rows_compared_ = 0;  // rows in answers compared equal or not
  int nonempty_reads_ = 0;
  std::deque<std::string> history_;
  std::unique_ptr<TempDir> dir_;
  Backend backends_[2];
};

TEST_F(DifferentialTest, RandomOperationsAgree) {
  CreateTable();
  ASSERT_FALSE(HasFailure());
  Generator gen(seed_);
  int counts[7] = {0, 0, 0, 0, 0, 0, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  for (op_ = 0; op_ < ops_ && !diverged_; ++op_) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "stopped after " << op_ << " operations: over 4 minutes";
    size_t kind = gen.Uniform(100);
    if (kind < 30) {
      MutateRow(gen);
      ++counts[0];
    } else if (kind < 40) {
      MutateRows(gen);
      ++counts[1];
    } else if (kind < 75) {
      ReadRows(gen);
      ++counts[2];
    } else if (kind < 87) {
      CheckAndMutate(gen);
      ++counts[3];
    } else if (kind < 95) {
      ReadModifyWrite(gen);
      ++counts[4];
    } else if (kind < 96) {
      Admin(gen);
      ++counts[6];
    } else {
      Invalid(gen);
      ++counts[5];
    }
    if (!diverged_ && op_ % 100 == 99) CompareWholeTable(StrCat("after operation ", op_));
  }
  if (!diverged_) CompareWholeTable("at the end");
  std::printf(
      "differential_test: %d operations (MutateRow %d, MutateRows %d, ReadRows %d, "
      "CheckAndMutateRow %d, ReadModifyWriteRow %d, admin %d, invalid %d), %d whole-table "
      "compares, %d reads with rows, %zu rows compared%s\n",
      op_, counts[0], counts[1], counts[2], counts[3], counts[4], counts[6], counts[5],
      full_compares_,
      nonempty_reads_, rows_compared_, diverged_ ? ", DIVERGED" : ", all equal");
}

}  // namespace
}  // namespace tessera::integration

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!tessera::integration::ParseTestFlags(
          argc, argv,
          {{"tessera", &tessera::integration::g_tessera_binary},
           {"emulator", &tessera::integration::g_emulator_binary}},
          {"tessera"}, "--tessera=<binary> --emulator=<cbtemulator> [gtest flags]")) {
    return 2;
  }
  if (const char* env = std::getenv("TESSERA_CBTEMULATOR"); env != nullptr && *env != '\0') {
    tessera::integration::g_emulator_binary = env;
  }
  if (tessera::integration::g_emulator_binary.empty() ||
      access(tessera::integration::g_emulator_binary.c_str(), X_OK) != 0) {
    std::printf("SKIPPED: the official emulator (cbtemulator) is not installed at '%s'; "
                "install the Google Cloud CLI's bigtable emulator or set TESSERA_CBTEMULATOR\n",
                tessera::integration::g_emulator_binary.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
