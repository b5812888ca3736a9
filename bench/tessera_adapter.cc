// KvAdapter over Tessera's tablet engine. A key/value pair is one Bigtable cell: the key is the
// row, the value the cell (family "f", qualifier "", timestamp 0) of one tablet (id 1, the whole
// row space) of table "bench". An overwrite writes the same cell coordinates again, so the newer
// write replaces the older one as in the other engines. A get reads the newest version of that
// cell (a column filter with cells-per-column 1, as a Bigtable client asks for one value), which
// stops at the newest file that holds it (docs/compaction.md, "Reads that stop early").
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "fmt/format.h"
#include "kv_adapter.h"
#include "tessera/model/row_mutation.h"
#include "tessera/model/schema.h"
#include "tessera/tablet/engine.h"

namespace tessera::bench {
namespace {

constexpr tablet::TabletId kTablet = 1;
constexpr std::string_view kTable = "bench";
constexpr std::string_view kFamily = "f";

const model::ReadSpec& GetSpec() {
  static const model::ReadSpec* spec = [] {
    auto* s = new model::ReadSpec;
    s->columns.push_back({std::string(kFamily), ""});
    s->max_versions = 1;
    return s;
  }();
  return *spec;
}

tablet::TabletDescriptor BenchTablet() {
  tablet::TabletDescriptor descriptor;
  descriptor.table = std::string(kTable);
  descriptor.schema.name = std::string(kTable);
  descriptor.schema.families.emplace(std::string(kFamily), model::FamilySchema());
  return descriptor;  // start_row = end_row = "": the whole row space
}

class TesseraAdapter final : public KvAdapter {
 public:
  TesseraAdapter(std::unique_ptr<tablet::Engine> engine, std::string name, std::string describe)
      : engine_(std::move(engine)), name_(std::move(name)), describe_(std::move(describe)) {}

  std::string_view name() const override { return name_; }
  std::string Describe() const override { return describe_; }

  Status Put(std::string_view key, std::string_view value) override {
    model::RowMutation mutation(key);
    mutation.SetCell(kFamily, "", /*timestamp_micros=*/0, value);
    return engine_->Apply(kTablet, mutation);
  }

  Status Get(std::string_view key, std::string* value, bool* found) override {
    ASSIGN_OR_RETURN(std::optional<model::Row> row, engine_->ReadRow(kTablet, key, GetSpec()));
    *found = row.has_value() && !row->cells.empty();
    if (*found) *value = std::move(row->cells.front().value);
    return Status();
  }

  StatusOr<ScanResult> Scan(std::string_view start, uint64_t limit) override {
    ASSIGN_OR_RETURN(
        std::unique_ptr<tablet::RowIterator> it,
        engine_->Scan(kTablet, model::RowRange{std::string(start), ""}, model::ReadSpec{}, limit));
    ScanResult result;
    for (; it->Valid(); it->Next()) {
      const model::Row& row = it->row();
      result.rows++;
      result.bytes += row.key.size();
      for (const model::Cell& cell : row.cells) result.bytes += cell.value.size();
    }
    RETURN_IF_ERROR(it->status());
    return result;
  }

  StatusOr<FileWrites> Written() override {
    const tablet::EngineStats stats = engine_->GetStats();
    return FileWrites{stats.flush_bytes_written + stats.compaction_bytes_written,
                      stats.compaction_bytes_written};
  }

  Status Close() override {
    if (engine_ == nullptr) return Status();
    Status s = engine_->Close();
    engine_.reset();
    return s;
  }

 private:
  std::unique_ptr<tablet::Engine> engine_;
  const std::string name_;
  const std::string describe_;
};

}  // namespace

StatusOr<std::unique_ptr<KvAdapter>> OpenTessera(const KvOptions& options, std::string_view name) {
  tablet::EngineOptions engine_options;
  engine_options.compaction_style = name == "tessera-stcs" ? tablet::CompactionStyle::kSizeTiered
                                                           : tablet::CompactionStyle::kLeveled;
  engine_options.dir = options.dir;
  engine_options.sync_mode = options.sync ? tablet::SyncMode::kBatch : tablet::SyncMode::kPeriodic;
  engine_options.memtable_bytes = options.write_buffer_bytes;
  engine_options.block_cache_bytes = options.block_cache_bytes;
  engine_options.block_size = options.block_size;
  engine_options.compression = tablet::Compression::kLz4;
  engine_options.bloom_bits_per_key = options.bloom_bits_per_key;
  engine_options.background_threads = options.background_threads;
  // RocksDB and LevelDB do not throttle compaction by default; neither do we here.
  engine_options.compaction_bytes_per_second = 0;

  ASSIGN_OR_RETURN(std::unique_ptr<tablet::Engine> engine, tablet::Engine::Open(engine_options));
  // The tablet survives a reopen (the runner reopens to switch the sync mode).
  StatusOr<tablet::TabletDescriptor> existing = engine->GetTablet(kTablet);
  if (absl::IsNotFound(existing.status())) {
    RETURN_IF_ERROR(engine->CreateTablet(kTablet, BenchTablet()));
    for (int i = 0; i < options.idle_tablets; ++i) {
      tablet::TabletDescriptor idle = BenchTablet();
      idle.table = idle.schema.name = fmt::format("idle{}", i);
      RETURN_IF_ERROR(engine->CreateTablet(kTablet + 1 + i, idle));
    }
  } else if (!existing.ok()) {
    return existing.status();
  }
  std::string describe = fmt::format(
      "compression=lz4, commit log on, sync={} (SyncMode::{}), filter=bloom {} bits/key, "
      "background_threads={}, {} compaction not throttled{}; key = row, value = cell f: at ts 0",
      options.sync ? "every write" : "every periodic_sync_interval_ms",
      options.sync ? "kBatch" : "kPeriodic", options.bloom_bits_per_key, options.background_threads,
      tablet::CompactionStyleName(engine_options.compaction_style),
      options.idle_tablets > 0 ? fmt::format(", {} idle tablets", options.idle_tablets) : "");
  return std::unique_ptr<KvAdapter>(
      std::make_unique<TesseraAdapter>(std::move(engine), std::string(name), std::move(describe)));
}

}  // namespace tessera::bench
