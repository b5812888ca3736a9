#include "tessera/storage/table.h"

#include <algorithm>
#include <cstring>

#include "tessera/util/coding.h"

namespace tessera::storage {

namespace {

// The first read-ahead of a scan; each next one doubles, up to TableReadOptions::readahead_bytes
// (as RocksDB's automatic read-ahead grows): a short scan that runs into a second block reads
// a few blocks more, not the whole read-ahead, and a long one reaches it in a few reads.
constexpr size_t kInitialReadaheadBytes = 16 * 1024;

// The file as a forward scan reads it: a read inside the last read-ahead is served from it, any
// other reads ahead from its offset (at least what is asked, never past `limit`, the end of the
// data blocks) and keeps it: kInitialReadaheadBytes the first time, twice the last amount each
// next time, at most `max_readahead`. One per iterator, so one thread at a time.
class ReadaheadFile final : public RandomAccessFile {
 public:
  ReadaheadFile(const RandomAccessFile* base, uint64_t limit, size_t max_readahead)
      : base_(base),
        limit_(limit),
        max_readahead_(max_readahead),
        readahead_(std::min(kInitialReadaheadBytes, max_readahead)) {}

  StatusOr<std::string_view> Read(uint64_t offset, size_t n, char* scratch) const override {
    if (offset >= offset_ && offset + n <= offset_ + len_) {
      return std::string_view(buf_.get() + (offset - offset_), n);
    }
    size_t want = readahead_;
    readahead_ = std::min(2 * readahead_, max_readahead_);
    if (offset < limit_) want = static_cast<size_t>(std::min<uint64_t>(want, limit_ - offset));
    want = std::max(want, n);
    if (want > capacity_) {
      buf_ = std::make_unique_for_overwrite<char[]>(want);
      capacity_ = want;
    }
    len_ = 0;
    ASSIGN_OR_RETURN(std::string_view got, base_->Read(offset, want, buf_.get()));
    if (got.data() != buf_.get()) std::memcpy(buf_.get(), got.data(), got.size());
    offset_ = offset;
    len_ = got.size();
    (void)scratch;
    return std::string_view(buf_.get(), std::min(n, len_));
  }

  StatusOr<uint64_t> Size() const override { return base_->Size(); }

 private:
  const RandomAccessFile* const base_;
  const uint64_t limit_;
  const size_t max_readahead_;
  mutable size_t readahead_;  // the next read-ahead
  mutable std::unique_ptr<char[]> buf_;
  mutable size_t capacity_ = 0;
  mutable uint64_t offset_ = 0;  // buf_ holds the file's [offset_, offset_ + len_)
  mutable size_t len_ = 0;
};

}  // namespace

// A two-level iterator: the index block's iterator picks a data block, whose iterator yields
// the entries. Moving within a block allocates nothing; switching blocks costs a cache lookup
// or a read. The first error stops the iterator for good (a merged read must not silently skip
// a damaged block).
class TableIterator final : public Iterator {
 public:
  TableIterator(const Table* table, const TableReadOptions& read_options)
      : table_(table), read_options_(read_options) {
    index_iter_.Init(table_->options_.comparator, table_->index_block_, table_->file_name_,
                     table_->footer_.index.offset);
  }

  bool Valid() const override { return data_iter_.Valid(); }

  void SeekToFirst() override {
    if (!status_.ok()) return;
    index_iter_.SeekToFirst();
    InitDataBlock();
    if (has_block_) data_iter_.SeekToFirst();
    SkipEmptyBlocksForward();
  }

  void SeekToLast() override {
    if (!status_.ok()) return;
    index_iter_.SeekToLast();
    InitDataBlock();
    if (has_block_) data_iter_.SeekToLast();
    SkipEmptyBlocksBackward();
  }

  void Seek(std::string_view target) override {
    if (!status_.ok()) return;
    // The first block whose last key is >= target holds the first entry >= target.
    index_iter_.Seek(target);
    InitDataBlock();
    if (has_block_) data_iter_.Seek(target);
    SkipEmptyBlocksForward();
  }

  void Next() override {
    if (!Valid()) return;
    data_iter_.Next();
    SkipEmptyBlocksForward();
  }

  void Prev() override {
    if (!Valid()) return;
    data_iter_.Prev();
    SkipEmptyBlocksBackward();
  }

  std::string_view key() const override { return data_iter_.key(); }
  std::string_view value() const override { return data_iter_.value(); }
  Status status() const override { return status_; }

 private:
  // Keeps the first error of either iterator; on error, drops the data block. False on error.
  bool CheckErrors() {
    if (status_.ok()) {
      if (!index_iter_.status().ok()) {
        status_ = index_iter_.status();
      } else if (!data_iter_.status().ok()) {
        status_ = data_iter_.status();
      }
    }
    if (status_.ok()) return true;
    data_iter_.Clear();
    has_block_ = false;
    return false;
  }

  // Points data_iter_ at the block under index_iter_ (unpositioned), or clears it.
  void InitDataBlock() {
    if (!index_iter_.Valid()) {
      data_iter_.Clear();
      has_block_ = false;
      return;
    }
    BlockHandle handle;
    Status s = table_->DecodeIndexValue(index_iter_.value(), &handle);
    if (s.ok() && has_block_ && handle.offset == block_offset_) return;  // already there
    std::shared_ptr<const Block> block;
    bool from_file = false;
    if (blocks_read_ >= read_options_.fill_cache_blocks) read_options_.fill_cache = false;
    const RandomAccessFile* via = nullptr;
    if (read_options_.readahead_bytes > 0 && blocks_read_ > 0 && handle.offset == read_end_) {
      if (readahead_ == nullptr) {
        readahead_ = std::make_unique<ReadaheadFile>(table_->file_.get(), table_->footer_offset_,
                                                     read_options_.readahead_bytes);
      }
      via = readahead_.get();
    }
    if (s.ok()) s = table_->GetDataBlock(handle, read_options_, &block, &from_file, via);
    if (from_file) {
      ++blocks_read_;
      read_end_ = handle.offset + handle.size + kBlockTrailerSize;
    }
    if (!s.ok()) {
      if (status_.ok()) status_ = std::move(s);
      data_iter_.Clear();
      has_block_ = false;
      return;
    }
    data_iter_.Init(table_->options_.comparator, std::move(block), table_->file_name_,
                    handle.offset);
    has_block_ = true;
    block_offset_ = handle.offset;
  }

  void SkipEmptyBlocksForward() {
    while (!data_iter_.Valid()) {
      if (!CheckErrors()) return;
      if (!index_iter_.Valid()) {
        data_iter_.Clear();
        has_block_ = false;
        return;
      }
      index_iter_.Next();
      InitDataBlock();
      if (has_block_) data_iter_.SeekToFirst();
    }
  }

  void SkipEmptyBlocksBackward() {
    while (!data_iter_.Valid()) {
      if (!CheckErrors()) return;
      if (!index_iter_.Valid()) {
        data_iter_.Clear();
        has_block_ = false;
        return;
      }
      index_iter_.Prev();
      InitDataBlock();
      if (has_block_) data_iter_.SeekToLast();
    }
  }

  const Table* const table_;
  TableReadOptions read_options_;  // fill_cache turned off once fill_cache_blocks are read
  uint64_t blocks_read_ = 0;       // blocks this iterator read from the file
  uint64_t read_end_ = 0;          // where the last block it read from the file ends
  std::unique_ptr<ReadaheadFile> readahead_;  // made on the first sequential read
  BlockIter index_iter_;
  BlockIter data_iter_;
  bool has_block_ = false;  // data_iter_ is on the block at block_offset_
  uint64_t block_offset_ = 0;
  Status status_;
};

Table::Table(PassKey, const TableOptions& options, std::string file_name,
             std::unique_ptr<RandomAccessFile> file, uint64_t file_size, BlockCache* cache,
             uint64_t cache_id)
    : options_(options),
      file_name_(std::move(file_name)),
      file_(std::move(file)),
      file_size_(file_size),
      cache_(cache),
      cache_id_(cache_id) {}

Table::~Table() = default;

StatusOr<std::unique_ptr<Table>> Table::Open(const TableOptions& options, std::string file_name,
                                             std::unique_ptr<RandomAccessFile> file,
                                             uint64_t file_size, BlockCache* cache,
                                             uint64_t cache_id, bool in_memory) {
  TableOptions opts = options;
  if (opts.comparator == nullptr) opts.comparator = BytewiseComparator();
  auto table = std::make_unique<Table>(PassKey(), opts, std::move(file_name), std::move(file),
                                       file_size, cache, cache_id);
  RETURN_IF_ERROR(table->Load(in_memory));
  return table;
}

Status Table::CheckHandle(const BlockHandle& handle, std::string_view what) const {
  // Overflow-safe: handle.offset + handle.size + trailer <= footer_offset_.
  if (handle.offset > footer_offset_ || handle.size > footer_offset_ - handle.offset ||
      footer_offset_ - handle.offset - handle.size < kBlockTrailerSize) {
    return CorruptionError(
        file_name_, handle.offset,
        StrCat(what, " block handle (size ", handle.size, ") lies outside the file's blocks"));
  }
  return Status();
}

Status Table::ReadMetaBlock(const BlockHandle& handle, BlockContents* contents) const {
  if (file_contents_ != nullptr) {
    const std::string_view stored(file_contents_.get() + handle.offset,
                                  handle.size + kBlockTrailerSize);
    return DecodeStoredBlock(stored, file_name_, handle.offset, contents);
  }
  return ReadBlock(*file_, file_name_, handle, /*stats=*/nullptr, contents);
}

Status Table::Load(bool in_memory) {
  if (file_size_ < Footer::kEncodedLength) {
    return CorruptionError(file_name_, 0,
                           StrCat("file of ", file_size_, " bytes is too short to be an sstable"));
  }
  footer_offset_ = file_size_ - Footer::kEncodedLength;

  std::string_view footer_bytes;
  std::unique_ptr<char[]> footer_scratch;
  if (in_memory) {
    file_contents_.reset(new char[file_size_]);
    std::string_view all;
    RETURN_IF_ERROR(ReadExactly(*file_, file_name_, 0, file_size_, file_contents_.get(), &all));
    if (all.data() != file_contents_.get())
      std::memcpy(file_contents_.get(), all.data(), file_size_);
    footer_bytes = std::string_view(file_contents_.get() + footer_offset_, Footer::kEncodedLength);
  } else {
    footer_scratch.reset(new char[Footer::kEncodedLength]);
    RETURN_IF_ERROR(ReadExactly(*file_, file_name_, footer_offset_, Footer::kEncodedLength,
                                footer_scratch.get(), &footer_bytes));
  }
  RETURN_IF_ERROR(footer_.DecodeFrom(footer_bytes, file_name_, footer_offset_));
  if (footer_.format_version != kTableFormatVersion) {
    return absl::InvalidArgumentError(StrCat(file_name_, ": unsupported sstable format version ",
                                             footer_.format_version, " (this build reads version ",
                                             kTableFormatVersion, ")"));
  }
  if (footer_.comparator_name != options_.comparator->Name()) {
    return absl::InvalidArgumentError(StrCat(file_name_, ": written with comparator ",
                                             footer_.comparator_name, ", opened with ",
                                             options_.comparator->Name()));
  }

  // Index.
  RETURN_IF_ERROR(CheckHandle(footer_.index, "index"));
  BlockContents contents;
  RETURN_IF_ERROR(ReadMetaBlock(footer_.index, &contents));
  ASSIGN_OR_RETURN(index_block_,
                   Block::Create(std::move(contents), file_name_, footer_.index.offset));

  // Metaindex -> properties.
  RETURN_IF_ERROR(CheckHandle(footer_.metaindex, "metaindex"));
  RETURN_IF_ERROR(ReadMetaBlock(footer_.metaindex, &contents));
  ASSIGN_OR_RETURN(std::shared_ptr<const Block> metaindex,
                   Block::Create(std::move(contents), file_name_, footer_.metaindex.offset));
  BlockIter meta_iter;
  meta_iter.Init(BytewiseComparator(), std::move(metaindex), file_name_, footer_.metaindex.offset);
  meta_iter.Seek(kPropertiesBlockName);
  RETURN_IF_ERROR(meta_iter.status());
  if (!meta_iter.Valid() || meta_iter.key() != kPropertiesBlockName) {
    return CorruptionError(file_name_, footer_.metaindex.offset,
                           "metaindex has no properties block");
  }
  BlockHandle properties_handle;
  std::string_view handle_bytes = meta_iter.value();
  if (!properties_handle.DecodeFrom(&handle_bytes)) {
    return CorruptionError(file_name_, footer_.metaindex.offset,
                           "bad properties block handle in metaindex");
  }
  RETURN_IF_ERROR(CheckHandle(properties_handle, "properties"));
  RETURN_IF_ERROR(ReadMetaBlock(properties_handle, &contents));
  RETURN_IF_ERROR(properties_.DecodeFrom(contents.data, file_name_, properties_handle.offset));
  if (properties_.data_size > footer_offset_) {
    return CorruptionError(file_name_, properties_handle.offset,
                           "data_size property exceeds the file");
  }

  filter_status_ = LoadFilter();
  if (in_memory) RETURN_IF_ERROR(LoadAllDataBlocks());
  return Status();
}

Status Table::LoadFilter() {
  // A filter is used only when built from the same filter keys this reader asks about.
  if (footer_.filter.size == 0 || options_.filter_key_extractor == nullptr ||
      properties_.filter_key_extractor != options_.filter_key_extractor->Name()) {
    return Status();
  }
  // A damaged filter only costs speed: the table stays readable without it.
  RETURN_IF_ERROR(CheckHandle(footer_.filter, "filter"));
  RETURN_IF_ERROR(ReadMetaBlock(footer_.filter, &filter_contents_));
  filter_.emplace(filter_contents_.data);
  return Status();
}

Status Table::LoadAllDataBlocks() {
  BlockIter it;
  it.Init(options_.comparator, index_block_, file_name_, footer_.index.offset);
  for (it.SeekToFirst(); it.Valid(); it.Next()) {
    BlockHandle handle;
    RETURN_IF_ERROR(DecodeIndexValue(it.value(), &handle));
    RETURN_IF_ERROR(CheckHandle(handle, "data"));
    if (!memory_blocks_.empty() && handle.offset <= memory_blocks_.back().first) {
      return CorruptionError(file_name_, footer_.index.offset,
                             "index block handles are not in file order");
    }
    BlockContents contents;
    RETURN_IF_ERROR(ReadMetaBlock(handle, &contents));
    if (contents.owned != nullptr) memory_blocks_bytes_ += contents.data.size();
    ASSIGN_OR_RETURN(std::shared_ptr<const Block> block,
                     Block::Create(std::move(contents), file_name_, handle.offset));
    memory_blocks_.emplace_back(handle.offset, std::move(block));
  }
  return it.status();
}

Status Table::DecodeIndexValue(std::string_view value, BlockHandle* handle) const {
  if (!handle->DecodeFrom(&value)) {
    return CorruptionError(file_name_, footer_.index.offset, "bad block handle in index block");
  }
  return Status();
}

Status Table::GetDataBlock(const BlockHandle& handle, const TableReadOptions& read_options,
                           std::shared_ptr<const Block>* block, bool* from_file,
                           const RandomAccessFile* via) const {
  ReadStats* stats = read_options.stats;
  if (file_contents_ != nullptr) {
    auto it = std::lower_bound(memory_blocks_.begin(), memory_blocks_.end(), handle.offset,
                               [](const std::pair<uint64_t, std::shared_ptr<const Block>>& entry,
                                  uint64_t offset) { return entry.first < offset; });
    if (it == memory_blocks_.end() || it->first != handle.offset) {
      return CorruptionError(file_name_, handle.offset, "no data block at this offset");
    }
    if (stats != nullptr) stats->blocks_from_memory++;
    *block = it->second;
    return Status();
  }
  RETURN_IF_ERROR(CheckHandle(handle, "data"));
  if (cache_ != nullptr) {
    *block = cache_->Lookup(cache_id_, handle.offset);
    if (*block != nullptr) {
      if (stats != nullptr) stats->blocks_from_cache++;
      return Status();
    }
  }
  BlockContents contents;
  RETURN_IF_ERROR(ReadBlock(via != nullptr ? *via : *file_, file_name_, handle, stats, &contents));
  ASSIGN_OR_RETURN(*block, Block::Create(std::move(contents), file_name_, handle.offset));
  if (from_file != nullptr) *from_file = true;
  if (cache_ != nullptr && read_options.fill_cache)
    cache_->Insert(cache_id_, handle.offset, *block);
  return Status();
}

std::unique_ptr<Iterator> Table::NewIterator(const TableReadOptions& read_options) const {
  return std::make_unique<TableIterator>(this, read_options);
}

bool Table::KeyMayMatch(std::string_view filter_key) const {
  return !filter_.has_value() || filter_->KeyMayMatch(filter_key);
}

uint64_t Table::ApproximateOffsetOf(std::string_view key) const {
  BlockIter it;
  it.Init(options_.comparator, index_block_, file_name_, footer_.index.offset);
  it.Seek(key);
  if (it.Valid()) {
    BlockHandle handle;
    if (DecodeIndexValue(it.value(), &handle).ok() && handle.offset <= properties_.data_size) {
      return handle.offset;
    }
  }
  // Past the last key (or a damaged index): the end of the data blocks.
  return properties_.data_size;
}

Status Table::WarmBlocksFor(std::string_view start_key, std::string_view end_key) const {
  if (cache_ == nullptr || file_contents_ != nullptr) return Status();
  BlockIter it;
  it.Init(options_.comparator, index_block_, file_name_, footer_.index.offset);
  TableReadOptions read_options;
  read_options.fill_cache = true;
  for (it.Seek(start_key); it.Valid(); it.Next()) {
    BlockHandle handle;
    RETURN_IF_ERROR(DecodeIndexValue(it.value(), &handle));
    std::shared_ptr<const Block> block;
    RETURN_IF_ERROR(GetDataBlock(handle, read_options, &block));
    // Blocks after this one hold only keys > its last key >= end_key.
    if (!end_key.empty() && options_.comparator->Compare(it.key(), end_key) >= 0) break;
  }
  return it.status();
}

size_t Table::ApproximateMemoryUsage() const {
  size_t usage = sizeof(Table) + index_block_->charge() + filter_contents_.data.size();
  if (file_contents_ != nullptr) {
    usage += file_size_ + memory_blocks_bytes_ +
             memory_blocks_.size() * (sizeof(Block) + sizeof(memory_blocks_[0]));
  }
  return usage;
}

}  // namespace tessera::storage
