#include "kv_adapter.h"

namespace tessera::bench {

std::vector<std::string> AvailableEngines() {
  std::vector<std::string> engines;
#ifdef TESSERA_BENCH_HAVE_TABLET
  engines.push_back("tessera");
#endif
  engines.push_back("rocksdb");
  engines.push_back("leveldb");
  return engines;
}

StatusOr<std::unique_ptr<KvAdapter>> OpenEngine(std::string_view name, const KvOptions& options) {
#ifdef TESSERA_BENCH_HAVE_TABLET
  if (name == "tessera") return OpenTessera(options);
#endif
  if (name == "rocksdb") return OpenRocksDb(options);
  if (name == "leveldb") return OpenLevelDb(options);
  return absl::InvalidArgumentError(
      StrCat("unknown engine '", name,
             "' (compiled in: ", fmt::format("{}", fmt::join(AvailableEngines(), ",")), ")"));
}

}  // namespace tessera::bench
