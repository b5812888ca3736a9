// KvAdapter over RocksDB (Debian's librocksdb, 7.x): block-based tables with an LRU block cache,
// a full-key bloom filter and LZ4 compression on every level.
#include <memory>
#include <string>

#include "fmt/format.h"
#include "kv_adapter.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"

namespace tessera::bench {
namespace {

Status FromRocks(const rocksdb::Status& s) {
  if (s.ok()) return Status();
  std::string msg = StrCat("rocksdb: ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  if (s.IsIOError()) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

bool Lz4Supported() {
  for (rocksdb::CompressionType type : rocksdb::GetSupportedCompressions()) {
    if (type == rocksdb::kLZ4Compression) return true;
  }
  return false;
}

class RocksDbAdapter final : public KvAdapter {
 public:
  RocksDbAdapter(std::unique_ptr<rocksdb::DB> db, std::shared_ptr<rocksdb::Statistics> statistics,
                 bool sync, std::string describe)
      : statistics_(std::move(statistics)), db_(std::move(db)), describe_(std::move(describe)) {
    write_options_.sync = sync;
  }

  std::string_view name() const override { return "rocksdb"; }
  std::string Describe() const override { return describe_; }

  Status Put(std::string_view key, std::string_view value) override {
    return FromRocks(db_->Put(write_options_, rocksdb::Slice(key.data(), key.size()),
                              rocksdb::Slice(value.data(), value.size())));
  }

  Status Get(std::string_view key, std::string* value, bool* found) override {
    rocksdb::Status s =
        db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), value);
    *found = s.ok();
    return s.IsNotFound() ? Status() : FromRocks(s);
  }

  StatusOr<ScanResult> Scan(std::string_view start, uint64_t limit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    ScanResult result;
    for (it->Seek(rocksdb::Slice(start.data(), start.size()));
         it->Valid() && (limit == 0 || result.rows < limit); it->Next()) {
      result.rows++;
      result.bytes += it->key().size() + it->value().size();
    }
    RETURN_IF_ERROR(FromRocks(it->status()));
    return result;
  }

  StatusOr<FileWrites> Written() override {
    const uint64_t flushed = statistics_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
    const uint64_t compacted = statistics_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
    return FileWrites{flushed + compacted, compacted};
  }

  Status Close() override {
    if (db_ == nullptr) return Status();
    Status s = FromRocks(db_->SyncWAL());
    Status close = FromRocks(db_->Close());
    db_.reset();
    return s.ok() ? close : s;
  }

 private:
  const std::shared_ptr<rocksdb::Statistics> statistics_;  // outlives db_
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_options_;
  const std::string describe_;
};

}  // namespace

StatusOr<std::unique_ptr<KvAdapter>> OpenRocksDb(const KvOptions& options) {
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table.block_size = options.block_size;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(options.bloom_bits_per_key));

  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.write_buffer_size = options.write_buffer_bytes;
  db_options.max_background_jobs = options.background_threads;
  const bool lz4 = Lz4Supported();
  db_options.compression = lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // Tickers only (no histograms, no timers): the flush and compaction bytes of Written().
  db_options.statistics = rocksdb::CreateDBStatistics();
  db_options.statistics->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);

  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(db_options, options.dir, &raw)));
  std::string describe = fmt::format(
      "compression={} (all levels), WAL on, sync={}, filter=bloom {} bits/key (full filter), "
      "max_background_jobs={}, statistics=tickers only",
      lz4 ? "lz4" : "none (lz4 not compiled in)", options.sync ? "every write" : "never",
      options.bloom_bits_per_key, options.background_threads);
  return std::unique_ptr<KvAdapter>(std::make_unique<RocksDbAdapter>(
      std::unique_ptr<rocksdb::DB>(raw), db_options.statistics, options.sync, std::move(describe)));
}

}  // namespace tessera::bench
