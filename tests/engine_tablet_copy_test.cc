// Copying a tablet into a replica (tablet/engine.h: BeginTabletCopy, BeginTabletRebuild;
// docs/tablet.md "Copying a tablet"): the replica, empty, lagging or diverged, ends with exactly
// the source's raw entries, drop marks and last sequence, continues with ApplyReplicated from
// there, and keeps that state across a crash, its old log records never replayed. Bad chunks,
// chunks out of order, abandoned sinks and crashes before Finish change nothing; a rebuild on a
// SimExecutor waits for no background work, and a flush of the old content it overtook is
// discarded.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tablet_copy_test_util.h"

namespace tessera::test {
namespace {

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

}  // namespace
}  // namespace tessera::test
