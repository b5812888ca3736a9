// The RowStream of LocalTableAccess::Read: the ranges of a RowSet, tablet by tablet of one
// table snapshot, read from this node's engine, converted to presented form and filtered.
// Internal to replication/ (local_table_access.h is the public face).
//
// Thread-safety: not thread-safe; one reader at a time.
#pragma once

#include <memory>

#include "tessera/replication/table_access.h"
#include "tessera/tablet/engine.h"

namespace tessera::replication {

// `engine` must outlive the stream.
std::unique_ptr<RowStream> NewLocalRowStream(const tablet::Engine* engine, TableSnapshot table,
                                             ReadRequest request);

// What a client should see for an engine error on `table`: a dropped tablet is a deleted
// table (NotFound), a closed engine a server shutting down (Unavailable); others unchanged.
Status EngineError(const catalog::TableInfo& table, const Status& s);

}  // namespace tessera::replication
