// KvAdapter over LevelDB (Debian's libleveldb, 1.23). LevelDB offers only Snappy or no block
// compression; we use Snappy, the closest to the LZ4 the other engines use (both are fast LZ77
// coders with similar ratios). LevelDB's single background thread is fixed. Reads verify block
// checksums, as RocksDB's and Tessera's always do (LevelDB's default is not to).
#include <memory>
#include <string>

#include "fmt/format.h"
#include "kv_adapter.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/options.h"

namespace tessera::bench {
namespace {

Status FromLevel(const leveldb::Status& s) {
  if (s.ok()) return Status();
  std::string msg = StrCat("leveldb: ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  if (s.IsIOError()) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

class LevelDbAdapter final : public KvAdapter {
 public:
  // Takes ownership of the objects `options` points to; they must outlive the DB.
  LevelDbAdapter(std::unique_ptr<leveldb::DB> db, std::unique_ptr<leveldb::Cache> cache,
                 std::unique_ptr<const leveldb::FilterPolicy> filter, bool sync,
                 std::string describe)
      : cache_(std::move(cache)),
        filter_(std::move(filter)),
        db_(std::move(db)),
        describe_(std::move(describe)) {
    write_options_.sync = sync;
    read_options_.verify_checksums = true;
  }

  std::string_view name() const override { return "leveldb"; }
  std::string Describe() const override { return describe_; }

  Status Put(std::string_view key, std::string_view value) override {
    return FromLevel(db_->Put(write_options_, leveldb::Slice(key.data(), key.size()),
                              leveldb::Slice(value.data(), value.size())));
  }

  Status Get(std::string_view key, std::string* value, bool* found) override {
    leveldb::Status s = db_->Get(read_options_, leveldb::Slice(key.data(), key.size()), value);
    *found = s.ok();
    return s.IsNotFound() ? Status() : FromLevel(s);
  }

  StatusOr<ScanResult> Scan(std::string_view start, uint64_t limit) override {
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(read_options_));
    ScanResult result;
    for (it->Seek(leveldb::Slice(start.data(), start.size()));
         it->Valid() && (limit == 0 || result.rows < limit); it->Next()) {
      result.rows++;
      result.bytes += it->key().size() + it->value().size();
    }
    RETURN_IF_ERROR(FromLevel(it->status()));
    return result;
  }

  // LevelDB counts only what each level's compactions (memtable flushes among them) wrote, in
  // whole MiB: the "Write(MB)" column of its "leveldb.stats" property.
  StatusOr<FileWrites> Written() override {
    std::string stats;
    if (!db_->GetProperty("leveldb.stats", &stats)) {
      return absl::InternalError("leveldb: no leveldb.stats property");
    }
    return FileWrites{LevelDbStatsWrittenBytes(stats), std::nullopt};
  }

  Status Close() override {
    // LevelDB has no Close: deleting the DB waits for its background work. Its log has no
    // user-space buffer, so every acknowledged write is already in the OS.
    db_.reset();
    return Status();
  }

 private:
  // Declared before db_ so that they are destroyed after it.
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::DB> db_;
  leveldb::WriteOptions write_options_;
  leveldb::ReadOptions read_options_;
  const std::string describe_;
};

}  // namespace

StatusOr<std::unique_ptr<KvAdapter>> OpenLevelDb(const KvOptions& options) {
  std::unique_ptr<leveldb::Cache> cache(leveldb::NewLRUCache(options.block_cache_bytes));
  std::unique_ptr<const leveldb::FilterPolicy> filter(
      leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key));

  leveldb::Options db_options;
  db_options.create_if_missing = true;
  db_options.write_buffer_size = options.write_buffer_bytes;
  db_options.block_cache = cache.get();
  db_options.block_size = options.block_size;
  db_options.filter_policy = filter.get();
  db_options.compression = leveldb::kSnappyCompression;

  leveldb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromLevel(leveldb::DB::Open(db_options, options.dir, &raw)));
  std::string describe = fmt::format(
      "compression=snappy (LevelDB has no lz4), WAL on, sync={}, filter=bloom {} bits/key, "
      "reads verify checksums, 1 background thread (fixed)",
      options.sync ? "every write" : "never", options.bloom_bits_per_key);
  return std::unique_ptr<KvAdapter>(
      std::make_unique<LevelDbAdapter>(std::unique_ptr<leveldb::DB>(raw), std::move(cache),
                                       std::move(filter), options.sync, std::move(describe)));
}

}  // namespace tessera::bench
