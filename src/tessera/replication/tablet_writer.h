// TabletWriter: where LocalTableAccess's writes go (docs/replication.md). Without one they go
// straight into the engine (a node's own tables); a tablet's primary gives its ReplicaNode,
// which numbers each mutation, applies it locally and queues it for the other replicas.
//
// Thread-safety: implementations are safe to call from many threads at once.
#pragma once

#include <span>

#include "tessera/model/row_mutation.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/status.h"

namespace tessera::replication {

class TabletWriter {
 public:
  virtual ~TabletWriter() = default;
  // Applies one row's mutations to tablet `id` atomically; returns once it is durable on this
  // node as the engine's sync mode says. The engine's errors, or FailedPrecondition when this
  // node may not write the tablet (it is not its primary).
  virtual Status Write(tablet::TabletId id, const model::RowMutation& mutation) = 0;
  // Applies `batch` (non-empty, rows of tablet `id`) as one place in the engine's group commit
  // (Engine::ApplyBatch): each mutation atomic, numbered in order; returns once all are durable
  // on this node. The errors of Write; InvalidArgument when a mutation does not validate
  // (nothing is applied then, and the message names its index).
  virtual Status WriteBatch(tablet::TabletId id, std::span<const model::RowMutation> batch) = 0;
};

}  // namespace tessera::replication
