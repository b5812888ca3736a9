// The manifest: the crash-safe record of the engine's tablets and their live files.
//
// On disk, <dir>/CURRENT holds the name of the live manifest file followed by a newline
// ("MANIFEST-000007\n"). A manifest file is a log (log_format.h) of encoded VersionEdits; its
// first record is a snapshot of the whole state, each later record one change. Replaying the
// edits in order into an empty ManifestState gives the state.
//
// When the live file has grown past ManifestOptions::max_file_bytes (and past twice its own
// snapshot record, so that a large state does not start a new file per edit), LogAndApply
// starts a new file: it writes MANIFEST-<n+1> holding one snapshot edit and syncs it, writes
// CURRENT.tmp and syncs it, renames it over CURRENT, syncs the directory and only then removes the
// old file. A crash at any point leaves CURRENT naming a complete file holding every acknowledged
// edit. Open() removes leftovers (older manifests, CURRENT.tmp).
//
// Errors: a torn tail of the live manifest is cut at Open (like the commit log); any other damage
// (a bad record before the last, an edit that does not decode or apply, a malformed CURRENT or a
// missing manifest) is DataLoss naming the file and offset.
//
// Thread-safety: LogAndApply and CopyState may be called from any thread; LogAndApply calls are
// serialized internally (one at a time, the disk write included). state() returns a reference
// that is only stable while no LogAndApply runs (e.g. during recovery); other threads use
// CopyState().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/storage/log_writer.h"
#include "tessera/storage/version_edit.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage {

struct TabletState {
  std::string descriptor;
  std::map<uint64_t, FileMeta> files;  // by file number
  SequenceNumber flushed_sequence = 0;
  uint32_t data_state = 0;           // VersionEdit::DataState; 0 unless an edit set it
  VersionEdit::Marks drop_marks;     // VersionEdit::DropMarks; empty unless an edit set them
  uint64_t replica_epoch = 0;        // VersionEdit::ReplicaEpoch; 0 unless an edit set it
  uint64_t replay_from_segment = 0;  // VersionEdit::ReplayFrom; 0 unless an edit set it
  bool operator==(const TabletState&) const = default;
};

// The state a manifest describes. next_file_number and last_sequence only grow (an edit with a
// smaller value leaves them). Edits apply in this order: next_file_number, last_sequence and
// comparator are set; tablets are added (or their descriptor replaced, keeping files and
// flushed_sequence); files are deleted; files are added; flushed sequences are set; data states,
// drop marks, replica epochs and replay-from segments are set; tablets are removed (with their
// files).
struct ManifestState {
  uint64_t next_file_number = 1;
  SequenceNumber last_sequence = 0;         // VersionEdit::last_sequence (legacy)
  bool tablet_sequences = false;            // once set, stays set
  std::string comparator;                   // empty until an edit sets it
  std::map<uint64_t, TabletState> tablets;  // by tablet id

  // OK when `edit` applies to this state. FailedPrecondition otherwise: a file added to or
  // deleted from an unknown tablet, a deleted file that is not live, a file added twice, a
  // flushed mark, data state, drop marks, replica epoch or replay-from segment for an unknown
  // tablet, removing an unknown tablet, a tablet both added and removed, or one listed twice.
  Status CheckApplicable(const VersionEdit& edit) const;
  // Applies `edit`; on error (see CheckApplicable) the state is unchanged.
  Status Apply(const VersionEdit& edit);
  // One edit that, applied to an empty state, gives this state.
  VersionEdit ToSnapshotEdit() const;

  bool operator==(const ManifestState&) const = default;
};

struct ManifestOptions {
  // Create an empty manifest when `dir` has no CURRENT; otherwise NotFound. Default false.
  bool create_if_missing = false;
  // Start a new manifest file once the live one holds at least this many bytes (and at least
  // twice its snapshot). Default 4 MiB. Performance only (a smaller file is faster to replay).
  uint64_t max_file_bytes = 4u << 20;
};

class Manifest {
 public:
  // Reads <dir>/CURRENT and replays the manifest it names. `fs` must outlive the manifest.
  static StatusOr<std::unique_ptr<Manifest>> Open(FileSystem* fs, std::string dir,
                                                  const ManifestOptions& options);
  // Open with default options but `create_if_missing`.
  static StatusOr<std::unique_ptr<Manifest>> Open(FileSystem* fs, std::string dir,
                                                  bool create_if_missing);

  Manifest(const Manifest&) = delete;
  Manifest& operator=(const Manifest&) = delete;
  ~Manifest();

  // REQUIRES: no concurrent LogAndApply for as long as the reference is used.
  const ManifestState& state() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return state_; }
  // A copy of the current state. Thread-safe.
  ManifestState CopyState() const;

  // Appends `edit` to the manifest, syncs it and applies it to the state. Returns OK only once
  // the edit is durable. FailedPrecondition (nothing written) when the edit does not apply.
  // When the write or sync fails, the file is cut back to its previous records and the error is
  // returned: the edit is not applied and will not reappear after a crash. If even that fails,
  // or the switch to a new manifest file failed half way, the manifest stops accepting edits
  // (every later call returns the error) and must be reopened. Thread-safe.
  Status LogAndApply(const VersionEdit& edit);

  // Name (not path) of the live manifest file, e.g. "MANIFEST-000003".
  std::string manifest_file_name() const;
  // "MANIFEST-000003" for 3; nullopt when `name` is not such a name.
  static std::string ManifestFileName(uint64_t number);
  static std::optional<uint64_t> ParseManifestFileName(std::string_view name);

 private:
  Manifest(FileSystem* fs, std::string dir, const ManifestOptions& options);

  static StatusOr<std::unique_ptr<Manifest>> Create(FileSystem* fs, std::string dir,
                                                    const ManifestOptions& options);
  Status Recover(uint64_t manifest_number);
  // Writes MANIFEST-<number> holding `snapshot` (an encoded snapshot edit), syncs it and makes
  // CURRENT name it. On success the new file is the live one. Sets sticky_error_ when the
  // outcome is unknown.
  Status SwitchToNewFile(uint64_t number, std::string_view snapshot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  Status CutBackAfterFailedWrite(uint64_t good_size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void RemoveLeftovers();

  FileSystem* const fs_;
  const std::string dir_;
  const ManifestOptions options_;

  // Serializes LogAndApply, held across its disk writes; readers of the state never wait on it.
  // Lock order: write_mu_ before state_mu_.
  mutable absl::Mutex write_mu_;
  uint64_t manifest_number_ ABSL_GUARDED_BY(write_mu_) = 0;
  uint64_t snapshot_size_ ABSL_GUARDED_BY(write_mu_) = 0;  // bytes of the live file's snapshot
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(write_mu_);
  std::unique_ptr<log::LogWriter> writer_ ABSL_GUARDED_BY(write_mu_);
  std::string record_ ABSL_GUARDED_BY(write_mu_);  // encoding buffer, reused
  Status sticky_error_ ABSL_GUARDED_BY(write_mu_);

  mutable absl::Mutex state_mu_;
  ManifestState state_ ABSL_GUARDED_BY(state_mu_);
};

}  // namespace tessera::storage
