// NodeAdminService: tessera.v1.NodeAdmin on a node's gRPC port — Tessera's nodetool for one
// node (`tessera admin info | tablestats | compactionstats | flush | compact | repair |
// decommission | snapshot | listsnapshots | clearsnapshot | restore`,
// proto/tessera/v1/node_admin.proto): what the node holds and does, read from its engine; the
// flush and major compaction of its tablets on demand; the repair of the tablets it leads
// (docs/repair.md); its decommission; snapshots of its tablets (table_snapshots.h) and their
// restore through the write path.
//
// Each method acts on this node's own tablets (on a cluster node: the replicas it holds), as
// nodetool acts on the node it is pointed at. A table is found by its full name in the node's
// catalog; the engine's tablets the catalog no longer places (a table being dropped) count
// under the table name "".
//
// Thread-safety: handlers run concurrently on the executor given to Register (Flush and Compact
// wait for the engine); they use only thread-safe parts of the core. Snapshot changes (take,
// clear) are serialized by snapshot_mu_.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/synchronization/mutex.h"
#include "tessera/rpc/server.h"
#include "tessera/server/node_core.h"
#include "tessera/util/executor.h"
#include "tessera/v1/node_admin.grpc.pb.h"

namespace tessera::server {

// Flushes the memtables of the node's tablets of `table` ("" = every table), one after the
// other, waiting for each; what Flush answers (the dashboard's action too). InvalidArgument for a
// malformed table name, NotFound for a table the catalog does not hold; the engine's error if a
// flush fails (the tablets before it are done).
StatusOr<::tessera::v1::FlushResponse> FlushTablets(NodeCore& core, const std::string& table);
// The same for a major compaction of each tablet.
StatusOr<::tessera::v1::CompactResponse> CompactTablets(NodeCore& core, const std::string& table);
// Repairs (docs/repair.md) each tablet of `table` ("" = every table) this node is the primary
// of, one after the other, waiting for each (ReplicaNode::RepairTablet); what Repair answers
// (the dashboard's action too). A tablet that could not be checked carries its error. A node
// that replicates nothing answers its tablets with no replica to compare.
StatusOr<::tessera::v1::RepairResponse> RepairTablets(NodeCore& core, const std::string& table);
// NodeCore::BeginDecommission, then waits until no tablet names the node (DeadlineExceeded
// naming those left when `deadline` comes first: the moves go on), then FinishDecommission;
// the number of tablets whose replica moved away. What Decommission answers (the dashboard's
// action too).
StatusOr<uint64_t> DecommissionNode(NodeCore& core, std::chrono::system_clock::time_point deadline);

class NodeAdminService final {
 public:
  // `core` must outlive the service. The uptime counts from the service's construction.
  explicit NodeAdminService(NodeCore* core);

  // Registers every method, to run on `executor`.
  void Register(rpc::Services* services, Executor* executor);

  rpc::UnaryReactor* GetNodeInfo(rpc::ServerContext* context,
                                 const ::tessera::v1::GetNodeInfoRequest* request,
                                 ::tessera::v1::NodeInfo* response);
  // INVALID_ARGUMENT for a malformed table name; a table the node holds nothing of is absent.
  rpc::UnaryReactor* GetTableStats(rpc::ServerContext* context,
                                   const ::tessera::v1::GetTableStatsRequest* request,
                                   ::tessera::v1::TableStats* response);
  // INVALID_ARGUMENT for a malformed table name, NOT_FOUND for a table the catalog does not
  // hold; the engine's error if a flush or compaction fails (the tablets before it are done).
  rpc::UnaryReactor* Flush(rpc::ServerContext* context,
                           const ::tessera::v1::FlushRequest* request,
                           ::tessera::v1::FlushResponse* response);
  rpc::UnaryReactor* Compact(rpc::ServerContext* context,
                             const ::tessera::v1::CompactRequest* request,
                             ::tessera::v1::CompactResponse* response);
  rpc::UnaryReactor* TakeSnapshot(rpc::ServerContext* context,
                                  const ::tessera::v1::TakeSnapshotRequest* request,
                                  ::tessera::v1::TakeSnapshotResponse* response);
  rpc::UnaryReactor* ListSnapshots(rpc::ServerContext* context,
                                   const ::tessera::v1::ListSnapshotsRequest* request,
                                   ::tessera::v1::ListSnapshotsResponse* response);
  rpc::UnaryReactor* ClearSnapshot(rpc::ServerContext* context,
                                   const ::tessera::v1::ClearSnapshotRequest* request,
                                   ::tessera::v1::ClearSnapshotResponse* response);
  // RepairTablets. Audited.
  rpc::UnaryReactor* Repair(rpc::ServerContext* context,
                            const ::tessera::v1::RepairRequest* request,
                            ::tessera::v1::RepairResponse* response);
  // NodeCore::BeginDecommission, a wait until TabletsHeld() is empty (or the call's deadline,
  // at most an hour), then FinishDecommission. Audited.
  rpc::UnaryReactor* Decommission(rpc::ServerContext* context,
                                  const ::tessera::v1::DecommissionRequest* request,
                                  ::tessera::v1::DecommissionResponse* response);
  // NodeCore::Drain, then the engine's figures.
  rpc::UnaryReactor* Drain(rpc::ServerContext* context, const ::tessera::v1::DrainRequest* request,
                           ::tessera::v1::DrainResponse* response);
  // Engine::SetCompactionBytesPerSecond; answers the rate now in force. Audited.
  rpc::UnaryReactor* SetCompactionThroughput(rpc::ServerContext* context,
                                             const ::tessera::v1::Throughput* request,
                                             ::tessera::v1::Throughput* response);
  rpc::UnaryReactor* GetCompactionThroughput(rpc::ServerContext* context,
                                             const ::tessera::v1::GetThroughputRequest* request,
                                             ::tessera::v1::Throughput* response);
  // NodeCore::SetStreamBytesPerSecond; answers the rate now in force. Audited.
  rpc::UnaryReactor* SetStreamThroughput(rpc::ServerContext* context,
                                         const ::tessera::v1::Throughput* request,
                                         ::tessera::v1::Throughput* response);
  rpc::UnaryReactor* GetStreamThroughput(rpc::ServerContext* context,
                                         const ::tessera::v1::GetThroughputRequest* request,
                                         ::tessera::v1::Throughput* response);
  // Writes the rows of the chosen snapshot files into the target with the node's TableAccess
  // (on a cluster: to each row's tablet primary, at the table's default write level), in
  // batches; the first write error stops it (the rows before it are written).
  rpc::UnaryReactor* RestoreSnapshot(rpc::ServerContext* context,
                                     const ::tessera::v1::RestoreSnapshotRequest* request,
                                     ::tessera::v1::RestoreSnapshotResponse* response);

 private:
  // The node's endpoint as gossip names it ("" before the node has started).
  std::string Endpoint() const;

  // Writes the rows of one snapshot file into `target`.
  Status RestoreFile(const std::string& path, const std::string& target,
                     ::tessera::v1::RestoreSnapshotResponse* response);

  NodeCore* const core_;
  const int64_t started_us_;
  absl::Mutex snapshot_mu_;
  std::atomic<uint64_t> restores_{0};  // names restores' scratch folders
};

}  // namespace tessera::server
