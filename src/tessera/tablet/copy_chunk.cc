#include "tessera/tablet/copy_chunk.h"

#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"

namespace tessera::tablet {
namespace {

constexpr char kChunkVersion = 1;
constexpr size_t kCrcSize = 4;

}  // namespace

ChunkBuilder::ChunkBuilder() { buffer_.push_back(kChunkVersion); }

void ChunkBuilder::Add(std::string_view internal_key, std::string_view value) {
  PutLengthPrefixed(&buffer_, internal_key);
  PutLengthPrefixed(&buffer_, value);
  ++entries_;
}

std::string ChunkBuilder::Finish() {
  PutFixed32(&buffer_, crc32c::Mask(crc32c::Value(buffer_)));
  return std::move(buffer_);
}

StatusOr<std::vector<ChunkEntry>> DecodeChunk(std::string_view chunk) {
  if (chunk.size() < 1 + kCrcSize) {
    return absl::DataLossError(
        StrCat("tablet copy chunk of ", chunk.size(), " bytes is too short"));
  }
  std::string_view body = chunk.substr(0, chunk.size() - kCrcSize);
  const uint32_t stored = crc32c::Unmask(DecodeFixed32(chunk.data() + body.size()));
  if (stored != crc32c::Value(body)) {
    return absl::DataLossError(
        StrCat("tablet copy chunk of ", chunk.size(), " bytes: checksum mismatch"));
  }
  if (body[0] != kChunkVersion) {
    return absl::DataLossError(
        StrCat("tablet copy chunk has unknown version ", static_cast<int>(body[0])));
  }
  body.remove_prefix(1);
  std::vector<ChunkEntry> entries;
  while (!body.empty()) {
    ChunkEntry e;
    if (!GetLengthPrefixed(&body, &e.internal_key) || !GetLengthPrefixed(&body, &e.value)) {
      return absl::DataLossError(
          StrCat("tablet copy chunk: entry ", entries.size(), " is cut short"));
    }
    entries.push_back(e);
  }
  if (entries.empty()) return absl::DataLossError("tablet copy chunk holds no entry");
  return entries;
}

}  // namespace tessera::tablet
