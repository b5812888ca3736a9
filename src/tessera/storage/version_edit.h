// VersionEdit: one change to the manifest state (the live tablets and their files), as logged in
// the MANIFEST. The encoding is a sequence of tagged fields (see version_edit.cc and
// docs/log_format.md); an unknown tag is DataLoss, so a file from a newer version is refused
// rather than misread.
//
// Thread-safety: a plain value; no internal synchronization.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/storage/dbformat.h"
#include "tessera/util/status.h"

namespace tessera::storage {

// What the manifest knows about one SSTable of a tablet.
struct FileMeta {
  uint64_t number = 0;   // file number, unique in the engine
  uint64_t size = 0;     // bytes
  std::string smallest;  // smallest internal key in the file
  std::string largest;   // largest internal key in the file
  SequenceNumber min_sequence = 0;
  SequenceNumber max_sequence = 0;
  uint64_t num_entries = 0;
  uint32_t group = 0;  // locality group
  // Leveled compaction's level (docs/compaction.md): 0 for a flush's output, which overlaps
  // other files; in each level >= 1 the files' rows do not overlap.
  uint32_t level = 0;
  // The newest cell timestamp in the file (cells only, not tombstones), for reads that stop
  // once deeper files cannot hold a newer version (docs/compaction.md). kUnknownTimestamp when
  // the file was written before this was recorded; kNoCellTimestamp when it holds no cell.
  static constexpr int64_t kUnknownTimestamp = INT64_MAX;
  static constexpr int64_t kNoCellTimestamp = INT64_MIN;
  int64_t max_timestamp = kUnknownTimestamp;

  bool operator==(const FileMeta&) const = default;
};

struct VersionEdit {
  struct Tablet {
    uint64_t tablet_id = 0;
    std::string descriptor;  // opaque to storage
    bool operator==(const Tablet&) const = default;
  };
  struct NewFile {
    uint64_t tablet_id = 0;
    FileMeta meta;
    bool operator==(const NewFile&) const = default;
  };
  struct DeletedFile {
    uint64_t tablet_id = 0;
    uint64_t file_number = 0;
    bool operator==(const DeletedFile&) const = default;
  };
  struct Flushed {
    uint64_t tablet_id = 0;
    // Every commit-log record of the tablet with a sequence <= this is in its files; replay
    // skips them.
    SequenceNumber flushed_sequence = 0;
    bool operator==(const Flushed&) const = default;
  };
  struct DataState {
    uint64_t tablet_id = 0;
    // What the tablet's data is (opaque to storage; tablet::TabletDataState). A tablet no edit
    // gave a state has state 0, as do tablets of manifests written before this field existed.
    uint32_t state = 0;
    bool operator==(const DataState&) const = default;
  };
  // Named sequence marks of a tablet (opaque to storage: tablet::DropMarks, the sequence up to
  // which each dropped family's entries are dead). Replaces the tablet's marks.
  using Marks = std::map<std::string, SequenceNumber, std::less<>>;
  struct DropMarks {
    uint64_t tablet_id = 0;
    Marks marks;
    bool operator==(const DropMarks&) const = default;
  };

  struct ReplicaEpoch {
    uint64_t tablet_id = 0;
    // The replica epoch the tablet has promised (opaque to storage: the replication layer's
    // configuration epoch, tablet::Engine::RaiseReplicaEpoch). A tablet no edit gave one has 0.
    uint64_t epoch = 0;
    bool operator==(const ReplicaEpoch&) const = default;
  };

  std::optional<uint64_t> next_file_number;
  // The node-wide sequence counter of the engine before sequences were per tablet; written by
  // data folders of that time only (docs/sequence_numbers.md).
  std::optional<SequenceNumber> last_sequence;
  // Set once, by the first edit of an engine that numbers each tablet on its own: from then on
  // last_sequence is history, not a floor for new writes.
  bool tablet_sequences = false;
  // Name of the comparator the engine orders keys with (checked by the engine at open).
  std::optional<std::string> comparator;
  std::vector<Tablet> tablets;  // added, or descriptor updated when the tablet exists
  std::vector<uint64_t> removed_tablets;
  std::vector<NewFile> new_files;
  std::vector<DeletedFile> deleted_files;
  std::vector<Flushed> flushed;
  std::vector<DataState> data_states;
  std::vector<DropMarks> drop_marks;
  std::vector<ReplicaEpoch> replica_epochs;
  struct ReplayFrom {
    uint64_t tablet_id = 0;
    // Replay skips the tablet's commit-log records in segments numbered below this one: they
    // belong to content the tablet no longer has (tablet::Engine::BeginTabletRebuild). A
    // tablet no edit gave one has 0 (every segment is replayed).
    uint64_t segment = 0;
    bool operator==(const ReplayFrom&) const = default;
  };
  std::vector<ReplayFrom> replay_from;

  void AddTablet(uint64_t tablet_id, std::string descriptor) {
    tablets.push_back({tablet_id, std::move(descriptor)});
  }
  void RemoveTablet(uint64_t tablet_id) { removed_tablets.push_back(tablet_id); }
  void AddFile(uint64_t tablet_id, FileMeta meta) {
    new_files.push_back({tablet_id, std::move(meta)});
  }
  void DeleteFile(uint64_t tablet_id, uint64_t file_number) {
    deleted_files.push_back({tablet_id, file_number});
  }
  void SetFlushed(uint64_t tablet_id, SequenceNumber sequence) {
    flushed.push_back({tablet_id, sequence});
  }
  void SetDataState(uint64_t tablet_id, uint32_t state) {
    data_states.push_back({tablet_id, state});
  }
  void SetDropMarks(uint64_t tablet_id, Marks marks) {
    drop_marks.push_back({tablet_id, std::move(marks)});
  }

  void SetReplicaEpoch(uint64_t tablet_id, uint64_t epoch) {
    replica_epochs.push_back({tablet_id, epoch});
  }
  void SetReplayFrom(uint64_t tablet_id, uint64_t segment) {
    replay_from.push_back({tablet_id, segment});
  }

  // Appends the encoding to `*dst`.
  void EncodeTo(std::string* dst) const;
  // Replaces *this with the edit encoded in `src`. DataLoss (without file or offset: the caller
  // adds them) when `src` is malformed or holds an unknown tag; *this is unspecified then.
  Status DecodeFrom(std::string_view src);

  std::string DebugString() const;
  bool operator==(const VersionEdit&) const = default;
};

}  // namespace tessera::storage
