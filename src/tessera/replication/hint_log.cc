// The hint log's format (also in docs/replication.md, "A replica that was away").
//
// Directory: <dir>/<tablet id, 16 lowercase hex digits>-<segment number, >= 6 digits>.hint.
// A tablet's segments hold consecutive runs of its sequences in the order of their numbers.
//
// A segment file:
//   header  := magic "TSHINTLG" (8 bytes) | version fixed32 (= 1) | masked crc32c fixed32 of
//              the 12 bytes before it                                            (16 bytes)
//   record* := masked crc32c fixed32 of payload | payload length fixed32 | payload
//   payload := tablet id fixed64 | first sequence fixed64 | last sequence fixed64 |
//              written-at wall micros fixed64 | the encoded RowMutation (the rest)
// All integers little-endian; crc32c masked as in util/crc32c.h. Within a file each record
// starts at the sequence after the previous one's last.
#include "tessera/replication/hint_log.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"
#include "tessera/util/logging.h"

namespace tessera::replication {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'H', 'I', 'N', 'T', 'L', 'G'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFileHeaderSize = 16;
constexpr size_t kRecordHeaderSize = 8;
constexpr size_t kPayloadFixedSize = 32;
constexpr std::string_view kSuffix = ".hint";
// A sparse index entry every this many bytes of a segment.
constexpr uint64_t kIndexEvery = 64 << 10;

std::string FileHeader() {
  std::string h(kMagic, sizeof(kMagic));
  PutFixed32(&h, kVersion);
  PutFixed32(&h, crc32c::Mask(crc32c::Value(h)));
  return h;
}

std::string EncodeRecord(const HintRecord& r) {
  std::string payload;
  payload.reserve(kPayloadFixedSize + r.mutation.size());
  PutFixed64(&payload, r.tablet_id);
  PutFixed64(&payload, r.first);
  PutFixed64(&payload, r.last);
  PutFixed64(&payload, static_cast<uint64_t>(r.appended_at_us));
  payload.append(r.mutation);
  std::string out;
  out.reserve(kRecordHeaderSize + payload.size());
  PutFixed32(&out, crc32c::Mask(crc32c::Value(payload)));
  PutFixed32(&out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
  return out;
}

// REQUIRES: the payload's checksum was verified and it holds at least kPayloadFixedSize bytes.
HintRecord DecodePayload(std::string_view p) {
  HintRecord r;
  r.tablet_id = DecodeFixed64(p.data());
  r.first = DecodeFixed64(p.data() + 8);
  r.last = DecodeFixed64(p.data() + 16);
  r.appended_at_us = static_cast<int64_t>(DecodeFixed64(p.data() + 24));
  r.mutation = std::string(p.substr(kPayloadFixedSize));
  return r;
}

std::string HexId(uint64_t id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, id >>= 4) s[static_cast<size_t>(i)] = kDigits[id & 0xf];
  return s;
}

// "<16 hex>-<number>.hint" -> (tablet, number).
std::optional<std::pair<uint64_t, uint64_t>> ParseName(std::string_view name) {
  if (name.size() < 17 || name[16] != '-') return std::nullopt;
  uint64_t id = 0;
  for (size_t i = 0; i < 16; ++i) {
    const char c = name[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return std::nullopt;
    id = id << 4 | static_cast<uint64_t>(v);
  }
  std::optional<uint64_t> number = ParseNumberedFileName(name.substr(17), "", kSuffix);
  if (!number.has_value()) return std::nullopt;
  return std::make_pair(id, *number);
}

}  // namespace

struct HintLog::Segment {
  uint64_t number = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  int64_t newest_us = std::numeric_limits<int64_t>::min();
  uint64_t bytes = 0;  // the file's size, header included
  uint64_t records = 0;
  // (first sequence of a record, its offset): the first record's and one every kIndexEvery.
  std::vector<std::pair<uint64_t, uint64_t>> index;

  void Add(const HintRecord& r, uint64_t offset, uint64_t size) {
    if (records == 0) first = r.first;
    if (index.empty() || offset - index.back().second >= kIndexEvery) {
      index.emplace_back(r.first, offset);
    }
    last = r.last;
    newest_us = std::max(newest_us, r.appended_at_us);
    bytes = offset + size;
    ++records;
  }
};

struct HintLog::TabletHints {
  std::map<uint64_t, Segment> segments;  // by number: also by sequence
  uint64_t next_number = 1;
  // The last segment is not appended to (recovered, or a write to it failed).
  bool append_new = false;
};

HintLog::HintLog(FileSystem* fs, HintLogOptions options) : fs_(fs), options_(std::move(options)) {}

HintLog::~HintLog() = default;

StatusOr<std::unique_ptr<HintLog>> HintLog::Open(FileSystem* fs, HintLogOptions options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("the hint log needs a directory");
  if (options.segment_bytes == 0) {
    return absl::InvalidArgumentError("the hint log's segment size must be positive");
  }
  RETURN_IF_ERROR(fs->CreateDirs(options.dir));
  std::unique_ptr<HintLog> log(new HintLog(fs, std::move(options)));
  absl::MutexLock l(&log->mu_);
  RETURN_IF_ERROR(log->Recover());
  return log;
}

std::string HintLog::PathOf(uint64_t tablet_id, uint64_t number) const {
  return JoinPath(options_.dir, StrCat(HexId(tablet_id), "-", NumberedFileName("", number, kSuffix)));
}

Status HintLog::Recover() {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs_->GetChildren(options_.dir));
  std::map<uint64_t, std::map<uint64_t, std::string>> found;
  for (const std::string& name : names) {
    if (auto parsed = ParseName(name); parsed.has_value()) {
      found[parsed->first][parsed->second] = name;
    }
  }
  bool removed = false;
  for (auto& [tablet_id, files] : found) {
    TabletHints& t = tablets_[tablet_id];
    t.append_new = true;
    for (auto& [number, name] : files) {
      t.next_number = number + 1;
      Segment s;
      s.number = number;
      RETURN_IF_ERROR(LoadSegment(name, &s));
      if (s.records == 0) {
        RETURN_IF_ERROR(fs_->RemoveFile(JoinPath(options_.dir, name)));
        removed = true;
        continue;
      }
      if (!t.segments.empty() && t.segments.rbegin()->second.last + 1 != s.first) {
        TLOG_WARN("hint log: {} starts at sequence {}, not after {}; dropping the tablet's older "
                  "hints",
                  name, s.first, t.segments.rbegin()->second.last);
        while (!t.segments.empty()) {
          RETURN_IF_ERROR(fs_->RemoveFile(PathOf(tablet_id, t.segments.begin()->first)));
          total_bytes_ -= t.segments.begin()->second.bytes;
          t.segments.erase(t.segments.begin());
          removed = true;
        }
      }
      total_bytes_ += s.bytes;
      t.segments.emplace(number, std::move(s));
    }
  }
  for (auto it = tablets_.begin(); it != tablets_.end();) {
    it = it->second.segments.empty() ? tablets_.erase(it) : std::next(it);
  }
  return SyncDirIf(removed);
}

Status HintLog::LoadSegment(const std::string& name, Segment* s) {
  const std::string path = JoinPath(options_.dir, name);
  ASSIGN_OR_RETURN(std::string data, ReadFileToString(fs_, path));
  const uint64_t tablet_id = ParseName(name)->first;
  if (data.size() < kFileHeaderSize) {
    // Created, and cut short by a crash before its header was synced: nothing in it.
    TLOG_WARN("hint log: {} is {} bytes, shorter than its header; removing it", path, data.size());
    return Status();
  }
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0 ||
      crc32c::Unmask(DecodeFixed32(data.data() + 12)) != crc32c::Value(data.data(), 12)) {
    return absl::DataLossError(StrCat(path, ": not a hint log segment (bad magic or header)"));
  }
  if (const uint32_t version = DecodeFixed32(data.data() + 8); version != kVersion) {
    return absl::DataLossError(
        StrCat(path, ": hint log version ", version, "; this build reads version ", kVersion));
  }
  uint64_t offset = kFileHeaderSize;
  s->bytes = kFileHeaderSize;
  while (offset < data.size()) {
    const uint64_t left = data.size() - offset;
    uint64_t length = 0;
    bool torn = left < kRecordHeaderSize;
    if (!torn) {
      length = DecodeFixed32(data.data() + offset + 4);
      torn = left < kRecordHeaderSize + length;
    }
    std::string_view payload;
    if (!torn) {
      payload = std::string_view(data).substr(offset + kRecordHeaderSize, length);
      const bool ok = crc32c::Unmask(DecodeFixed32(data.data() + offset)) == crc32c::Value(payload);
      if (!ok && left == kRecordHeaderSize + length) {
        torn = true;  // the last record of the file: a write cut short
      } else if (!ok) {
        return absl::DataLossError(
            StrCat(path, ": hint record at offset ", offset, " fails its checksum"));
      }
    }
    if (torn) {
      TLOG_WARN("hint log: {}: a torn record at offset {} ({} bytes to the end); cutting it off",
                path, offset, left);
      RETURN_IF_ERROR(fs_->Truncate(path, offset));
      break;
    }
    if (payload.size() < kPayloadFixedSize) {
      return absl::DataLossError(
          StrCat(path, ": hint record at offset ", offset, " is ", payload.size(), " bytes"));
    }
    HintRecord r = DecodePayload(payload);
    if (r.tablet_id != tablet_id || r.first > r.last || (s->records > 0 && r.first != s->last + 1)) {
      return absl::DataLossError(StrCat(path, ": hint record at offset ", offset, " (tablet ",
                                        HexId(r.tablet_id), ", sequences ", r.first, "..", r.last,
                                        ") does not follow the one before it"));
    }
    const uint64_t size = kRecordHeaderSize + length;
    s->Add(r, offset, size);
    offset += size;
  }
  return Status();
}

Status HintLog::Append(uint64_t tablet_id, std::span<const HintRecord> records) {
  if (records.empty()) return Status();
  absl::MutexLock l(&mu_);
  auto existing = tablets_.find(tablet_id);
  uint64_t expect = existing != tablets_.end() && !existing->second.segments.empty()
                        ? existing->second.segments.rbegin()->second.last + 1
                        : records.front().first;
  for (const HintRecord& r : records) {
    if (r.tablet_id != tablet_id || r.first > r.last) {
      return absl::InvalidArgumentError(StrCat("hint log: a record of tablet ", HexId(r.tablet_id),
                                               " with sequences ", r.first, "..", r.last,
                                               " appended to tablet ", HexId(tablet_id)));
    }
    if (r.first != expect) {
      return absl::FailedPreconditionError(
          StrCat("hint log: tablet ", HexId(tablet_id), " holds hints through sequence ",
                 expect - 1, "; a record starting at ", r.first, " would leave a gap or overlap"));
    }
    expect = r.last + 1;
  }
  TabletHints& t = tablets_[tablet_id];
  bool created = false;
  std::unique_ptr<WritableFile> file;
  Segment* segment = nullptr;
  Status result;
  for (const HintRecord& r : records) {
    if (segment == nullptr || segment->bytes >= options_.segment_bytes) {
      if (file != nullptr) {
        result.Update(file->Sync());
        result.Update(file->Close());
        file.reset();
        if (!result.ok()) break;
      }
      const bool reuse = !t.segments.empty() && !t.append_new &&
                         t.segments.rbegin()->second.bytes < options_.segment_bytes;
      if (reuse) {
        segment = &t.segments.rbegin()->second;
        StatusOr<std::unique_ptr<WritableFile>> f =
            fs_->NewAppendableFile(PathOf(tablet_id, segment->number));
        if (!f.ok()) {
          result = f.status();
          break;
        }
        file = *std::move(f);
      } else {
        const uint64_t number = t.next_number++;
        StatusOr<std::unique_ptr<WritableFile>> f = fs_->NewWritableFile(PathOf(tablet_id, number));
        if (!f.ok()) {
          result = f.status();
          break;
        }
        file = *std::move(f);
        created = true;
        if (result = file->Append(FileHeader()); !result.ok()) break;
        Segment s;
        s.number = number;
        s.bytes = kFileHeaderSize;
        total_bytes_ += kFileHeaderSize;
        segment = &t.segments.emplace(number, std::move(s)).first->second;
        t.append_new = false;
      }
    }
    const std::string encoded = EncodeRecord(r);
    if (result = file->Append(encoded); !result.ok()) break;
    total_bytes_ += encoded.size();
    segment->Add(r, segment->bytes, encoded.size());
  }
  if (file != nullptr) {
    result.Update(file->Sync());
    result.Update(file->Close());
  }
  if (result.ok() && created) result = fs_->SyncDir(options_.dir);
  if (!result.ok()) {
    // What the index holds may not all be on disk, and the file may end in part of a record:
    // append to a new segment from now on (a torn tail there is cut at the next open).
    t.append_new = true;
    if (!t.segments.empty() && t.segments.rbegin()->second.records == 0) {
      total_bytes_ -= t.segments.rbegin()->second.bytes;  // its file goes at the next open
      t.segments.erase(std::prev(t.segments.end()));
    }
    if (t.segments.empty()) tablets_.erase(tablet_id);
    return Status(result.code(), StrCat("hint log: appending to tablet ", HexId(tablet_id), ": ",
                                        result.message()));
  }
  return Status();
}

StatusOr<std::vector<HintRecord>> HintLog::Read(uint64_t tablet_id, uint64_t sequence,
                                                size_t max_bytes) const {
  absl::MutexLock l(&mu_);
  std::vector<HintRecord> out;
  auto t = tablets_.find(tablet_id);
  if (t == tablets_.end() || t->second.segments.empty() ||
      sequence < t->second.segments.begin()->second.first ||
      sequence > t->second.segments.rbegin()->second.last) {
    return absl::NotFoundError(StrCat("hint log: tablet ", HexId(tablet_id),
                                      " has no hint holding sequence ", sequence));
  }
  size_t bytes = 0;
  std::string header(kRecordHeaderSize, '\0');
  std::string scratch;
  for (const auto& [number, s] : t->second.segments) {
    if (s.last < sequence) continue;
    const std::string path = PathOf(tablet_id, number);
    ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs_->NewRandomAccessFile(path));
    // The last index entry at or below `sequence`.
    uint64_t offset = s.index.front().second;
    for (const auto& [first, at] : s.index) {
      if (first <= sequence) offset = at;
    }
    while (offset < s.bytes) {
      ASSIGN_OR_RETURN(std::string_view h, file->Read(offset, kRecordHeaderSize, header.data()));
      if (h.size() < kRecordHeaderSize) {
        return absl::DataLossError(StrCat(path, ": hint record at offset ", offset, " is cut short"));
      }
      const uint32_t crc = crc32c::Unmask(DecodeFixed32(h.data()));
      const uint32_t length = DecodeFixed32(h.data() + 4);
      scratch.resize(length);
      ASSIGN_OR_RETURN(std::string_view p,
                       file->Read(offset + kRecordHeaderSize, length, scratch.data()));
      if (p.size() != length || length < kPayloadFixedSize || crc32c::Value(p) != crc) {
        return absl::DataLossError(
            StrCat(path, ": hint record at offset ", offset, " does not read back"));
      }
      offset += kRecordHeaderSize + length;
      HintRecord r = DecodePayload(p);
      if (r.last < sequence) continue;
      bytes += r.mutation.size();
      out.push_back(std::move(r));
      if (bytes >= max_bytes) return out;
    }
  }
  return out;
}

Status HintLog::RemoveOldest(uint64_t tablet_id) {
  TabletHints& t = tablets_.at(tablet_id);
  auto oldest = t.segments.begin();
  RETURN_IF_ERROR(fs_->RemoveFile(PathOf(tablet_id, oldest->first)));
  total_bytes_ -= oldest->second.bytes;
  t.segments.erase(oldest);
  if (t.segments.empty()) tablets_.erase(tablet_id);
  return Status();
}

Status HintLog::SyncDirIf(bool removed) {
  return removed ? fs_->SyncDir(options_.dir) : Status();
}

Status HintLog::DropThrough(uint64_t tablet_id, uint64_t sequence) {
  absl::MutexLock l(&mu_);
  bool removed = false;
  for (auto t = tablets_.find(tablet_id);
       t != tablets_.end() && t->second.segments.begin()->second.last <= sequence;
       t = tablets_.find(tablet_id)) {
    RETURN_IF_ERROR(RemoveOldest(tablet_id));
    removed = true;
  }
  return SyncDirIf(removed);
}

Status HintLog::DropTablet(uint64_t tablet_id) {
  absl::MutexLock l(&mu_);
  bool removed = false;
  while (tablets_.contains(tablet_id)) {
    RETURN_IF_ERROR(RemoveOldest(tablet_id));
    removed = true;
  }
  return SyncDirIf(removed);
}

Status HintLog::DropWrittenBefore(int64_t cutoff_us) {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> ids;
  for (const auto& [id, t] : tablets_) ids.push_back(id);
  bool removed = false;
  for (uint64_t id : ids) {
    for (auto t = tablets_.find(id);
         t != tablets_.end() && t->second.segments.begin()->second.newest_us < cutoff_us;
         t = tablets_.find(id)) {
      RETURN_IF_ERROR(RemoveOldest(id));
      removed = true;
    }
  }
  return SyncDirIf(removed);
}

Status HintLog::DropToSize(uint64_t max_bytes) {
  absl::MutexLock l(&mu_);
  bool removed = false;
  while (total_bytes_ > max_bytes && !tablets_.empty()) {
    // The tablet whose oldest segment is the oldest of all.
    auto oldest = tablets_.begin();
    for (auto it = tablets_.begin(); it != tablets_.end(); ++it) {
      if (it->second.segments.begin()->second.newest_us <
          oldest->second.segments.begin()->second.newest_us) {
        oldest = it;
      }
    }
    RETURN_IF_ERROR(RemoveOldest(oldest->first));
    removed = true;
  }
  return SyncDirIf(removed);
}

std::map<uint64_t, HintTabletStats> HintLog::Stats() const {
  absl::MutexLock l(&mu_);
  std::map<uint64_t, HintTabletStats> out;
  for (const auto& [id, t] : tablets_) {
    HintTabletStats& s = out[id];
    s.first = t.segments.begin()->second.first;
    s.last = t.segments.rbegin()->second.last;
    for (const auto& [number, segment] : t.segments) {
      s.bytes += segment.bytes;
      s.records += segment.records;
    }
  }
  return out;
}

uint64_t HintLog::total_bytes() const {
  absl::MutexLock l(&mu_);
  return total_bytes_;
}

}  // namespace tessera::replication
