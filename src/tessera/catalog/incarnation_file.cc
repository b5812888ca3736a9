#include "tessera/catalog/incarnation_file.h"

#include <utility>

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::catalog {

namespace {

constexpr std::string_view kMagic = "TSCS";
constexpr uint8_t kFormat = 0x01;

}  // namespace

StatusOr<std::unique_ptr<IncarnationFile>> IncarnationFile::Open(FileSystem* fs, std::string path) {
  std::unique_ptr<IncarnationFile> file(new IncarnationFile(fs, std::move(path)));
  RETURN_IF_ERROR(file->Load());
  return file;
}

Status IncarnationFile::Load() {
  absl::MutexLock lock(&mu_);
  if (!fs_->FileExists(path_)) return Status();
  ASSIGN_OR_RETURN(std::string contents, ReadFileToString(fs_, path_));
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(tessera::StrCat("cluster schema state file ", path_, ": ", what));
  };
  if (contents.size() < kMagic.size() + 1 + 4) return corrupt("truncated");
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(contents.data() + contents.size() - 4));
  std::string_view in(contents.data(), contents.size() - 4);
  if (crc32c::Value(in) != stored) return corrupt("checksum mismatch");
  if (in.substr(0, kMagic.size()) != kMagic) return corrupt("bad magic");
  in.remove_prefix(kMagic.size());
  if (static_cast<uint8_t>(in.front()) != kFormat) {
    return corrupt(tessera::StrCat("unknown format ", static_cast<int>(in.front())));
  }
  in.remove_prefix(1);
  uint32_t count = 0;
  if (!GetVarint32(&in, &count)) return corrupt("truncated count");
  std::map<std::string, int64_t, std::less<>> loaded;
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view name;
    uint64_t incarnation = 0;
    if (!GetLengthPrefixed(&in, &name) || !GetVarint64(&in, &incarnation)) {
      return corrupt(tessera::StrCat("entry #", i, " is truncated"));
    }
    if (!loaded.empty() && name <= loaded.rbegin()->first) {
      return corrupt(tessera::StrCat("entry #", i, " is out of order"));
    }
    loaded.emplace(std::string(name), static_cast<int64_t>(incarnation));
  }
  if (!in.empty()) return corrupt("trailing bytes");
  incarnations_ = std::move(loaded);
  return Status();
}

Status IncarnationFile::SaveLocked() {
  std::string out(kMagic);
  out.push_back(static_cast<char>(kFormat));
  PutVarint32(&out, static_cast<uint32_t>(incarnations_.size()));
  for (const auto& [name, incarnation] : incarnations_) {
    PutLengthPrefixed(&out, name);
    PutVarint64(&out, static_cast<uint64_t>(incarnation));
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  const std::string tmp = path_ + ".tmp";
  RETURN_IF_ERROR(WriteStringToFile(fs_, tmp, out, /*sync=*/true));
  RETURN_IF_ERROR(fs_->RenameFile(tmp, path_));
  return fs_->SyncDir(std::string(Dirname(path_)));
}

std::optional<int64_t> IncarnationFile::Get(std::string_view full_name) const {
  absl::MutexLock lock(&mu_);
  auto it = incarnations_.find(full_name);
  if (it == incarnations_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> IncarnationFile::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& entry : incarnations_) names.push_back(entry.first);
  return names;
}

Status IncarnationFile::Set(const std::string& full_name, std::optional<int64_t> incarnation) {
  absl::MutexLock lock(&mu_);
  auto it = incarnations_.find(full_name);
  const std::optional<int64_t> now =
      it == incarnations_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  if (now == incarnation) return Status();
  if (incarnation.has_value()) {
    incarnations_[full_name] = *incarnation;
  } else {
    incarnations_.erase(it);
  }
  Status s = SaveLocked();
  if (!s.ok()) {
    // Keep memory as on disk (as far as we know) so that a retry writes again.
    if (now.has_value()) {
      incarnations_[full_name] = *now;
    } else {
      incarnations_.erase(full_name);
    }
    return s;
  }
  return Status();
}

}  // namespace tessera::catalog
