// Schema agreement (Cassandra's): after a schema change, the node that made it waits until
// every live node of the cluster has applied it, so that a table created, changed or deleted
// through one node is seen so through every node as soon as the admin call returns
// (docs/server.md, "The schema in cluster mode"). The change itself is durable once it is in
// the lock service; the wait only closes the few milliseconds in which the other nodes' watches
// have not delivered it yet.
//
// Each node answers "Schema.Revision" (replica.proto's SchemaRevisionRequest) with its
// catalog::SchemaStore::applied_revision(). Await(revision) asks every live node other than
// this one (the lock service's directory), again and again with a short backoff, until each
// has answered a revision at or above `revision` or `timeout_us` has passed. A node that has
// not confirmed by then (slow, partitioned, dying) does not fail the change — it is applied
// there when its watch catches up, as in Cassandra, whose drivers also go on after their
// schema agreement wait — and is returned, so the caller can log it.
//
// Thread-safety: Await blocks its thread (never call it on a channel's or a simulation's
// thread: the answers arrive there) and may be called from several threads at once. Serve may
// be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/catalog/schema_store.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/util/clock.h"
#include "tessera/util/status.h"

namespace tessera::server {

inline constexpr std::string_view kSchemaRevisionMethod = "Schema.Revision";

struct SchemaAgreementOptions {
  // How long Await waits in all.
  int64_t timeout_us = 10'000'000;
  // The wait between two rounds of questions: doubling from first_delay_us to max_delay_us.
  int64_t first_delay_us = 2'000;
  int64_t max_delay_us = 100'000;
  // One question's timeout.
  int64_t call_timeout_us = 1'000'000;
};

class SchemaAgreement {
 public:
  // The live nodes' endpoints (this node's among them or not); errors end the wait early.
  using LiveNodesFn = std::function<StatusOr<std::vector<std::string>>()>;

  // Every pointer must outlive the object.
  SchemaAgreement(replication::RpcChannel* channel, Clock* clock, LiveNodesFn live_nodes,
                  SchemaAgreementOptions options = {});

  // Waits as the top of this file says; returns the live nodes (not this one) that did not
  // confirm `revision` in time, or the error that kept it from asking (the lock service's).
  StatusOr<std::vector<std::string>> Await(int64_t revision);

  // Serves kSchemaRevisionMethod from `store`; false (and `respond` untouched) for any other.
  static bool Serve(const catalog::SchemaStore& store, const std::string& method,
                    replication::RpcChannel::Responder& respond);

 private:
  replication::RpcChannel* const channel_;
  Clock* const clock_;
  const LiveNodesFn live_nodes_;
  const SchemaAgreementOptions options_;
};

}  // namespace tessera::server
