#include "tessera/storage/version_edit.h"

#include <gtest/gtest.h>

#include <limits>

#include "tessera/storage/log_test_util.h"
#include "tessera/storage/manifest.h"
#include "tessera/util/coding.h"

namespace tessera::storage {
namespace {

FileMeta MakeFile(uint64_t number, uint64_t size = 1000) {
  FileMeta f;
  f.number = number;
  f.size = size;
  f.smallest = MakeInternalKey("a" + std::to_string(number), 5, ValueType::kValue);
  f.largest = MakeInternalKey("z" + std::to_string(number), 9, ValueType::kValue);
  f.min_sequence = 5;
  f.max_sequence = 9 + number;
  f.num_entries = 100 + number;
  f.group = static_cast<uint32_t>(number % 3);
  return f;
}

VersionEdit FullEdit() {
  VersionEdit e;
  e.next_file_number = std::numeric_limits<uint64_t>::max();
  e.last_sequence = kMaxSequenceNumber;
  e.comparator = "tessera.InternalKeyComparator";
  e.AddTablet(7, std::string("desc\0with\xffnul", 13));
  e.AddTablet(0, "");
  e.RemoveTablet(3);
  FileMeta f = MakeFile(12);
  f.smallest = "";
  f.group = std::numeric_limits<uint32_t>::max();
  e.AddFile(7, f);
  e.AddFile(0, MakeFile(13));
  FileMeta leveled = MakeFile(14);
  leveled.level = 6;
  e.AddFile(7, leveled);
  for (int64_t ts :
       {int64_t{0}, int64_t{-1}, FileMeta::kNoCellTimestamp, FileMeta::kUnknownTimestamp - 1}) {
    FileMeta timed = MakeFile(15);
    timed.max_timestamp = ts;
    e.AddFile(7, timed);
  }
  e.DeleteFile(7, 11);
  e.SetFlushed(7, 1234567);
  e.SetFlushed(0, 0);
  e.SetDataState(7, 2);
  e.SetDataState(0, std::numeric_limits<uint32_t>::max());
  e.SetDropMarks(7, {{"gone", 17}, {std::string("n\0ul", 4), kMaxSequenceNumber}});
  e.SetDropMarks(0, {});
  e.SetReplicaEpoch(7, std::numeric_limits<uint64_t>::max());
  e.SetReplayFrom(7, std::numeric_limits<uint64_t>::max());
  e.SetReplayFrom(0, 1);
  e.tablet_sequences = true;
  return e;
}

TEST(VersionEditTest, RoundTrip) {
  for (const VersionEdit& e : {VersionEdit(), FullEdit()}) {
    std::string encoded;
    e.EncodeTo(&encoded);
    VersionEdit decoded;
    decoded.AddTablet(99, "stale");  // DecodeFrom replaces everything
    TESSERA_ASSERT_OK(decoded.DecodeFrom(encoded));
    EXPECT_EQ(e, decoded) << e.DebugString() << "\n" << decoded.DebugString();
  }
  std::string empty;
  VersionEdit().EncodeTo(&empty);
  EXPECT_TRUE(empty.empty());
}

// A file of level 0 is written as before levels existed; a file of a deeper level carries it,
// and a "file at level" field claiming level 0 is refused.
TEST(VersionEditTest, LevelsAreWrittenOnlyForDeeperFiles) {
  VersionEdit e;
  e.AddFile(1, MakeFile(2));
  std::string level0;
  e.EncodeTo(&level0);
  e.new_files[0].meta.level = 2;
  std::string level2;
  e.EncodeTo(&level2);
  EXPECT_EQ(level0.size() + 1, level2.size());
  EXPECT_EQ(6, level0[0]);
  EXPECT_EQ(14, level2[0]);
  VersionEdit decoded;
  TESSERA_ASSERT_OK(decoded.DecodeFrom(level2));
  EXPECT_EQ(2u, decoded.new_files[0].meta.level);
  std::string bad = level2;
  bad.back() = 0;
  EXPECT_TRUE(absl::IsDataLoss(decoded.DecodeFrom(bad)));
}

// A file's newest cell timestamp is written (with its level, even 0) only when known; a field
// claiming the unknown value is refused.
TEST(VersionEditTest, NewestCellTimestampIsWrittenWhenKnown) {
  VersionEdit e;
  e.AddFile(1, MakeFile(2));
  std::string unknown;
  e.EncodeTo(&unknown);
  EXPECT_EQ(6, unknown[0]);
  e.new_files[0].meta.max_timestamp = 1700000000000000;
  std::string timed;
  e.EncodeTo(&timed);
  EXPECT_EQ(15, timed[0]);
  VersionEdit decoded;
  TESSERA_ASSERT_OK(decoded.DecodeFrom(timed));
  EXPECT_EQ(1700000000000000, decoded.new_files[0].meta.max_timestamp);
  EXPECT_EQ(0u, decoded.new_files[0].meta.level);
  TESSERA_ASSERT_OK(decoded.DecodeFrom(unknown));
  EXPECT_EQ(FileMeta::kUnknownTimestamp, decoded.new_files[0].meta.max_timestamp);

  std::string bad = unknown;
  bad[0] = 15;
  PutVarint32(&bad, 0);
  PutVarint64(&bad, static_cast<uint64_t>(FileMeta::kUnknownTimestamp));
  EXPECT_TRUE(absl::IsDataLoss(decoded.DecodeFrom(bad)));
}

// Bytes as engines wrote them before the data-state field existed: they decode, and apply with
// the tablet in state 0; such an edit still encodes to exactly these bytes.
TEST(VersionEditTest, EditWithoutDataStateReadsAsBefore) {
  const std::string old_bytes(
      "\x02\x05\x04\x01\x01"
      "d"
      "\x08\x01\x05",
      9);
  VersionEdit e;
  TESSERA_ASSERT_OK(e.DecodeFrom(old_bytes));
  EXPECT_EQ(5u, e.last_sequence.value_or(0));
  ASSERT_EQ(1u, e.tablets.size());
  EXPECT_EQ("d", e.tablets[0].descriptor);
  ASSERT_EQ(1u, e.flushed.size());
  EXPECT_TRUE(e.data_states.empty());
  ManifestState state;
  TESSERA_ASSERT_OK(state.Apply(e));
  EXPECT_EQ(0u, state.tablets[1].data_state);
  EXPECT_EQ(0u, state.tablets[1].replica_epoch);
  std::string encoded;
  e.EncodeTo(&encoded);
  EXPECT_EQ(old_bytes, encoded);
}

TEST(VersionEditTest, UnknownTagIsDataLoss) {
  std::string encoded;
  FullEdit().EncodeTo(&encoded);
  for (uint32_t tag : {0u, 16u, 100u, 1u << 20}) {  // 16: the first unused tag
    std::string bad = encoded;
    PutVarint32(&bad, tag);
    PutVarint64(&bad, 1);
    VersionEdit e;
    Status s = e.DecodeFrom(bad);
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_NE(std::string::npos, s.message().find("unknown tag")) << s;
    EXPECT_NE(std::string::npos, s.message().find(StrCat("byte ", encoded.size()))) << s;
  }
}

TEST(VersionEditTest, TruncationIsDataLossOrAShorterEdit) {
  std::string encoded;
  FullEdit().EncodeTo(&encoded);
  int whole_prefixes = 0;
  for (size_t n = 0; n < encoded.size(); ++n) {
    VersionEdit e;
    Status s = e.DecodeFrom(std::string_view(encoded).substr(0, n));
    if (s.ok()) {
      ++whole_prefixes;  // cut at a field boundary
    } else {
      EXPECT_TRUE(absl::IsDataLoss(s)) << n << ": " << s;
    }
  }
  EXPECT_GE(whole_prefixes, 10);  // one per field
  EXPECT_LT(whole_prefixes, 26);
}

TEST(ManifestStateTest, ApplyAndSnapshot) {
  ManifestState state;
  VersionEdit e1;
  e1.next_file_number = 10;
  e1.last_sequence = 100;
  e1.AddTablet(1, "t1");
  e1.AddTablet(2, "t2");
  e1.AddFile(1, MakeFile(3));
  e1.AddFile(1, MakeFile(4));
  e1.AddFile(2, MakeFile(5));
  TESSERA_ASSERT_OK(state.Apply(e1));
  EXPECT_EQ(2u, state.tablets.size());
  EXPECT_EQ(2u, state.tablets[1].files.size());

  // A compaction: delete inputs, add the output; the descriptor update keeps the files.
  VersionEdit e2;
  e2.DeleteFile(1, 3);
  e2.DeleteFile(1, 4);
  e2.AddFile(1, MakeFile(6));
  e2.AddTablet(1, "t1 v2");
  e2.SetFlushed(1, 90);
  e2.SetDataState(1, 1);
  e2.SetReplayFrom(1, 4);
  TESSERA_ASSERT_OK(state.Apply(e2));
  EXPECT_EQ(4u, state.tablets[1].replay_from_segment);
  EXPECT_EQ(0u, state.tablets[2].replay_from_segment);
  EXPECT_EQ(1u, state.tablets[1].data_state);
  EXPECT_EQ(0u, state.tablets[2].data_state);
  EXPECT_EQ("t1 v2", state.tablets[1].descriptor);
  ASSERT_EQ(1u, state.tablets[1].files.size());
  EXPECT_EQ(MakeFile(6), state.tablets[1].files.begin()->second);
  EXPECT_EQ(90u, state.tablets[1].flushed_sequence);

  // Replacing a file with the same number in one edit is allowed.
  VersionEdit e3;
  e3.DeleteFile(1, 6);
  e3.AddFile(1, MakeFile(6, 2000));
  TESSERA_ASSERT_OK(state.Apply(e3));
  EXPECT_EQ(2000u, state.tablets[1].files[6].size);

  // The snapshot rebuilds the state.
  ManifestState rebuilt;
  TESSERA_ASSERT_OK(rebuilt.Apply(state.ToSnapshotEdit()));
  EXPECT_EQ(state, rebuilt);

  // Removing a tablet drops its files, even after deleting some in the same edit.
  VersionEdit e4;
  e4.DeleteFile(2, 5);
  e4.RemoveTablet(2);
  TESSERA_ASSERT_OK(state.Apply(e4));
  EXPECT_FALSE(state.tablets.contains(2));
}

TEST(ManifestStateTest, DropMarksAndTabletSequences) {
  ManifestState state;
  VersionEdit e1;
  e1.last_sequence = 100;  // a data folder of the node-wide counter
  e1.AddTablet(1, "t1");
  e1.AddTablet(2, "t2");
  TESSERA_ASSERT_OK(state.Apply(e1));
  EXPECT_FALSE(state.tablet_sequences);

  VersionEdit e2;
  e2.tablet_sequences = true;
  e2.SetDropMarks(1, {{"g", 40}, {"h", 7}});
  TESSERA_ASSERT_OK(state.Apply(e2));
  EXPECT_TRUE(state.tablet_sequences);
  EXPECT_EQ((VersionEdit::Marks{{"g", 40}, {"h", 7}}), state.tablets[1].drop_marks);
  EXPECT_TRUE(state.tablets[2].drop_marks.empty());

  // A descriptor update keeps the marks; an edit of marks replaces them; a later edit without
  // the flag leaves it set.
  VersionEdit e3;
  e3.AddTablet(1, "t1 v2");
  TESSERA_ASSERT_OK(state.Apply(e3));
  EXPECT_EQ(2u, state.tablets[1].drop_marks.size());
  VersionEdit e4;
  e4.SetDropMarks(1, {{"g", 41}});
  TESSERA_ASSERT_OK(state.Apply(e4));
  EXPECT_EQ((VersionEdit::Marks{{"g", 41}}), state.tablets[1].drop_marks);
  EXPECT_TRUE(state.tablet_sequences);

  ManifestState rebuilt;
  TESSERA_ASSERT_OK(rebuilt.Apply(state.ToSnapshotEdit()));
  EXPECT_EQ(state, rebuilt);

  // Removed and added again: the new tablet has no marks.
  VersionEdit e5;
  e5.RemoveTablet(1);
  TESSERA_ASSERT_OK(state.Apply(e5));
  VersionEdit e6;
  e6.AddTablet(1, "t1 again");
  TESSERA_ASSERT_OK(state.Apply(e6));
  EXPECT_TRUE(state.tablets[1].drop_marks.empty());
}

TEST(ManifestStateTest, ReplicaEpochs) {
  ManifestState state;
  VersionEdit e1;
  e1.AddTablet(1, "t1");
  e1.AddTablet(2, "t2");
  e1.SetReplicaEpoch(1, 3);
  TESSERA_ASSERT_OK(state.Apply(e1));
  EXPECT_EQ(3u, state.tablets[1].replica_epoch);
  EXPECT_EQ(0u, state.tablets[2].replica_epoch);
  // A descriptor update, a flush and a data state keep the epoch; a later edit replaces it
  // (the engine refuses to lower it, storage does not interpret it).
  VersionEdit e2;
  e2.AddTablet(1, "t1 v2");
  e2.SetFlushed(1, 9);
  e2.SetDataState(1, 1);
  TESSERA_ASSERT_OK(state.Apply(e2));
  EXPECT_EQ(3u, state.tablets[1].replica_epoch);
  VersionEdit e3;
  e3.SetReplicaEpoch(1, 2);
  TESSERA_ASSERT_OK(state.Apply(e3));
  EXPECT_EQ(2u, state.tablets[1].replica_epoch);

  ManifestState rebuilt;
  TESSERA_ASSERT_OK(rebuilt.Apply(state.ToSnapshotEdit()));
  EXPECT_EQ(state, rebuilt);

  // Removed and added again: the new tablet starts at epoch 0.
  VersionEdit e4;
  e4.RemoveTablet(1);
  TESSERA_ASSERT_OK(state.Apply(e4));
  VersionEdit e5;
  e5.AddTablet(1, "t1 again");
  TESSERA_ASSERT_OK(state.Apply(e5));
  EXPECT_EQ(0u, state.tablets[1].replica_epoch);
}

TEST(ManifestStateTest, InapplicableEditsLeaveTheStateUnchanged) {
  ManifestState state;
  VersionEdit base;
  base.AddTablet(1, "t1");
  base.AddFile(1, MakeFile(3));
  TESSERA_ASSERT_OK(state.Apply(base));
  const ManifestState before = state;

  std::vector<VersionEdit> bad(13);
  bad[0].AddFile(2, MakeFile(4));  // unknown tablet
  bad[1].DeleteFile(1, 99);        // unknown file
  bad[2].DeleteFile(2, 3);         // unknown tablet
  bad[3].AddFile(1, MakeFile(3));  // already live
  bad[4].AddTablet(5, "x");
  bad[4].AddFile(5, MakeFile(8));
  bad[4].AddFile(5, MakeFile(8));  // twice
  bad[5].SetFlushed(9, 1);         // unknown tablet
  bad[6].RemoveTablet(9);          // unknown tablet
  bad[7].AddTablet(1, "again");
  bad[7].RemoveTablet(1);  // added and removed
  bad[8].DeleteFile(1, 3);
  bad[8].DeleteFile(1, 3);              // twice
  bad[9].SetDataState(9, 1);            // unknown tablet
  bad[10].SetDropMarks(9, {{"g", 1}});  // unknown tablet
  bad[11].SetReplicaEpoch(9, 1);        // unknown tablet
  bad[12].SetReplayFrom(9, 1);          // unknown tablet
  for (size_t i = 0; i < bad.size(); ++i) {
    bad[i].last_sequence = 77;  // must not leak into the state either
    Status s = state.Apply(bad[i]);
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << i << ": " << s;
    EXPECT_EQ(before, state) << i;
  }
}

}  // namespace
}  // namespace tessera::storage
