// ConsistencyTokens: GenerateConsistencyToken and CheckConsistency of a replicated table, on
// any node (docs/replication.md, "Consistency tokens"; the token's text and the rule are
// consistency_token.h).
//
//   * Generate asks each tablet's primary (the primary of the configuration this node knows)
//     for its tablets of the table, and takes from each answer that comes from the acting
//     primary its epoch and last sequence: every write acknowledged before the call, at any
//     level, is at or below that sequence.
//   * Check asks every replica of each tablet's current configuration for its tablets of the
//     table, and is true when each of them has reached the token (ReplicaReached). A
//     configuration with a replica marked "needs rebuild", a replica that does not answer,
//     and a tablet whose configuration is not known here yet are "not consistent" (the client
//     asks again), not errors.
// Both ask each node once, for all its tablets of the table, with kGetTabletsMethod (the same
// description `tessera admin tablets` reads, node_tablets.h); this node is asked in-process.
// Nothing is retried: a Generate that cannot reach a tablet's acting primary fails with
// Unavailable naming the tablet, and the client retries it.
//
// Thread-safety: every method may be called from any thread. `done` runs exactly once, on a
// channel thread, or inline when no other node is asked; never with a lock of this class held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/replication/replica_node.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/replication/table_access.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/status.h"
#include "tessera/v1/tablet_admin.pb.h"

namespace tessera::replication {

struct ConsistencyTokensOptions {
  // A node that has not answered within this is "not answering" (Check: not consistent;
  // Generate: Unavailable).
  int64_t call_timeout_us = 1'000'000;
};

class ConsistencyTokens {
 public:
  // This node's catalog: every table it knows (for the tablets' tables and rows).
  using TablesFn = std::function<std::vector<TableSnapshot>()>;

  // Every pointer must outlive the object; the channel's calls must end before it does.
  ConsistencyTokens(const ReplicaNode* replicas, const tablet::Engine* engine, RpcChannel* channel,
                    TablesFn tables, ConsistencyTokensOptions options = {});

  // A version-2 token for `table`. Unavailable naming the tablet when this node knows no
  // configuration of it, or its primary does not answer as the primary.
  void Generate(TableSnapshot table, std::function<void(StatusOr<std::string>)> done);
  // Whether every replica of every tablet of `token` has applied what it names. InvalidArgument
  // when the token does not decode or is another table's; NotFound when one of its tablets is
  // not `table`'s (the table was deleted, and maybe made again).
  void Check(TableSnapshot table, std::string_view token, std::function<void(StatusOr<bool>)> done);

  // Serves kGetTabletsMethod; false (and `respond` untouched) for any other.
  bool Handle(const std::string& method, const std::string& request,
              RpcChannel::Responder& respond) const;

 private:
  // Each asked node's tablets of the table, or why it did not answer.
  using Answers = std::map<std::string, StatusOr<::tessera::v1::NodeTablets>>;
  struct Gather;
  // Asks every node of `endpoints` for its tablets of `table_name`; `done` gets every answer
  // once the last has arrived.
  void Ask(const std::set<std::string>& endpoints, const std::string& table_name,
           std::function<void(Answers)> done);

  const ReplicaNode* const replicas_;
  const tablet::Engine* const engine_;
  RpcChannel* const channel_;
  const TablesFn tables_;
  const ConsistencyTokensOptions options_;
};

}  // namespace tessera::replication
