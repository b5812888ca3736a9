#include "tessera/tablet/table_file.h"

#include "fmt/format.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {

namespace {

storage::FileMeta AtLevel(storage::FileMeta meta, uint32_t level) {
  meta.level = level;
  return meta;
}

}  // namespace

TableFile::TableFile(std::shared_ptr<TableFile> from, uint32_t level)
    : meta_(AtLevel(from->meta(), level)),
      path_(from->path()),
      moved_from_(std::move(from)),
      fs_(moved_from_->fs_) {}

TableFile::~TableFile() {
  if (moved_from_ || !obsolete_.load(std::memory_order_acquire)) return;
  Status s = fs_->RemoveFile(path_);
  if (!s.ok() && !absl::IsNotFound(s)) {
    // Left behind; the engine removes unreferenced files at the next open.
    TLOG_WARN("could not remove obsolete table {}: {}", path_, s);
  }
}

StatusOr<std::shared_ptr<const std::vector<RowSample>>> TableFile::RowSamples() const {
  if (moved_from_) return moved_from_->RowSamples();
  {
    absl::MutexLock l(&samples_mu_);
    if (samples_ != nullptr) return samples_;
  }
  // Read without the lock; two first callers may both read, and one result is kept.
  ASSIGN_OR_RETURN(std::vector<RowSample> samples, SampleTableIndex(fs_, path_, meta_.size));
  auto shared = std::make_shared<const std::vector<RowSample>>(std::move(samples));
  absl::MutexLock l(&samples_mu_);
  if (samples_ == nullptr) samples_ = std::move(shared);
  return samples_;
}

std::string TableFileName(const std::string& dir, uint64_t number) {
  return JoinPath(dir, NumberedFileName("", number, kTableFileSuffix));
}

std::optional<uint64_t> ParseTableFileName(std::string_view name) {
  return ParseNumberedFileName(name, "", kTableFileSuffix);
}

}  // namespace tessera::tablet
