// Model-based test of the engine: the same seeded random operations go to the engine and to a
// ReferenceModel (one per tablet), and every read of the engine is checked against the model.
// Operations: cell writes on a small key space (rows, columns and timestamps collide), deletes of
// every kind, time-range deletes, clock advances (max-age GC), flushes, major compactions,
// schema (GC rule) changes, family drops and re-creations, tablet truncations, close + reopen.
// Reads: point reads, and scans forward and reversed. Small memtables and blocks so that
// flushes, size-tiered compactions and multi-block files happen often.
//
// Replay a failure with TESSERA_SEED=<the printed seed>.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"
#include "tests/engine_test_util.h"
#include "tests/reference_model.h"

namespace tessera::test {
namespace {

using model::ColumnSelector;
using model::GcRule;
using model::ReadSpec;
using model::Row;
using model::RowMutation;
using model::RowRange;
using model::TimeRange;
using tablet::Compression;
using tablet::Engine;
using tablet::EngineOptions;
using tablet::TabletDescriptor;
using tablet::TabletId;

constexpr int64_t kSecond = 1'000'000;

std::vector<std::string> RowKeys() {
  std::vector<std::string> rows;
  for (int i = 0; i < 30; ++i) rows.push_back(fmt::format("r{:02d}", i));
  // Keys that exercise escaping and byte order: a 0x00 byte, a 0xff byte, a prefix of another.
  rows.push_back(std::string("r1\0", 3));
  rows.push_back("r2\xff");
  rows.push_back("r");
  rows.push_back("s");
  return rows;
}

const std::vector<std::string>& Qualifiers() {
  static const std::vector<std::string> q = {
      "a", "b", "c", std::string("q\0z", 3), "", "a_rather_long_qualifier_name_0123456789"};
  return q;
}

struct FamilyDef {
  std::string name;
  GcRule rule;
};

std::vector<FamilyDef> InitialFamilies() {
  return {
      {"none", GcRule::None()},
      {"mv", GcRule::MaxNumVersions(2)},
      {"age", GcRule::MaxAge(20 * kSecond)},
      {"union", GcRule::Union({GcRule::MaxNumVersions(3), GcRule::MaxAge(15 * kSecond)})},
      {"inter", GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(10 * kSecond)})},
  };
}

// Rules that UpdateSchema switches a family to.
GcRule RandomRule(Random* rnd) {
  switch (rnd->Uniform(6)) {
    case 0:
      return GcRule::None();
    case 1:
      return GcRule::MaxNumVersions(1 + rnd->Uniform(3));
    case 2:
      return GcRule::MaxAge((5 + rnd->Uniform(20)) * kSecond);
    case 3:
      return GcRule::Union({GcRule::MaxNumVersions(1 + rnd->Uniform(3)),
                            GcRule::MaxAge((5 + rnd->Uniform(20)) * kSecond)});
    case 4:
      return GcRule::Intersection({GcRule::MaxNumVersions(1 + rnd->Uniform(2)),
                                   GcRule::MaxAge((5 + rnd->Uniform(10)) * kSecond)});
    default:
      return GcRule::Union(
          {GcRule::Intersection({GcRule::MaxNumVersions(1), GcRule::MaxAge(5 * kSecond)}),
           GcRule::MaxNumVersions(4)});
  }
}

struct Config {
  std::string name;
  bool posix = false;
  int ops = 0;
  size_t memtable_bytes = 0;
  size_t block_size = 0;
  Compression compression = Compression::kLz4;
  tablet::SyncMode sync_mode = tablet::SyncMode::kBatch;
  tablet::CompactionStyle compaction = tablet::CompactionStyle::kLeveled;
};

// For gtest's test names and messages.
void PrintTo(const Config& config, std::ostream* os) { *os << config.name; }

class ModelRun {
 public:
  ModelRun(const Config& config, uint64_t seed) : config_(config), rnd_(seed), rows_(RowKeys()) {
    if (config.posix) {
      temp_ = std::make_unique<TempDir>();
      fs_ = PosixFileSystem();
      options_.dir = JoinPath(temp_->path(), "db");
    } else {
      fs_ = &mem_fs_;
      options_.dir = "/db";
    }
    options_.sync_mode = config.sync_mode;
    options_.memtable_bytes = config.memtable_bytes;
    options_.commit_log_segment_bytes = 64 << 10;
    options_.block_cache_bytes = 256 << 10;
    options_.block_size = config.block_size;
    options_.compression = config.compression;
    options_.background_threads = 2;
    options_.compaction_bytes_per_second = 0;
    options_.size_tier_min_files = 3;
    options_.size_tier_max_files = 8;
    options_.compaction_style = config.compaction;
    // Small levels and files, so that a run reaches several levels, cuts outputs between rows
    // and moves files.
    options_.level0_compaction_files = 3;
    options_.level0_stop_files = 6;
    options_.level1_bytes = config.memtable_bytes / 4;
    options_.level_size_multiplier = 2;
    options_.level_file_bytes = config.memtable_bytes / 4;
    // Small read budgets, so that reads compact files too (docs/compaction.md).
    options_.read_budget_bytes = config.memtable_bytes;
    options_.read_budget_min_reads = 4;
  }

  void Run() {
    ASSERT_NO_FATAL_FAILURE(OpenEngine());
    ASSERT_NO_FATAL_FAILURE(CreateTablets());
    for (op_ = 0; op_ < config_.ops; ++op_) {
      ASSERT_NO_FATAL_FAILURE(Step()) << "at op " << op_;
      TraceEngineRow();
      if (op_ % 100 == 99) {
        ASSERT_NO_FATAL_FAILURE(CheckEverything()) << "at op " << op_;
        ASSERT_NO_FATAL_FAILURE(CheckFileLayout()) << "at op " << op_;
      }
    }
    // The background work the run queued settles first: how deep the levels got must not
    // depend on how fast the reads ran beside the compactions.
    ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
    ASSERT_NO_FATAL_FAILURE(CheckFileLayout());
    if (config_.compaction == tablet::CompactionStyle::kLeveled) {
      // A short run holds too little data for more than one level below level 0.
      const uint32_t deepest = config_.ops >= 5000 ? 2 : 1;
      EXPECT_GE(max_level_, deepest) << "the run never reached level " << deepest;
    } else {
      EXPECT_EQ(0u, max_level_);
    }
    ASSERT_NO_FATAL_FAILURE(CheckEverything());
    ASSERT_NO_FATAL_FAILURE(Reopen());
    ASSERT_NO_FATAL_FAILURE(CheckEverything());
    for (auto& t : tablets_) ASSERT_TRUE(engine_->CompactTablet(t.id).ok());
    ASSERT_NO_FATAL_FAILURE(CheckEverything());
    AccumulateStats();
    ::testing::Test::RecordProperty("flushes", flushes_);
    ::testing::Test::RecordProperty("compactions", compactions_);
    ::testing::Test::RecordProperty("reopens", reopens_);
    ::testing::Test::RecordProperty("max_level", max_level_);
    ::testing::Test::RecordProperty("max_eligible_cells", max_eligible_);
    ::testing::Test::RecordProperty("checks", checks_);
    ::testing::Test::RecordProperty("family_drops", drops_);
    ::testing::Test::RecordProperty("truncates", truncates_);
    ::testing::Test::RecordProperty("reversed_scans", reversed_scans_);
    ASSERT_TRUE(engine_->Close().ok());
    engine_.reset();
  }

  const Engine& engine() const { return *engine_; }

 private:
  struct TabletState {
    TabletId id;
    TabletDescriptor descriptor;
    std::unique_ptr<ReferenceModel> model;
  };

  void OpenEngine() {
    Env env;
    env.fs = fs_;
    env.clock = &clock_;
    StatusOr<std::unique_ptr<Engine>> engine = Engine::Open(options_, env);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
  }

  void CreateTablets() {
    const std::vector<std::pair<std::string, std::string>> ranges = {
        {"", "r10"}, {"r10", "r20"}, {"r20", ""}};
    std::vector<std::pair<std::string, GcRule>> families;
    for (const FamilyDef& f : InitialFamilies()) families.emplace_back(f.name, f.rule);
    TabletId id = 7;
    for (const auto& [start, end] : ranges) {
      TabletState t;
      t.id = id++;
      t.descriptor.table = "model_table";
      t.descriptor.start_row = start;
      t.descriptor.end_row = end;
      t.descriptor.schema = MakeSchema("model_table", families);
      t.model = std::make_unique<ReferenceModel>(&clock_);
      for (const auto& [name, rule] : families) t.model->SetFamily(name, rule);
      Status s = engine_->CreateTablet(t.id, t.descriptor);
      ASSERT_TRUE(s.ok()) << s;
      tablets_.push_back(std::move(t));
    }
  }

  TabletState& TabletOf(std::string_view row) {
    for (auto& t : tablets_) {
      if (t.descriptor.ContainsRow(row)) return t;
    }
    ADD_FAILURE() << "no tablet holds the row";
    return tablets_[0];
  }

  const std::string& RandomRow() { return rows_[rnd_.Uniform(rows_.size())]; }
  // A family that the schema of the tablet holding `row` has now.
  std::string RandomFamilyOf(std::string_view row) {
    const std::vector<std::string> families = TabletOf(row).model->Families();
    return families[rnd_.Uniform(families.size())];
  }
  const std::string& RandomFamily() {
    static const std::vector<std::string> names = [] {
      std::vector<std::string> n;
      for (const FamilyDef& f : InitialFamilies()) n.push_back(f.name);
      return n;
    }();
    return names[rnd_.Uniform(names.size())];
  }
  const std::string& RandomQualifier() {
    // Mostly the first three, so that versions pile up.
    const auto& q = Qualifiers();
    return rnd_.OneIn(4) ? q[rnd_.Uniform(q.size())] : q[rnd_.Uniform(3)];
  }
  int64_t RandomTimestamp() {
    const int64_t now = clock_.NowMicros();
    if (rnd_.OneIn(20)) return now - rnd_.Uniform(40) * kSecond;  // likely expired already
    return now - static_cast<int64_t>(rnd_.Uniform(12)) * kSecond;
  }
  TimeRange RandomTimeRange() {
    TimeRange range;
    const int64_t now = clock_.NowMicros();
    switch (rnd_.Uniform(5)) {
      case 0:
        return range;  // everything
      case 1:
        range.start_micros = now - rnd_.Uniform(14) * kSecond;  // open ended
        return range;
      case 2:
        range.end_micros = now - rnd_.Uniform(14) * kSecond;
        return range;
      case 3:
        if (rnd_.OneIn(5)) {  // empty
          range.start_micros = now - 2 * kSecond;
          range.end_micros = now - 5 * kSecond;
          return range;
        }
        [[fallthrough]];
      default:
        range.start_micros = now - rnd_.Uniform(14) * kSecond;
        range.end_micros = range.start_micros + (1 + rnd_.Uniform(6)) * kSecond;
        return range;
    }
  }
  std::string RandomValue() {
    std::string v = fmt::format("v{}_", op_);
    const size_t extra = rnd_.OneIn(30) ? 2000 + rnd_.Uniform(3000) : rnd_.Skewed(8);
    v += rnd_.Bytes(extra);
    return v;
  }

  ReadSpec RandomSpec() {
    ReadSpec spec;
    if (rnd_.OneIn(4)) {
      const int n = 1 + rnd_.Uniform(2);
      for (int i = 0; i < n; ++i) spec.families.push_back(RandomFamily());
    }
    if (rnd_.OneIn(4)) {
      const int n = 1 + rnd_.Uniform(3);
      for (int i = 0; i < n; ++i) spec.columns.push_back({RandomFamily(), RandomQualifier()});
    }
    if (rnd_.OneIn(4)) spec.time_range = RandomTimeRange();
    if (rnd_.OneIn(3)) spec.max_versions = 1 + rnd_.Uniform(3);
    return spec;
  }

  // TESSERA_MODEL_TRACE=<row> prints every mutation of that row and every flush, compaction,
  // reopen, schema change and clock advance, to follow a failure back to its cause.
  static const char* TraceRow() {
    static const char* row = getenv("TESSERA_MODEL_TRACE");
    return row;
  }
  template <typename... Args>
  void Trace(fmt::format_string<Args...> format, Args&&... args) {
    if (TraceRow() == nullptr) return;
    fmt::print("[op {} now {}] {}\n", op_, clock_.NowMicros(),
               fmt::format(format, std::forward<Args>(args)...));
  }
  void TraceMutation(const RowMutation& m) {
    if (TraceRow() == nullptr || m.row() != TraceRow()) return;
    Status s = model::ForEachMutation(m.encoded(), [&](const model::MutationView& v) {
      switch (v.type) {
        case model::MutationType::kSetCell:
          Trace("  SetCell {}:{}@{} = {}", v.family, v.qualifier, v.timestamp_micros,
                v.value.substr(0, std::min<size_t>(v.value.size(), 8)));
          break;
        case model::MutationType::kDeleteFromColumn:
          Trace("  DeleteFromColumn {}:{} [{}, {})", v.family, v.qualifier, v.range.start_micros,
                v.range.end_micros);
          break;
        case model::MutationType::kDeleteFromFamily:
          Trace("  DeleteFromFamily {}", v.family);
          break;
        case model::MutationType::kDeleteFromRow:
          Trace("  DeleteFromRow");
          break;
      }
    });
    (void)s;
  }

  // When tracing, prints the engine's and the model's view of the traced row whenever the
  // engine's changes.
  void TraceEngineRow() {
    if (TraceRow() == nullptr) return;
    const std::string row = TraceRow();
    TabletState& t = TabletOf(row);
    StatusOr<std::optional<Row>> got = engine_->ReadRow(t.id, row, {});
    std::string now = !got.ok()          ? got.status().ToString()
                      : got->has_value() ? ReferenceModel::DebugString(**got)
                                         : "(none)";
    if (now == traced_) return;
    traced_ = now;
    std::optional<Row> expected = t.model->ReadRow(row, {});
    Trace("engine: {}", now);
    Trace("model:  {}", expected ? ReferenceModel::DebugString(*expected) : "(none)");
  }

  void Apply(const RowMutation& m) {
    TraceMutation(m);
    TabletState& t = TabletOf(m.row());
    Status s = engine_->Apply(t.id, m);
    ASSERT_TRUE(s.ok()) << "Apply: " << s;
    t.model->Apply(m);
  }

  void Step() {
    const uint64_t r = rnd_.Uniform(1000);
    if (r < 480) {  // one to three cells of one row
      const std::string& row = RandomRow();
      RowMutation m(row);
      const int n = 1 + rnd_.Uniform(3);
      for (int i = 0; i < n; ++i) {
        m.SetCell(RandomFamilyOf(row), RandomQualifier(), RandomTimestamp(), RandomValue());
      }
      Apply(m);
    } else if (r < 540) {
      const std::string& row = RandomRow();
      RowMutation m(row);
      m.DeleteFromColumn(RandomFamilyOf(row), RandomQualifier(), RandomTimeRange());
      Apply(m);
    } else if (r < 565) {
      const std::string& row = RandomRow();
      RowMutation m(row);
      m.DeleteFromFamily(RandomFamilyOf(row));
      Apply(m);
    } else if (r < 580) {
      RowMutation m(RandomRow());
      m.DeleteFromRow();
      Apply(m);
    } else if (r < 620) {  // a batch mixing deletes and writes: order matters
      const std::string& row = RandomRow();
      RowMutation m(row);
      const int n = 2 + rnd_.Uniform(4);
      for (int i = 0; i < n; ++i) {
        switch (rnd_.Uniform(5)) {
          case 0:
            m.DeleteFromRow();
            break;
          case 1:
            m.DeleteFromFamily(RandomFamilyOf(row));
            break;
          case 2:
            m.DeleteFromColumn(RandomFamilyOf(row), RandomQualifier(), RandomTimeRange());
            break;
          default:
            m.SetCell(RandomFamilyOf(row), RandomQualifier(), RandomTimestamp(), RandomValue());
        }
      }
      Apply(m);
    } else if (r < 670) {
      clock_.Advance((1 + rnd_.Uniform(4)) * kSecond);
      Trace("clock advanced");
    } else if (r < 695) {
      std::optional<TabletId> id;
      if (!rnd_.OneIn(3)) id = tablets_[rnd_.Uniform(tablets_.size())].id;
      Trace("Flush tablet {}", id.has_value() ? fmt::format("{}", *id) : "all");
      Status s = engine_->Flush(id);
      ASSERT_TRUE(s.ok()) << "Flush: " << s;
    } else if (r < 707) {
      const TabletId id = tablets_[rnd_.Uniform(tablets_.size())].id;
      Trace("CompactTablet {}", id);
      Status s = engine_->CompactTablet(id);
      ASSERT_TRUE(s.ok()) << "CompactTablet: " << s;
    } else if (r < 712) {
      ASSERT_NO_FATAL_FAILURE(Reopen());
    } else if (r < 716) {
      ASSERT_NO_FATAL_FAILURE(UpdateSchema());
    } else if (r < 720) {
      Status s = engine_->WaitForBackgroundWork();
      ASSERT_TRUE(s.ok()) << "WaitForBackgroundWork: " << s;
    } else if (r < 723) {
      ASSERT_NO_FATAL_FAILURE(DropFamily());
    } else if (r < 724) {
      ASSERT_NO_FATAL_FAILURE(Truncate());
    } else if (r < 880) {
      ASSERT_NO_FATAL_FAILURE(CheckRandomRow());
    } else {
      ASSERT_NO_FATAL_FAILURE(CheckRandomScan());
    }
  }

  // Changes a family's GC rule, or creates a family (often one dropped before).
  void UpdateSchema() {
    TabletState& t = tablets_[rnd_.Uniform(tablets_.size())];
    std::string family = RandomFamily();
    for (int i = 0; i < 3 && t.model->HasFamily(family); ++i) family = RandomFamily();
    const GcRule rule = RandomRule(&rnd_);
    model::TableSchema schema = t.descriptor.schema;
    schema.families[family].gc_rule = rule;
    Trace("UpdateSchema tablet {}: {} -> {}", t.id, family, rule.ToString());
    Status s = engine_->UpdateSchema(t.id, schema);
    ASSERT_TRUE(s.ok()) << "UpdateSchema: " << s;
    ASSERT_NO_FATAL_FAILURE(RefreshDescriptor(&t));
    EXPECT_TRUE(t.descriptor.schema.families == schema.families);
    t.model->SetFamily(family, rule);
  }

  // Drops one of a tablet's families; its cells must never come back, not even once a family of
  // that name is created again.
  void DropFamily() {
    TabletState& t = tablets_[rnd_.Uniform(tablets_.size())];
    const std::vector<std::string> families = t.model->Families();
    if (families.size() < 2) return;
    const std::string family = families[rnd_.Uniform(families.size())];
    model::TableSchema schema = t.descriptor.schema;
    schema.families.erase(family);
    Trace("DropFamily tablet {}: {}", t.id, family);
    Status s = engine_->UpdateSchema(t.id, schema);
    ASSERT_TRUE(s.ok()) << "UpdateSchema (drop): " << s;
    ASSERT_NO_FATAL_FAILURE(RefreshDescriptor(&t));
    EXPECT_FALSE(t.descriptor.schema.families.contains(family));
    const tablet::DropMarks marks = DropMarksOf(*engine_, t.id);
    EXPECT_TRUE(marks.contains(family));
    EXPECT_LT(tablet::DroppedBefore(marks, family), uint64_t{1} << 50);
    t.model->DropFamily(family);
    ++drops_;
  }

  void Truncate() {
    TabletState& t = tablets_[rnd_.Uniform(tablets_.size())];
    Trace("TruncateTablet {}", t.id);
    Status s = engine_->TruncateTablet(t.id);
    ASSERT_TRUE(s.ok()) << "TruncateTablet: " << s;
    t.model->Clear();
    ++truncates_;
  }

  void RefreshDescriptor(TabletState* t) {
    StatusOr<TabletDescriptor> d = engine_->GetTablet(t->id);
    ASSERT_TRUE(d.ok()) << d.status();
    t->descriptor = *d;
  }

  // Leveled compaction's promise (docs/compaction.md): within a locality group, the files of
  // each level >= 1 hold disjoint rows, and level 0 stays below its stop size plus the flushes
  // already running.
  void CheckFileLayout() {
    for (const auto& t : tablets_) {
      StatusOr<std::vector<tablet::SstableInfo>> files = engine_->ListSstables(t.id);
      ASSERT_TRUE(files.ok()) << files.status();
      std::map<std::pair<uint32_t, uint32_t>, std::vector<const tablet::SstableInfo*>> levels;
      for (const auto& f : *files) {
        ASSERT_LE(f.first_row, f.last_row) << "file " << f.number;
        max_level_ = std::max(max_level_, f.level);
        levels[{f.group, f.level}].push_back(&f);
      }
      for (auto& [key, level] : levels) {
        if (key.second == 0) continue;
        std::sort(level.begin(), level.end(),
                  [](const auto* a, const auto* b) { return a->first_row < b->first_row; });
        for (size_t i = 1; i < level.size(); ++i) {
          ASSERT_LT(level[i - 1]->last_row, level[i]->first_row)
              << "tablet " << t.id << " group " << key.first << " level " << key.second
              << ": files " << level[i - 1]->number << " and " << level[i]->number << " overlap";
        }
      }
    }
  }

  void AccumulateStats() {
    const tablet::EngineStats stats = engine_->GetStats();
    flushes_ += stats.flushes;
    compactions_ += stats.compactions;
  }

  void Reopen() {
    Trace("Reopen");
    ++reopens_;
    AccumulateStats();
    Status s = engine_->Close();
    ASSERT_TRUE(s.ok()) << "Close: " << s;
    engine_.reset();
    ASSERT_NO_FATAL_FAILURE(OpenEngine());
    std::vector<TabletId> ids = engine_->ListTablets();
    std::sort(ids.begin(), ids.end());
    std::vector<TabletId> expected;
    for (const auto& t : tablets_) expected.push_back(t.id);
    ASSERT_EQ(expected, ids);
    for (const auto& t : tablets_) {
      StatusOr<TabletDescriptor> d = engine_->GetTablet(t.id);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(t.descriptor.table, d->table);
      EXPECT_EQ(t.descriptor.start_row, d->start_row);
      EXPECT_EQ(t.descriptor.end_row, d->end_row);
      EXPECT_TRUE(t.descriptor.schema == d->schema)
          << "schema after reopen: " << d->schema.DebugString() << "\nexpected "
          << t.descriptor.schema.DebugString();
    }
  }

  void CheckRandomRow() {
    ++checks_;
    const std::string& row = RandomRow();
    TabletState& t = TabletOf(row);
    const ReadSpec spec = RandomSpec();
    StatusOr<std::optional<Row>> got = engine_->ReadRow(t.id, row, spec);
    ASSERT_TRUE(got.ok()) << "ReadRow: " << got.status();
    ASSERT_TRUE(t.model->CheckRow(row, spec, *got));
  }

  void CheckRandomScan() {
    ++checks_;
    for (auto& t : tablets_) {
      max_eligible_ = std::max<int64_t>(max_eligible_, t.model->EligibleCellCount());
    }
    TabletState& t = tablets_[rnd_.Uniform(tablets_.size())];
    RowRange range;
    if (!rnd_.OneIn(4)) range.start = RandomRow();
    if (!rnd_.OneIn(3)) range.end = RandomRow();
    if (!range.end.empty() && range.end < range.start) std::swap(range.start, range.end);
    const ReadSpec spec = RandomSpec();
    const uint64_t limit = rnd_.OneIn(2) ? 0 : 1 + rnd_.Uniform(5);
    const bool reversed = rnd_.OneIn(3);
    reversed_scans_ += reversed ? 1 : 0;
    StatusOr<std::vector<Row>> got = ScanAll(
        *engine_, t.id, range, spec, tablet::ScanOptions{.limit = limit, .reversed = reversed});
    ASSERT_TRUE(got.ok()) << "Scan: " << got.status();
    ASSERT_TRUE(t.model->CheckScan(range, spec, limit, *got, reversed));
  }

  void CheckEverything() {
    for (auto& t : tablets_) {
      StatusOr<std::vector<Row>> got = ScanAll(*engine_, t.id, RowRange{});
      ASSERT_TRUE(got.ok()) << "Scan: " << got.status();
      ASSERT_TRUE(t.model->CheckScan(RowRange{}, ReadSpec{}, 0, *got)) << "tablet " << t.id;
      StatusOr<std::vector<Row>> back =
          ScanAll(*engine_, t.id, RowRange{}, ReadSpec{}, tablet::ScanOptions{.reversed = true});
      ASSERT_TRUE(back.ok()) << "reversed Scan: " << back.status();
      ASSERT_TRUE(t.model->CheckScan(RowRange{}, ReadSpec{}, 0, *back, /*reversed=*/true))
          << "tablet " << t.id;
      for (const std::string& row : t.model->RowKeys()) {
        StatusOr<std::optional<Row>> one = engine_->ReadRow(t.id, row, ReadSpec{});
        ASSERT_TRUE(one.ok()) << "ReadRow: " << one.status();
        ASSERT_TRUE(t.model->CheckRow(row, ReadSpec{}, *one));
      }
    }
  }

  const Config config_;
  Random rnd_;
  const std::vector<std::string> rows_;
  MemFileSystem mem_fs_;
  std::unique_ptr<TempDir> temp_;
  FileSystem* fs_ = nullptr;
  ManualClock clock_;
  EngineOptions options_;
  uint32_t max_level_ = 0;
  std::unique_ptr<Engine> engine_;
  std::vector<TabletState> tablets_;
  int op_ = 0;
  std::string traced_;
  int64_t reopens_ = 0;
  int64_t flushes_ = 0;
  int64_t compactions_ = 0;
  int64_t checks_ = 0;
  int64_t max_eligible_ = 0;
  int64_t drops_ = 0;
  int64_t truncates_ = 0;
  int64_t reversed_scans_ = 0;
};

class EngineModelTest : public ::testing::TestWithParam<Config> {};

TEST_P(EngineModelTest, RandomOperationsMatchModel) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(fmt::format("seed={} (replay with TESSERA_SEED={})", seed, seed));
  ModelRun run(GetParam(), seed);
  ASSERT_NO_FATAL_FAILURE(run.Run());
}

INSTANTIATE_TEST_SUITE_P(
    Configs, EngineModelTest,
    ::testing::Values(Config{.name = "MemSmallBlocksLz4",
                             .ops = 20000,
                             .memtable_bytes = 16 << 10,
                             .block_size = 1024,
                             .compression = Compression::kLz4},
                      Config{.name = "MemZstdPeriodic",
                             .ops = 10000,
                             .memtable_bytes = 64 << 10,
                             .block_size = 4096,
                             .compression = Compression::kZstd,
                             .sync_mode = tablet::SyncMode::kPeriodic},
                      Config{.name = "MemNoCompression",
                             .ops = 10000,
                             .memtable_bytes = 32 << 10,
                             .block_size = 2048,
                             .compression = Compression::kNone},
                      Config{.name = "MemSmallBlocksLz4SizeTiered",
                             .ops = 20000,
                             .memtable_bytes = 16 << 10,
                             .block_size = 1024,
                             .compression = Compression::kLz4,
                             .compaction = tablet::CompactionStyle::kSizeTiered},
                      Config{.name = "MemNoCompressionSizeTiered",
                             .ops = 10000,
                             .memtable_bytes = 32 << 10,
                             .block_size = 2048,
                             .compression = Compression::kNone,
                             .compaction = tablet::CompactionStyle::kSizeTiered},
                      Config{.name = "Posix",
                             .posix = true,
                             .ops = 800,
                             .memtable_bytes = 16 << 10,
                             .block_size = 1024,
                             .compression = Compression::kLz4}),
    [](const ::testing::TestParamInfo<Config>& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::test
