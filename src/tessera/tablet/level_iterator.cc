#include "tessera/tablet/level_iterator.h"

#include <algorithm>
#include <utility>

#include "tessera/storage/comparator.h"

namespace tessera::tablet {
namespace {

using storage::Iterator;

class LevelIterator final : public Iterator {
 public:
  LevelIterator(std::vector<const TableFile*> files, const storage::TableReadOptions& options)
      : cmp_(storage::InternalKeyComparator()), files_(std::move(files)), options_(options) {
    std::sort(files_.begin(), files_.end(), [this](const TableFile* a, const TableFile* b) {
      return cmp_->Compare(a->meta().smallest, b->meta().smallest) < 0;
    });
  }

  bool Valid() const override { return iter_ != nullptr && iter_->Valid(); }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    Open(0);
    if (iter_ != nullptr) iter_->SeekToFirst();
    SkipForward();
  }

  void SeekToLast() override {
    if (!status_.ok()) return;
    Open(files_.size() - 1);
    if (iter_ != nullptr) iter_->SeekToLast();
    SkipBackward();
  }

  void Seek(std::string_view target) override {
    if (!status_.ok()) return;
    // The first file whose largest key is >= target holds the first entry >= target.
    auto it = std::lower_bound(files_.begin(), files_.end(), target,
                               [this](const TableFile* f, std::string_view t) {
                                 return cmp_->Compare(f->meta().largest, t) < 0;
                               });
    if (it == files_.end()) {
      Close();
      return;
    }
    Open(static_cast<size_t>(it - files_.begin()));
    iter_->Seek(target);
    SkipForward();
  }

  void Next() override {
    if (!Valid()) return;
    iter_->Next();
    SkipForward();
  }

  void Prev() override {
    if (!Valid()) return;
    iter_->Prev();
    SkipBackward();
  }

  std::string_view key() const override { return iter_->key(); }
  std::string_view value() const override { return iter_->value(); }
  Status status() const override { return status_; }

 private:
  // Opens files_[index] (unpositioned), unless it is open already.
  void Open(size_t index) {
    if (iter_ != nullptr && index_ == index) return;
    iter_ = files_[index]->table()->NewIterator(options_);
    index_ = index;
  }

  void Close() { iter_.reset(); }

  // Keeps the first error of a file; false (and closed) on error.
  bool CheckError() {
    if (iter_ == nullptr || iter_->status().ok()) return true;
    status_ = iter_->status();
    Close();
    return false;
  }

  // While the current file is exhausted, goes on at the start of the next one.
  void SkipForward() {
    while (iter_ != nullptr && !iter_->Valid()) {
      if (!CheckError()) return;
      if (index_ + 1 >= files_.size()) {
        Close();
        return;
      }
      Open(index_ + 1);
      iter_->SeekToFirst();
    }
  }

  // While the current file is exhausted, goes on at the end of the previous one.
  void SkipBackward() {
    while (iter_ != nullptr && !iter_->Valid()) {
      if (!CheckError()) return;
      if (index_ == 0) {
        Close();
        return;
      }
      Open(index_ - 1);
      iter_->SeekToLast();
    }
  }

  const storage::Comparator* const cmp_;
  std::vector<const TableFile*> files_;  // by smallest key
  const storage::TableReadOptions options_;
  std::unique_ptr<Iterator> iter_;  // over files_[index_]; null when not positioned
  size_t index_ = 0;
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewLevelIterator(std::vector<const TableFile*> files,
                                           const storage::TableReadOptions& options) {
  return std::make_unique<LevelIterator>(std::move(files), options);
}

}  // namespace tessera::tablet
