// The fixture of the catalog, table-access and service tests: an engine in "/db" on an
// in-memory file system and a manual clock (one background thread), and the node's table
// catalog over it.
//
// Thread-safety: call from the test's thread.
#pragma once

#include <memory>

#include "tessera/catalog/table_catalog.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/clock.h"
#include "tessera/util/file_system.h"
#include "tessera/util/status.h"

namespace tessera::testing {

// Opens the engine on `fs` and `clock` (which must outlive it) into *engine, then the catalog
// on it into *catalog. Errors: the engine's and the catalog's.
Status OpenMemTables(FileSystem* fs, Clock* clock, std::unique_ptr<tablet::Engine>* engine,
                     std::unique_ptr<catalog::TableCatalog>* catalog);

}  // namespace tessera::testing
