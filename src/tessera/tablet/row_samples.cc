#include "tessera/tablet/row_samples.h"

#include <memory>
#include <string_view>

#include "tessera/model/cell_key.h"
#include "tessera/storage/block.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/format.h"

namespace tessera::tablet {
namespace {

// The decoded row of an internal key of a cell; false when it is not one.
bool RowOf(std::string_view ikey, std::string* row) {
  if (ikey.size() < storage::kTrailerSize) return false;
  const std::string_view escaped = model::RowPrefix(storage::ExtractUserKey(ikey));
  std::string scratch;
  std::string_view value;
  if (!model::Unescape(escaped, &value, &scratch)) return false;
  row->assign(value.data(), value.size());
  return true;
}

}  // namespace

StatusOr<std::vector<RowSample>> SampleTableIndex(FileSystem* fs, const std::string& path,
                                                  uint64_t file_size) {
  using storage::Footer;
  if (file_size < Footer::kEncodedLength) {
    return absl::DataLossError(StrCat(path, ": too short (", file_size, " bytes) for an sstable"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, fs->NewRandomAccessFile(path));
  const uint64_t footer_offset = file_size - Footer::kEncodedLength;
  char footer_buf[Footer::kEncodedLength];
  std::string_view footer_bytes;
  RETURN_IF_ERROR(storage::ReadExactly(*file, path, footer_offset, Footer::kEncodedLength,
                                       footer_buf, &footer_bytes));
  Footer footer;
  RETURN_IF_ERROR(footer.DecodeFrom(footer_bytes, path, footer_offset));
  if (footer.index.offset > footer_offset ||
      footer.index.size > footer_offset - footer.index.offset) {
    return absl::DataLossError(
        StrCat(path, ": index block handle at ", footer.index.offset, " lies outside the file"));
  }
  storage::BlockContents contents;
  RETURN_IF_ERROR(storage::ReadBlock(*file, path, footer.index, /*stats=*/nullptr, &contents));
  ASSIGN_OR_RETURN(std::shared_ptr<const storage::Block> block,
                   storage::Block::Create(std::move(contents), path, footer.index.offset));
  std::unique_ptr<storage::Iterator> it = storage::Block::NewIterator(
      std::move(block), storage::InternalKeyComparator(), path, footer.index.offset);
  std::vector<RowSample> out;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view value = it->value();
    storage::BlockHandle handle;
    RowSample sample;
    if (!handle.DecodeFrom(&value) || !RowOf(it->key(), &sample.row)) {
      return absl::DataLossError(
          StrCat(path, ": malformed index entry in the block at offset ", footer.index.offset));
    }
    sample.bytes = handle.size + storage::kBlockTrailerSize;
    out.push_back(std::move(sample));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

Status SampleIterator(storage::Iterator* it, uint64_t piece_bytes, std::vector<RowSample>* out) {
  uint64_t pending = 0;
  std::string last_key;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    pending += it->key().size() + it->value().size();
    if (pending < piece_bytes) {
      last_key.assign(it->key().data(), it->key().size());
      continue;
    }
    RowSample sample;
    if (!RowOf(it->key(), &sample.row)) {
      return absl::DataLossError("malformed cell key in a memtable");
    }
    sample.bytes = pending;
    out->push_back(std::move(sample));
    pending = 0;
    last_key.clear();
  }
  RETURN_IF_ERROR(it->status());
  if (pending > 0) {
    RowSample sample;
    if (!RowOf(last_key, &sample.row)) {
      return absl::DataLossError("malformed cell key in a memtable");
    }
    sample.bytes = pending;
    out->push_back(std::move(sample));
  }
  return Status();
}

}  // namespace tessera::tablet
