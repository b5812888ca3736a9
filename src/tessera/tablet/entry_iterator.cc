#include "tessera/tablet/entry_iterator.h"

#include <vector>

#include "tessera/storage/merger.h"
#include "tessera/storage/table.h"

namespace tessera::tablet {

EntryIterator::EntryIterator(TabletSnapshot snapshot) : snapshot_(std::move(snapshot)) {
  std::vector<std::unique_ptr<storage::Iterator>> children;
  for (const auto& mem : snapshot_.memtables) children.push_back(mem->NewIterator());
  storage::TableReadOptions ro;
  ro.fill_cache = false;  // a full pass would evict what reads need
  for (const auto& file : snapshot_.files->files)
    children.push_back(file->table()->NewIterator(ro));
  input_ = storage::NewMergingIterator(storage::InternalKeyComparator(), std::move(children));
  input_->SeekToFirst();
  SkipNewer();
}

void EntryIterator::Next() {
  input_->Next();
  SkipNewer();
}

void EntryIterator::SkipNewer() {
  while (input_->Valid() && storage::ExtractSequence(input_->key()) > snapshot_.sequence) {
    input_->Next();
  }
}

}  // namespace tessera::tablet
