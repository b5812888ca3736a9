// Differential test: one seeded random sequence of Bigtable operations is sent to `tessera
// serve` and to the official emulator (cbtemulator), and every answer is compared: MutateRow,
// MutateRows (per-entry statuses), ReadRows with random row sets, limits, reversed scans and
// filters (rows and cells; now and then a value over 1 MiB), CheckAndMutateRow
// (predicate_matched), ReadModifyWriteRow (the new cells), DropRowRange by prefix, families
// created, dropped, re-created and given stricter GC rules mid-sequence (max versions, max
// age, unions, intersections), explicit and server-assigned (-1) timestamps, row keys with
// \n and other bytes, a few invalid requests (status codes), and the whole table every 100
// operations and at the end. Tessera runs with 1 MiB memtables, so the big values make it
// flush and compact (GC and tombstone purging at flush and compaction) during the run.
//
//   differential_test --tessera=<tessera binary> --emulator=<cbtemulator>
//                     [--seeds=N] [--ops=M] [--minutes=T] [--restarts=1] [--settled-gc=1]
//                     [gtest flags]
//   --seeds=N   run N sequences, seeds S, S+1, ... (default 1); stops at the first divergence
//               unless --keep-going=1
//   --ops=M     operations per sequence (default 2000; TESSERA_DIFF_OPS too)
//   --minutes=T stop starting new sequences after T minutes (default 4)
//   --restarts=1  also restart tessera (SIGTERM, same data folder) now and then
//   --settled-gc=1  tessera collects only at restarts, seeing everything, the emulator never,
//               and the test deletes what is collectable after each restart: GC has one
//               answer, so time-ranged deletes everywhere and laxer rules are generated too
//               (RunOptions::settled_gc; issue 9 needs those)
//   --cluster=1 tessera is three nodes over etcd (process_cluster.h): the table is created and
//               changed through node 1, every data call goes to node 2 (issue 11). Not with
//               --restarts or --settled-gc, which restart one node's data folder. Skips (77)
//               without etcd.
//   TESSERA_SEED=<n>   the first seed (printed at the start and on failure)
//   TESSERA_DIFF_SEEDS=<n>  as --seeds
//   TESSERA_DIFF_VERBOSE=1  print every operation
// Exits 77 (skipped) when the emulator is not installed.
//
// Garbage collection is asynchronous in the API, and the two servers collect at different
// times, so GC-collectable cells are removed from the emulator's answers by a filter and
// Tessera's answers are taken as they are; the generator keeps "collectable" from ever
// shrinking (differential_gc.h says how and why).
//
// Server-assigned timestamps come from each server's clock. Every operation that asks for one
// is sent to each server in a fresh millisecond, after the previous such operation's answer,
// so each server's timestamps fall into disjoint per-operation windows; answers are compared
// after each such timestamp is replaced by its operation's canonical one (the order of
// timestamps is kept: server-assigned ones are newer than every explicit one).
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
//      row_sample (random) are not generated: mutations name only families the table has.
//      Reversed scans are, with the `bigtable-features` header the emulator requires for
//      them (§4) sent to both servers.
//   5. ReadModifyWriteRow: the emulator keeps the effect of the rules before a failing one
//      (the call is atomic, §5.5) -> a request predicted to fail is cut to its failing rule.
//   6. Filter arguments (a bad regex) are checked only when a row reaches the filter: an
//      empty table answers OK (§5.4, §5.7) -> invalid requests are sent to a non-empty table.
//   7. GC: the emulator collects in the background, only after a ModifyColumnFamilies, and
//      never by an intersection rule (§5.6, §6 item 5) -> its answers pass through the
//      families' keep filters (differential_gc.h); ReadModifyWriteRow (no filter) only on
//      families whose newest cell cannot be collected.
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
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "differential_gc.h"
#include "google/bigtable/admin/v2/bigtable_table_admin.grpc.pb.h"
#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "process_cluster.h"
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
    "a",  "b",   "ba",   "bb",    "bba", "c", std::string("c\0", 2), "c\x01", "d", "e",
    "ea", "eb",  "f",    "g",     "k",   "k\n", "k\na", std::string("k\n\0", 3), "\n",
    "z\xff", "zz"};
// Every family a table may have. f1 always exists; f1..f3 never get a GC rule (the one place
// time-ranged column deletes are generated, see differential_gc.h); the others get random
// rules and are created, dropped and changed during the run.
const std::vector<std::string> kFamilyPool = {"f1", "f2", "f3", "_u", "g.v", "g-x"};
bool RulesAllowed(const std::string& family) { return family[0] != 'f'; }

// The table's families and their GC rules, as both servers have them.
using Schema = std::map<std::string, GcShape>;
// Explicit timestamps from here on are "in the future" (year 2096): after every server-assigned
// one, and kept as they are by the timestamp canonicalization.
constexpr int64_t kFutureFromMicros = 4'000'000'000'000'000;
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
  std::unique_ptr<ProcessCluster> cluster;       // --cluster=1: tessera is this (process unset)
  std::shared_ptr<grpc::Channel> channel;        // data calls
  std::shared_ptr<grpc::Channel> admin_channel;  // table admin: `channel`, or node 1's
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
std::optional<std::string> RowOrderProblem(const model::Row& row) {
  std::vector<std::string> seen_families;
  for (size_t i = 0; i < row.cells.size(); ++i) {
    const model::Cell& c = row.cells[i];
    if (i == 0 || c.family != row.cells[i - 1].family) {
      if (std::find(seen_families.begin(), seen_families.end(), c.family) !=
          seen_families.end()) {
        return StrCat("row ", Printable(row.key), ": family ", c.family, " comes in two runs");
      }
      seen_families.push_back(c.family);
      continue;
    }
    const model::Cell& p = row.cells[i - 1];
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

std::vector<NormalRow> Normalize(const std::vector<model::Row>& rows) {
  std::vector<NormalRow> out;
  for (const model::Row& row : rows) {
    NormalRow n{row.key, {}};
    for (const model::Cell& c : row.cells) {
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
  // `schema` (the table's families, kept current by the test) must outlive the generator.
  // `ranged_deletes_everywhere`: time-ranged column deletes in families that count versions
  // too (only when GC is settled, see RunOptions).
  Generator(uint64_t seed, const Schema* schema, bool ranged_deletes_everywhere)
      : rng_(seed), schema_(schema), ranged_deletes_everywhere_(ranged_deletes_everywhere) {}

  size_t Uniform(size_t n) { return static_cast<size_t>(rng_() % n); }
  bool OneIn(size_t n) { return Uniform(n) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Uniform(v.size())];
  }

  const std::string& RowKey() { return Pick(kRowKeys); }
  // A family the table has now (EMULATOR EXCEPTION 4: mutations never name a missing one).
  std::string Family() {
    auto it = schema_->begin();
    std::advance(it, static_cast<std::ptrdiff_t>(Uniform(schema_->size())));
    return it->first;
  }
  // A family of the pool, present or not (filters may name missing families: no cells).
  const std::string& AnyFamily() { return Pick(kFamilyPool); }
  const std::string& Qualifier() { return Pick(kQualifiers); }
  const std::string& Value() { return Pick(kValues); }
  // Milliseconds 0..20 as microseconds: the table's granularity is MILLIS.
  int64_t Timestamp() { return static_cast<int64_t>(Uniform(21)) * 1000; }
  // A few milliseconds after kFutureFromMicros: newer than any server-assigned timestamp.
  int64_t FutureTimestamp() { return kFutureFromMicros + static_cast<int64_t>(Uniform(4)) * 1000; }

  GcShape Shape() {
    switch (Uniform(6)) {
      case 0:
        return GcShape{};
      case 1:
      case 2:
        return GcShape{GcShape::Kind::kVersions, static_cast<int>(1 + Uniform(3))};
      case 3:
        return GcShape{GcShape::Kind::kAge, 0};
      case 4:
        return GcShape{GcShape::Kind::kUnion, static_cast<int>(1 + Uniform(3))};
      default:
        return GcShape{GcShape::Kind::kIntersection, static_cast<int>(1 + Uniform(3))};
    }
  }

  btv2::TimestampRange TimeRange() {
    btv2::TimestampRange range;
    if (OneIn(8)) {  // only server-assigned timestamps, only old ones, or only future ones
      switch (Uniform(3)) {
        case 0:
          range.set_start_timestamp_micros(kYoungFromMicros);
          range.set_end_timestamp_micros(kFutureFromMicros);
          break;
        case 1:
          range.set_end_timestamp_micros(kYoungFromMicros);
          break;
        default:
          range.set_start_timestamp_micros(FutureTimestamp());
          if (OneIn(2)) {
            range.set_end_timestamp_micros(range.start_timestamp_micros() +
                                           1000 * static_cast<int64_t>(1 + Uniform(3)));
          }
          break;
      }
      return range;
    }
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
      // -1: the server's time, truncated to the table's granularity (§5.2). Explicit
      // timestamps in the future make a server-assigned cell an older version.
      const size_t ts_kind = Uniform(8);
      set->set_timestamp_micros(ts_kind < 2 ? -1 : ts_kind == 2 ? FutureTimestamp() : Timestamp());
      // Settled GC: more big values in families that count versions, so that each restart's
      // replay fills several 1 MiB memtables of a tablet (flushes and compactions with GC),
      // and their versions are collected or settled rather than piling up.
      const bool more_big =
          ranged_deletes_everywhere_ && schema_->at(set->family_name()).CountsVersions();
      set->set_value(OneIn(more_big ? 40 : 150) ? kBigValue : Value());
    } else if (kind < 17) {
      auto* del = m.mutable_delete_from_column();
      del->set_family_name(Family());
      del->set_column_qualifier(Qualifier());
      // Not where versions are counted: it could make a collectable cell visible again
      // (differential_gc.h).
      if ((ranged_deletes_everywhere_ || !schema_->at(del->family_name()).CountsVersions()) &&
          OneIn(2)) {
        *del->mutable_time_range() = TimeRange();
      }
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
    // At most one server-assigned SetCell per column in a request: -1 is the server's time
    // when the mutation is applied (§5.2), so two of them may get one timestamp (tessera: one
    // time per request, the last write wins, §5.1 item 10) or two (the emulator takes the time
    // for each mutation and can cross a millisecond between them). Both are right.
    std::vector<std::pair<std::string, std::string>> server_stamped;
    for (size_t i = 0; i < n; ++i) {
      btv2::Mutation m = Mutation();
      if (m.has_set_cell() && m.set_cell().timestamp_micros() == -1) {
        auto column = std::make_pair(m.set_cell().family_name(), m.set_cell().column_qualifier());
        if (std::find(server_stamped.begin(), server_stamped.end(), column) !=
            server_stamped.end()) {
          m.mutable_set_cell()->set_timestamp_micros(Timestamp());
        } else {
          server_stamped.push_back(std::move(column));
        }
      }
      *out->Add() = std::move(m);
    }
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
        // `.` does not match \n, `(?s)` makes it (RE2 and Go alike, §5.4).
        f.set_row_key_regex_filter(Pick<std::string>(
            {"a", "b.*", "[a-c].*", ".*a", "z.*", ".*", "(a|ba|c)", "e[ab]?", "k.*", "k\\n",
             "k\n.*", "(?s)k.*", "(?s).*\\n.*", "k[^a]*", "\\n", "k."}));
        break;
      case 1:
        f.set_family_name_regex_filter(Pick<std::string>(
            {"f1", "f[12]", "f.*", "f3", "f2|f3", "_u", "g\\..*", "g.*", "_u|f1", "g-x"}));
        break;
      case 2:
        f.set_column_qualifier_regex_filter(
            Pick<std::string>({"a", "b", "a.*", "[bc]", ".*", "n|s", "ab?"}));
        break;
      case 3: {
        auto* r = f.mutable_column_range_filter();
        r->set_family_name(AnyFamily());
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
        chain->add_filters()->set_family_name_regex_filter(ExactRegex(AnyFamily()));
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
  const Schema* const schema_;
  const bool ranged_deletes_everywhere_;
};

// ---- the test ----

// How long and how many: the defaults keep `integration_differential` in ctest short; a
// campaign sets them with flags (see the top).
struct RunOptions {
  uint64_t first_seed = 0;
  int seeds = 1;
  int ops = 2000;
  int minutes = 4;
  bool restarts = false;
  // Tessera collects only at restarts, the emulator never, and after each restart both lose the
  // cells collectable then (see SettleGc): no ambiguity left, so time-ranged deletes in every
  // family and any change of rule are generated.
  bool settled_gc = false;
  // Go on with the next seed after a divergence (to measure how often sequences diverge).
  bool keep_going = false;
  // Tessera is a 3-node cluster: admin through node 1, data through node 2.
  bool cluster = false;
};
RunOptions g_run;

class DifferentialTest : public ::testing::Test {
 protected:
  // Starts both servers for one sequence.
  void StartServers() {
    dir_ = std::make_unique<TempDir>("tessera-differential");
    auto emulator = ServerProcess::StartEmulator(g_emulator_binary, dir_->path());
    ASSERT_TRUE(emulator.ok()) << emulator.status();
    backends_[1].name = "emulator";
    backends_[1].process = std::move(*emulator);
    Connect(&backends_[1]);
    backends_[0].name = "tessera";
    StartTessera();
  }

  void StartTessera() {
    // Durability is the kill -9 test's business; periodic sync keeps this run fast. 1 MiB
    // memtables: every big value makes a flush, and four flushes a compaction, so GC and
    // tombstone purging at flush and compaction are part of every run.
    const std::vector<std::string> args = {"--sync", "periodic", "--memtable-mb",
                                           // Settled GC: no flush (and no GC) between restarts.
                                           memtable_mb_ != 0  ? std::to_string(memtable_mb_)
                                           : g_run.settled_gc ? "4096"
                                                              : "1",
                                           "--memory-limit-mb", "8192"};
    if (g_run.cluster) {
      auto cluster = ProcessCluster::Start(g_tessera_binary, dir_->path() + "/cluster",
                                           {.nodes = 3, .extra_args = args});
      ASSERT_TRUE(cluster.ok()) << cluster.status();
      backends_[0].cluster = std::move(*cluster);
    } else {
      auto tessera =
          SelfCheck() ? ServerProcess::StartEmulator(g_tessera_binary, dir_->path())
                      : ServerProcess::StartTessera(g_tessera_binary, dir_->path() + "/data", args);
      ASSERT_TRUE(tessera.ok()) << tessera.status();
      backends_[0].process = std::move(*tessera);
    }
    Connect(&backends_[0]);
  }

  static bool Running(const Backend& b) { return b.process != nullptr || b.cluster != nullptr; }

  // A cluster gets the table and its changes through node 1 and every data call through
  // node 2.
  static void Connect(Backend* b) {
    b->channel = b->cluster ? b->cluster->node(1).NewChannel() : b->process->NewChannel();
    b->admin_channel = b->cluster ? b->cluster->node(0).NewChannel() : b->channel;
    b->data = btv2::Bigtable::NewStub(b->channel);
    b->admin = btadmin::BigtableTableAdmin::NewStub(b->admin_channel);
  }

  static void Disconnect(Backend* b) {
    // Close our connections first: with an idle gRPC C++ client connected, the server's
    // shutdown waits its whole grace period (5 s) for the client to hang up.
    b->data.reset();
    b->admin.reset();
    b->channel.reset();
    b->admin_channel.reset();
  }

  void StopTessera() {
    Disconnect(&backends_[0]);
    if (backends_[0].cluster != nullptr) {
      const Status stopped = backends_[0].cluster->Stop();
      EXPECT_TRUE(stopped.ok()) << stopped;
      backends_[0].cluster.reset();
      return;
    }
    if (backends_[0].process == nullptr) return;
    if (SelfCheck()) {
      backends_[0].process->Kill();
    } else {
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
    backends_[0].process.reset();
  }

  void StopServers() {
    StopTessera();
    Disconnect(&backends_[1]);
    if (backends_[1].process != nullptr) backends_[1].process->Kill();
    backends_[1].process.reset();
    // Kept on failure (with the server logs) only when asked: TESSERA_KEEP_TEST_DIRS=1.
    dir_.reset();
  }

  void TearDown() override {
    if (Running(backends_[0]) || Running(backends_[1])) StopServers();
  }

  // Failures so far in this test (all sequences): gtest's HasFailure() never resets.
  static int FailureCount() {
    const ::testing::TestResult* r =
        ::testing::UnitTest::GetInstance()->current_test_info()->result();
    int n = 0;
    for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed();
    return n;
  }
  bool SequenceFailed() const { return FailureCount() > failures_before_; }

  // Forgets the previous sequence's state.
  void ResetState(uint64_t seed) {
    failures_before_ = FailureCount();
    seed_ = seed;
    op_ = 0;
    diverged_ = false;
    full_compares_ = 0;
    rows_compared_ = 0;
    nonempty_reads_ = 0;
    history_.clear();
    schema_.clear();
    for (auto& w : windows_) w.clear();
    for (auto& h : last_window_end_) h = 0;
  }

  // Records a failure with the context needed to replay it; the run stops at the first one.
  void Diverged(const std::string& what) {
    std::string history;
    for (const std::string& h : history_) history += StrCat("  ", h, "\n");
    ADD_FAILURE() << "DIVERGENCE at operation " << op_ << " (seed " << seed_
                  << ", replay with TESSERA_SEED=" << seed_ << " --ops=" << op_ + 1 << "):\n"
                  << what << "\nschema: " << SchemaText() << "\nlast operations:\n"
                  << history << "tessera log tail:\n"
                  << (backends_[0].cluster   ? backends_[0].cluster->LogTails(2000)
                      : backends_[0].process ? backends_[0].process->LogTail(2000)
                                             : "");
    diverged_ = true;
  }

  void Note(std::string description) {
    if (verbose_) std::printf("#%d %s\n", op_, description.c_str());
    history_.push_back(std::move(description));
    if (history_.size() > 12) history_.pop_front();
  }

  std::string SchemaText() const { return SchemaText(schema_); }
  static std::string SchemaText(const Schema& schema) {
    std::string out;
    for (const auto& [family, shape] : schema) {
      out += StrCat(out.empty() ? "" : ", ", family, ": ", shape.ToString());
    }
    return out;
  }

  // ---- GC: what the emulator's answers are compared after (EMULATOR EXCEPTION 7) ----

  // Whether backend `i` may still return collectable cells: the emulator (and tessera's place
  // when it is an emulator too, in the self-check).
  bool MayReturnCollectable(int i) const { return i == 1 || SelfCheck(); }

  // The GC rule backend i gets for `shape`: none for the emulator when GC is settled by the
  // test (so that it never collects on its own).
  bool GetsNoRules(int i) const { return g_run.settled_gc && MayReturnCollectable(i); }
  btadmin::GcRule RuleFor(int i, const GcShape& shape) const {
    return GetsNoRules(i) ? btadmin::GcRule() : shape.ToProto();
  }

  // A filter keeping exactly the cells no family's rule collects; nullopt when no family has a
  // rule. One branch per family of the table: disjoint, so nothing is duplicated.
  std::optional<btv2::RowFilter> KeepFilterForTable() const {
    std::vector<btv2::RowFilter> branches;
    bool any_rule = false;
    for (const auto& [family, shape] : schema_) {
      btv2::RowFilter branch;
      btv2::RowFilter only_family;
      only_family.set_family_name_regex_filter(ExactRegex(family));
      if (shape.kind == GcShape::Kind::kNone) {
        branch = only_family;
      } else {
        any_rule = true;
        *branch.mutable_chain()->add_filters() = only_family;
        *branch.mutable_chain()->add_filters() = KeepFilter(shape);
      }
      branches.push_back(std::move(branch));
    }
    if (!any_rule) return std::nullopt;
    if (branches.size() == 1) return branches[0];
    btv2::RowFilter all;
    for (auto& b : branches) *all.mutable_interleave()->add_filters() = std::move(b);
    return all;
  }

  // `filter` (nullptr: none) for backend i: after the keep filter where i needs it.
  std::optional<btv2::RowFilter> FilterFor(int i, const btv2::RowFilter* filter) const {
    std::optional<btv2::RowFilter> keep;
    if (MayReturnCollectable(i)) keep = KeepFilterForTable();
    if (!keep.has_value()) {
      if (filter == nullptr) return std::nullopt;
      return *filter;
    }
    if (filter == nullptr) return keep;
    btv2::RowFilter chain;
    *chain.mutable_chain()->add_filters() = *std::move(keep);
    *chain.mutable_chain()->add_filters() = *filter;
    return chain;
  }

  // ---- server-assigned timestamps ----

  struct Window {
    int64_t lo;  // µs, the millisecond the request was sent in
    int64_t hi;  // µs, when its answer arrived
    int op;
  };

  static int64_t NowMicros() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // Waits for a fresh millisecond after the previous stamped request to backend i, early in
  // it, so that the request's timestamps all fall in one millisecond on either server.
  int64_t BeginStamped(int i) {
    while (true) {
      const int64_t now = NowMicros();
      const int64_t ms = now - now % 1000;
      if (ms > last_window_end_[i] && now % 1000 < 300) return ms;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void EndStamped(int i, int64_t lo) {
    const int64_t hi = NowMicros();
    windows_[i].push_back({lo, hi, op_});
    last_window_end_[i] = hi;
  }

  // Sends with `send(i)` to backend i, in a window of its own when `stamped`.
  template <typename Send>
  auto SendTo(int i, bool stamped, Send&& send) {
    const int64_t lo = stamped ? BeginStamped(i) : 0;
    auto result = send(i);
    if (stamped) EndStamped(i, lo);
    return result;
  }

  // The canonical timestamp of operation `op`'s server-assigned timestamps: newer than every
  // explicit one, in operation order.
  static int64_t CanonicalServerTimestamp(int op) {
    return kYoungFromMicros + 1000 * static_cast<int64_t>(op + 1);
  }

  // Replaces backend i's server-assigned timestamps by their operation's canonical one; sets
  // *problem when one falls into no window (a timestamp the server made up at the wrong time).
  void CanonicalizeTimestamps(int i, std::vector<model::Row>* rows, std::string* problem) const {
    for (model::Row& row : *rows) {
      for (model::Cell& c : row.cells) {
        if (c.timestamp_micros < kYoungFromMicros || c.timestamp_micros >= kFutureFromMicros) {
          continue;  // explicit
        }
        const int64_t ts = c.timestamp_micros;
        auto it = std::upper_bound(windows_[i].begin(), windows_[i].end(), ts,
                                   [](int64_t t, const Window& w) { return t < w.lo; });
        if (it == windows_[i].begin() || ts > std::prev(it)->hi) {
          if (problem->empty()) {
            *problem = StrCat(backends_[i].name, " returned ", Printable(row.key), " ",
                              c.family, ":", Printable(c.qualifier), " @", ts,
                              ", a server timestamp of no request sent to it");
          }
          continue;
        }
        if (i == 0 && !SelfCheck() && ts % 1000 != 0 && problem->empty()) {
          *problem = StrCat("tessera's server timestamp ", ts,
                            " is not on the table's millisecond granularity");
        }
        c.timestamp_micros = CanonicalServerTimestamp(std::prev(it)->op);
      }
    }
  }

  static bool HasServerTimestamp(
      const google::protobuf::RepeatedPtrField<btv2::Mutation>& mutations) {
    for (const auto& m : mutations) {
      if (m.has_set_cell() && m.set_cell().timestamp_micros() == -1) return true;
    }
    return false;
  }

  // ---- the table ----

  void CreateTable(Generator& gen) {
    // f1..f3 as before, plus a random choice of the others with random rules.
    schema_.clear();
    for (const std::string& f : kFamilyPool) {
      if (!RulesAllowed(f)) {
        schema_[f] = GcShape{};
      } else if (!gen.OneIn(3)) {
        schema_[f] = gen.Shape();
      }
    }
    for (int i = 0; i < 2; ++i) {
      Backend& b = backends_[i];
      btadmin::CreateTableRequest request;
      request.set_parent(kInstanceName);
      request.set_table_id(kTable);
      for (const auto& [f, shape] : schema_) {
        *(*request.mutable_table()->mutable_column_families())[f].mutable_gc_rule() =
            RuleFor(i, shape);
      }
      request.add_initial_splits()->set_key("c");
      request.add_initial_splits()->set_key("f");
      request.add_initial_splits()->set_key("k\n");
      btadmin::Table table;
      auto context = Context();
      grpc::Status s = b.admin->CreateTable(context.get(), request, &table);
      ASSERT_TRUE(s.ok()) << b.name << " CreateTable: " << s.error_message();
    }
    Note(StrCat("CreateTable ", SchemaText()));
  }

  void MutateRow(Generator& gen) {
    btv2::MutateRowRequest request;
    SetTable(&request);
    request.set_row_key(gen.RowKey());
    gen.Mutations(request.mutable_mutations(), 1, 5);
    Note(StrCat("MutateRow ", Text(request)));
    const bool stamped = HasServerTimestamp(request.mutations());
    absl::StatusCode codes[2];
    for (int i = 0; i < 2; ++i) {
      codes[i] = SendTo(i, stamped, [&](int b) {
        btv2::MutateRowResponse response;
        auto context = Context();
        return FromGrpc(backends_[b].data->MutateRow(context.get(), request, &response)).code();
      });
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
    bool stamped = false;
    for (const auto& e : request.entries()) stamped |= HasServerTimestamp(e.mutations());
    for (int bi = 0; bi < 2; ++bi) {
      Backend& b = backends_[bi];
      std::vector<int> codes(n, -1);
      bool status_missing = false;
      grpc::Status s = SendTo(bi, stamped, [&](int) {
        auto context = Context();
        auto reader = b.data->MutateRows(context.get(), request);
        btv2::MutateRowsResponse response;
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
        return reader->Finish();
      });
      if (status_missing) {
        Diverged(StrCat("MutateRows on ", b.name, ": a response entry has no status field "
                        "(cbt import panics and the Node client throws on that)"));
        return;
      }
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
    std::vector<model::Row> rows[2];
    Status status[2];
    // Both get the header the emulator needs for reversed scans (§4); tessera must accept it.
    const std::vector<std::pair<std::string, std::string>> features = {
        {kFeaturesHeader, kReverseScansFeature}};
    for (int i = 0; i < 2; ++i) {
      btv2::ReadRowsRequest sent = request;
      std::optional<btv2::RowFilter> filter =
          FilterFor(i, request.has_filter() ? &request.filter() : nullptr);
      if (filter.has_value()) {
        *sent.mutable_filter() = *std::move(filter);
      } else {
        sent.clear_filter();
      }
      status[i] = ReadAllRows(backends_[i].data.get(), sent, &rows[i],
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
    for (const model::Row& row : rows[0]) {
      if (auto problem = RowOrderProblem(row)) {
        Diverged(StrCat(what, ": tessera's cell order is wrong: ", *problem,
                        "\nrequest: ", Text(request)));
        return;
      }
    }
    std::string problem;
    for (int i = 0; i < 2; ++i) CanonicalizeTimestamps(i, &rows[i], &problem);
    if (!problem.empty()) {
      Diverged(StrCat(what, ": ", problem, "\nrequest: ", Text(request)));
      return;
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
    const bool stamped = HasServerTimestamp(request.true_mutations()) ||
                         HasServerTimestamp(request.false_mutations());
    btv2::CheckAndMutateRowResponse responses[2];
    absl::StatusCode codes[2];
    for (int i = 0; i < 2; ++i) {
      // The predicate sees what a read would (EMULATOR EXCEPTION 7); with no predicate the
      // emulator's is the keep filter itself ("any cell that is not collectable").
      btv2::CheckAndMutateRowRequest sent = request;
      std::optional<btv2::RowFilter> predicate = FilterFor(
          i, request.has_predicate_filter() ? &request.predicate_filter() : nullptr);
      if (predicate.has_value()) *sent.mutable_predicate_filter() = *std::move(predicate);
      codes[i] = SendTo(i, stamped, [&](int b) {
        auto context = Context();
        return FromGrpc(backends_[b].data->CheckAndMutateRow(context.get(), sent, &responses[b]))
            .code();
      });
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
    // EMULATOR EXCEPTION 7: the emulator may still hold a collectable newest cell and would
    // modify it; only families whose newest cell is never collectable.
    std::vector<std::string> families;
    for (const auto& [family, shape] : schema_) {
      if (!shape.MayCollectNewest()) families.push_back(family);
    }
    size_t n = 1 + gen.Uniform(3);
    for (size_t i = 0; i < n; ++i) {
      auto* rule = request.add_rules();
      rule->set_family_name(gen.Pick(families));
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
          // max(now, the latest existing timestamp) (§5.5): never older than now.
          if (i == 0 && !SelfCheck() &&
              (cell.timestamp_micros() % 1000 != 0 ||
               (cell.timestamp_micros() < kFutureFromMicros &&
                std::abs(cell.timestamp_micros() - now_us) > 3'600'000'000LL))) {
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
    std::vector<model::Row> rows;
    Status s = ReadAllRows(backends_[1].data.get(), read, &rows);
    if (!s.ok()) return false;  // the comparison that follows reports the trouble
    std::map<std::pair<std::string, std::string>, std::string> stored;
    for (const model::Row& row : rows) {
      for (const model::Cell& c : row.cells) stored[{c.family, c.qualifier}] = c.value;
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

  // Table admin: DropRowRange by a (non-empty) prefix, or a change of families — one dropped
  // (which deletes its cells), created (empty, with a random rule), dropped and created again
  // (in two requests, or in one), or given a rule at least as strict as its current one
  // (differential_gc.h). f1 is never dropped.
  void Admin(Generator& gen) {
    const size_t kind = gen.Uniform(6);
    if (kind < 2) {
      const std::string prefix =
          gen.Pick<std::string>({"b", "c", "e", "z", "bb", "q", "k", "k\n", "\n"});
      Note(StrCat("DropRowRange prefix ", Printable(prefix)));
      for (Backend& b : backends_) {
        btadmin::DropRowRangeRequest request;
        request.set_name(TableName(kTable));
        request.set_row_key_prefix(prefix);
        google::protobuf::Empty empty;
        auto context = Context();
        grpc::Status s = b.admin->DropRowRange(context.get(), request, &empty);
        if (!s.ok()) {
          Diverged(StrCat(history_.back(), " failed on ", b.name, ": ", s.error_message()));
          return;
        }
      }
      return;
    }
    using Modification = btadmin::ModifyColumnFamiliesRequest::Modification;
    std::vector<std::vector<Modification>> steps;  // one ModifyColumnFamilies each
    const std::string family = gen.Pick(kFamilyPool);
    const bool exists = schema_.contains(family);
    auto drop = [&] {
      Modification m;
      m.set_id(family);
      m.set_drop(true);
      return m;
    };
    auto create = [&](const GcShape& shape) {
      Modification m;
      m.set_id(family);
      *m.mutable_create()->mutable_gc_rule() = shape.ToProto();
      return m;
    };
    Schema next = schema_;
    if (!exists) {
      const GcShape shape = RulesAllowed(family) ? gen.Shape() : GcShape{};
      steps.push_back({create(shape)});
      next[family] = shape;
    } else if (kind == 2 && family != "f1") {
      steps.push_back({drop()});
      next.erase(family);
    } else if (kind == 3 && family != "f1") {
      const GcShape shape = RulesAllowed(family) ? gen.Shape() : GcShape{};
      steps.push_back({drop()});
      steps.push_back({create(shape)});
      next[family] = shape;
    } else if (kind == 4 && family != "f1") {
      // One request: the modifications apply in order (§5.6), so the drop purges the data
      // and the family starts empty, as in two requests.
      const GcShape shape = RulesAllowed(family) ? gen.Shape() : GcShape{};
      steps.push_back({drop(), create(shape)});
      next[family] = shape;
    } else if (RulesAllowed(family)) {
      GcShape shape = gen.Shape();
      // Settled GC: nothing was collected that a laxer rule would keep.
      if (!g_run.settled_gc && !Stricter(shape, schema_.at(family))) shape = schema_.at(family);
      Modification m;
      m.set_id(family);
      *m.mutable_update()->mutable_gc_rule() = shape.ToProto();
      steps.push_back({m});
      next[family] = shape;
    } else {
      return;  // nothing to change on f1..f3 but their existence
    }
    std::string text;
    for (const auto& step : steps) {
      btadmin::ModifyColumnFamiliesRequest request;
      for (const auto& m : step) *request.add_modifications() = m;
      text += StrCat(text.empty() ? "" : "; then ", Text(request));
    }
    Note(StrCat("ModifyColumnFamilies ", text, " -> ", SchemaText(next)));
    for (int i = 0; i < 2; ++i) {
      Backend& b = backends_[i];
      for (const auto& step : steps) {
        btadmin::ModifyColumnFamiliesRequest request;
        request.set_name(TableName(kTable));
        for (const auto& m : step) {
          Modification sent = m;
          if (GetsNoRules(i)) {
            if (sent.has_create()) sent.mutable_create()->clear_gc_rule();
            if (sent.has_update()) sent.mutable_update()->clear_gc_rule();
          }
          *request.add_modifications() = sent;
        }
        btadmin::Table table;
        auto context = Context();
        grpc::Status s = b.admin->ModifyColumnFamilies(context.get(), request, &table);
        if (!s.ok()) {
          Diverged(StrCat(history_.back(), " failed on ", b.name, ": ", s.error_message()));
          return;
        }
        if (b.cluster != nullptr) ExpectFamiliesOnEveryNode(*b.cluster, table);
      }
    }
    schema_ = std::move(next);
  }

  // Cluster variant: every node has the families node 1 answered a ModifyColumnFamilies with
  // as soon as it answered — the admin call waits for every live node to apply a schema change
  // (server/schema_agreement.h) — so the next data call through node 2 sees them, at node 2
  // and at the tablet's primary. Checked at once, without waiting.
  void ExpectFamiliesOnEveryNode(const ProcessCluster& cluster, const btadmin::Table& answered) {
    std::string seen;
    for (int node = 1; node < cluster.size(); ++node) {  // node 0 answered
      if (!HasFamilies(cluster.node(node), answered, &seen)) {
        Diverged(StrCat("node ", node + 1, " did not have node 1's families when node 1 "
                        "answered\nnode 1: ", Text(answered), "\nnode ", node + 1, ": ", seen));
        return;
      }
    }
  }

  // Whether `node`'s own schema of the table has exactly the families of `want`; what it has
  // goes to *seen.
  static bool HasFamilies(const ServerProcess& node, const btadmin::Table& want,
                          std::string* seen) {
    auto stub = btadmin::BigtableTableAdmin::NewStub(node.NewChannel());
    btadmin::GetTableRequest request;
    request.set_name(TableName(kTable));
    request.set_view(btadmin::Table::SCHEMA_VIEW);
    btadmin::Table table;
    auto context = Context();
    if (!stub->GetTable(context.get(), request, &table).ok()) return false;
    *seen = Text(table);
    if (table.column_families_size() != want.column_families_size()) return false;
    for (const auto& [name, family] : want.column_families()) {
      auto it = table.column_families().find(name);
      if (it == table.column_families().end() ||
          !google::protobuf::util::MessageDifferencer::Equals(it->second, family)) {
        return false;
      }
    }
    return true;
  }

  // Stops tessera (SIGTERM) and starts it again on the same data folder: what was written
  // must all be there, read back from the commit log and the SSTables.
  void RestartTessera() {
    if (SelfCheck()) {  // an emulator in tessera's place keeps nothing over a restart
      if (g_run.settled_gc) SettleGc();
      return;
    }
    Note(g_run.settled_gc ? "restart tessera (1 MiB memtables: replay, flush, compact), settle GC"
                          : "restart tessera");
    StopTessera();
    if (SequenceFailed()) {
      diverged_ = true;
      return;
    }
    if (g_run.settled_gc && !SelfCheck()) {
      // Replayed into 1 MiB memtables, the log becomes files at once, with GC and compactions:
      // the one time this tessera collects, seeing everything written so far.
      memtable_mb_ = 1;
      StartTessera();
      memtable_mb_ = 0;
      if (SequenceFailed()) {
        diverged_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      StopTessera();
      if (SequenceFailed()) {
        diverged_ = true;
        return;
      }
    }
    StartTessera();
    if (SequenceFailed()) {
      diverged_ = true;
      return;
    }
    if (g_run.settled_gc) SettleGc();
  }

  // Deletes, on both servers, the cells that are collectable now: those the emulator (which
  // never collects when GC is settled) holds but its keep filter removes. Tessera may have
  // collected them at the restart, or not; afterwards both lack them, and as nothing else
  // collects, every later answer has one value. Cells are deleted by exact time ranges, each
  // server's own timestamp for a server-assigned one (its operation's window).
  void SettleGc() {
    btv2::ReadRowsRequest raw;
    SetTable(&raw);
    btv2::ReadRowsRequest kept = raw;
    std::optional<btv2::RowFilter> keep = KeepFilterForTable();
    if (!keep.has_value()) return;
    *kept.mutable_filter() = *keep;
    std::vector<model::Row> all, live;
    Status s1 = ReadAllRows(backends_[1].data.get(), raw, &all);
    Status s2 = ReadAllRows(backends_[1].data.get(), kept, &live);
    if (!s1.ok() || !s2.ok()) {
      Diverged(StrCat("settling GC: the emulator's reads failed: ", s1.ToString(), " ",
                      s2.ToString()));
      return;
    }
    std::map<std::string, std::vector<std::tuple<std::string, std::string, int64_t>>> live_cells;
    for (const model::Row& row : live) {
      for (const model::Cell& c : row.cells) {
        live_cells[row.key].emplace_back(c.family, c.qualifier, c.timestamp_micros);
      }
    }
    int deleted = 0;
    for (const model::Row& row : all) {
      btv2::MutateRowRequest requests[2];
      for (const model::Cell& c : row.cells) {
        const auto& l = live_cells[row.key];
        if (std::find(l.begin(), l.end(), std::make_tuple(c.family, c.qualifier,
                                                          c.timestamp_micros)) != l.end()) {
          continue;
        }
        for (int i = 0; i < 2; ++i) {
          int64_t lo = c.timestamp_micros, hi = c.timestamp_micros + 1000;
          const bool server_assigned =
              c.timestamp_micros >= kYoungFromMicros && c.timestamp_micros < kFutureFromMicros;
          if (server_assigned) {
            const Window* w = WindowOf(1, c.timestamp_micros);
            const Window* mine = w == nullptr ? nullptr : WindowOfOp(i, w->op);
            if (mine == nullptr) {
              Diverged(StrCat("settling GC: no request window for ", Printable(row.key), " ",
                              c.family, ":", Printable(c.qualifier), " @", c.timestamp_micros));
              return;
            }
            lo = mine->lo;
            hi = mine->hi - mine->hi % 1000 + 1000;
          }
          lo -= lo % 1000;
          auto* del = requests[i].add_mutations()->mutable_delete_from_column();
          del->set_family_name(c.family);
          del->set_column_qualifier(c.qualifier);
          del->mutable_time_range()->set_start_timestamp_micros(lo);
          del->mutable_time_range()->set_end_timestamp_micros(hi);
        }
        ++deleted;
      }
      if (requests[0].mutations_size() == 0) continue;
      for (int i = 0; i < 2; ++i) {
        SetTable(&requests[i]);
        requests[i].set_row_key(row.key);
        btv2::MutateRowResponse response;
        auto context = Context();
        grpc::Status s = backends_[i].data->MutateRow(context.get(), requests[i], &response);
        if (!s.ok()) {
          Diverged(StrCat("settling GC failed on ", backends_[i].name, ": ", s.error_message(),
                          "\nrequest: ", Text(requests[i])));
          return;
        }
      }
    }
    Note(StrCat("settled GC: deleted ", deleted, " collectable cells on both servers"));
    CompareWholeTable("after settling GC");
  }

  // The window of backend i that holds `ts`, or of operation `op`; nullptr if none.
  const Window* WindowOf(int i, int64_t ts) const {
    auto it = std::upper_bound(windows_[i].begin(), windows_[i].end(), ts,
                               [](int64_t t, const Window& w) { return t < w.lo; });
    if (it == windows_[i].begin() || ts > std::prev(it)->hi) return nullptr;
    return &*std::prev(it);
  }
  const Window* WindowOfOp(int i, int op) const {
    auto it = std::lower_bound(windows_[i].begin(), windows_[i].end(), op,
                               [](const Window& w, int o) { return w.op < o; });
    if (it == windows_[i].end() || it->op != op) return nullptr;
    return &*it;
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
    std::vector<model::Row> rows;
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

  // Runs one sequence of `ops` operations from `seed` on fresh servers. Returns whether the
  // servers agreed throughout.
  bool RunSequence(uint64_t seed, int ops) {
    ResetState(seed);
    std::printf("differential_test: seed %llu (replay with TESSERA_SEED=%llu), %d operations\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
                ops);
    std::fflush(stdout);
    StartServers();
    if (SequenceFailed()) return false;
    Generator gen(seed, &schema_, g_run.settled_gc);
    CreateTable(gen);
    if (SequenceFailed()) return false;
    int counts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
    for (op_ = 0; op_ < ops && !diverged_; ++op_) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "stopped after " << op_ << " operations: over 4 minutes";
        return false;
      }
      size_t kind = gen.Uniform(1000);
      if (kind < 300) {
        MutateRow(gen);
        ++counts[0];
      } else if (kind < 400) {
        MutateRows(gen);
        ++counts[1];
      } else if (kind < 740) {
        ReadRows(gen);
        ++counts[2];
      } else if (kind < 860) {
        CheckAndMutate(gen);
        ++counts[3];
      } else if (kind < 940) {
        ReadModifyWrite(gen);
        ++counts[4];
      } else if (kind < 965) {
        Admin(gen);
        ++counts[6];
      } else if (kind < (g_run.settled_gc ? 975 : 967)) {
        if (g_run.restarts || g_run.settled_gc) {
          RestartTessera();
          ++counts[7];
        }
      } else {
        Invalid(gen);
        ++counts[5];
      }
      if (!diverged_ && op_ % 100 == 99) CompareWholeTable(StrCat("after operation ", op_));
    }
    if (!diverged_) CompareWholeTable("at the end");
    std::printf(
        "differential_test: seed %llu: %d operations (MutateRow %d, MutateRows %d, ReadRows %d, "
        "CheckAndMutateRow %d, ReadModifyWriteRow %d, admin %d, invalid %d, restarts %d), %d "
        "whole-table compares, %d reads with rows, %zu rows compared%s\n",
        static_cast<unsigned long long>(seed), op_, counts[0], counts[1], counts[2], counts[3],
        counts[4], counts[6], counts[5], counts[7], full_compares_, nonempty_reads_,
        rows_compared_, diverged_ ? ", DIVERGED" : ", all equal");
    std::fflush(stdout);
    const bool agreed = !diverged_ && !SequenceFailed();
    StopServers();
    return agreed && !SequenceFailed();
  }

  uint64_t seed_ = 0;
  int op_ = 0;
  bool verbose_ = std::getenv("TESSERA_DIFF_VERBOSE") != nullptr;
  bool diverged_ = false;
  int full_compares_ = 0;
  size_t rows_compared_ = 0;  // rows in answers compared equal or not
  int nonempty_reads_ = 0;
  std::deque<std::string> history_;
  std::unique_ptr<TempDir> dir_;
  Backend backends_[2];
  Schema schema_;
  int failures_before_ = 0;  // FailureCount() when the sequence started
  int memtable_mb_ = 0;  // tessera's --memtable-mb for the next start; 0: the run's choice
  // Per backend: the windows of the requests that asked for server timestamps, in order, and
  // when the last one ended.
  std::vector<Window> windows_[2];
  int64_t last_window_end_[2] = {0, 0};
};

TEST_F(DifferentialTest, RandomOperationsAgree) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(std::max(1, g_run.minutes));
  int run = 0, diverged = 0;
  std::string diverged_seeds;
  for (; run < g_run.seeds; ++run) {
    if (run > 0 && std::chrono::steady_clock::now() > deadline) {
      std::printf("differential_test: --minutes=%d reached after %d sequences\n", g_run.minutes,
                  run);
      break;
    }
    const uint64_t seed = g_run.first_seed + static_cast<uint64_t>(run);
    if (!RunSequence(seed, g_run.ops)) {
      ++diverged;
      diverged_seeds += StrCat(" ", seed);
      if (!g_run.keep_going) {
        ++run;
        break;
      }
      if (Running(backends_[0]) || Running(backends_[1])) StopServers();
    }
  }
  std::printf("differential_test: %d sequence(s) of up to %d operations, %s%s\n", run, g_run.ops,
              diverged == 0 ? "all agreed" : StrCat(diverged, " DIVERGED:").c_str(),
              diverged_seeds.c_str());
}

}  // namespace
}  // namespace tessera::integration

int main(int argc, char** argv) {
  using tessera::integration::g_run;
  ::testing::InitGoogleTest(&argc, argv);
  std::string seeds, ops, minutes, restarts, settled_gc, keep_going, cluster;
  if (!tessera::integration::ParseTestFlags(
          argc, argv,
          {{"tessera", &tessera::integration::g_tessera_binary},
           {"emulator", &tessera::integration::g_emulator_binary},
           {"seeds", &seeds},
           {"ops", &ops},
           {"minutes", &minutes},
           {"restarts", &restarts},
           {"settled-gc", &settled_gc},
           {"keep-going", &keep_going},
           {"cluster", &cluster}},
          {"tessera"},
          "--tessera=<binary> --emulator=<cbtemulator> [--seeds=N] [--ops=M] [--minutes=T] "
          "[--restarts=1] [--settled-gc=1] [--keep-going=1] [--cluster=1] [gtest flags]")) {
    return 2;
  }
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (seeds.empty()) seeds = env("TESSERA_DIFF_SEEDS");
  if (ops.empty()) ops = env("TESSERA_DIFF_OPS");
  const std::string seed = env("TESSERA_SEED");
  g_run.first_seed = !seed.empty() ? std::strtoull(seed.c_str(), nullptr, 10)
                                   : static_cast<uint64_t>(std::chrono::system_clock::now()
                                                               .time_since_epoch()
                                                               .count());
  if (!seeds.empty()) g_run.seeds = std::max(1, std::atoi(seeds.c_str()));
  if (!ops.empty()) g_run.ops = std::max(1, std::atoi(ops.c_str()));
  if (!minutes.empty()) g_run.minutes = std::max(1, std::atoi(minutes.c_str()));
  g_run.restarts = restarts == "1" || restarts == "true";
  g_run.settled_gc = settled_gc == "1" || settled_gc == "true";
  g_run.keep_going = keep_going == "1" || keep_going == "true";
  g_run.cluster = cluster == "1" || cluster == "true";
  if (g_run.cluster && (g_run.restarts || g_run.settled_gc || tessera::integration::SelfCheck())) {
    std::fprintf(stderr, "--cluster=1 runs tessera, without --restarts or --settled-gc\n");
    return 2;
  }
  if (const std::string e = env("TESSERA_CBTEMULATOR"); !e.empty()) {
    tessera::integration::g_emulator_binary = e;
  }
  if (tessera::integration::g_emulator_binary.empty() ||
      access(tessera::integration::g_emulator_binary.c_str(), X_OK) != 0) {
    std::printf("SKIPPED: the official emulator (cbtemulator) is not installed at '%s'; "
                "install the Google Cloud CLI's bigtable emulator or set TESSERA_CBTEMULATOR\n",
                tessera::integration::g_emulator_binary.c_str());
    return 77;
  }
  if (const std::string etcd = tessera::testing::EtcdTestServer::BinaryPath();
      g_run.cluster && access(etcd.c_str(), X_OK) != 0) {
    std::printf("SKIPPED: --cluster=1 needs etcd (%s); install etcd-server\n", etcd.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
