#include "tessera/storage/comparator.h"

#include <cstring>

#include "tessera/storage/dbformat.h"

namespace tessera::storage {
namespace {

class BytewiseComparatorImpl final : public Comparator {
 public:
  int Compare(std::string_view a, std::string_view b) const override { return a.compare(b); }
  const char* Name() const override { return "tessera.Bytewise"; }
};

class InternalKeyComparatorImpl final : public Comparator {
 public:
  int Compare(std::string_view a, std::string_view b) const override {
    if (a.size() < kTrailerSize || b.size() < kTrailerSize) {
      // Not internal keys (only hostile input gets here): order bytewise, never read outside.
      return a.compare(b);
    }
    int r = ExtractUserKey(a).compare(ExtractUserKey(b));
    if (r != 0) return r;
    // Larger (sequence, type) sorts first.
    uint64_t at = DecodeFixed64(a.data() + a.size() - kTrailerSize);
    uint64_t bt = DecodeFixed64(b.data() + b.size() - kTrailerSize);
    if (at > bt) return -1;
    if (at < bt) return 1;
    return 0;
  }
  const char* Name() const override { return "tessera.InternalKey"; }
};

}  // namespace

const Comparator* BytewiseComparator() {
  static const BytewiseComparatorImpl kInstance;
  return &kInstance;
}

const Comparator* InternalKeyComparator() {
  static const InternalKeyComparatorImpl kInstance;
  return &kInstance;
}

}  // namespace tessera::storage
