// ReplicatedStore: the parts of the distributed store on one node, wired together
// (docs/replication.md, "The protocol in detail"): the node's ReplicaNode, the LocalTableAccess
// whose writes go through it, the Coordinator, the TabletMaster and its MetadataSync, the
// ConsistencyTokens, and the mirror of the lock service's `tablets/` prefix that keeps the
// ReplicaNode's configurations current. It installs itself as the RpcChannel's handler.
//
// Lifecycle: Start() begins the replicas' tick and the master's steps and takes the channel's
// calls; Attach(session) (after each registration) starts the mirror and gives the master its
// session; Detach() (on a session loss) stops both; Stop() ends everything. The channel must
// be shut down or destroyed before the store.
//
// Thread-safety: as its parts; Start/Stop/Attach/Detach from the node's controlling code.
#pragma once

#include <memory>

#include "tessera/coord/lock_service.h"
#include "tessera/coord/prefix_mirror.h"
#include "tessera/replication/consistency_tokens.h"
#include "tessera/replication/coordinator.h"
#include "tessera/replication/local_table_access.h"
#include "tessera/replication/metadata_sync.h"
#include "tessera/replication/replica_node.h"
#include "tessera/replication/rpc_channel.h"
#include "tessera/replication/tablet_master.h"
#include "tessera/tablet/engine.h"
#include "tessera/util/executor_scope.h"

namespace tessera::replication {

struct ReplicatedStoreOptions {
  ReplicaNodeOptions replica;
  CoordinatorOptions coordinator;
  TabletMasterOptions master;
  MetadataSyncOptions metadata;
};

struct ReplicatedStoreEnv {
  tablet::Engine* engine = nullptr;
  RpcChannel* channel = nullptr;
  Executor* executor = nullptr;
  Clock* clock = nullptr;
  // The node's hint log (replica_node.h); null: none.
  HintLog* hint_log = nullptr;
  TableLookup lookup;
  FilterCompiler compile;
  TabletMaster::TablesFn tables;
  std::function<bool()> is_master;
  // Creates the METADATA table in the schema store (metadata_sync.h); AlreadyExists is done.
  std::function<Status()> create_metadata;
  // Serves the methods of other layers on the channel (the schema's agreement); false (and
  // `respond` untouched) for a method it does not know. Null: none.
  std::function<bool(const std::string& method, std::string& request,
                     RpcChannel::Responder& respond)>
      handle_other;
};

class ReplicatedStore {
 public:
  explicit ReplicatedStore(ReplicatedStoreEnv env, ReplicatedStoreOptions options = {});
  ~ReplicatedStore();  // Stop()

  ReplicatedStore(const ReplicatedStore&) = delete;
  ReplicatedStore& operator=(const ReplicatedStore&) = delete;

  void Start();
  void Stop();
  // Errors: the mirror's first listing.
  Status Attach(coord::Session* session);
  void Detach();

  Coordinator* coordinator() const { return coordinator_.get(); }
  ReplicaNode* replicas() const { return replicas_.get(); }
  TabletMaster* master() const { return master_.get(); }
  MetadataSync* metadata_sync() const { return metadata_sync_.get(); }
  ConsistencyTokens* tokens() const { return tokens_.get(); }

 private:
  class ConfigListener;

  const ReplicatedStoreEnv env_;
  // The parts' view of env_.executor, which outlives the store: Stop() closes it, so that no
  // task of theirs starts once they have stopped (executor_scope.h). Declared first, so that it
  // goes last.
  ExecutorScope executor_;
  std::unique_ptr<ReplicaNode> replicas_;
  std::unique_ptr<LocalTableAccess> access_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<TabletMaster> master_;
  std::unique_ptr<MetadataSync> metadata_sync_;
  std::unique_ptr<ConsistencyTokens> tokens_;
  std::unique_ptr<ConfigListener> listener_;
  std::unique_ptr<coord::PrefixMirror> mirror_;
  bool started_ = false;
};

}  // namespace tessera::replication
