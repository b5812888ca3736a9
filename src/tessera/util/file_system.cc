#include "tessera/util/file_system.h"

#include "fmt/format.h"

namespace tessera {

Status WriteStringToFile(FileSystem* fs, const std::string& path, std::string_view data,
                         bool sync) {
  ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path));
  RETURN_IF_ERROR(file->Append(data));
  if (sync) RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

StatusOr<std::string> ReadFileToString(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(auto file, fs->NewSequentialFile(path));
  std::string out;
  std::string scratch(1 << 16, '\0');
  while (true) {
    ASSIGN_OR_RETURN(std::string_view piece, file->Read(scratch.size(), scratch.data()));
    if (piece.empty()) break;
    out.append(piece.data(), piece.size());
  }
  return out;
}

std::string NumberedFileName(std::string_view prefix, uint64_t number, std::string_view suffix) {
  return fmt::format("{}{:06d}{}", prefix, number, suffix);
}

std::optional<uint64_t> ParseNumberedFileName(std::string_view name, std::string_view prefix,
                                              std::string_view suffix) {
  if (name.size() < prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 19) return std::nullopt;
  uint64_t number = 0;  // at most 19 digits: no overflow
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + static_cast<uint64_t>(c - '0');
  }
  if (number == 0) return std::nullopt;
  if (NumberedFileName(prefix, number, suffix) != name) return std::nullopt;  // canonical only
  return number;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string p(dir);
  if (p.back() != '/') p.push_back('/');
  p.append(name);
  return p;
}

std::string_view Dirname(std::string_view path) {
  size_t pos = path.rfind('/');
  if (pos == std::string_view::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

}  // namespace tessera
