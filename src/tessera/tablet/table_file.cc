#include "tessera/tablet/table_file.h"

#include "fmt/format.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {

TableFile::~TableFile() {
  if (!obsolete_.load(std::memory_order_acquire)) return;
  Status s = fs_->RemoveFile(path_);
  if (!s.ok() && !absl::IsNotFound(s)) {
    // Left behind; the engine removes unreferenced files at the next open.
    TLOG_WARN("could not remove obsolete table {}: {}", path_, s);
  }
}

std::string TableFileName(const std::string& dir, uint64_t number) {
  return JoinPath(dir, NumberedFileName("", number, kTableFileSuffix));
}

std::optional<uint64_t> ParseTableFileName(std::string_view name) {
  return ParseNumberedFileName(name, "", kTableFileSuffix);
}

}  // namespace tessera::tablet
