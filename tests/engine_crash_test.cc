// Crash tests on MemFileSystem: a fixed workload of writes, deletes, flushes and compactions is
// cut at many crash points (MemFileSystem::FailAfterOps: from that operation on every mutating
// file operation fails, as if the process had died there), the machine "crashes" (everything
// not synced is lost), and the engine is reopened. Then:
//   - kBatch: every acknowledged write is there, exactly; the one write in flight at the crash
//     (the first that failed; the workload stops there) may or may not be;
//   - kPeriodic: each tablet holds a prefix of its acknowledged writes (plus maybe the one in
//     flight), and at least everything it had before its last successful Flush;
//   - Open never fails (no DataLoss), reads never fail, and the recovered engine keeps working
//     through a second write + close + reopen cycle.
// kBatch workloads also truncate tablets and drop and re-create a family: each is all or
// nothing (the one in flight at the crash may or may not have happened, whole), and neither
// truncated data nor a dropped family's cells ever come back.
// The crash points are chosen from the number of mutating operations of a dry run.
//
// Replay a failure with TESSERA_SEED=<the printed seed>.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"
#include "tests/engine_test_util.h"
#include "tests/reference_model.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::Row;
using model::RowMutation;
using model::RowRange;
using tablet::CompactionStyle;
using tablet::Engine;
using tablet::EngineOptions;
using tablet::SyncMode;
using tablet::TabletDescriptor;
using tablet::TabletId;

constexpr TabletId kTablets[] = {1, 2};
constexpr char kSplitRow[] = "m";

// The family that admin workloads drop from tablet 1 and create again.
constexpr char kDroppedFamily[] = "g";

struct Op {
  enum Kind {
    kWrite,
    kFlush,
    kFlushAll,
    kCompact,
    kTruncate,      // TruncateTablet(tablet)
    kDropFamily,    // UpdateSchema(1) without kDroppedFamily
    kCreateFamily,  // UpdateSchema(1) with it again
  } kind = kWrite;
  TabletId tablet = 0;
  std::optional<RowMutation> mutation;

  // Ops whose success the verification must know: they change what the tablet holds.
  bool ChangesData() const { return kind == kWrite || kind >= kTruncate; }
};

TabletDescriptor Descriptor(TabletId id) {
  TabletDescriptor d;
  d.table = "crash";
  d.start_row = id == 1 ? "" : kSplitRow;
  d.end_row = id == 1 ? kSplitRow : "";
  d.schema = MakeSchema("crash", {{"f", GcRule::None()}, {"g", GcRule::None()}});
  return d;
}

TabletId TabletOfRow(std::string_view row) { return row < kSplitRow ? 1 : 2; }

// Tablet 1's schema with or without kDroppedFamily.
model::TableSchema SchemaOfTablet1(bool with_dropped_family) {
  model::TableSchema schema = Descriptor(1).schema;
  if (!with_dropped_family) schema.families.erase(kDroppedFamily);
  return schema;
}

// A deterministic workload: mostly writes of unique values, some deletes, flushes, compactions;
// with `admin_ops`, also truncations and a family dropped and created again.
std::vector<Op> MakeWorkload(uint64_t seed, int n, bool admin_ops = false) {
  Random rnd(seed);
  std::vector<Op> ops;
  bool dropped = false;  // kDroppedFamily is dropped from tablet 1
  for (int i = 0; i < n; ++i) {
    const uint64_t r = rnd.Uniform(100);
    Op op;
    // Besides random ones, every admin workload truncates both tablets and drops the family.
    const bool forced = i == n / 4 || i == n / 2 || i == 3 * n / 4;
    if (admin_ops && (forced || rnd.OneIn(30))) {
      if (i == n / 4 || i == 3 * n / 4) {
        op.kind = Op::kTruncate;
        op.tablet = i == n / 4 ? 1 : 2;
      } else if (dropped) {
        op.kind = Op::kCreateFamily;
        op.tablet = 1;
        dropped = false;
      } else if (rnd.OneIn(2)) {
        op.kind = Op::kDropFamily;
        op.tablet = 1;
        dropped = true;
      } else {
        op.kind = Op::kTruncate;
        op.tablet = kTablets[rnd.Uniform(2)];
      }
    } else if (r < 4) {
      op.kind = Op::kFlush;
      op.tablet = kTablets[rnd.Uniform(2)];
    } else if (r < 6) {
      op.kind = Op::kFlushAll;
    } else if (r < 8) {
      op.kind = Op::kCompact;
      op.tablet = kTablets[rnd.Uniform(2)];
    } else {
      // Rows a..z so both tablets get writes; a small key space so deletes hit something.
      const std::string row(1, static_cast<char>('a' + rnd.Uniform(26)));
      std::string family = rnd.OneIn(3) ? "g" : "f";
      if (dropped && TabletOfRow(row) == 1) family = "f";
      const std::string qualifier = fmt::format("q{}", rnd.Uniform(4));
      RowMutation m(row);
      if (r < 12) {
        m.DeleteFromRow();
      } else if (r < 16) {
        m.DeleteFromColumn(family, qualifier, {0, static_cast<int64_t>(rnd.Uniform(50))});
      } else if (r < 18) {
        m.DeleteFromFamily(family);
        m.SetCell(family, qualifier, i, fmt::format("after-delete-{}", i));
      } else {
        const int cells = 1 + rnd.Uniform(3);
        for (int c = 0; c < cells; ++c) {
          // Unique values (op index, cell index) so a cell tells which write it came from;
          // some padding so that memtables fill and flush on their own.
          m.SetCell(family, fmt::format("q{}", rnd.Uniform(4)), rnd.Uniform(60),
                    fmt::format("w{}.{}:{}", i, c, std::string(rnd.Uniform(300), 'x')));
        }
      }
      op.tablet = TabletOfRow(row);
      op.mutation = std::move(m);
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

struct RunResult {
  // Writes, truncations and schema changes (indexes into the workload; Op::ChangesData)
  // acknowledged with OK, in order.
  std::vector<size_t> acked;
  // The one of them that failed first (the workload stopped there), if any.
  std::optional<size_t> in_flight;
  // Per tablet: acked.size() at the last successful Flush covering the tablet.
  std::map<TabletId, size_t> flushed_acked;
  // Tablets whose CreateTablet returned OK; all of them when tablets_created.
  std::vector<TabletId> created;
  bool tablets_created = false;
};

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override { SilenceExpectedErrorLogs(); }

  EngineOptions Options(SyncMode mode) const {
    EngineOptions o;
    o.dir = "/crashdb";
    o.sync_mode = mode;
    o.periodic_sync_interval_ms = 2;
    o.commit_log_segment_bytes = 8 << 10;
    o.memtable_bytes = 8 << 10;
    o.block_size = 1024;
    o.compaction_bytes_per_second = 0;
    o.size_tier_min_files = 3;
    o.background_threads = 2;
    o.compaction_style = style_;
    // Small levels: crash points fall inside level-0 compactions, cut outputs and moves.
    o.level0_compaction_files = 3;
    o.level1_bytes = 24 << 10;
    o.level_size_multiplier = 3;
    o.level_file_bytes = 4 << 10;
    return o;
  }
  CompactionStyle style_ = CompactionStyle::kLeveled;

  // Runs the workload on `fs` until the first failed write. Never fails the test: failures
  // are expected once the crash point is reached.
  RunResult RunWorkload(MemFileSystem* fs, const EngineOptions& options,
                        const std::vector<Op>& ops) {
    RunResult result;
    Env env;
    env.fs = fs;
    env.clock = &clock_;
    StatusOr<std::unique_ptr<Engine>> opened = Engine::Open(options, env);
    if (!opened.ok()) {
      fs->FailAfterOps(0);
      fs->SimulateCrash();
      return result;
    }
    std::unique_ptr<Engine> engine = std::move(*opened);
    bool created = true;
    for (TabletId id : kTablets) {
      if (!engine->CreateTablet(id, Descriptor(id)).ok()) {
        created = false;
        break;
      }
      result.created.push_back(id);
    }
    result.tablets_created = created;
    for (size_t i = 0; created && i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.ChangesData()) {
        Status s;
        switch (op.kind) {
          case Op::kTruncate:
            s = engine->TruncateTablet(op.tablet);
            break;
          case Op::kDropFamily:
          case Op::kCreateFamily:
            s = engine->UpdateSchema(op.tablet, SchemaOfTablet1(op.kind == Op::kCreateFamily));
            break;
          default:
            s = engine->Apply(op.tablet, *op.mutation);
        }
        if (!s.ok()) {
          result.in_flight = i;
          break;
        }
        result.acked.push_back(i);
      } else if (op.kind == Op::kFlush) {
        if (engine->Flush(op.tablet).ok()) result.flushed_acked[op.tablet] = result.acked.size();
      } else if (op.kind == Op::kFlushAll) {
        if (engine->Flush(std::nullopt).ok()) {
          for (TabletId id : kTablets) result.flushed_acked[id] = result.acked.size();
        }
      } else {
        (void)engine->CompactTablet(op.tablet);
      }
    }
    // Kill the process: nothing it does from here on reaches the disk.
    fs->FailAfterOps(0);
    (void)engine->Close();
    engine.reset();
    fs->SimulateCrash();
    return result;
  }

  // The model after `indexes` (ops of the workload that change data) of tablet `id`, in order.
  std::unique_ptr<ReferenceModel> ModelOf(const std::vector<Op>& ops,
                                          const std::vector<size_t>& indexes, TabletId id) {
    auto model = std::make_unique<ReferenceModel>(&clock_);
    model->SetFamily("f", GcRule::None());
    model->SetFamily("g", GcRule::None());
    for (size_t i : indexes) {
      const Op& op = ops[i];
      if (op.tablet != id) continue;
      switch (op.kind) {
        case Op::kTruncate:
          model->Clear();
          break;
        case Op::kDropFamily:
          model->DropFamily(kDroppedFamily);
          break;
        case Op::kCreateFamily:
          model->SetFamily(kDroppedFamily, GcRule::None());
          break;
        default:
          model->Apply(*op.mutation);
      }
    }
    return model;
  }

  // Whether tablet 1 has kDroppedFamily after `indexes`.
  static bool HasDroppedFamily(const std::vector<Op>& ops, const std::vector<size_t>& indexes) {
    bool has = true;
    for (size_t i : indexes) {
      if (ops[i].kind == Op::kDropFamily) has = false;
      if (ops[i].kind == Op::kCreateFamily) has = true;
    }
    return has;
  }

  // The recovered schema is the one after the acknowledged schema changes, or also the one in
  // flight; a dropped family stays marked as dropped.
  void CheckSchema(const std::vector<Op>& ops, const RunResult& result, TabletId id,
                   const model::TableSchema& schema, const tablet::DropMarks& drop_marks) {
    if (id != 1) {
      EXPECT_TRUE(schema == Descriptor(id).schema) << schema.DebugString();
      return;
    }
    const bool has = schema.families.contains(kDroppedFamily);
    bool may_have[2] = {false, false};
    may_have[HasDroppedFamily(ops, result.acked)] = true;
    if (result.in_flight.has_value()) {
      std::vector<size_t> with = result.acked;
      with.push_back(*result.in_flight);
      may_have[HasDroppedFamily(ops, with)] = true;
    }
    EXPECT_TRUE(may_have[has]) << "tablet 1 schema: " << schema.DebugString();
    EXPECT_TRUE(schema.families.contains("f"));
    if (!has) {
      EXPECT_TRUE(drop_marks.contains(kDroppedFamily));
    }
  }

  // Reopens after the crash and checks the recovered state. `crash_point` is for messages.
  void Verify(MemFileSystem* fs, const EngineOptions& options, const std::vector<Op>& ops,
              const RunResult& result, int64_t crash_point) {
    SCOPED_TRACE(fmt::format("crash point {}: {} writes acknowledged, in flight: {}", crash_point,
                             result.acked.size(),
                             result.in_flight ? fmt::format("{}", *result.in_flight) : "none"));
    Env env;
    env.fs = fs;
    env.clock = &clock_;
    StatusOr<std::unique_ptr<Engine>> opened = Engine::Open(options, env);
    ASSERT_TRUE(opened.ok()) << "Open after crash: " << opened.status();
    std::unique_ptr<Engine> engine = std::move(*opened);
    std::vector<TabletId> ids = engine->ListTablets();
    std::sort(ids.begin(), ids.end());
    for (TabletId id : result.created) {
      ASSERT_TRUE(std::find(ids.begin(), ids.end(), id) != ids.end())
          << "tablet " << id << " was created (acknowledged) but is gone";
    }
    for (TabletId id : ids) {
      ASSERT_TRUE(id == kTablets[0] || id == kTablets[1]) << "unknown tablet " << id;
      StatusOr<TabletDescriptor> d = engine->GetTablet(id);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_NO_FATAL_FAILURE(CheckSchema(ops, result, id, d->schema, DropMarksOf(*engine, id)));
      StatusOr<std::vector<Row>> rows = ScanAll(*engine, id, RowRange{});
      ASSERT_TRUE(rows.ok()) << "Scan tablet " << id << " after crash: " << rows.status();
      if (options.sync_mode == SyncMode::kBatch) {
        ASSERT_NO_FATAL_FAILURE(CheckBatch(ops, result, id, *rows));
      } else {
        ASSERT_NO_FATAL_FAILURE(CheckPeriodic(ops, result, id, *rows));
      }
      // Point reads agree with the scan.
      for (const Row& row : *rows) {
        StatusOr<std::optional<Row>> one = engine->ReadRow(id, row.key, {});
        ASSERT_TRUE(one.ok()) << one.status();
        ASSERT_TRUE(one->has_value() && **one == row) << "ReadRow " << row.key;
      }
    }
    if (ids.size() != std::size(kTablets)) return;  // crashed while creating tablets

    // The recovered engine keeps working: more writes, a flush, close, reopen.
    std::vector<std::vector<Row>> before;
    for (TabletId id : kTablets) {
      StatusOr<std::vector<Row>> rows = ScanAll(*engine, id, RowRange{});
      ASSERT_TRUE(rows.ok()) << rows.status();
      before.push_back(*rows);
    }
    // Tablet 1 has family f always; tablet 2 never loses g.
    RowMutation extra1("b");
    extra1.SetCell("f", "post-crash", 1, "p1");
    RowMutation extra2("x");
    extra2.SetCell("g", "post-crash", 1, "p2");
    Status s = engine->Apply(1, extra1);
    ASSERT_TRUE(s.ok()) << "Apply after recovery: " << s;
    s = engine->Flush(std::nullopt);
    ASSERT_TRUE(s.ok()) << "Flush after recovery: " << s;
    s = engine->Apply(2, extra2);
    ASSERT_TRUE(s.ok()) << "Apply after recovery: " << s;
    s = engine->Close();
    ASSERT_TRUE(s.ok()) << s;
    engine.reset();
    opened = Engine::Open(options, env);
    ASSERT_TRUE(opened.ok()) << "second Open: " << opened.status();
    engine = std::move(*opened);
    for (size_t t = 0; t < std::size(kTablets); ++t) {
      auto model = std::make_unique<ReferenceModel>(&clock_);
      model->SetFamily("f", GcRule::None());
      model->SetFamily("g", GcRule::None());
      for (const Row& row : before[t]) {
        RowMutation m(row.key);
        for (const auto& c : row.cells)
          m.SetCell(c.family, c.qualifier, c.timestamp_micros, c.value);
        model->Apply(m);
      }
      model->Apply(kTablets[t] == 1 ? extra1 : extra2);
      StatusOr<std::vector<Row>> rows = ScanAll(*engine, kTablets[t], RowRange{});
      ASSERT_TRUE(rows.ok()) << rows.status();
      ASSERT_TRUE(model->CheckScan(RowRange{}, {}, 0, *rows)) << "after the second reopen";
    }
    ASSERT_TRUE(engine->Close().ok());
  }

  void CheckBatch(const std::vector<Op>& ops, const RunResult& result, TabletId id,
                  const std::vector<Row>& rows) {
    std::unique_ptr<ReferenceModel> acked = ModelOf(ops, result.acked, id);
    ::testing::AssertionResult without = acked->CheckScan(RowRange{}, {}, 0, rows);
    if (without) return;
    if (result.in_flight.has_value() && ops[*result.in_flight].tablet == id) {
      std::vector<size_t> with = result.acked;
      with.push_back(*result.in_flight);
      ::testing::AssertionResult with_in_flight =
          ModelOf(ops, with, id)->CheckScan(RowRange{}, {}, 0, rows);
      if (with_in_flight) return;
      FAIL() << "tablet " << id << " matches neither the acknowledged writes:\n"
             << without.message() << "\nnor them plus the write in flight:\n"
             << with_in_flight.message();
    }
    FAIL() << "tablet " << id << " lost acknowledged writes or has others:\n" << without.message();
  }

  void CheckPeriodic(const std::vector<Op>& ops, const RunResult& result, TabletId id,
                     const std::vector<Row>& rows) {
    std::vector<size_t> candidates;  // this tablet's writes, in order
    for (size_t i : result.acked) ASSERT_EQ(ops[i].kind, Op::kWrite) << "admin ops need kBatch";
    size_t must_have = 0;  // of them, the ones before its last successful flush
    const size_t flushed = result.flushed_acked.contains(id) ? result.flushed_acked.at(id) : 0;
    for (size_t k = 0; k < result.acked.size(); ++k) {
      if (ops[result.acked[k]].tablet != id) continue;
      candidates.push_back(result.acked[k]);
      if (k < flushed) must_have = candidates.size();
    }
    if (result.in_flight && ops[*result.in_flight].tablet == id) {
      candidates.push_back(*result.in_flight);
    }
    auto model = std::make_unique<ReferenceModel>(&clock_);
    model->SetFamily("f", GcRule::None());
    model->SetFamily("g", GcRule::None());
    for (size_t k = 0; k <= candidates.size(); ++k) {
      if (k > 0) model->Apply(*ops[candidates[k - 1]].mutation);
      if (k < must_have) continue;
      if (model->AllRowsIgnoringGc() == rows) return;
    }
    FAIL() << "tablet " << id << " is not a prefix of its " << candidates.size()
           << " writes (at least " << must_have
           << " flushed): " << ReferenceModel::DebugString(rows);
  }

  void RunCrashPoints(SyncMode mode, int workload_ops, int max_points, bool admin_ops = false) {
    const uint64_t seed = TestSeed();
    SCOPED_TRACE(fmt::format("seed={} (replay with TESSERA_SEED={})", seed, seed));
    const std::vector<Op> ops = MakeWorkload(seed, workload_ops, admin_ops);
    const EngineOptions options = Options(mode);

    // Dry run: how many mutating operations the whole workload takes.
    int64_t total_ops = 0;
    {
      MemFileSystem fs;
      RunResult result = RunWorkload(&fs, options, ops);
      ASSERT_TRUE(result.tablets_created);
      ASSERT_FALSE(result.in_flight.has_value()) << "a write failed without fault injection";
      total_ops = fs.MutatingOpsForTesting();
      ASSERT_NO_FATAL_FAILURE(Verify(&fs, options, ops, result, -1));
    }
    ASSERT_GT(total_ops, 10);
    RecordProperty("mutating_ops_of_workload", total_ops);

    // Every point of the start (open, tablet creation, first writes), then spread evenly with a
    // random offset, so repeated runs cover different points.
    Random rnd(seed ^ 0x5eed);
    std::vector<int64_t> points;
    for (int64_t n = 0; n < std::min<int64_t>(20, total_ops); ++n) points.push_back(n);
    const int64_t spread = std::max(1, max_points - 20);
    const int64_t stride = std::max<int64_t>(1, total_ops / spread);
    for (int64_t n = 20 + rnd.Uniform(stride); n < total_ops; n += stride) points.push_back(n);

    int crashed_mid_workload = 0;
    for (int64_t n : points) {
      MemFileSystem fs;
      fs.FailAfterOps(n);
      RunResult result = RunWorkload(&fs, options, ops);
      if (result.in_flight.has_value()) ++crashed_mid_workload;
      ASSERT_NO_FATAL_FAILURE(Verify(&fs, options, ops, result, n));
    }
    // The crash points did cut the workload (not all after its end).
    EXPECT_GT(crashed_mid_workload, static_cast<int>(points.size()) / 3);
    RecordProperty("crash_points", static_cast<int>(points.size()));
    RecordProperty("crashed_mid_workload", crashed_mid_workload);
  }

  ManualClock clock_;
};

TEST_F(CrashTest, BatchSyncKeepsEveryAcknowledgedWrite) {
  RunCrashPoints(SyncMode::kBatch, /*workload_ops=*/400, /*max_points=*/300);
}

// Truncations and a family dropped and created again, among writes, flushes and compactions.
// A short workload cut at every one of its crash points.
TEST_F(CrashTest, TruncateAndFamilyDropAreAllOrNothing) {
  RunCrashPoints(SyncMode::kBatch, /*workload_ops=*/90, /*max_points=*/100000,
                 /*admin_ops=*/true);
}

// The same among the longer workload, at spread crash points.
TEST_F(CrashTest, BatchSyncWithTruncatesAndFamilyDrops) {
  RunCrashPoints(SyncMode::kBatch, /*workload_ops=*/400, /*max_points=*/200, /*admin_ops=*/true);
}

TEST_F(CrashTest, BatchSyncKeepsEveryAcknowledgedWriteSizeTiered) {
  style_ = CompactionStyle::kSizeTiered;
  RunCrashPoints(SyncMode::kBatch, /*workload_ops=*/400, /*max_points=*/150);
}

TEST_F(CrashTest, PeriodicSyncLosesOnlyASuffix) {
  RunCrashPoints(SyncMode::kPeriodic, /*workload_ops=*/400, /*max_points=*/150);
}

// A crash with no fault injection at all: only what was synced survives (kBatch: everything
// acknowledged).
TEST_F(CrashTest, CrashWithoutFailedOperations) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  const std::vector<Op> ops = MakeWorkload(seed, 120);
  MemFileSystem fs;
  RunResult result = RunWorkload(&fs, Options(SyncMode::kBatch), ops);
  ASSERT_TRUE(result.tablets_created);
  ASSERT_NO_FATAL_FAILURE(Verify(&fs, Options(SyncMode::kBatch), ops, result, -1));
}

}  // namespace
}  // namespace tessera::test
