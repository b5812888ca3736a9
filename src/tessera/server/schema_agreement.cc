#include "tessera/server/schema_agreement.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::server {

SchemaAgreement::SchemaAgreement(replication::RpcChannel* channel, Clock* clock,
                                 LiveNodesFn live_nodes, SchemaAgreementOptions options)
    : channel_(channel),
      clock_(clock),
      live_nodes_(std::move(live_nodes)),
      options_(options) {}

StatusOr<std::vector<std::string>> SchemaAgreement::Await(int64_t revision) {
  const int64_t deadline = clock_->MonotonicMicros() + options_.timeout_us;
  std::set<std::string> waiting;
  {
    ASSIGN_OR_RETURN(std::vector<std::string> live, live_nodes_());
    for (std::string& endpoint : live) {
      if (endpoint != channel_->self()) waiting.insert(std::move(endpoint));
    }
  }
  // One round: every node still waited for is asked; the round ends when all have answered.
  struct Round {
    absl::Mutex mu;
    size_t pending ABSL_GUARDED_BY(mu) = 0;
    std::set<std::string> confirmed ABSL_GUARDED_BY(mu);
  };
  int64_t delay = options_.first_delay_us;
  while (!waiting.empty()) {
    const int64_t now = clock_->MonotonicMicros();
    if (now >= deadline) break;
    auto round = std::make_shared<Round>();
    {
      absl::MutexLock lock(&round->mu);
      round->pending = waiting.size();
    }
    v1::SchemaRevisionRequest request;
    const std::string encoded = request.SerializeAsString();
    for (const std::string& endpoint : waiting) {
      channel_->Call(endpoint, kSchemaRevisionMethod, encoded,
                     std::min(options_.call_timeout_us, std::max<int64_t>(1, deadline - now)),
                     [round, endpoint, revision](StatusOr<std::string> response) {
                       v1::SchemaRevisionResponse answer;
                       const bool confirmed = response.ok() &&
                                              answer.ParseFromString(*response) &&
                                              answer.applied_revision() >= revision;
                       absl::MutexLock lock(&round->mu);
                       if (confirmed) round->confirmed.insert(endpoint);
                       --round->pending;
                     });
    }
    {
      absl::MutexLock lock(&round->mu);
      round->mu.Await(absl::Condition(
          +[](size_t* pending) { return *pending == 0; }, &round->pending));
      for (const std::string& endpoint : round->confirmed) waiting.erase(endpoint);
    }
    if (waiting.empty()) break;
    const int64_t left = deadline - clock_->MonotonicMicros();
    if (left <= 0) break;
    clock_->SleepForMicros(std::min(delay, left));
    delay = std::min(delay * 2, options_.max_delay_us);
  }
  return std::vector<std::string>(waiting.begin(), waiting.end());
}

bool SchemaAgreement::Serve(const catalog::SchemaStore& store, const std::string& method,
                            replication::RpcChannel::Responder& respond) {
  if (method != kSchemaRevisionMethod) return false;
  v1::SchemaRevisionResponse answer;
  answer.set_applied_revision(store.applied_revision());
  respond(answer.SerializeAsString());
  return true;
}

}  // namespace tessera::server
