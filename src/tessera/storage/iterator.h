// Iteration over sorted key/value entries, under leveldb's contract:
//   - an iterator is either positioned at an entry (Valid()) or not;
//   - key() and value() REQUIRE Valid() and stay valid until the iterator is moved or destroyed;
//   - an I/O or corruption error makes the iterator !Valid() and is kept in status(): a caller
//     that finds !Valid() must check status() to tell the end from a failure.
// Iterators compose: memtable and SSTable iterators are merged (merger.h) and then collapsed to
// visible cells by the model layer.
//
// Thread-safety: one thread at a time per iterator.
#pragma once

#include <memory>
#include <string_view>

#include "tessera/util/status.h"

namespace tessera::storage {

class Iterator {
 public:
  Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;
  virtual ~Iterator() = default;

  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  // Positions at the first entry with key >= target.
  virtual void Seek(std::string_view target) = 0;
  // REQUIRES: Valid().
  virtual void Next() = 0;
  // REQUIRES: Valid().
  virtual void Prev() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  virtual Status status() const = 0;
};

// An iterator with no entries that reports `status`.
std::unique_ptr<Iterator> NewEmptyIterator(Status status = Status());

}  // namespace tessera::storage
