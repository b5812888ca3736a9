#include "tessera/server/table_snapshots.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::server {

namespace {

constexpr std::string_view kMagic = "TSNAPv1\n";
constexpr std::string_view kSuffix = ".tsnap";
constexpr size_t kChunkBytes = 1 << 20;
constexpr uint32_t kMaxRecordBytes = 256u << 20;

Status AppendRecord(WritableFile& file, char type, std::string_view body) {
  std::string payload(1, type);
  payload.append(body);
  std::string header;
  PutFixed32(&header, static_cast<uint32_t>(payload.size()));
  PutFixed32(&header, crc32c::Mask(crc32c::Value(payload)));
  RETURN_IF_ERROR(file.Append(header));
  return file.Append(payload);
}

// Reads a snapshot file's records in order.
class RecordReader {
 public:
  RecordReader(std::unique_ptr<SequentialFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}

  Status ReadMagic() {
    ASSIGN_OR_RETURN(std::string magic, ReadExactly(kMagic.size()));
    if (magic != kMagic) return Damaged("it is not a Tessera snapshot file");
    return Status();
  }

  // The next record's type and body.
  StatusOr<std::pair<char, std::string>> Next() {
    ASSIGN_OR_RETURN(std::string header, ReadExactly(8));
    const uint32_t length = DecodeFixed32(header.data());
    const uint32_t crc = crc32c::Unmask(DecodeFixed32(header.data() + 4));
    if (length == 0 || length > kMaxRecordBytes) return Damaged("a record has a bad length");
    ASSIGN_OR_RETURN(std::string payload, ReadExactly(length));
    if (crc32c::Value(payload) != crc) return Damaged("a record fails its checksum");
    char type = payload[0];
    payload.erase(0, 1);
    return std::make_pair(type, std::move(payload));
  }

  Status Damaged(std::string_view why) const {
    return absl::DataLossError(StrCat("snapshot file ", path_, " is damaged: ", why));
  }

 private:
  StatusOr<std::string> ReadExactly(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      ASSIGN_OR_RETURN(std::string_view piece, file_->Read(n - got, out.data() + got));
      if (piece.empty()) return Damaged("it ends early (an interrupted write?)");
      if (piece.data() != out.data() + got) std::copy(piece.begin(), piece.end(), out.data() + got);
      got += piece.size();
    }
    return out;
  }

  std::unique_ptr<SequentialFile> file_;
  std::string path_;
};

std::string EncodeHeader(const tablet::TabletDescriptor& descriptor, uint64_t sequence,
                         const tablet::DropMarks& marks) {
  std::string out;
  PutFixed64(&out, sequence);
  PutVarint32(&out, static_cast<uint32_t>(marks.size()));
  for (const auto& [family, seq] : marks) {
    PutLengthPrefixed(&out, family);
    PutFixed64(&out, seq);
  }
  PutLengthPrefixed(&out, descriptor.Encode());
  return out;
}

Status DecodeHeader(const RecordReader& reader, std::string_view in, TabletSnapshotInfo* info) {
  uint32_t marks = 0;
  if (!GetFixed64(&in, &info->sequence) || !GetVarint32(&in, &marks)) {
    return reader.Damaged("its header is cut short");
  }
  for (uint32_t i = 0; i < marks; ++i) {
    std::string_view family;
    uint64_t seq = 0;
    if (!GetLengthPrefixed(&in, &family) || !GetFixed64(&in, &seq)) {
      return reader.Damaged("its drop marks are cut short");
    }
    info->drop_marks[std::string(family)] = seq;
  }
  std::string_view descriptor;
  if (!GetLengthPrefixed(&in, &descriptor)) return reader.Damaged("it has no tablet descriptor");
  StatusOr<tablet::TabletDescriptor> decoded = tablet::TabletDescriptor::Decode(descriptor);
  if (!decoded.ok()) return reader.Damaged(std::string(decoded.status().message()));
  info->descriptor = *std::move(decoded);
  return Status();
}

// Opens `path` and reads its magic and header record.
StatusOr<RecordReader> OpenSnapshot(FileSystem& fs, const std::string& path,
                                    TabletSnapshotInfo* info) {
  ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, fs.NewSequentialFile(path));
  RecordReader reader(std::move(file), path);
  RETURN_IF_ERROR(reader.ReadMagic());
  ASSIGN_OR_RETURN(auto record, reader.Next());
  if (record.first != 'H') return reader.Damaged("its first record is not its header");
  RETURN_IF_ERROR(DecodeHeader(reader, record.second, info));
  info->path = path;
  ASSIGN_OR_RETURN(info->file_bytes, fs.GetFileSize(path));
  return reader;
}

// "<n>.tsnap" -> n; nullopt for other names.
std::optional<tablet::TabletId> TabletIdOfFile(std::string_view name) {
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return std::nullopt;
  name.remove_suffix(kSuffix.size());
  tablet::TabletId id = 0;
  for (char c : name) {
    if (c < '0' || c > '9' || id > (UINT64_MAX - 9) / 10) return std::nullopt;
    id = id * 10 + static_cast<tablet::TabletId>(c - '0');
  }
  return id;
}

}  // namespace

Status ValidateSnapshotTag(std::string_view tag) {
  if (tag.empty()) return absl::InvalidArgumentError("a snapshot needs a tag (--tag)");
  if (tag.size() > 64) {
    return absl::InvalidArgumentError(
        StrCat("snapshot tag \"", tag, "\" is longer than 64 characters"));
  }
  if (tag[0] == '.') {
    return absl::InvalidArgumentError(StrCat("snapshot tag \"", tag, "\" starts with '.'"));
  }
  for (char c : tag) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) {
      return absl::InvalidArgumentError(
          StrCat("snapshot tag \"", tag, "\" may hold only letters, digits, '_', '-' and '.'"));
    }
  }
  return Status();
}

std::string SnapshotsDir(const std::string& data_dir) { return data_dir + "/snapshots"; }

std::string SnapshotTagDir(const std::string& data_dir, std::string_view tag) {
  return StrCat(SnapshotsDir(data_dir), "/", tag);
}

StatusOr<TabletSnapshotInfo> WriteTabletSnapshot(tablet::Engine& engine, FileSystem& fs,
                                                 tablet::TabletId id, const std::string& path) {
  ASSIGN_OR_RETURN(tablet::TabletDescriptor descriptor, engine.GetTablet(id));
  ASSIGN_OR_RETURN(std::unique_ptr<tablet::TabletCopySource> source, engine.BeginTabletCopy(id));
  const std::string tmp = path + ".tmp";
  Status written = [&]() -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(tmp));
    RETURN_IF_ERROR(file->Append(kMagic));
    RETURN_IF_ERROR(AppendRecord(
        *file, 'H', EncodeHeader(descriptor, source->sequence(), source->drop_marks())));
    while (true) {
      ASSIGN_OR_RETURN(std::string chunk, source->NextChunk(kChunkBytes));
      if (chunk.empty()) break;
      RETURN_IF_ERROR(AppendRecord(*file, 'C', chunk));
    }
    RETURN_IF_ERROR(AppendRecord(*file, 'E', ""));
    RETURN_IF_ERROR(file->Sync());
    return file->Close();
  }();
  if (written.ok()) written = fs.RenameFile(tmp, path);
  if (!written.ok()) {
    (void)fs.RemoveFile(tmp);
    return written;
  }
  const std::string dir = path.substr(0, path.rfind('/'));
  RETURN_IF_ERROR(fs.SyncDir(dir));
  TabletSnapshotInfo info;
  info.tablet_id = id;
  info.path = path;
  info.descriptor = std::move(descriptor);
  info.sequence = source->sequence();
  info.drop_marks = source->drop_marks();
  ASSIGN_OR_RETURN(info.file_bytes, fs.GetFileSize(path));
  return info;
}

StatusOr<TabletSnapshotInfo> ReadTabletSnapshotInfo(FileSystem& fs, const std::string& path) {
  TabletSnapshotInfo info;
  ASSIGN_OR_RETURN(RecordReader reader, OpenSnapshot(fs, path, &info));
  (void)reader;
  return info;
}

StatusOr<std::vector<TabletSnapshotInfo>> ListTabletSnapshots(FileSystem& fs,
                                                              const std::string& data_dir,
                                                              std::string_view tag) {
  std::vector<TabletSnapshotInfo> out;
  const std::string root = SnapshotsDir(data_dir);
  if (!fs.FileExists(root)) return out;
  std::vector<std::string> tags;
  if (tag.empty()) {
    ASSIGN_OR_RETURN(tags, fs.GetChildren(root));
  } else if (fs.FileExists(SnapshotTagDir(data_dir, tag))) {
    tags.emplace_back(tag);
  }
  std::sort(tags.begin(), tags.end());
  for (const std::string& t : tags) {
    if (!ValidateSnapshotTag(t).ok()) continue;  // .restore-* scratch folders
    StatusOr<std::vector<std::string>> names = fs.GetChildren(SnapshotTagDir(data_dir, t));
    if (!names.ok()) continue;  // a stray file where a tag folder would be
    std::vector<std::pair<tablet::TabletId, std::string>> files;
    for (const std::string& name : *names) {
      if (std::optional<tablet::TabletId> id = TabletIdOfFile(name)) files.emplace_back(*id, name);
    }
    std::sort(files.begin(), files.end());
    for (const auto& [id, name] : files) {
      ASSIGN_OR_RETURN(TabletSnapshotInfo info,
                       ReadTabletSnapshotInfo(fs, StrCat(SnapshotTagDir(data_dir, t), "/", name)));
      info.tag = t;
      info.tablet_id = id;
      out.push_back(std::move(info));
    }
  }
  return out;
}

Status ForEachSnapshotRow(const Env& env, const std::string& path, const std::string& scratch_dir,
                          const std::function<Status(model::Row&&)>& on_row) {
  TabletSnapshotInfo info;
  ASSIGN_OR_RETURN(RecordReader reader, OpenSnapshot(*env.fs, path, &info));
  if (env.fs->FileExists(scratch_dir)) {
    return absl::AlreadyExistsError(StrCat("restore folder ", scratch_dir, " already exists"));
  }
  tablet::EngineOptions options;
  options.dir = scratch_dir;
  options.background_threads = 1;
  options.block_cache_bytes = 8 << 20;
  options.memtable_bytes = 4 << 20;
  Env scratch_env = env;
  scratch_env.executor = nullptr;  // the scratch engine runs its own thread
  Status result = [&]() -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<tablet::Engine> engine,
                     tablet::Engine::Open(options, scratch_env));
    constexpr tablet::TabletId kTablet = 1;
    Status s = [&]() -> Status {
      RETURN_IF_ERROR(engine->CreateTablet(kTablet, info.descriptor));
      ASSIGN_OR_RETURN(std::unique_ptr<tablet::TabletCopySink> sink,
                       engine->BeginTabletRebuild(kTablet));
      while (true) {
        ASSIGN_OR_RETURN(auto record, reader.Next());
        if (record.first == 'E') break;
        if (record.first != 'C') return reader.Damaged("a record has an unknown type");
        Status added = sink->Add(record.second);
        if (absl::IsDataLoss(added) || absl::IsInvalidArgument(added)) {
          return reader.Damaged(std::string(added.message()));
        }
        RETURN_IF_ERROR(added);
      }
      RETURN_IF_ERROR(sink->Finish(info.sequence, info.drop_marks));
      ASSIGN_OR_RETURN(std::unique_ptr<tablet::RowIterator> rows,
                       engine->Scan(kTablet, model::RowRange{}, model::ReadSpec{}, 0));
      for (; rows->Valid(); rows->Next()) {
        model::Row row = rows->row();
        RETURN_IF_ERROR(on_row(std::move(row)));
      }
      return rows->status();
    }();
    Status closed = engine->Close();
    return s.ok() ? closed : s;
  }();
  Status removed = RemoveTree(*env.fs, scratch_dir);
  return result.ok() ? removed : result;
}

Status RemoveTree(FileSystem& fs, const std::string& dir) {
  if (!fs.FileExists(dir)) return Status();
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs.GetChildren(dir));
  for (const std::string& name : names) {
    if (name == "." || name == "..") continue;
    const std::string path = StrCat(dir, "/", name);
    if (!fs.RemoveFile(path).ok()) RETURN_IF_ERROR(RemoveTree(fs, path));
  }
  return fs.RemoveDir(dir);
}

}  // namespace tessera::server
