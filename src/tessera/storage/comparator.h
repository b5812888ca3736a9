// Orders the keys of a table or memtable. Two implementations: bytewise (for tables of plain
// keys, used in tests) and internal-key (user key bytewise, then sequence descending), which is
// what the engine uses everywhere. The name is stored in every SSTable and checked at open.
//
// Thread-safety: comparators are immutable and shared.
#pragma once

#include <string_view>

namespace tessera::storage {

class Comparator {
 public:
  virtual ~Comparator() = default;
  // <0, 0, >0 like memcmp.
  virtual int Compare(std::string_view a, std::string_view b) const = 0;
  // Persisted in each file; a file written with another comparator is refused at open.
  virtual const char* Name() const = 0;
};

// Process-lifetime singletons.
const Comparator* BytewiseComparator();
const Comparator* InternalKeyComparator();

}  // namespace tessera::storage
