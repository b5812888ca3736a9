// The embedded lock service's on-disk state: one snapshot file holding every persistent file and
// the service's revision, rewritten whole (temporary file, sync, rename, directory sync) on each
// change to a persistent file. Ephemeral files and locks belong to sessions, which do not outlive
// the process, so they are never written.
//
// Format (docs/coordination.md, "Embedded snapshot format"), little-endian:
//
//   magic        8 bytes  "TSRCOORD"
//   version      fixed32  kSnapshotFormatVersion (1)
//   revision     varint64 the service's revision when written
//   count        varint64 number of files
//   count × file:
//     name             varint64 length + bytes  (strictly ascending, non-empty)
//     value            varint64 length + bytes
//     version          varint64 (>= 1)
//     create_revision  varint64 (>= 1, <= mod_revision)
//     mod_revision     varint64 (<= revision)
//   crc          fixed32  masked CRC-32C of every byte before it
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::coord {

inline constexpr char kSnapshotMagic[] = "TSRCOORD";  // 8 bytes on disk, without the NUL
inline constexpr uint32_t kSnapshotFormatVersion = 1;
inline constexpr char kSnapshotFileName[] = "coord.snapshot";
inline constexpr char kSnapshotTempFileName[] = "coord.snapshot.tmp";

struct SnapshotFile {
  std::string name;
  std::string value;
  int64_t version = 0;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  bool operator==(const SnapshotFile&) const = default;
};

struct SnapshotContents {
  int64_t revision = 0;
  std::vector<SnapshotFile> files;  // sorted by name, names unique
};

// Appends the encoding of `contents` to `*out`.
// REQUIRES: contents.files sorted by name with unique names, fields within the bounds above.
void EncodeSnapshot(const SnapshotContents& contents, std::string* out);

// Decodes a whole snapshot file. DataLoss naming `file_name` and the byte offset for anything
// malformed (bad magic, unknown version, checksum mismatch, truncation, out-of-order names,
// impossible revisions, trailing bytes).
StatusOr<SnapshotContents> DecodeSnapshot(std::string_view data, std::string_view file_name);

}  // namespace tessera::coord
