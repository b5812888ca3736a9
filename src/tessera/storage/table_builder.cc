// SSTable file format, version 1 (details in docs/sstable_format.md):
//
//   file := data_block* filter_block? index_block properties_block metaindex_block footer
//
// Every block is stored as  contents type:uint8 masked_crc32c(contents + type):fixed32,  where
// type says how contents is compressed (0 none, 1 lz4, 2 zstd; a compressed block starts with
// its varint32 uncompressed size). A block stays uncompressed when compression saves < 12.5%.
//
// - Data blocks hold the entries in key order, cut at ~block_size uncompressed bytes, in the
//   prefix-compressed block encoding with restart points (see block_builder.cc).
// - The filter block (present when a FilterKeyExtractor was given) is one bloom filter over
//   the distinct filter keys of the whole file (see bloom.h); never compressed.
// - The index block has one entry per data block: key = the block's last key, value = the
//   block's BlockHandle (varint64 offset, varint64 size). Restart interval 1.
// - The properties block maps property names to values (TableProperties).
// - The metaindex block maps meta block names ("tessera.properties") to handles.
// - The footer (128 bytes, fixed) holds the metaindex, index and filter handles, the
//   comparator name, the format version, a checksum of itself and the magic number.
#include "tessera/storage/table_builder.h"

#include <algorithm>

namespace tessera::storage {
namespace {

// Output is handed to the file in pieces of at least this size (except the last).
constexpr size_t kWriteBufferSize = 64 * 1024;

TableOptions Sanitize(TableOptions options) {
  options.block_size = std::clamp<size_t>(options.block_size, 1024, size_t{256} << 20);
  options.block_restart_interval = std::clamp(options.block_restart_interval, 1, 65536);
  options.bloom_bits_per_key = std::clamp(options.bloom_bits_per_key, 1, 40);
  if (options.comparator == nullptr) options.comparator = BytewiseComparator();
  return options;
}

}  // namespace

TableBuilder::TableBuilder(const TableOptions& options, WritableFile* file)
    : options_(Sanitize(options)),
      file_(file),
      data_block_(options_.block_restart_interval),
      index_block_(1),
      compressor_(options_.compression, options_.zstd_level),
      bloom_(options_.bloom_bits_per_key) {
  if (std::string_view(options_.comparator->Name()).size() > Footer::kMaxComparatorNameLength) {
    status_ = absl::InvalidArgumentError(
        StrCat("comparator name is too long: ", options_.comparator->Name()));
  }
  if (options_.filter_key_extractor != nullptr) {
    props_.filter_key_extractor = options_.filter_key_extractor->Name();
  }
  output_.reserve(kWriteBufferSize + options_.block_size / 8);
}

TableBuilder::~TableBuilder() = default;

void TableBuilder::SetUserProperties(std::string_view properties) {
  props_.user_properties.assign(properties);
}

void TableBuilder::Add(std::string_view key, std::string_view value) {
  if (closed_) {
    if (status_.ok()) status_ = absl::FailedPreconditionError("TableBuilder::Add after Finish");
    return;
  }
  if (!status_.ok()) return;
  if (props_.num_entries > 0 && options_.comparator->Compare(key, last_key_) <= 0) {
    status_ = absl::InvalidArgumentError("TableBuilder::Add: keys are not in increasing order");
    return;
  }
  if (uint64_t{key.size()} + value.size() > kMaxEntrySize) {
    status_ =
        absl::InvalidArgumentError(StrCat("TableBuilder::Add: entry of ", key.size() + value.size(),
                                          " bytes exceeds the limit of ", kMaxEntrySize));
    return;
  }
  if (props_.num_entries == 0) props_.smallest_key.assign(key);
  if (options_.filter_key_extractor != nullptr) {
    const std::string_view filter_key = options_.filter_key_extractor->FilterKey(key);
    if (!has_filter_key_ || filter_key != last_filter_key_) {
      bloom_.AddKey(filter_key);
      last_filter_key_.assign(filter_key);
      has_filter_key_ = true;
    }
  }
  data_block_.Add(key, value);
  last_key_.assign(key);
  props_.num_entries++;
  props_.raw_key_size += key.size();
  props_.raw_value_size += value.size();
  if (data_block_.CurrentSizeEstimate() >= options_.block_size) FlushDataBlock();
}

void TableBuilder::FlushDataBlock() {
  if (data_block_.empty() || !status_.ok()) return;
  BlockHandle handle;
  WriteBlock(data_block_.Finish(), /*compress=*/true, &handle);
  data_block_.Reset();
  props_.num_data_blocks++;
  props_.data_size += handle.size + kBlockTrailerSize;
  handle_buf_.clear();
  handle.EncodeTo(&handle_buf_);
  index_block_.Add(last_key_, handle_buf_);
}

void TableBuilder::WriteBlock(std::string_view raw, bool compress, BlockHandle* handle) {
  CompressionType type = CompressionType::kNone;
  const std::string_view stored = compress ? compressor_.Compress(raw, &type) : raw;
  handle->offset = offset_;
  handle->size = stored.size();
  WriteRaw(stored);
  const size_t before = output_.size();
  AppendBlockTrailer(stored, type, &output_);
  offset_ += output_.size() - before;
  if (output_.size() >= kWriteBufferSize) FlushOutput();
}

void TableBuilder::WriteRaw(std::string_view data) {
  output_.append(data);
  offset_ += data.size();
}

void TableBuilder::FlushOutput() {
  if (output_.empty() || !status_.ok()) return;
  status_ = file_->Append(output_);
  output_.clear();
}

Status TableBuilder::Finish() {
  if (closed_) return absl::FailedPreconditionError("TableBuilder::Finish called twice");
  FlushDataBlock();
  closed_ = true;
  if (!status_.ok()) return status_;
  props_.largest_key = last_key_;

  Footer footer;
  footer.comparator_name = options_.comparator->Name();

  std::string scratch;
  if (options_.filter_key_extractor != nullptr) {
    bloom_.Finish(&scratch);
    // Bloom bits do not compress.
    WriteBlock(scratch, /*compress=*/false, &footer.filter);
    props_.filter_size = footer.filter.size;
  }

  WriteBlock(index_block_.Finish(), /*compress=*/true, &footer.index);
  props_.index_size = footer.index.size;

  BlockHandle properties_handle;
  scratch.clear();
  props_.EncodeTo(&scratch);
  WriteBlock(scratch, /*compress=*/true, &properties_handle);

  BlockBuilder metaindex(1);
  scratch.clear();
  properties_handle.EncodeTo(&scratch);
  metaindex.Add(kPropertiesBlockName, scratch);
  WriteBlock(metaindex.Finish(), /*compress=*/false, &footer.metaindex);

  scratch.clear();
  footer.EncodeTo(&scratch);
  WriteRaw(scratch);
  FlushOutput();
  return status_;
}

void TableBuilder::Abandon() {
  closed_ = true;
  output_.clear();
}

}  // namespace tessera::storage
