// Table snapshots on one node (`tessera admin snapshot | listsnapshots | clearsnapshot |
// restore`, docs/operations.md "Snapshots"), Cassandra's `nodetool snapshot` for Tessera.
//
// A snapshot of a table on a node is one file per tablet the node holds a replica of:
//
//   <data-dir>/snapshots/<tag>/<tablet-id>.tsnap
//
// Each file is the tablet at one sequence, exactly: it is written from Engine::BeginTabletCopy,
// which takes the tablet at its turn in the group-commit queue, so the file holds every write
// numbered up to that sequence and none above it (tombstones and drop marks included). A file
// is self-describing: it carries the tablet's descriptor (table name, row range, schema), the
// sequence and the drop marks, so a snapshot can be listed and restored after its table was
// dropped.
//
// File format (little-endian), all records checksummed:
//   "TSNAPv1\n"                                        8-byte magic
//   record*: fixed32 length | fixed32 masked crc32c(payload) | payload
//     the first payload:  'H' fixed64 sequence varint32 marks (lp family, fixed64 seq)*
//                            lp descriptor (TabletDescriptor::Encode)
//     then:               'C' chunk (TabletCopySource::NextChunk, itself checksummed)
//     the last payload:   'E'
// A file is written as <name>.tmp, synced, renamed, and the folder synced: a file that exists
// under its final name is whole; one that lacks its 'E' record or fails a checksum is DataLoss.
//
// Restoring reads a file back through a scratch engine (a private Engine in
// <data-dir>/snapshots/.restore-<n>, rebuilt from the file with a TabletCopySink and removed
// afterwards), whose rows are the tablet's rows at the snapshot's sequence as any read of the
// table showed them then: every visible version, GC rules applied.
//
// Thread-safety: the functions are safe to call concurrently for different tags; two calls
// writing the same tag and table race (one of them fails with AlreadyExists or its rename
// replaces a whole file with a whole file).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/row.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/env.h"
#include "tessera/util/status.h"

namespace tessera::server {

// InvalidArgument unless `tag` is 1 to 64 characters of [A-Za-z0-9_.-] not starting with '.'.
Status ValidateSnapshotTag(std::string_view tag);

// <data-dir>/snapshots and one tag's folder in it.
std::string SnapshotsDir(const std::string& data_dir);
std::string SnapshotTagDir(const std::string& data_dir, std::string_view tag);

// What a snapshot file says of itself.
struct TabletSnapshotInfo {
  std::string tag;
  tablet::TabletId tablet_id = 0;
  std::string path;
  tablet::TabletDescriptor descriptor;
  uint64_t sequence = 0;
  tablet::DropMarks drop_marks;
  uint64_t file_bytes = 0;
};

// Writes tablet `id` of `engine` to `path` (as above). Returns the file's description.
// Errors: the engine's (NotFound for an unknown tablet, Unavailable while not serving), I/O;
// on error no file is left under `path`.
StatusOr<TabletSnapshotInfo> WriteTabletSnapshot(tablet::Engine& engine, FileSystem& fs,
                                                 tablet::TabletId id, const std::string& path);

// Reads the header of the snapshot file at `path`. DataLoss for a damaged or foreign file.
StatusOr<TabletSnapshotInfo> ReadTabletSnapshotInfo(FileSystem& fs, const std::string& path);

// Every snapshot file under `data_dir`'s snapshots, of tag `tag` ("" = every tag), sorted by tag
// then tablet id. A file that cannot be read is an error naming it (DataLoss); leftover .tmp
// files of an interrupted snapshot are skipped.
StatusOr<std::vector<TabletSnapshotInfo>> ListTabletSnapshots(FileSystem& fs,
                                                              const std::string& data_dir,
                                                              std::string_view tag);

// Calls `on_row` with each row of the snapshot file at `path`, in row order, as reads of the
// table showed them at the snapshot (every visible version of each cell; stored qualifiers).
// Builds a scratch engine in `scratch_dir` (must not exist; removed before returning) on `env`'s
// file system. `on_row` returning an error stops the read and returns it. Errors: DataLoss for
// a damaged file, I/O.
Status ForEachSnapshotRow(const Env& env, const std::string& path, const std::string& scratch_dir,
                          const std::function<Status(model::Row&&)>& on_row);

// Removes `dir` and everything under it (a missing folder is OK).
Status RemoveTree(FileSystem& fs, const std::string& dir);

}  // namespace tessera::server
