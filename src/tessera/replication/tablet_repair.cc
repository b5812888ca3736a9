#include "tessera/replication/tablet_repair.h"

#include <openssl/evp.h>

#include <memory>

#include "tessera/util/coding.h"

namespace tessera::replication {

StatusOr<TabletDigest> DigestRows(tablet::RowIterator& rows, std::atomic<uint64_t>* hashed) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (ctx == nullptr || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("cannot start a SHA-256 digest");
  }
  TabletDigest digest;
  std::string buf;
  for (; rows.Valid(); rows.Next()) {
    const model::Row& row = rows.row();
    ++digest.rows;
    for (const model::Cell& cell : row.cells) {
      buf.clear();
      PutLengthPrefixed(&buf, row.key);
      PutLengthPrefixed(&buf, cell.family);
      PutLengthPrefixed(&buf, cell.qualifier);
      PutFixed64(&buf, static_cast<uint64_t>(cell.timestamp_micros));
      PutLengthPrefixed(&buf, cell.value);
      EVP_DigestUpdate(ctx.get(), buf.data(), buf.size());
      ++digest.cells;
      const uint64_t n = row.key.size() + cell.family.size() + cell.qualifier.size() +
                         cell.value.size() + sizeof(int64_t);
      digest.bytes += n;
      if (hashed != nullptr) hashed->fetch_add(n, std::memory_order_relaxed);
    }
  }
  RETURN_IF_ERROR(rows.status());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx.get(), out, &size) != 1) {
    return absl::InternalError("cannot finish a SHA-256 digest");
  }
  digest.sha256.assign(reinterpret_cast<const char*>(out), size);
  return digest;
}

std::string_view RepairOutcomeName(RepairOutcome outcome) {
  switch (outcome) {
    case RepairOutcome::kConsistent:
      return "consistent";
    case RepairOutcome::kRebuilding:
      return "rebuilding";
    case RepairOutcome::kBehind:
      return "behind";
    case RepairOutcome::kBusy:
      return "busy";
    case RepairOutcome::kFailed:
      break;
  }
  return "failed";
}

}  // namespace tessera::replication
