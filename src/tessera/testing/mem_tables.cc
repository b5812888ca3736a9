#include "tessera/testing/mem_tables.h"

namespace tessera::testing {

Status OpenMemTables(FileSystem* fs, Clock* clock, std::unique_ptr<tablet::Engine>* engine,
                     std::unique_ptr<catalog::TableCatalog>* catalog) {
  tablet::EngineOptions options;
  options.dir = "/db";
  options.background_threads = 1;
  ASSIGN_OR_RETURN(*engine, tablet::Engine::Open(options, Env{.fs = fs, .clock = clock}));
  ASSIGN_OR_RETURN(*catalog, catalog::TableCatalog::Open(engine->get()));
  return Status();
}

}  // namespace tessera::testing
