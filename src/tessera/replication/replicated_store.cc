#include "tessera/replication/replicated_store.h"

#include <set>
#include <utility>

#include "tessera/util/logging.h"

namespace tessera::replication {

// Hands every configuration the mirror delivers to the ReplicaNode.
class ReplicatedStore::ConfigListener final : public coord::MirrorListener {
 public:
  explicit ConfigListener(ReplicaNode* replicas) : replicas_(replicas) {}

  Status OnPut(const coord::FileInfo& file, coord::MirrorCause /*cause*/) override {
    StatusOr<catalog::TabletConfig> config = catalog::TabletConfig::Decode(file.value);
    if (!config.ok()) {
      TLOG_WARN("replication: skipping {}: {}", file.name, config.status().ToString());
      return Status();  // looked at and skipped: delivered again only when it changes
    }
    replicas_->UpdateConfig(*config);
    known_.insert(file.name);
    return Status();
  }
  Status OnDelete(const std::string& name, int64_t /*revision*/,
                  coord::MirrorCause /*cause*/) override {
    if (StatusOr<uint64_t> id = catalog::ParseTabletConfigName(name); id.ok()) {
      replicas_->RemoveConfig(*id);
    }
    known_.erase(name);
    return Status();
  }
  Status OnSynced(int64_t /*revision*/,
                  const std::set<std::string, std::less<>>& live) override {
    for (auto it = known_.begin(); it != known_.end();) {
      if (live.count(*it) == 0) {
        if (StatusOr<uint64_t> id = catalog::ParseTabletConfigName(*it); id.ok()) {
          replicas_->RemoveConfig(*id);
        }
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    return Status();
  }
  void OnSessionExpired() override {}

 private:
  ReplicaNode* const replicas_;
  std::set<std::string, std::less<>> known_;  // under the mirror's delivery lock
};

ReplicatedStore::ReplicatedStore(ReplicatedStoreEnv env, ReplicatedStoreOptions options)
    : env_(std::move(env)), executor_(env_.executor) {
  replicas_ = std::make_unique<ReplicaNode>(env_.engine, env_.channel, &executor_, env_.clock,
                                            options.replica, env_.hint_log);
  access_ = std::make_unique<LocalTableAccess>(env_.engine, LocalTableAccessOptions(),
                                               replicas_.get());
  coordinator_ =
      std::make_unique<Coordinator>(replicas_.get(), access_.get(), env_.channel, &executor_,
                                    env_.clock, env_.lookup, env_.compile, options.coordinator);
  master_ = std::make_unique<TabletMaster>(env_.channel, &executor_, env_.clock, env_.tables,
                                           env_.is_master, options.master);
  std::function<Status()> create_metadata = env_.create_metadata;
  if (!create_metadata) {
    create_metadata = [] { return absl::FailedPreconditionError("no schema store to create it in"); };
  }
  metadata_sync_ =
      std::make_unique<MetadataSync>(coordinator_.get(), &executor_, env_.clock, env_.tables,
                                     env_.is_master, std::move(create_metadata), options.metadata);
  tokens_ =
      std::make_unique<ConsistencyTokens>(replicas_.get(), env_.engine, env_.channel, env_.tables);
  listener_ = std::make_unique<ConfigListener>(replicas_.get());
  coord::PrefixMirrorOptions mo;
  mo.prefix = "tablets/";
  mo.what = "the tablet configurations";
  mo.log_name = "tablet configurations";
  mirror_ = *coord::PrefixMirror::Create(listener_.get(), mo);
}

ReplicatedStore::~ReplicatedStore() { Stop(); }

void ReplicatedStore::Start() {
  if (started_) return;
  started_ = true;
  ReplicaNode* replicas = replicas_.get();
  Coordinator* coordinator = coordinator_.get();
  ConsistencyTokens* tokens = tokens_.get();
  auto other = env_.handle_other;
  env_.channel->SetHandler(
      [replicas, coordinator, tokens, other](const std::string& from, const std::string& method,
                                             std::string request, RpcChannel::Responder respond) {
        if (replicas->Handle(from, method, request, respond)) return;
        if (coordinator->Handle(from, method, request, respond)) return;
        if (tokens->Handle(method, request, respond)) return;
        if (other && other(method, request, respond)) return;
        respond(absl::UnimplementedError(StrCat("no replication method \"", method, "\"")));
      });
  replicas_->Start();
  master_->Start();
  metadata_sync_->Start();
}

void ReplicatedStore::Stop() {
  if (!started_) return;
  started_ = false;
  env_.channel->SetHandler(nullptr);
  Detach();
  metadata_sync_->Stop();
  master_->Stop();
  // Before the replicas, whose waiters it fails: no retry of the coordinator's waits on the
  // executor, which outlives the store (server.cc resets it after NodeCore::Close).
  coordinator_->Stop();
  replicas_->Stop();
  // Tasks they scheduled and that have not started (the locator's retries, QUORUM reads'
  // polls, seals) would reach them through raw pointers after the store is gone.
  executor_.Close();
}

Status ReplicatedStore::Attach(coord::Session* session) {
  master_->Attach(session);
  return mirror_->Start(session);
}

void ReplicatedStore::Detach() {
  mirror_->Stop();
  master_->Detach();
}

}  // namespace tessera::replication
