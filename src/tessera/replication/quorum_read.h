// QuorumRead: one page of a read at QUORUM (docs/replication.md, "Reads"), as the coordinator
// runs it. It needs no primary and no lease, so it answers while a dead primary's tablets wait
// for their failover.
//
// The page is read at every member of the tablet's configuration that does not need a
// rebuild, all at once. Each answer carries where its replica stood (ReplicaPosition before
// and after its read: the page holds every mutation up to `sequence_before` and none after
// `sequence_after`, of the lineage of `joined_epoch`). Once a majority of the replica set has
// answered:
//   * an answer counts only if its content is the configuration's lineage
//     (TabletConfig::LineageAllows(joined, sequence_after)): a deposed primary's writes that
//     no majority took are never returned;
//   * the counted answer with the highest sequence_before is chosen: a write acknowledged at
//     QUORUM before the read began lies on a majority, so on one of the answers, and every
//     counted answer's content is a prefix of the lineage;
//   * the read returns only once a majority holds at least the chosen page's
//     sequence_after in the lineage (Cassandra's blocking read repair, done by the stream: the
//     coordinator asks the lagging members for their position until they have caught up), so
//     what one QUORUM read returned, every later one sees.
// Too few answers, or no catch-up before the deadline: Unavailable naming the tablet, how many
// replicas answered and how many it needs (the coordinator retries within the deadline).
//
// Thread-safety: callbacks may arrive on any thread; the object keeps itself alive until it
// has answered, and answers exactly once, without its lock held.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/coordinator.h"
#include "tessera/replication/replica_node.h"
#include "tessera/util/clock.h"
#include "tessera/util/executor_scope.h"
#include "tessera/util/status.h"

namespace tessera::replication {

struct QuorumReadOptions {
  // The wait before asking a lagging member again: doubling from first to max.
  int64_t first_poll_us = 1'000;
  int64_t max_poll_us = 50'000;
};

// Reads the page at `member` (with its position filled in).
using ReadPageAt =
    std::function<void(const std::string& member, std::function<void(StatusOr<ReadPage>)> done)>;
// Asks `member` where its copy of the tablet stands.
using PositionAt = std::function<void(const std::string& member,
                                      std::function<void(StatusOr<ReplicaPosition>)> done)>;
// The tablet's configuration as this node knows it now (it may move on during the read).
using CurrentConfig = std::function<std::optional<catalog::TabletConfig>()>;

// Runs one QUORUM page read of the tablet `config` describes and calls `done` once, with the
// chosen page or the error above. Every callback must outlive the call (`done` has run). The
// polls of lagging members wait on `executor`; closing it ends the read with Unavailable "the
// node is stopping".
void RunQuorumRead(const catalog::TabletConfig& config, ReadPageAt read, PositionAt position,
                   CurrentConfig current, ExecutorScope* executor, Clock* clock,
                   int64_t deadline_us, const QuorumReadOptions& options,
                   std::function<void(StatusOr<ReadPage>)> done);

}  // namespace tessera::replication
