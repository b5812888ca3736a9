#include "tessera/util/file_system.h"

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
