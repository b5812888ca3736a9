// Copying a tablet into a replica (tablet/engine.h: BeginTabletCopy, BeginTabletRebuild;
// docs/tablet.md "Copying a tablet"): the replica, empty, lagging or diverged, ends with exactly
// the source's raw entries, drop marks and last sequence, continues with ApplyReplicated from
// there, and keeps that state across a crash, its old log records never replayed. Bad chunks,
// chunks out of order, abandoned sinks and crashes before Finish change nothing; a rebuild on a
// SimExecutor waits for no background work, and a flush of the old content it overtook is
// discarded.
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "tessera/model/gc_rule.h"
#include "tessera/model/row_mutation.h"
#include "tessera/tablet/copy_chunk.h"
#include "tessera/tablet/tablet_manager.h"
#include "tessera/util/sim_executor.h"
#include "tests/engine_test_util.h"

namespace tessera::test {
namespace {

using model::GcRule;
using model::RowMutation;
using tablet::DropMarks;
using tablet::Engine;
using tablet::TabletCopySink;
using tablet::TabletCopySource;
using tablet::TabletDescriptor;
using tablet::TabletId;
using Batch = std::vector<RowMutation>;

constexpr TabletId kTablet = 1;

// f and g ordinary, m in memory (its own locality group: tombstones go to both groups).
TabletDescriptor Descriptor() {
  TabletDescriptor d;
  d.table = "t";
  d.end_row = "z";
  d.schema = MakeSchema("t", {{"f", GcRule::None()}, {"g", GcRule::None()}, {"m", GcRule::None()}});
  d.schema.families["m"].in_memory = true;
  return d;
}

// One raw entry: internal key (cell key, sequence, type) and value.
using RawEntry = std::pair<std::string, std::string>;

// Every raw entry of the tablet once (a tombstone stored in both locality groups, or an entry in
// a memtable and in the file it was flushed to, counts once), in internal-key order.
std::vector<RawEntry> RawEntries(Engine* engine, TabletId id) {
  std::vector<RawEntry> out;
  StatusOr<std::shared_ptr<tablet::Tablet>> t =
      static_cast<tablet::TabletManager*>(engine)->tablet(id);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return out;
  StatusOr<std::unique_ptr<tablet::EntryIterator>> it = (*t)->NewEntryIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  for (; (*it)->Valid(); (*it)->Next()) {
    if (!out.empty() && out.back().first == (*it)->internal_key()) {
      EXPECT_EQ(out.back().second, (*it)->value());
      continue;
    }
    out.emplace_back(std::string((*it)->internal_key()), std::string((*it)->value()));
  }
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  return out;
}

// The entries a copy carries: the source's raw entries at the copy's sequence, each once.
std::vector<RawEntry> CopiedEntries(const std::vector<std::string>& chunks) {
  std::vector<RawEntry> out;
  for (const std::string& chunk : chunks) {
    StatusOr<std::vector<tablet::ChunkEntry>> entries = tablet::DecodeChunk(chunk);
    EXPECT_TRUE(entries.ok()) << entries.status();
    if (!entries.ok()) continue;
    for (const tablet::ChunkEntry& e : *entries) out.emplace_back(e.internal_key, e.value);
  }
  return out;
}

// "row family:qualifier@ts=value" for every visible cell.
std::vector<std::string> Lines(const Engine& engine, TabletId id) {
  std::vector<std::string> out;
  StatusOr<std::vector<model::Row>> rows = ScanAll(engine, id, {});
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return out;
  for (const model::Row& row : *rows) {
    for (const model::Cell& c : row.cells) {
      out.push_back(
          StrCat(row.key, " ", c.family, ":", c.qualifier, "@", c.timestamp_micros, "=", c.value));
    }
  }
  return out;
}

uint64_t Last(const Engine& engine, TabletId id) {
  StatusOr<uint64_t> last = engine.LastSequence(id);
  EXPECT_TRUE(last.ok()) << last.status();
  return last.value_or(0);
}

// Everything a source gave, to feed a sink.
struct Copy {
  std::vector<std::string> chunks;
  std::vector<RawEntry> entries;  // of the chunks
  uint64_t sequence = 0;
  DropMarks marks;
};

Copy ReadCopy(Engine* source, TabletId id, size_t max_bytes) {
  Copy copy;
  StatusOr<std::unique_ptr<TabletCopySource>> s = source->BeginTabletCopy(id);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return copy;
  copy.sequence = (*s)->sequence();
  copy.marks = (*s)->drop_marks();
  for (;;) {
    StatusOr<std::string> chunk = (*s)->NextChunk(max_bytes);
    EXPECT_TRUE(chunk.ok()) << chunk.status();
    if (!chunk.ok() || chunk->empty()) break;
    copy.chunks.push_back(*std::move(chunk));
  }
  copy.entries = CopiedEntries(copy.chunks);
  return copy;
}

std::unique_ptr<TabletCopySink> BeginRebuild(Engine* engine, TabletId id) {
  StatusOr<std::unique_ptr<TabletCopySink>> sink = engine->BeginTabletRebuild(id);
  EXPECT_TRUE(sink.ok()) << sink.status();
  return sink.ok() ? *std::move(sink) : nullptr;
}

// Adds every chunk and finishes (all must succeed).
void Rebuild(Engine* engine, TabletId id, const Copy& copy) {
  std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine, id);
  ASSERT_NE(sink, nullptr);
  for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
  Status s = sink->Finish(copy.sequence, copy.marks);
  ASSERT_TRUE(s.ok()) << s;
}

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
    if (source_ != nullptr) EXPECT_TRUE(source_->Close().ok());
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
      if (++i == 10) ASSERT_TRUE(engine_->Flush(kTablet).ok());
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

TEST_F(EngineTabletCopyTest, IntoAnEmptyReplica) {
  ASSERT_NO_FATAL_FAILURE(FillSource(60));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_TRUE(engine_->RaiseReplicaEpoch(kTablet, 3).ok());
  ASSERT_TRUE(source_->WaitForBackgroundWork().ok());  // its raw entries stay put now
  const std::vector<RawEntry> source_entries = RawEntries(source_.get(), kTablet);
  const Copy copy = ReadCopy(source_.get(), kTablet, 4096);
  EXPECT_EQ(copy.entries, source_entries);
  ASSERT_GT(copy.chunks.size(), 1u);
  EXPECT_EQ(copy.sequence, Last(*source_, kTablet));
  EXPECT_EQ(copy.marks.count("g"), 1u);
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));
  EXPECT_EQ(engine_->GetReplicaEpoch(kTablet).value_or(0), 3u);
  EXPECT_EQ(engine_->GetTablet(kTablet)->Encode(), Descriptor().Encode());
  ASSERT_NO_FATAL_FAILURE(ContinueBoth(copy.sequence));
  EXPECT_EQ(RawEntries(engine_.get(), kTablet).size(), copy.entries.size() + 1);
  EXPECT_EQ(Lines(*engine_, kTablet), Lines(*source_, kTablet));
  // Flush and compaction work on the copy as on any tablet.
  ASSERT_TRUE(engine_->CompactTablet(kTablet).ok());
  ASSERT_TRUE(source_->CompactTablet(kTablet).ok());
  EXPECT_EQ(Lines(*engine_, kTablet), Lines(*source_, kTablet));
}

TEST_F(EngineTabletCopyTest, IntoALaggingReplica) {
  ASSERT_NO_FATAL_FAILURE(FillSource(60));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(100));
  ASSERT_TRUE(engine_->Flush(kTablet).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(150));
  ASSERT_LT(Last(*engine_, kTablet), Last(*source_, kTablet));
  const Copy copy = ReadCopy(source_.get(), kTablet, 2048);
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));
  ASSERT_NO_FATAL_FAILURE(ContinueBoth(copy.sequence));
  EXPECT_EQ(Lines(*engine_, kTablet), Lines(*source_, kTablet));
}

// The replica holds entries numbered above the source's sequence, with other contents at the
// same numbers; after the rebuild and after a crash none of them is there, nor replayed.
TEST_F(EngineTabletCopyTest, IntoADivergedReplicaAndThroughACrash) {
  ASSERT_NO_FATAL_FAILURE(FillSource(60));
  const uint64_t source_last = Last(*source_, kTablet);
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(source_last / 2));
  ASSERT_NO_FATAL_FAILURE(Diverge(source_last));
  ASSERT_GT(Last(*engine_, kTablet), source_last);
  ASSERT_TRUE(engine_->RaiseReplicaEpoch(kTablet, 7).ok());

  const Copy copy = ReadCopy(source_.get(), kTablet, 3000);
  std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
  // A write the queue orders before Finish is replaced with the rest of the old content.
  ASSERT_TRUE(engine_
                  ->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1,
                                    Batch{RowMutation("r1002").SetCell("f", "a", 3, "lost")})
                  .ok());
  ASSERT_TRUE(sink->Finish(copy.sequence, copy.marks).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(sink->Finish(copy.sequence, copy.marks)));
  EXPECT_TRUE(absl::IsFailedPrecondition(sink->Add(copy.chunks[0])));
  sink.reset();
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));
  EXPECT_EQ(engine_->GetReplicaEpoch(kTablet).value_or(0), 7u);
  ASSERT_NO_FATAL_FAILURE(ContinueBoth(copy.sequence));
  const std::vector<RawEntry> expected = RawEntries(engine_.get(), kTablet);
  const std::vector<std::string> expected_lines = Lines(*source_, kTablet);
  ASSERT_EQ(expected.size(), copy.entries.size() + 1);
  ASSERT_EQ(Lines(*engine_, kTablet), expected_lines);

  ASSERT_NO_FATAL_FAILURE(CrashReplica());
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence + 1);
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), expected);
  EXPECT_EQ(Lines(*engine_, kTablet), expected_lines);
  EXPECT_EQ(DropMarksOf(*engine_, kTablet), copy.marks);
  EXPECT_EQ(engine_->GetReplicaEpoch(kTablet).value_or(0), 7u);
  // It goes on from there, and a clean restart keeps that too.
  StatusOr<uint64_t> r = engine_->ApplyReplicated(
      kTablet, copy.sequence + 2, Batch{RowMutation("r1003").SetCell("f", "a", 4, "later")});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(engine_->Flush(kTablet).ok());
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence + 2);
  EXPECT_EQ(RawEntries(engine_.get(), kTablet).size(), expected.size() + 1);
}

TEST_F(EngineTabletCopyTest, CrashBeforeFinishKeepsTheOldState) {
  ASSERT_NO_FATAL_FAILURE(FillSource(40));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(40));
  ASSERT_NO_FATAL_FAILURE(Diverge(Last(*source_, kTablet)));
  const std::vector<RawEntry> before = RawEntries(engine_.get(), kTablet);
  const uint64_t last_before = Last(*engine_, kTablet);
  const std::vector<std::string> tables_before = ReplicaTables();
  const Copy copy = ReadCopy(source_.get(), kTablet, 1024);
  std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
  // The process dies: the sink's files stay behind as they are (no I/O succeeds any more).
  fs_.FailAfterOps(0);
  sink.reset();
  ASSERT_NO_FATAL_FAILURE(CrashReplica());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), before);
  EXPECT_EQ(Last(*engine_, kTablet), last_before);
  EXPECT_EQ(ReplicaTables(), tables_before);  // the sink's files were orphans: removed
}

TEST_F(EngineTabletCopyTest, AbandonedSinkChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(FillSource(40));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(60));
  const std::vector<RawEntry> before = RawEntries(engine_.get(), kTablet);
  const uint64_t last_before = Last(*engine_, kTablet);
  const std::vector<std::string> tables_before = ReplicaTables();
  const Copy copy = ReadCopy(source_.get(), kTablet, 1024);
  {
    std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine_.get(), kTablet);
    ASSERT_NE(sink, nullptr);
    for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
    EXPECT_GT(ReplicaTables().size(), tables_before.size());
  }
  EXPECT_EQ(ReplicaTables(), tables_before);
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), before);
  EXPECT_EQ(Last(*engine_, kTablet), last_before);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), before);
}

TEST_F(EngineTabletCopyTest, BadChunksAreRefusedAndChangeNothing) {
  ASSERT_NO_FATAL_FAILURE(FillSource(40));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  const Copy copy = ReadCopy(source_.get(), kTablet, 1024);
  ASSERT_GE(copy.chunks.size(), 3u);
  std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  for (size_t at : {size_t{0}, copy.chunks[0].size() / 2, copy.chunks[0].size() - 1}) {
    std::string bad = copy.chunks[0];
    bad[at] ^= 0x20;
    Status s = sink->Add(bad);
    EXPECT_TRUE(absl::IsDataLoss(s)) << at << ": " << s;
  }
  EXPECT_TRUE(absl::IsDataLoss(sink->Add(copy.chunks[0].substr(0, 10))));
  EXPECT_TRUE(absl::IsDataLoss(sink->Add("")));
  ASSERT_TRUE(sink->Add(copy.chunks[0]).ok());
  // Repeated, or one skipped and then the skipped one: out of order.
  EXPECT_TRUE(absl::IsInvalidArgument(sink->Add(copy.chunks[0])));
  ASSERT_TRUE(sink->Add(copy.chunks[2]).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(sink->Add(copy.chunks[1])));
  sink.reset();

  // Refused chunks wrote nothing: a sink fed the right order after them ends as the source.
  sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(absl::IsDataLoss(sink->Add(copy.chunks[1] + "x")));
  for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
  // Entries above the sequence Finish is given, or a mark above it: refused, nothing changed.
  EXPECT_TRUE(absl::IsInvalidArgument(sink->Finish(copy.sequence - 1, copy.marks)));
  EXPECT_TRUE(absl::IsFailedPrecondition(sink->Finish(copy.sequence, copy.marks)));
  EXPECT_TRUE(RawEntries(engine_.get(), kTablet).empty());
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));

  sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(sink->Finish(5, {{"g", 6}})));
  // A chunk of rows outside the tablet (which ends at "z") is refused.
  TabletDescriptor all = Descriptor();
  all.end_row = "";
  ASSERT_TRUE(source_->CreateTablet(2, all).ok());
  ASSERT_TRUE(source_->Apply(2, RowMutation("zz").SetCell("f", "a", 1, "x")).ok());
  const Copy outside = ReadCopy(source_.get(), 2, 1024);
  ASSERT_EQ(outside.chunks.size(), 1u);
  sink = BeginRebuild(engine_.get(), kTablet);
  ASSERT_NE(sink, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(sink->Add(outside.chunks[0])));
}

TEST_F(EngineTabletCopyTest, LargeTabletInManyChunks) {
  ASSERT_NO_FATAL_FAILURE(FillSource(4000, 1000));  // about 6 MB of values
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  ASSERT_NO_FATAL_FAILURE(ReplicatePrefix(3000));
  constexpr size_t kMaxBytes = 256 << 10;
  const Copy copy = ReadCopy(source_.get(), kTablet, kMaxBytes);
  size_t bytes = 0;
  for (const std::string& chunk : copy.chunks) {
    EXPECT_LE(chunk.size(), kMaxBytes);
    bytes += chunk.size();
  }
  EXPECT_GT(bytes, size_t{3} << 20);  // shadowed versions were compacted away
  EXPECT_GE(copy.chunks.size(), 12u);
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsSource(copy));
}

// A FileSystem that holds every SyncDir of `dir` made by a thread other than the test's while
// armed: a background flush stops there, its input picked and its file written, until released.
class GatedFileSystem final : public FileSystem {
 public:
  GatedFileSystem(FileSystem* base, std::string dir) : base_(base), dir_(std::move(dir)) {}

  void Arm() {
    absl::MutexLock l(&mu_);
    armed_ = true;
  }
  // Waits until a background thread is held.
  void AwaitHeld() {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&held_));
  }
  void Release() {
    absl::MutexLock l(&mu_);
    armed_ = false;
  }

  Status SyncDir(const std::string& dir) override {
    if (dir == dir_ && std::this_thread::get_id() != test_thread_) {
      absl::MutexLock l(&mu_);
      if (armed_) {
        held_ = true;
        mu_.Await(absl::Condition(
            +[](bool* armed) { return !*armed; }, &armed_));
      }
    }
    return base_->SyncDir(dir);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return base_->NewWritableFile(path);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return base_->NewAppendableFile(path);
  }
  StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    return base_->NewSequentialFile(path);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return base_->GetChildren(dir);
  }
  StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    return base_->GetFileSize(path);
  }
  Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return base_->RenameFile(from, to);
  }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return base_->Truncate(path, size);
  }
  StatusOr<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return base_->LockFile(path);
  }

 private:
  FileSystem* const base_;
  const std::string dir_;
  const std::thread::id test_thread_ = std::this_thread::get_id();
  absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
};

class EngineTabletCopyRaceTest : public EngineTabletCopyTest {
 protected:
  EngineTabletCopyRaceTest() : gated_(&fs_, "/replica") { env_.fs = &gated_; }

  void TearDown() override {
    EngineTabletCopyTest::TearDown();
    if (engine_ != nullptr) EXPECT_TRUE(engine_->Close().ok());
    engine_.reset();  // before the file system it uses
  }

  GatedFileSystem gated_;
};

// A flush of the replica's old content picked its memtable and wrote its file before the
// rebuild, and installs after it: the file must not become part of the new content.
TEST_F(EngineTabletCopyRaceTest, FlushOfTheOldContentIsDiscarded) {
  ASSERT_NO_FATAL_FAILURE(FillSource(100));
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  const Copy copy = ReadCopy(source_.get(), kTablet, 64 << 10);
  const std::vector<RawEntry>& expected = copy.entries;
  gated_.Arm();
  for (int i = 0; i < 150; ++i) {  // more than a memtable: a flush starts, and is held
    RowMutation d(StrCat("r", 1000 + i));
    d.SetCell("f", "a", 1, std::string(1000, 'd'));
    ASSERT_TRUE(engine_->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1, Batch{d}).ok());
  }
  gated_.AwaitHeld();
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  gated_.Release();
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), expected);
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), expected);
}

// On a SimExecutor: the rebuild runs inside the simulation's thread without waiting for
// background work, and a flush of the old content that was queued before it is discarded.
class EngineTabletCopySimTest : public EngineTabletCopyTest {
 protected:
  EngineTabletCopySimTest() : sim_(&clock_) { env_.executor = &sim_; }

  void TearDown() override {
    EngineTabletCopyTest::TearDown();
    if (engine_ != nullptr) EXPECT_TRUE(engine_->Close().ok());
    engine_.reset();  // before the executor it uses
  }

  SimExecutor sim_;
};

TEST_F(EngineTabletCopySimTest, RebuildWaitsForNoBackgroundWork) {
  RowMutation m("r1000");
  m.SetCell("f", "a", 1, "x");
  ASSERT_TRUE(engine_->CreateTablet(kTablet, Descriptor()).ok());
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(Write(m));
  const Copy copy = ReadCopy(source_.get(), kTablet, 512);
  // The replica diverges with enough data to seal memtables: flushes are queued, not run.
  int i = 0;
  while (sim_.pending() == 0 || i < 50) {
    RowMutation d(StrCat("r", 1100 + i));
    d.SetCell("g", "b", 1, std::string(2000, 'd'));
    ASSERT_TRUE(engine_->ApplyReplicated(kTablet, Last(*engine_, kTablet) + 1, Batch{d}).ok());
    ++i;
  }
  // On the thread that drives the simulation: waiting for the queued flushes would hang.
  ASSERT_GT(sim_.pending(), 0u);
  ASSERT_NO_FATAL_FAILURE(Rebuild(engine_.get(), kTablet, copy));
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
  sim_.RunReady();  // the old flushes run now and are discarded
  ASSERT_TRUE(engine_->WaitForBackgroundWork().ok());
  EXPECT_EQ(Last(*engine_, kTablet), copy.sequence);
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(RawEntries(engine_.get(), kTablet), copy.entries);
}

}  // namespace
}  // namespace tessera::test
