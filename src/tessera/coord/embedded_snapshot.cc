#include "tessera/coord/embedded_snapshot.h"

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::coord {
namespace {

constexpr size_t kMagicBytes = 8;
constexpr size_t kHeaderBytes = kMagicBytes + 4;
constexpr size_t kCrcBytes = 4;

}  // namespace

void EncodeSnapshot(const SnapshotContents& contents, std::string* out) {
  const size_t start = out->size();
  out->append(kSnapshotMagic, kMagicBytes);
  PutFixed32(out, kSnapshotFormatVersion);
  PutVarint64(out, static_cast<uint64_t>(contents.revision));
  PutVarint64(out, contents.files.size());
  for (const SnapshotFile& f : contents.files) {
    PutLengthPrefixed(out, f.name);
    PutLengthPrefixed(out, f.value);
    PutVarint64(out, static_cast<uint64_t>(f.version));
    PutVarint64(out, static_cast<uint64_t>(f.create_revision));
    PutVarint64(out, static_cast<uint64_t>(f.mod_revision));
  }
  const uint32_t crc = crc32c::Value(std::string_view(*out).substr(start));
  PutFixed32(out, crc32c::Mask(crc));
}

StatusOr<SnapshotContents> DecodeSnapshot(std::string_view data, std::string_view file_name) {
  if (data.size() < kHeaderBytes + kCrcBytes) {
    return CorruptionError(file_name, data.size(),
                           StrCat("snapshot is ", data.size(), " bytes, shorter than its header"));
  }
  if (data.substr(0, kMagicBytes) != std::string_view(kSnapshotMagic, kMagicBytes)) {
    return CorruptionError(file_name, 0, "bad magic: not a lock-service snapshot");
  }
  const uint32_t version = DecodeFixed32(data.data() + kMagicBytes);
  if (version != kSnapshotFormatVersion) {
    return CorruptionError(file_name, kMagicBytes,
                           StrCat("unknown snapshot format version ", version));
  }
  const size_t crc_offset = data.size() - kCrcBytes;
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(data.data() + crc_offset));
  const uint32_t actual = crc32c::Value(data.substr(0, crc_offset));
  if (stored != actual) {
    return CorruptionError(file_name, crc_offset, "checksum mismatch");
  }

  const std::string_view body_all = data.substr(0, crc_offset);
  std::string_view in = body_all.substr(kHeaderBytes);
  auto offset = [&] { return static_cast<uint64_t>(body_all.size() - in.size()); };
  auto get_int = [&](std::string_view what, int64_t* v) -> Status {
    uint64_t raw = 0;
    const uint64_t at = offset();
    if (!GetVarint64(&in, &raw)) return CorruptionError(file_name, at, StrCat("bad ", what));
    if (raw > static_cast<uint64_t>(INT64_MAX)) {
      return CorruptionError(file_name, at, StrCat(what, " out of range"));
    }
    *v = static_cast<int64_t>(raw);
    return absl::OkStatus();
  };

  SnapshotContents contents;
  RETURN_IF_ERROR(get_int("revision", &contents.revision));
  int64_t count = 0;
  const uint64_t count_offset = offset();
  RETURN_IF_ERROR(get_int("file count", &count));
  // Every file takes at least 5 bytes: a bound that rejects absurd counts before allocating.
  if (static_cast<uint64_t>(count) > in.size() / 5) {
    return CorruptionError(file_name, count_offset,
                           StrCat("file count ", count, " does not fit in the snapshot"));
  }
  contents.files.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    SnapshotFile f;
    const uint64_t at = offset();
    std::string_view name, value;
    if (!GetLengthPrefixed(&in, &name)) return CorruptionError(file_name, at, "bad file name");
    if (name.empty()) return CorruptionError(file_name, at, "empty file name");
    if (!contents.files.empty() && !(contents.files.back().name < name)) {
      return CorruptionError(file_name, at, "file names out of order or repeated");
    }
    if (!GetLengthPrefixed(&in, &value)) {
      return CorruptionError(file_name, offset(), "bad file value");
    }
    f.name.assign(name.data(), name.size());
    f.value.assign(value.data(), value.size());
    RETURN_IF_ERROR(get_int("file version", &f.version));
    RETURN_IF_ERROR(get_int("create revision", &f.create_revision));
    RETURN_IF_ERROR(get_int("mod revision", &f.mod_revision));
    if (f.version < 1 || f.create_revision < 1 || f.create_revision > f.mod_revision ||
        f.mod_revision > contents.revision) {
      return CorruptionError(file_name, at,
                             StrCat("file '", f.name, "' has impossible version ", f.version,
                                    " / revisions ", f.create_revision, "..", f.mod_revision,
                                    " (snapshot revision ", contents.revision, ")"));
    }
    contents.files.push_back(std::move(f));
  }
  if (!in.empty()) {
    return CorruptionError(file_name, offset(), StrCat(in.size(), " trailing bytes"));
  }
  return contents;
}

}  // namespace tessera::coord
