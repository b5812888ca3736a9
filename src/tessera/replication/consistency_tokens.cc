#include "tessera/replication/consistency_tokens.h"

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/tablet_config.h"
#include "tessera/replication/consistency_token.h"
#include "tessera/replication/node_tablets.h"

namespace tessera::replication {

namespace {

namespace v1 = ::tessera::v1;

const v1::TabletReplicaView* FindTablet(const v1::NodeTablets& answer, uint64_t tablet_id) {
  for (const v1::TabletReplicaView& view : answer.tablets()) {
    if (view.tablet_id() == tablet_id) return &view;
  }
  return nullptr;
}

bool HasTablet(const catalog::TableInfo& table, uint64_t tablet_id) {
  for (const catalog::TabletRef& ref : table.tablets) {
    if (ref.id == tablet_id) return true;
  }
  return false;
}

}  // namespace

struct ConsistencyTokens::Gather {
  absl::Mutex mu;
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  Answers answers ABSL_GUARDED_BY(mu);
  std::function<void(Answers)> done;
};

ConsistencyTokens::ConsistencyTokens(const ReplicaNode* replicas, const tablet::Engine* engine,
                                     RpcChannel* channel, TablesFn tables,
                                     ConsistencyTokensOptions options)
    : replicas_(replicas),
      engine_(engine),
      channel_(channel),
      tables_(std::move(tables)),
      options_(options) {}

bool ConsistencyTokens::Handle(const std::string& method, const std::string& request,
                               RpcChannel::Responder& respond) const {
  if (method != kGetTabletsMethod) return false;
  v1::GetTabletsRequest r;
  if (!r.ParseFromString(request)) {
    respond(absl::InvalidArgumentError("a GetTabletsRequest does not parse"));
    return true;
  }
  respond(DescribeReplicas(*replicas_, *engine_, tables_(), r.table_name()).SerializeAsString());
  return true;
}

void ConsistencyTokens::Ask(const std::set<std::string>& endpoints, const std::string& table_name,
                            std::function<void(Answers)> done) {
  if (endpoints.empty()) {
    done(Answers());
    return;
  }
  auto gather = std::make_shared<Gather>();
  gather->done = std::move(done);
  {
    absl::MutexLock l(&gather->mu);
    gather->pending = endpoints.size();
  }
  auto answer = [gather](const std::string& endpoint, StatusOr<v1::NodeTablets> tablets) {
    Answers all;
    {
      absl::MutexLock l(&gather->mu);
      gather->answers.insert_or_assign(endpoint, std::move(tablets));
      if (--gather->pending > 0) return;
      all = std::move(gather->answers);
    }
    gather->done(std::move(all));
  };
  v1::GetTabletsRequest request;
  request.set_table_name(table_name);
  const std::string bytes = request.SerializeAsString();
  for (const std::string& endpoint : endpoints) {
    if (endpoint == channel_->self()) {
      answer(endpoint, DescribeReplicas(*replicas_, *engine_, tables_(), table_name));
      continue;
    }
    channel_->Call(endpoint, kGetTabletsMethod, bytes, options_.call_timeout_us,
                   [answer, endpoint](StatusOr<std::string> response) {
                     if (!response.ok()) {
                       answer(endpoint, response.status());
                       return;
                     }
                     v1::NodeTablets tablets;
                     if (!tablets.ParseFromString(*response)) {
                       answer(endpoint, absl::DataLossError("its NodeTablets does not parse"));
                       return;
                     }
                     answer(endpoint, std::move(tablets));
                   });
  }
}

void ConsistencyTokens::Generate(TableSnapshot table,
                                 std::function<void(StatusOr<std::string>)> done) {
  std::map<uint64_t, catalog::TabletConfig> configs;
  std::set<std::string> primaries;
  for (const catalog::TabletRef& ref : table->tablets) {
    std::optional<catalog::TabletConfig> config = replicas_->GetConfig(ref.id);
    if (!config.has_value()) {
      done(absl::UnavailableError(StrCat(catalog::TabletName(ref.id), " of ", table->full_name, ": ",
                                         channel_->self(), " knows no configuration of it yet")));
      return;
    }
    primaries.insert(config->primary_endpoint());
    configs.emplace(ref.id, *std::move(config));
  }
  Ask(primaries, table->full_name,
      [table, configs = std::move(configs), done = std::move(done)](Answers answers) {
        ConsistencyToken token;
        token.table_name = table->full_name;
        for (const catalog::TabletRef& ref : table->tablets) {
          const catalog::TabletConfig& config = configs.at(ref.id);
          const std::string& primary = config.primary_endpoint();
          const StatusOr<v1::NodeTablets>& answer = answers.at(primary);
          if (!answer.ok()) {
            done(absl::UnavailableError(StrCat(catalog::TabletName(ref.id), ": its primary ", primary,
                                               " did not answer: ", answer.status().message())));
            return;
          }
          const v1::TabletReplicaView* view = FindTablet(*answer, ref.id);
          if (view == nullptr || !view->is_primary() || view->config_epoch() < config.epoch) {
            done(absl::UnavailableError(StrCat(catalog::TabletName(ref.id), ": ", primary,
                                               " does not act as its primary at epoch ",
                                               config.epoch, " (a failover under way?)")));
            return;
          }
          token.tablets.push_back({ref.id, view->config_epoch(), view->last_sequence()});
        }
        done(token.Encode());
      });
}

void ConsistencyTokens::Check(TableSnapshot table, std::string_view text,
                              std::function<void(StatusOr<bool>)> done) {
  StatusOr<ConsistencyToken> token = ConsistencyToken::Decode(text);
  if (!token.ok()) {
    done(token.status());
    return;
  }
  if (token->table_name != table->full_name) {
    done(absl::InvalidArgumentError(StrCat("consistency token \"", text, "\" is table ",
                                           token->table_name, "'s, not ", table->full_name, "'s")));
    return;
  }
  for (const TokenTablet& t : token->tablets) {
    if (!HasTablet(*table, t.tablet_id)) {
      done(absl::NotFoundError(StrCat("table ", table->full_name, ": ", catalog::TabletName(t.tablet_id),
                                      " of the consistency token no longer exists (the table "
                                      "was deleted)")));
      return;
    }
  }
  // What each tablet's replicas must hold, under the configuration this node knows.
  struct Want {
    catalog::TabletConfig config;
    uint64_t required = 0;
  };
  std::vector<Want> wants;
  std::set<std::string> endpoints;
  for (const TokenTablet& t : token->tablets) {
    std::optional<catalog::TabletConfig> config = replicas_->GetConfig(t.tablet_id);
    if (!config.has_value() || !config->needs_rebuild.empty()) {
      done(false);
      return;
    }
    endpoints.insert(config->replicas.begin(), config->replicas.end());
    const uint64_t required = RequiredSequence(t, *config);
    wants.push_back(Want{*std::move(config), required});
  }
  Ask(endpoints, table->full_name,
      [wants = std::move(wants), done = std::move(done)](Answers answers) {
        for (const Want& w : wants) {
          for (const std::string& replica : w.config.replicas) {
            const StatusOr<v1::NodeTablets>& answer = answers.at(replica);
            if (!answer.ok()) {
              done(false);
              return;
            }
            const v1::TabletReplicaView* view = FindTablet(*answer, w.config.tablet_id);
            if (view == nullptr || !ReplicaReached(w.config, view->joined_epoch(),
                                                   view->last_sequence(), w.required)) {
              done(false);
              return;
            }
          }
        }
        done(true);
      });
}

}  // namespace tessera::replication
