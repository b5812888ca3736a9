#include "tessera/catalog/tablet_id.h"

namespace tessera::catalog {

StatusOr<uint64_t> TabletPrefixFromRevision(int64_t create_revision) {
  if (create_revision < 1 || static_cast<uint64_t>(create_revision) >= kLocalPrefixBit) {
    return absl::InvalidArgumentError(
        tessera::StrCat("lock-service revision ", create_revision,
                        " cannot name a table's tablets (needs [1, 2^47))"));
  }
  return static_cast<uint64_t>(create_revision);
}

uint64_t NewLocalTabletPrefix(Random* random) {
  return kLocalPrefixBit | (random->Next64() & (kLocalPrefixBit - 1));
}

std::optional<uint64_t> CommonTabletPrefix(const std::vector<uint64_t>& ids_in_row_order) {
  if (ids_in_row_order.empty() || ids_in_row_order.size() > kMaxInitialTablets) return std::nullopt;
  const uint64_t prefix = TabletIdPrefix(ids_in_row_order.front());
  if (prefix == 0) return std::nullopt;
  for (size_t i = 0; i < ids_in_row_order.size(); ++i) {
    if (ids_in_row_order[i] != MakeTabletId(prefix, i)) return std::nullopt;
  }
  return prefix;
}

}  // namespace tessera::catalog
