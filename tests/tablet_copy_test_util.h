// Shared by the tablet copy tests (engine_tablet_copy_test.cc, engine_tablet_copy_race_test.cc):
// a source engine and a replica on one in-memory file system, a source filled with every kind of
// entry, and helpers that copy, rebuild and compare raw entries.
//
// Thread-safety: test helpers, used from the test's thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/tablet/copy_chunk.h"
#include "tessera/tablet/tablet_manager.h"
#include "tests/engine_test_util.h"

namespace tessera::test {

using model::GcRule;
using model::RowMutation;
using tablet::DropMarks;
using tablet::Engine;
using tablet::TabletCopySink;
using tablet::TabletCopySource;
using tablet::TabletDescriptor;
using tablet::TabletId;
using Batch = std::vector<RowMutation>;

inline constexpr TabletId kTablet = 1;

// f and g ordinary, m in memory (its own locality group: tombstones go to both groups).
TabletDescriptor Descriptor();

// One raw entry: internal key (cell key, sequence, type) and value.
using RawEntry = std::pair<std::string, std::string>;

// Every raw entry of the tablet once (a tombstone stored in both locality groups, or an entry in
// a memtable and in the file it was flushed to, counts once), in internal-key order.
std::vector<RawEntry> RawEntries(Engine* engine, TabletId id);
// The entries a copy carries: the source's raw entries at the copy's sequence, each once.
std::vector<RawEntry> CopiedEntries(const std::vector<std::string>& chunks);
// "row family:qualifier@ts=value" for every visible cell.
std::vector<std::string> Lines(const Engine& engine, TabletId id);
uint64_t Last(const Engine& engine, TabletId id);

// Everything a source gave, to feed a sink.
struct Copy {
  std::vector<std::string> chunks;
  std::vector<RawEntry> entries;  // of the chunks
  uint64_t sequence = 0;
  DropMarks marks;
};
Copy ReadCopy(Engine* source, TabletId id, size_t max_bytes);
std::unique_ptr<TabletCopySink> BeginRebuild(Engine* engine, TabletId id);
// Adds every chunk and finishes (all must succeed).
void Rebuild(Engine* engine, TabletId id, const Copy& copy);

class EngineTabletCopyTest : public EngineTestBase {
 protected:
  // engine_ is the replica; source_ the primary, in its own folder of the same file system.
  EngineTabletCopyTest() : EngineTestBase("/replica") {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(Open());
    tablet::EngineOptions o = options_;
    o.dir = "/source";
    StatusOr<std::unique_ptr<Engine>> e = Engine::Open(o, env_);
    ASSERT_TRUE(e.ok()) << e.status();
    source_ = *std::move(e);
    ASSERT_TRUE(source_->CreateTablet(kTablet, Descriptor()).ok());
  }

  void TearDown() override {
    if (source_ != nullptr) {
      EXPECT_TRUE(source_->Close().ok());
    }
    source_.reset();
  }

  // Writes `m` to the source and remembers it with its number, for replicas to replay.
  void Write(RowMutation m) {
    StatusOr<tablet::SequenceRange> r = source_->ApplyBatch(kTablet, Batch{m});
    ASSERT_TRUE(r.ok()) << r.status();
    log_.push_back({r->first, std::move(m)});
  }

  // Puts, overwrites, every kind of delete, a dropped family (re-created and written again),
  // some of it flushed to files and some in memtables; values of `value_bytes` bytes.
  void FillSource(int rows, size_t value_bytes = 20) {
    const std::string pad(value_bytes, 'v');
    for (int i = 0; i < rows; ++i) {
      RowMutation m(StrCat("r", 1000 + i));
      m.SetCell("f", "a", 1, StrCat("f1-", i, pad)).SetCell("g", "b", 1, StrCat("g1-", i));
      m.SetCell("m", "c", 1, StrCat("m1-", i));
      ASSERT_NO_FATAL_FAILURE(Write(std::move(m)));
    }
    ASSERT_TRUE(source_->Flush(kTablet).ok());
    for (int i = 0; i < rows; i += 2) {  // overwrites and new versions
      RowMutation m(StrCat("r", 1000 + i));
      m.SetCell("f", "a", 1, StrCat("f1'-", i)).SetCell("f", "a", 2, StrCat("f2-", i, pad));
      ASSERT_NO_FATAL_FAILURE(Write(std::move(m)));
    }
    for (int i = 0; i < rows; i += 5) {
      RowMutation m(StrCat("r", 1000 + i));
      switch (i % 4) {
        case 0:
          m.DeleteFromColumn("f", "a", {.start_micros = 2, .end_micros = 3});
          break;
        case 1:
          m.DeleteFromColumn("m", "c");
          break;
        case 2:
          m.DeleteFromFamily("g");
          break;
        default:
          m.DeleteFromRow();
      }
      ASSERT_NO_FATAL_FAILURE(Write(std::move(m)));
    }
    ASSERT_TRUE(source_->Flush(kTablet).ok());
    // g dropped, then created again: its old entries stay stored, dead by the drop mark.
    TabletDescriptor d = Descriptor();
    model::TableSchema without_g = d.schema;
    without_g.families.erase("g");
    ASSERT_TRUE(source_->UpdateSchema(kTablet, without_g).ok());
    ASSERT_TRUE(source_->UpdateSchema(kTablet, d.schema).ok());
    for (int i = 0; i < rows; i += 3) {  // left in the memtable
      RowMutation m(StrCat("r", 1000 + i));
      m.SetCell("g", "b", 5, StrCat("g5-", i)).SetCell("m", "c", 5, StrCat("m5-", i));
      ASSERT_NO_FATAL_FAILURE(Write(std::move(m)));
    }
  }

  // Replicates the source's first mutations, up to sequence `upto`, into the replica.
  void ReplicatePrefix(uint64_t upto) {
    for (const auto& [first, m] : log_) {
      if (first + m.size() - 1 > upto) break;
      StatusOr<uint64_t> r = engine_->ApplyReplicated(kTablet, first, Batch{m});
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  // The replica takes numbers from its sequence on with contents the source never had, up to
  // past `beyond`; some of it flushed.
  void Diverge(uint64_t beyond) {
    int i = 0;
    while (Last(*engine_, kTablet) <= beyond + 20) {
      RowMutation m(StrCat("r", 1000 + i % 50));
      m.SetCell("f", "a", 1, StrCat("divergent-", i)).DeleteFromFamily("m");
      StatusOr<uint64_t> r =
          engine_->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1, Batch{m});
      ASSERT_TRUE(r.ok()) << r.status();
      if (++i == 10) {
        ASSERT_TRUE(engine_->Flush(kTablet).ok());
      }
    }
  }

  // After the rebuild: the replica is the source at `copy.sequence` (whose own raw entries
  // change as its flushes and compactions drop shadowed versions: the copy keeps them).
  void ExpectSameAsSource(const Copy& copy) {
    EXPECT_EQ(Last(*engine_, kTablet), copy.sequence);
    EXPECT_EQ(DropMarksOf(*engine_, kTablet), copy.marks);
    EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
    EXPECT_EQ(Lines(*engine_, kTablet), Lines(*source_, kTablet));
  }

  // One more mutation numbered sequence + 1 on both; then both hold the same again.
  void ContinueBoth(uint64_t sequence) {
    RowMutation m("r1001");
    m.SetCell("f", "a", 9, "after the rebuild");
    StatusOr<uint64_t> r = engine_->ApplyReplicated(kTablet, sequence + 1, Batch{m});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, sequence + 1);
    ASSERT_NO_FATAL_FAILURE(Write(m));
    EXPECT_EQ(Last(*source_, kTablet), sequence + 1);
  }

  // The replica dies without closing: what was not synced is gone. Then it opens again.
  void CrashReplica() {
    fs_.FailAfterOps(0);
    (void)engine_->Close();
    (void)source_->Close();
    source_.reset();
    engine_.reset();
    fs_.SimulateCrash();
    ASSERT_NO_FATAL_FAILURE(Open());
  }

  std::vector<std::string> ReplicaTables() { return FilesWithSuffix(&fs_, "/replica", ".sst"); }

  std::unique_ptr<Engine> source_;
  std::vector<std::pair<uint64_t, RowMutation>> log_;  // the source's writes and their numbers
};

}  // namespace tessera::test
