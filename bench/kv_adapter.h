// The key/value view of one storage engine that tessera_engine_bench measures. One adapter per
// engine (rocksdb_adapter.cc, leveldb_adapter.cc, tessera_adapter.cc) maps these few calls onto
// the engine's own API, so the workloads in workload.cc are written once and run unchanged
// against every engine.
//
// Thread-safety: Put, Get and Scan may be called from many threads at once (every engine here
// is internally synchronized). Open and Close are not concurrent with anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/util/status.h"

namespace tessera::bench {

// The settings every engine is opened with. The runner passes the same values to all engines;
// each adapter documents how it maps them (and what it cannot match) in Describe().
struct KvOptions {
  std::string dir;  // created when missing
  // true: every Put is durable before it returns (fsync/fdatasync of the write-ahead log).
  // false: the write-ahead log is written, but not synced per write.
  bool sync = false;
  size_t block_cache_bytes = 64ull << 20;
  size_t block_size = 4096;
  size_t write_buffer_bytes = 64ull << 20;  // memtable size before a flush
  int bloom_bits_per_key = 10;
  int background_threads = 2;  // flush/compaction threads where the engine lets us choose
  // Tessera only: this many more tablets, which no benchmark writes or reads (a node holds a
  // copy of many tablets; they must cost the busy one nothing).
  int idle_tablets = 0;
};

// What one Scan saw.
struct ScanResult {
  uint64_t rows = 0;
  uint64_t bytes = 0;  // key + value bytes of the rows
};

// What an engine has written to its sorted files (SSTables) since it was opened: the figure
// over user bytes is its write amplification (the write-ahead log is not counted).
struct FileWrites {
  uint64_t total_bytes = 0;  // memtable flushes and compactions
  // The compactions' part of total_bytes, for engines that count it apart (LevelDB does not).
  std::optional<uint64_t> compaction_bytes;
};

class KvAdapter {
 public:
  virtual ~KvAdapter() = default;

  // Engine name as used on the command line ("rocksdb", ...).
  virtual std::string_view name() const = 0;
  // One line on how KvOptions were mapped: compression, sync behaviour, deviations.
  virtual std::string Describe() const = 0;

  virtual Status Put(std::string_view key, std::string_view value) = 0;
  // Sets *found and, when found, *value.
  virtual Status Get(std::string_view key, std::string* value, bool* found) = 0;
  // Reads rows in key order starting at the first key >= `start`; at most `limit` rows
  // (0 = to the end). Every value is touched (its bytes counted).
  virtual StatusOr<ScanResult> Scan(std::string_view start, uint64_t limit) = 0;

  // Bytes written to sorted files so far by this open database (the engine's own counters).
  virtual StatusOr<FileWrites> Written() = 0;

  // Releases the database, syncing its write-ahead log first where the engine offers that.
  // Called once before destruction; the destructor only frees memory.
  virtual Status Close() = 0;
};

// The bytes a "leveldb.stats" property says the compactions of all levels wrote (its
// Write(MB) column, in whole MiB per level); 0 when it has no level rows.
uint64_t LevelDbStatsWrittenBytes(std::string_view stats);

// Each factory opens (creating when missing) the database in options.dir.
StatusOr<std::unique_ptr<KvAdapter>> OpenRocksDb(const KvOptions& options);
StatusOr<std::unique_ptr<KvAdapter>> OpenLevelDb(const KvOptions& options);
#ifdef TESSERA_BENCH_HAVE_TABLET
// "tessera" (leveled compaction, the default) or "tessera-stcs" (size-tiered).
StatusOr<std::unique_ptr<KvAdapter>> OpenTessera(const KvOptions& options, std::string_view name);
// Whether `engine` is one of Tessera's (never a peer in the ratios).
inline bool IsTessera(std::string_view engine) { return engine.starts_with("tessera"); }
#endif

// The engines compiled into this binary, in the default run order.
std::vector<std::string> AvailableEngines();
// Opens the engine called `name`; InvalidArgument for an unknown (or not compiled-in) one.
StatusOr<std::unique_ptr<KvAdapter>> OpenEngine(std::string_view name, const KvOptions& options);

}  // namespace tessera::bench
