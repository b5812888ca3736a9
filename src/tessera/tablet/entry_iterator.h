// Raw entries of one tablet snapshot: what the memtables and SSTables hold, before any
// visibility rule. For comparing replicas (Merkle repair) and for streaming.
#pragma once

#include <memory>
#include <string_view>

#include "tessera/storage/dbformat.h"
#include "tessera/storage/iterator.h"
#include "tessera/tablet/snapshot.h"
#include "tessera/util/status.h"

namespace tessera::tablet {

// Every entry of a snapshot's memtables and files with a sequence at most the snapshot's, in
// internal-key order: cell key (model/cell_key.h: row, row tombstone, per family its tombstone
// and columns, column tombstones before cells, cells newest first), then sequence descending.
// Tombstones, shadowed versions, entries of dropped families and GC-collectable cells are all
// there: no visibility, GC rule or drop mark is applied. An entry written twice (still in a
// memtable and already in the file it was flushed to) appears twice.
//
// Not thread-safe; keeps the snapshot's memtables and files alive until destroyed.
class EntryIterator {
 public:
  explicit EntryIterator(TabletSnapshot snapshot);

  bool Valid() const { return input_->Valid(); }
  // REQUIRES: Valid(). Valid until Next().
  std::string_view internal_key() const { return input_->key(); }
  std::string_view cell_key() const { return storage::ExtractUserKey(input_->key()); }
  storage::SequenceNumber sequence() const { return storage::ExtractSequence(input_->key()); }
  std::string_view value() const { return input_->value(); }
  void Next();
  // When !Valid(): OK at the end, the error otherwise.
  Status status() const { return input_->status(); }

 private:
  void SkipNewer();

  const TabletSnapshot snapshot_;
  std::unique_ptr<storage::Iterator> input_;
};

}  // namespace tessera::tablet
