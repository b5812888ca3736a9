// FilterKeyExtractor maps a table key to the key its bloom filter is built on ("filter key").
//
// The table layer stores opaque keys; what a filter should answer for is a policy of the layer
// above. The engine, whose table keys are internal keys over cell keys, maps each key to its
// row, so that "may this file hold row R?" is one probe. Consecutive table keys with the same
// filter key are added to the filter once.
//
// The extractor's Name() is stored in every table built with it. A reader uses a table's filter
// only when its own extractor has the same name: a filter built over other filter keys would
// give false negatives (a missed row), so such a filter is ignored instead.
//
// Thread-safety: implementations must be immutable and callable from any thread.
#pragma once

#include <string_view>

namespace tessera::storage {

class FilterKeyExtractor {
 public:
  virtual ~FilterKeyExtractor() = default;

  // The filter key of `table_key`. The returned view points into `table_key` or into storage
  // owned by the extractor that stays valid for the extractor's lifetime.
  virtual std::string_view FilterKey(std::string_view table_key) const = 0;

  // Identifies the mapping; persisted in each table. Change it whenever FilterKey() changes.
  virtual const char* Name() const = 0;
};

}  // namespace tessera::storage
