// TableBuilder writes one SSTable (format: docs/sstable_format.md) from key/value entries
// added in sorted order. It buffers its output and appends it to the file in pieces of about
// 64 KiB; it never syncs or closes the file (the caller does, after Finish()).
//
// Usage:
//   TableBuilder builder(options, file.get());
//   for (...) builder.Add(key, value);
//   RETURN_IF_ERROR(builder.Finish());
//   RETURN_IF_ERROR(file->Sync()); RETURN_IF_ERROR(file->Close());
//
// Errors are sticky: once status() is not OK, Add() does nothing and Finish() returns it.
//
// Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/storage/block_builder.h"
#include "tessera/storage/bloom.h"
#include "tessera/storage/format.h"
#include "tessera/storage/table_options.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::storage {

class TableBuilder {
 public:
  // Largest key.size() + value.size() of one entry.
  static constexpr uint64_t kMaxEntrySize = uint64_t{512} << 20;

  // `file` must outlive the builder; so must options.comparator and
  // options.filter_key_extractor. A comparator name longer than
  // Footer::kMaxComparatorNameLength makes status() InvalidArgument.
  TableBuilder(const TableOptions& options, WritableFile* file);
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;
  // Writes nothing more: a builder destroyed before Finish() leaves a partial file behind.
  ~TableBuilder();

  // Opaque bytes stored in the properties block (TableProperties::user_properties).
  // REQUIRES: Finish() and Abandon() not called.
  void SetUserProperties(std::string_view properties);

  // REQUIRES: `key` sorts after every key added before (per options.comparator); Finish() and
  // Abandon() not called. A key out of order or an entry above kMaxEntrySize makes status()
  // InvalidArgument.
  void Add(std::string_view key, std::string_view value);

  Status status() const { return status_; }

  // Writes the remaining data block, filter, index, properties, metaindex and footer, and
  // hands all buffered bytes to the file (WritableFile::Append; no Flush or Sync).
  // REQUIRES: Finish() and Abandon() not called.
  Status Finish();

  // Gives up on the table: nothing more is written. The caller removes the file.
  // REQUIRES: Finish() and Abandon() not called.
  void Abandon();

  // Bytes of the file so far, including bytes still buffered; after Finish(), the file size.
  uint64_t FileSize() const { return offset_; }
  uint64_t NumEntries() const { return props_.num_entries; }

 private:
  void FlushDataBlock();
  // Compresses (when `compress`) and trails `raw`, buffers it and sets *handle.
  void WriteBlock(std::string_view raw, bool compress, BlockHandle* handle);
  // Appends to the output buffer, handing it to the file when it is large enough.
  void WriteRaw(std::string_view data);
  void FlushOutput();

  const TableOptions options_;
  WritableFile* const file_;
  Status status_;
  bool closed_ = false;  // Finish() or Abandon() called

  BlockBuilder data_block_;
  BlockBuilder index_block_;
  BlockCompressor compressor_;
  BloomFilterBuilder bloom_;
  std::string last_key_;
  std::string last_filter_key_;
  bool has_filter_key_ = false;
  std::string handle_buf_;  // scratch for encoding handles
  std::string output_;      // bytes not yet appended to the file
  uint64_t offset_ = 0;     // file offset of the next byte written (buffered included)
  TableProperties props_;
};

}  // namespace tessera::storage
