#include "kv_adapter.h"

#include <cstdio>
#include <sstream>

namespace tessera::bench {

uint64_t LevelDbStatsWrittenBytes(std::string_view stats) {
  // A level's row: "%3d %8d %8.0f %9.0f %8.0f %9.0f" (level, files, size MB, seconds, read MB,
  // write MB); the title and the header rows do not parse as six numbers.
  double written_mb = 0;
  std::istringstream in{std::string(stats)};
  std::string line;
  while (std::getline(in, line)) {
    int level = 0, files = 0;
    double size_mb = 0, seconds = 0, read_mb = 0, write_mb = 0;
    if (std::sscanf(line.c_str(), "%d %d %lf %lf %lf %lf", &level, &files, &size_mb, &seconds,
                    &read_mb, &write_mb) == 6) {
      written_mb += write_mb;
    }
  }
  return static_cast<uint64_t>(written_mb * 1048576.0);
}

std::vector<std::string> AvailableEngines() {
  std::vector<std::string> engines;
#ifdef TESSERA_BENCH_HAVE_TABLET
  engines.push_back("tessera");
  engines.push_back("tessera-stcs");
#endif
  engines.push_back("rocksdb");
  engines.push_back("leveldb");
  return engines;
}

StatusOr<std::unique_ptr<KvAdapter>> OpenEngine(std::string_view name, const KvOptions& options) {
#ifdef TESSERA_BENCH_HAVE_TABLET
  if (name == "tessera" || name == "tessera-stcs") return OpenTessera(options, name);
#endif
  if (name == "rocksdb") return OpenRocksDb(options);
  if (name == "leveldb") return OpenLevelDb(options);
  return absl::InvalidArgumentError(
      StrCat("unknown engine '", name,
             "' (compiled in: ", fmt::format("{}", fmt::join(AvailableEngines(), ",")), ")"));
}

}  // namespace tessera::bench
