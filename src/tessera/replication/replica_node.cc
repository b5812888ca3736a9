#include "tessera/replication/replica_node.h"

#include <algorithm>
#include <limits>
#include <span>
#include <utility>

#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/replica_node_state.h"
#include "tessera/util/logging.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::replication {
namespace {

using catalog::TabletConfigState;
using catalog::TabletName;
using replica_internal::JoinedOf;
using replica_internal::MakePromise;
using replica_internal::PromisedOf;
using replica_internal::RunAll;
using v1::TabletAck;

}  // namespace

ReplicaNode::ReplicaNode(tablet::Engine* engine, RpcChannel* channel, Executor* executor,
                         Clock* clock, ReplicaNodeOptions options, HintLog* hint_log)
    : engine_(engine),
      channel_(channel),
      executor_(executor),
      clock_(clock),
      options_(std::move(options)),
      hints_(hint_log == nullptr
                 ? nullptr
                 : std::make_unique<HintStore>(
                       hint_log, clock,
                       HintStoreOptions{.window_us = options_.hint_window_us,
                                        .max_bytes = options_.max_hints_bytes,
                                        .delivery_bytes_per_s = options_.hint_delivery_bytes_per_s,
                                        .burst_bytes = options_.max_batch_bytes})),
      stream_limiter_(static_cast<int64_t>(options_.stream_bytes_per_s), clock),
      life_(std::make_shared<LifeGuard>()) {}

ReplicaNode::~ReplicaNode() { Stop(); }

void ReplicaNode::Start() {
  absl::MutexLock l(&mu_);
  if (running_) return;
  running_ = true;
  life_->Reopen();
  started_at_us_ = clock_->MonotonicMicros();
  ScheduleTick();
}

void ReplicaNode::Stop() {
  Effects fx;
  {
    absl::MutexLock l(&mu_);
    if (running_) {
      running_ = false;
      executor_->Cancel(tick_timer_);
    }
    mu_.Await(absl::Condition(
        +[](bool* ticking) { return !*ticking; }, &ticking_));
    for (auto& [id, t] : tablets_) {
      for (Waiter& w : t->waiters) {
        fx.push_back([done = std::move(w.done), id = id] {
          done(absl::UnavailableError(
              StrCat(TabletName(id), ": the node is stopping; the write may have been applied")));
        });
      }
      t->waiters.clear();
    }
    for (PendingSeal& s : seals_) {
      fx.push_back([respond = std::move(s.respond)] {
        respond(absl::UnavailableError("the node is stopping"));
      });
    }
    seals_.clear();
  }
  // A hash under way finishes (its answer goes out); those not started are answered here.
  life_->Close();
  {
    absl::MutexLock l(&mu_);
    for (auto& [id, job] : hash_jobs_) {
      fx.push_back(
          [done = std::move(job.done)] { done(absl::UnavailableError("the node is stopping")); });
    }
    hash_jobs_.clear();
    for (auto& [id, t] : tablets_) {
      if (!t->digest.has_value()) continue;
      fx.push_back([respond = std::move(t->digest->respond)] {
        respond(absl::UnavailableError("the node is stopping"));
      });
      t->digest.reset();
    }
  }
  RunAll(&fx);
}

ReplicaNode::Tablet* ReplicaNode::Find(uint64_t id) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(id);
  return it == tablets_.end() ? nullptr : it->second.get();
}

ReplicaNode::Tablet* ReplicaNode::FindOrAdd(uint64_t id) {
  absl::MutexLock l(&mu_);
  std::unique_ptr<Tablet>& t = tablets_[id];
  if (t == nullptr) t = std::make_unique<Tablet>(id);
  return t.get();
}

StatusOr<uint64_t> ReplicaNode::LoadPromise(Tablet* t) {
  {
    absl::MutexLock l(&mu_);
    if (t->promise_loaded) return t->promise;
  }
  ASSIGN_OR_RETURN(uint64_t promise, engine_->GetReplicaEpoch(t->id));
  ASSIGN_OR_RETURN(uint64_t last, engine_->LastSequence(t->id));
  absl::MutexLock l(&mu_);
  if (!t->promise_loaded) {
    t->promise_loaded = true;
    t->promise = promise;
    t->last = std::max(t->last, last);
    if (t->retained.empty()) t->floor = t->last;
  }
  return t->promise;
}

Status ReplicaNode::RaisePromise(Tablet* t, uint64_t promise) {
  {
    absl::MutexLock l(&mu_);
    if (promise <= t->promise) return Status();
  }
  RETURN_IF_ERROR(engine_->RaiseReplicaEpoch(t->id, promise));
  absl::MutexLock l(&mu_);
  t->promise = std::max(t->promise, promise);
  return Status();
}

Status ReplicaNode::Restore(uint64_t tablet_id, uint64_t first_sequence, std::string mutation) {
  ASSIGN_OR_RETURN(model::RowMutation m, model::RowMutation::FromEncoded(mutation));
  if (m.empty()) return Status();
  Tablet* t = FindOrAdd(tablet_id);
  absl::MutexLock l(&mu_);
  if (t->retained.empty() && t->floor < first_sequence - 1) t->floor = first_sequence - 1;
  if (t->retained.empty() || t->retained.rbegin()->second.last + 1 == first_sequence) {
    const uint64_t last = first_sequence + m.size() - 1;
    RetainLocked(t, first_sequence, last, std::move(mutation));
    t->last = std::max(t->last, last);
  }
  return Status();
}

// ---------------------------------------------------------------------------------------------
// Configurations and roles

void ReplicaNode::UpdateConfig(const TabletConfig& config) {
  Tablet* t = FindOrAdd(config.tablet_id);
  Effects fx;
  {
    absl::WriterMutexLock gate(&t->gate);
    const int self_index = config.IndexOf(self());
    const bool should_lead = config.state == TabletConfigState::kServing &&
                             self_index == static_cast<int>(config.primary);
    {
      absl::MutexLock l(&mu_);
      if (t->config.has_value() && config.epoch < t->config->epoch) return;  // a late delivery
      t->config = config;
      if (t->primary && (!should_lead || t->epoch != config.epoch)) {
        StepDownLocked(t, StrCat("epoch ", config.epoch, " names ", config.primary_endpoint()),
                       &fx);
      } else if (t->primary) {
        for (Peer& p : t->peers) {
          const int i = config.IndexOf(p.endpoint);
          if (i >= 0 && config.NeedsRebuild(static_cast<size_t>(i))) p.rebuild = true;
        }
      }
    }
    bool lead_now = false;
    {
      absl::MutexLock l(&mu_);
      lead_now = should_lead && !t->primary;
    }
    if (lead_now) BecomePrimary(t, config, &fx);
  }
  RunAll(&fx);
}

void ReplicaNode::BecomePrimary(Tablet* t, const TabletConfig& config, Effects* fx) {
  StatusOr<uint64_t> promise = LoadPromise(t);
  {
    absl::MutexLock l(&mu_);
    const bool first = !t->lead_pending;
    t->lead_pending = absl::IsNotFound(promise.status());
    if (!promise.ok() && !first && t->lead_pending) return;  // said already; Tick tries again
  }
  if (!promise.ok()) {
    TLOG_WARN("replication: {} names this node primary but it cannot act{}: {}",
              TabletName(t->id), absl::IsNotFound(promise.status()) ? " yet" : "",
              promise.status().ToString());
    return;
  }
  if (PromisedOf(*promise) > config.epoch) {
    TLOG_INFO("replication: {} epoch {} is stale here (promised {}); not taking it",
              TabletName(t->id), config.epoch, PromisedOf(*promise));
    return;
  }
  StatusOr<uint64_t> last = engine_->LastSequence(t->id);
  if (!last.ok()) return;
  // The first epoch's primary is the lineage whatever it holds (a table made before it was
  // replicated); a later one was chosen for holding exactly the start sequence, unless it
  // took the epoch before (a restart: it has written in it since).
  const bool took_it_before = JoinedOf(*promise) == config.epoch;
  if (config.epoch > 1 && (took_it_before ? *last < config.epoch_start_sequence
                                          : *last != config.epoch_start_sequence)) {
    TLOG_ERROR(
        "replication: {} epoch {} starts at sequence {} but this node holds {}; not "
        "taking it",
        TabletName(t->id), config.epoch, config.epoch_start_sequence, *last);
    return;
  }
  if (Status s = RaisePromise(t, MakePromise(config.epoch, config.epoch)); !s.ok()) {
    TLOG_WARN("replication: {}: cannot record epoch {}: {}", TabletName(t->id), config.epoch,
              s.ToString());
    return;
  }
  absl::MutexLock l(&mu_);
  t->primary = true;
  t->epoch = config.epoch;
  t->last = std::max(t->last, *last);
  if (t->retained.empty()) t->floor = t->last;
  t->peers.clear();
  for (size_t i = 0; i < config.replicas.size(); ++i) {
    if (i == config.primary) continue;
    Peer p;
    p.endpoint = config.replicas[i];
    p.rebuild = config.NeedsRebuild(i);
    t->peers.push_back(std::move(p));
  }
  TLOG_INFO("replication: {} primary at epoch {} from sequence {}, {} peers", TabletName(t->id),
            t->epoch, t->last, t->peers.size());
  PumpLocked(t, fx);
}

void ReplicaNode::StepDownLocked(Tablet* t, std::string_view why, Effects* fx) {
  t->members_have = std::max(t->members_have.value_or(0), EveryoneHasLocked(*t));
  t->primary = false;
  t->peers.clear();
  for (Waiter& w : t->waiters) {
    fx->push_back([done = std::move(w.done), id = t->id, why = std::string(why)] {
      done(absl::UnavailableError(StrCat(TabletName(id), ": this node stopped being its primary (",
                                         why, "); the write may have been applied")));
    });
  }
  t->waiters.clear();
}

void ReplicaNode::RemoveConfig(uint64_t tablet_id) {
  Tablet* t = Find(tablet_id);
  if (t == nullptr) return;
  Effects fx;
  {
    absl::WriterMutexLock gate(&t->gate);
    absl::MutexLock l(&mu_);
    if (t->primary) StepDownLocked(t, "its configuration was removed", &fx);
    t->config.reset();
  }
  RunAll(&fx);
}

std::optional<TabletConfig> ReplicaNode::GetConfig(uint64_t tablet_id) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(tablet_id);
  if (it == tablets_.end()) return std::nullopt;
  return it->second->config;
}

// ---------------------------------------------------------------------------------------------
// The primary

Status ReplicaNode::CheckPrimaryLocked(const Tablet& t, uint64_t epoch) const {
  if (!t.primary) {
    return absl::FailedPreconditionError(StrCat(
        TabletName(t.id), ": ", self(), " is not the primary",
        t.config.has_value()
            ? StrCat(" (epoch ", t.config->epoch, " names ", t.config->primary_endpoint(), ")")
            : std::string(" (no configuration known)")));
  }
  if (epoch > t.epoch) {  // the sender knows a newer configuration: this node may be deposed
    return absl::FailedPreconditionError(
        StrCat(TabletName(t.id), ": stale epoch ", epoch, "; the primary is at epoch ", t.epoch));
  }
  return Status();
}

Status ReplicaNode::CheckPrimary(uint64_t tablet_id, uint64_t epoch) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(tablet_id);
  if (it == tablets_.end()) {
    return absl::FailedPreconditionError(StrCat(TabletName(tablet_id), ": ", self(),
                                                " is not the primary (no configuration known)"));
  }
  return CheckPrimaryLocked(*it->second, epoch);
}

Status ReplicaNode::Write(tablet::TabletId id, const model::RowMutation& mutation) {
  return WriteBatch(id, std::span<const model::RowMutation>(&mutation, 1));
}

Status ReplicaNode::WriteBatch(tablet::TabletId id, std::span<const model::RowMutation> batch) {
  // A tablet the cluster did not make is this node's own: written here, replicated nowhere.
  if (!catalog::IsClusterTabletId(id)) return engine_->ApplyBatch(id, batch).status();
  Tablet* t = Find(id);
  if (t == nullptr) return CheckPrimary(id, 0);
  absl::ReaderMutexLock gate(&t->gate);
  {
    absl::MutexLock l(&mu_);
    RETURN_IF_ERROR(CheckPrimaryLocked(*t, 0));
  }
  ASSIGN_OR_RETURN(tablet::SequenceRange range, engine_->ApplyBatch(id, batch));
  Effects fx;
  {
    absl::MutexLock l(&mu_);
    t->last = std::max(t->last, range.last);
    // Mutation i took the numbers after mutation i - 1's, one per entry (Engine::ApplyBatch).
    uint64_t first = range.first;
    for (const model::RowMutation& m : batch) {
      const uint64_t last = first + m.size() - 1;
      RetainLocked(t, first, last, m.encoded());
      first = last + 1;
    }
    PumpLocked(t, &fx);
  }
  RunAll(&fx);
  return Status();
}

size_t ReplicaNode::AcksLocked(const Tablet& t, uint64_t sequence, WriteLevel level,
                               const std::string& dc, size_t* required) const {
  const size_t members = t.config.has_value() ? t.config->replicas.size() : 1;
  auto local = [&](const std::string& endpoint) {
    return level != WriteLevel::kLocalQuorum || !options_.dc_of || options_.dc_of(endpoint) == dc;
  };
  size_t local_members = local(self()) ? 1 : 0;
  size_t acks = (t.last >= sequence && local(self())) ? 1 : 0;
  for (const Peer& p : t.peers) {
    if (!local(p.endpoint)) continue;
    ++local_members;
    if (p.known && p.acked >= sequence && !p.rebuild) ++acks;
  }
  *required = RequiredAcks(level, members, local_members);
  return acks;
}

Status ReplicaNode::CheckWritable(uint64_t tablet_id, WriteLevel level,
                                  const std::string& coordinator_dc) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(tablet_id);
  if (it == tablets_.end()) return CheckPrimary(tablet_id, 0);
  const Tablet& t = *it->second;
  RETURN_IF_ERROR(CheckPrimaryLocked(t, 0));
  size_t required = 0;
  AcksLocked(t, 0, level, coordinator_dc, &required);
  // LOCAL_QUORUM counts the replicas in the coordinator's DC alone, the primary among them
  // only when it is there.
  const bool by_dc = level == WriteLevel::kLocalQuorum && options_.dc_of != nullptr;
  auto counted = [&](const std::string& endpoint) {
    return !by_dc || options_.dc_of(endpoint) == coordinator_dc;
  };
  size_t members = counted(self()) ? 1 : 0;
  size_t answering = members;
  for (const Peer& p : t.peers) {
    if (!counted(p.endpoint)) continue;
    ++members;
    if (p.answering && !p.stale && !p.rebuild) ++answering;
  }
  if (answering < required) {
    return absl::UnavailableError(StrCat(TabletName(tablet_id), ": ", answering, " of ", members,
                                         " replicas",
                                         by_dc ? StrCat(" in ", coordinator_dc) : std::string(),
                                         " answer; ", WriteLevelName(level), " needs ", required));
  }
  return Status();
}

Status ReplicaNode::CheckReadLease(uint64_t tablet_id) const {
  absl::MutexLock l(&mu_);
  auto it = tablets_.find(tablet_id);
  if (it == tablets_.end()) return CheckPrimary(tablet_id, 0);
  const Tablet& t = *it->second;
  RETURN_IF_ERROR(CheckPrimaryLocked(t, 0));
  const int64_t now = clock_->MonotonicMicros();
  size_t leased = 1;
  for (const Peer& p : t.peers) {
    if (p.lease_until_us > now && !p.stale) ++leased;
  }
  const size_t needed = Majority(t.peers.size() + 1);
  if (leased < needed) {
    return absl::UnavailableError(StrCat(TabletName(tablet_id),
                                         ": the primary holds read leases from ", leased, " of ",
                                         t.peers.size() + 1, " replicas; reads need ", needed));
  }
  return Status();
}

void ReplicaNode::AwaitCommit(uint64_t tablet_id, WriteLevel level,
                              const std::string& coordinator_dc, int64_t timeout_us,
                              std::function<void(Status)> done) {
  StatusOr<uint64_t> last = engine_->LastSequence(tablet_id);
  if (!last.ok()) {
    done(last.status());
    return;
  }
  Status result;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end() || !it->second->primary) {
      result = absl::UnavailableError(
          StrCat(TabletName(tablet_id), ": ", self(),
                 " is no longer its primary; the write may have been applied"));
    } else {
      Tablet* t = it->second.get();
      t->last = std::max(t->last, *last);
      size_t required = 0;
      if (AcksLocked(*t, *last, level, coordinator_dc, &required) < required) {
        t->waiters.push_back(Waiter{*last, level, coordinator_dc,
                                    clock_->MonotonicMicros() + timeout_us, std::move(done)});
        return;
      }
    }
  }
  done(result);
}

void ReplicaNode::RetainLocked(Tablet* t, uint64_t first, uint64_t last, std::string mutation) {
  if (last <= t->floor) return;
  t->retained_bytes += mutation.size();
  t->retained.insert_or_assign(first, Retained{last, std::move(mutation), clock_->NowMicros()});
  if (t->retained_bytes <= options_.retained_bytes_per_tablet) return;
  const std::optional<uint64_t> everyone = hints_ != nullptr ? MembersHaveLocked(*t) : std::nullopt;
  while (t->retained_bytes > options_.retained_bytes_per_tablet && !t->retained.empty()) {
    auto oldest = t->retained.begin();
    t->floor = std::max(t->floor, oldest->second.last);
    t->retained_bytes -= oldest->second.mutation.size();
    if (everyone.has_value() && oldest->second.last > *everyone) {  // still needed: hint log
      hints_->Spill(t->id, oldest->first, oldest->second.last, oldest->second.written_at_us,
                    std::move(oldest->second.mutation));
    }
    t->retained.erase(oldest);
  }
}

uint64_t ReplicaNode::EveryoneHasLocked(const Tablet& t) const {
  uint64_t everyone = t.last;
  for (const Peer& p : t.peers) {
    if (p.copying) {
      everyone = std::min(everyone, p.copy_sequence);  // it goes on from its copy
    } else if (!p.rebuild) {
      everyone = std::min(everyone, p.known ? p.acked : 0);
    }
  }
  return everyone;
}

std::optional<uint64_t> ReplicaNode::MembersHaveLocked(const Tablet& t) const {
  if (t.primary) return EveryoneHasLocked(t);
  return t.members_have;
}

void ReplicaNode::TrimLocked(Tablet* t) {
  const std::optional<uint64_t> everyone = MembersHaveLocked(*t);
  if (!everyone.has_value()) return;
  while (!t->retained.empty() && t->retained.begin()->second.last <= *everyone) {
    auto oldest = t->retained.begin();
    t->floor = std::max(t->floor, oldest->second.last);
    t->retained_bytes -= oldest->second.mutation.size();
    t->retained.erase(oldest);
  }
}

void ReplicaNode::PumpLocked(Tablet* t, Effects* fx) {
  if (!t->primary || !running_) return;
  const int64_t now = clock_->MonotonicMicros();
  const uint64_t everyone = EveryoneHasLocked(*t);  // a copy started below holds t->last
  for (Peer& p : t->peers) {
    if (p.rebuild && !p.copying && !p.stale) {
      // Hold trimming at what the copy will at least hold, then take it (outside the lock).
      p.copying = true;
      p.chunks_sent = 0;
      p.copy_id = next_copy_id_++;
      p.copy_sequence = t->last;
      fx->push_back([this, id = t->id, peer = p.endpoint] { StartCopy(id, peer); });
      continue;
    }
    if (p.in_flight || p.stale || p.rebuild) continue;
    v1::TabletBatch batch;
    batch.set_tablet_id(t->id);
    batch.set_epoch(t->epoch);
    batch.set_epoch_start_sequence(t->config->epoch_start_sequence);
    batch.set_everyone_has(everyone);
    uint64_t sent_to = p.sent;
    auto it = t->retained.end();
    if (p.known && p.sent < t->last) it = t->retained.find(p.sent + 1);
    if (p.known && p.sent < t->last && it == t->retained.end()) {
      if (p.sent + 1 > t->floor)
        continue;  // a concurrent write is not retained yet: it pumps again
      if (hints_ == nullptr || !hints_->Holds(t->id, p.sent + 1)) {
        p.rebuild = true;
        p.hints_from = 0;
        TLOG_WARN(
            "replication: {}: {} needs sequence {} which is no longer retained; it needs "
            "a rebuild",
            TabletName(t->id), p.endpoint, p.sent + 1);
        continue;
      }
      p.hints_from = p.sent + 1;  // the tick sends it from the hint log
      if (now - p.last_send_us < options_.heartbeat_us) continue;
      batch.set_first_sequence(t->last + 1);  // meanwhile a heartbeat keeps its lease
    } else if (p.known && p.sent < t->last) {
      p.hints_from = 0;
      batch.set_first_sequence(p.sent + 1);
      size_t bytes = 0;
      for (; it != t->retained.end() && it->first == sent_to + 1 &&
             (bytes == 0 || bytes + it->second.mutation.size() <= options_.max_batch_bytes);
           ++it) {
        batch.add_mutations(it->second.mutation);
        bytes += it->second.mutation.size();
        sent_to = it->second.last;
      }
    } else if (now - p.last_send_us < options_.heartbeat_us) {
      continue;  // nothing to send and the lease is fresh
    } else {
      batch.set_first_sequence(t->last + 1);  // a heartbeat
    }
    v1::ReplicateRequest request;
    *request.add_tablets() = std::move(batch);
    p.in_flight = true;
    p.sent = sent_to;
    p.last_send_us = now;
    fx->push_back([this, id = t->id, peer = p.endpoint, epoch = t->epoch, sent_to, now,
                   bytes = request.SerializeAsString()]() mutable {
      // The acknowledgement is counted on the thread it arrives on (it completes waiting
      // writes and sends what queued meanwhile; nothing there waits).
      channel_->CallInline(peer, kReplicateMethod, std::move(bytes), options_.call_timeout_us,
                           [this, id, peer, epoch, sent_to, now](StatusOr<std::string> response) {
                             OnReplicateDone(id, peer, epoch, sent_to, now, std::move(response));
                           });
    });
  }
}

void ReplicaNode::CompleteWaitersLocked(Tablet* t, Effects* fx) {
  const int64_t now = clock_->MonotonicMicros();
  auto keep = t->waiters.begin();
  for (auto it = t->waiters.begin(); it != t->waiters.end(); ++it) {
    size_t required = 0;
    const size_t acks = AcksLocked(*t, it->sequence, it->level, it->dc, &required);
    if (acks >= required) {
      fx->push_back([done = std::move(it->done)] { done(Status()); });
    } else if (now >= it->deadline_us) {
      fx->push_back([done = std::move(it->done), id = t->id, acks, required] {
        done(absl::DeadlineExceededError(
            StrCat(TabletName(id), ": ", acks, " of the ", required,
                   " replicas needed acknowledged the write in time; it may have been applied")));
      });
    } else {
      if (keep != it) *keep = std::move(*it);
      ++keep;
    }
  }
  t->waiters.erase(keep, t->waiters.end());
}

void ReplicaNode::OnReplicateDone(uint64_t tablet_id, std::string peer_endpoint, uint64_t epoch,
                                  uint64_t sent_to, int64_t sent_at_us,
                                  StatusOr<std::string> response) {
  Effects fx;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end()) return;
    Tablet* t = it->second.get();
    if (!t->primary || t->epoch != epoch) return;
    Peer* p = nullptr;
    for (Peer& candidate : t->peers) {
      if (candidate.endpoint == peer_endpoint) p = &candidate;
    }
    if (p == nullptr) return;
    p->in_flight = false;
    v1::ReplicateResponse parsed;
    if (!response.ok() || !parsed.ParseFromString(*response) || parsed.acks_size() != 1) {
      p->answering = false;
      p->sent = p->known ? p->acked : 0;  // resend from what it acknowledged, at the next tick
      return;
    }
    const TabletAck& ack = parsed.acks(0);
    p->answering = true;
    switch (ack.result()) {
      case TabletAck::OK:
        p->known = true;
        p->acked = std::max(p->acked, ack.last_sequence());
        p->sent = p->acked;  // one call in flight per peer: nothing else is on its way
        if (ack.lease_us() > 0) {
          const auto usable = static_cast<int64_t>(static_cast<double>(ack.lease_us()) *
                                                   (1.0 - options_.max_clock_drift)) -
                              options_.lease_margin_us;
          p->lease_until_us = std::max(p->lease_until_us, sent_at_us + usable);
        }
        break;
      case TabletAck::GAP:
        p->known = true;
        p->acked = ack.last_sequence();
        p->sent = p->acked;
        break;
      case TabletAck::STALE_EPOCH:
        p->stale = true;
        p->lease_until_us = 0;
        TLOG_INFO("replication: {}: {} has promised epoch {}, above this primary's {}",
                  TabletName(tablet_id), peer_endpoint, ack.epoch(), epoch);
        break;
      case TabletAck::DIVERGED:
        p->rebuild = true;
        TLOG_WARN("replication: {}: {} holds mutations outside the lineage: {}",
                  TabletName(tablet_id), peer_endpoint, ack.message());
        break;
      default:  // not a replica yet, or failed: try again at the next tick
        p->answering = ack.result() != TabletAck::FAILED;
        p->sent = p->known ? p->acked : 0;
        p->last_send_us = clock_->MonotonicMicros() - options_.heartbeat_us / 2;
        break;
    }
    CompleteWaitersLocked(t, &fx);
    TrimLocked(t);
    PumpLocked(t, &fx);
  }
  RunAll(&fx);
}

// ---------------------------------------------------------------------------------------------
// The replica

bool ReplicaNode::Handle(const std::string& from, const std::string& method, std::string& request,
                         RpcChannel::Responder& respond) {
  if (method == kReplicateMethod) {
    HandleReplicate(from, request, std::move(respond));
    return true;
  }
  if (method == kSealMethod) {
    HandleSeal(request, std::move(respond));
    return true;
  }
  if (method == kRebuildMethod) {
    HandleRebuild(request, std::move(respond));
    return true;
  }
  if (method == kDigestMethod) {
    HandleDigest(request, std::move(respond));
    return true;
  }
  return false;
}

void ReplicaNode::HandleReplicate(const std::string& from, const std::string& request,
                                  RpcChannel::Responder respond) {
  v1::ReplicateRequest parsed;
  if (!parsed.ParseFromString(request)) {
    respond(absl::InvalidArgumentError(StrCat("malformed Replicate call from ", from)));
    return;
  }
  v1::ReplicateResponse response;
  for (const v1::TabletBatch& batch : parsed.tablets())
    ApplyFromPrimary(batch, response.add_acks());
  respond(response.SerializeAsString());
}

void ReplicaNode::ApplyFromPrimary(const v1::TabletBatch& b, TabletAck* out) {
  TabletAck& ack = *out;
  ack.set_tablet_id(b.tablet_id());
  auto answer = [&](TabletAck::Result result, std::string message = "") {
    ack.set_result(result);
    ack.set_message(std::move(message));
  };
  Tablet* t = FindOrAdd(b.tablet_id());
  StatusOr<uint64_t> promise = LoadPromise(t);
  if (!promise.ok()) {
    return answer(absl::IsNotFound(promise.status()) ? TabletAck::NOT_A_REPLICA : TabletAck::FAILED,
                  std::string(promise.status().message()));
  }
  const uint64_t epoch = b.epoch();
  // A message of an epoch this node has disowned, or of one it leads itself.
  auto refused = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ack.set_epoch(PromisedOf(t->promise));
    // Also refused: an epoch older than the configuration known here (its primary is
    // deposed, even if this replica was not among those that sealed the next epoch).
    return epoch < PromisedOf(t->promise) || (t->primary && t->epoch >= epoch) ||
           (t->config.has_value() && t->config->epoch > epoch);
  };
  bool join = false;
  {
    absl::MutexLock l(&mu_);
    if (refused()) return answer(TabletAck::STALE_EPOCH);
    join = JoinedOf(t->promise) != epoch;
  }
  if (join) {
    // Join the epoch: the lineage check, then the durable promise (docs/replication.md).
    Effects fx;
    {
      absl::WriterMutexLock gate(&t->gate);
      StatusOr<uint64_t> last = engine_->LastSequence(t->id);
      if (!last.ok()) return answer(TabletAck::FAILED, std::string(last.status().message()));
      uint64_t new_promise = 0;
      {
        absl::MutexLock l(&mu_);
        if (refused()) return answer(TabletAck::STALE_EPOCH);
        if (!t->config.has_value() || t->config->epoch != epoch) {
          return answer(TabletAck::FAILED, StrCat("the configuration of epoch ", epoch,
                                                  " is not the one known at ", self()));
        }
        if (t->config->IndexOf(self()) < 0) return answer(TabletAck::NOT_A_REPLICA);
        if (!t->config->LineageAllows(JoinedOf(t->promise), *last)) {
          ack.set_last_sequence(*last);
          return answer(TabletAck::DIVERGED,
                        StrCat("joined epoch ", JoinedOf(t->promise), " with sequence ", *last,
                               ", which the lineage of epoch ", epoch, " does not keep"));
        }
        if (t->primary) {
          StepDownLocked(t, StrCat("a primary of epoch ", epoch, " replicates"), &fx);
        }
        new_promise = MakePromise(std::max(PromisedOf(t->promise), epoch), epoch);
      }
      if (Status s = RaisePromise(t, new_promise); !s.ok()) {
        return answer(TabletAck::FAILED, std::string(s.message()));
      }
    }
    RunAll(&fx);
  }
  // Apply, in order (the engine refuses a gap and skips what it already holds).
  std::vector<model::RowMutation> mutations;
  mutations.reserve(static_cast<size_t>(b.mutations_size()));
  for (const std::string& encoded : b.mutations()) {
    StatusOr<model::RowMutation> m = model::RowMutation::FromEncoded(encoded);
    if (!m.ok()) return answer(TabletAck::FAILED, std::string(m.status().message()));
    mutations.push_back(*std::move(m));
  }
  absl::ReaderMutexLock gate(&t->gate);
  {
    absl::MutexLock l(&mu_);
    if (refused()) return answer(TabletAck::STALE_EPOCH);
  }
  StatusOr<uint64_t> last = ApplyReplicatedAt(t, b.first_sequence(), mutations);
  if (!last.ok()) {
    StatusOr<uint64_t> now_last = engine_->LastSequence(t->id);
    ack.set_last_sequence(now_last.ok() ? *now_last : 0);
    if (absl::IsFailedPrecondition(last.status()) && now_last.ok()) {
      return answer(TabletAck::GAP, std::string(last.status().message()));
    }
    return answer(TabletAck::FAILED, std::string(last.status().message()));
  }
  absl::MutexLock l(&mu_);
  if (b.has_everyone_has()) {
    t->members_have = std::max(t->members_have.value_or(0), b.everyone_has());
  }
  // What arrived is kept too: this node may become the primary and have to pass it on. What
  // every member has is not: nobody will ask for it.
  uint64_t first = b.first_sequence();
  for (size_t i = 0; i < mutations.size(); ++i) {
    const uint64_t end = first + mutations[i].size() - 1;
    RetainLocked(t, first, end, std::string(b.mutations(static_cast<int>(i))));
    first = end + 1;
  }
  TrimLocked(t);
  t->last = std::max(t->last, *last);
  t->granted_until_us =
      std::max(t->granted_until_us, clock_->MonotonicMicros() + options_.lease_us);
  ack.set_last_sequence(*last);
  ack.set_lease_us(options_.lease_us);
  ack.set_epoch(PromisedOf(t->promise));
  return answer(TabletAck::OK);
}

void ReplicaNode::HandleSeal(const std::string& request, RpcChannel::Responder respond) {
  v1::SealRequest parsed;
  if (!parsed.ParseFromString(request) || parsed.epoch() == 0) {
    respond(absl::InvalidArgumentError("malformed Seal call"));
    return;
  }
  Tablet* t = FindOrAdd(parsed.tablet_id());
  StatusOr<uint64_t> promise = LoadPromise(t);
  if (!promise.ok()) {
    respond(promise.status());
    return;
  }
  Effects fx;
  {
    absl::WriterMutexLock gate(&t->gate);
    uint64_t new_promise = 0;
    {
      absl::MutexLock l(&mu_);
      const uint64_t promised = PromisedOf(t->promise);
      if (parsed.epoch() < promised) {
        respond(absl::FailedPreconditionError(StrCat(TabletName(t->id), ": epoch ", parsed.epoch(),
                                                     " is older than epoch ", promised,
                                                     " promised here")));
        return;
      }
      if (t->primary && t->epoch < parsed.epoch()) {
        StepDownLocked(t, StrCat("epoch ", parsed.epoch(), " is being sealed"), &fx);
      }
      new_promise = MakePromise(parsed.epoch(), JoinedOf(t->promise));
    }
    if (Status s = RaisePromise(t, new_promise); !s.ok()) {
      respond(s);
      return;
    }
    absl::MutexLock l(&mu_);
    // Answer once every lease granted (by this incarnation, or possibly by the last) is over.
    seals_.push_back(PendingSeal{t->id,
                                 std::max(t->granted_until_us, started_at_us_ + options_.lease_us),
                                 std::move(respond)});
  }
  RunAll(&fx);
}

// ---------------------------------------------------------------------------------------------
// Hints

void ReplicaNode::RunHints() {
  std::vector<std::pair<uint64_t, uint64_t>> acknowledged;  // (tablet, everyone has through)
  std::vector<HintDelivery> deliveries;
  {
    absl::MutexLock l(&mu_);
    const int64_t now = clock_->MonotonicMicros();
    for (auto& [id, t] : tablets_) {
      if (std::optional<uint64_t> everyone = MembersHaveLocked(*t)) {
        acknowledged.emplace_back(id, *everyone);
      }
      if (!t->primary) continue;
      for (Peer& p : t->peers) {
        if (p.hints_from == 0 || p.in_flight || p.stale || p.rebuild) continue;
        const uint64_t budget = hints_->TakeBudget(options_.max_batch_bytes);
        if (budget == 0) break;
        deliveries.push_back(HintDelivery{id, p.endpoint, t->epoch, t->config->epoch_start_sequence,
                                          p.hints_from, budget});
        p.in_flight = true;
        p.last_send_us = now;
        p.hints_from = 0;
      }
    }
  }
  for (const auto& [id, everyone] : acknowledged) hints_->DropThrough(id, everyone);
  hints_->Flush();
  hints_->Maintain();
  for (const HintDelivery& d : deliveries) DeliverHints(d);
}

void ReplicaNode::DeliverHints(const HintDelivery& d) {
  StatusOr<std::vector<HintRecord>> records = hints_->Read(d.tablet_id, d.from, d.budget);
  uint64_t bytes = 0;
  if (records.ok()) {
    for (const HintRecord& r : *records) bytes += r.mutation.size();
  }
  hints_->Settle(d.budget, bytes);
  v1::ReplicateRequest request;
  v1::TabletBatch* batch = request.add_tablets();
  uint64_t sent_to = 0;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(d.tablet_id);
    if (it == tablets_.end() || !it->second->primary || it->second->epoch != d.epoch) return;
    Peer* p = nullptr;
    for (Peer& candidate : it->second->peers) {
      if (candidate.endpoint == d.peer && candidate.in_flight) p = &candidate;
    }
    if (p == nullptr) return;
    if (!records.ok() || records->empty()) {
      // Dropped meanwhile (the window, the size): the next pump finds it gone and rebuilds.
      TLOG_INFO("replication: {}: cannot send {} hints from sequence {}: {}",
                TabletName(d.tablet_id), d.peer, d.from,
                records.ok() ? std::string("none read") : records.status().ToString());
      p->in_flight = false;
      p->sent = p->known ? p->acked : 0;
      return;
    }
    batch->set_tablet_id(d.tablet_id);
    batch->set_epoch(d.epoch);
    batch->set_epoch_start_sequence(d.epoch_start_sequence);
    batch->set_everyone_has(EveryoneHasLocked(*it->second));
    batch->set_first_sequence(records->front().first);
    for (HintRecord& r : *records) batch->add_mutations(std::move(r.mutation));
    sent_to = records->back().last;
    p->sent = sent_to;
  }
  const int64_t now = clock_->MonotonicMicros();
  channel_->Call(d.peer, kReplicateMethod, request.SerializeAsString(), options_.call_timeout_us,
                 [this, id = d.tablet_id, peer = d.peer, epoch = d.epoch, sent_to,
                  now](StatusOr<std::string> response) {
                   OnReplicateDone(id, peer, epoch, sent_to, now, std::move(response));
                 });
}

// ---------------------------------------------------------------------------------------------
// Rebuilds

void ReplicaNode::StartCopy(uint64_t tablet_id, const std::string& peer) {
  StatusOr<std::unique_ptr<tablet::TabletCopySource>> source = engine_->BeginTabletCopy(tablet_id);
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end()) return;
    for (Peer& p : it->second->peers) {
      if (p.endpoint != peer || !p.copying) continue;
      if (!source.ok()) {
        TLOG_WARN("replication: {}: cannot copy it for {}: {}", TabletName(tablet_id), peer,
                  source.status().ToString());
        p.copying = false;  // the next pump tries again
        return;
      }
      p.source = std::shared_ptr<tablet::TabletCopySource>(std::move(*source));
      p.copy_sequence = p.source->sequence();
      p.copy_bytes = 0;
      p.held.reset();
      TLOG_INFO("replication: {}: rebuilding {} from a copy at sequence {}", TabletName(tablet_id),
                peer, p.copy_sequence);
    }
  }
  SendNextChunk(tablet_id, peer);
}

void ReplicaNode::SendNextChunk(uint64_t tablet_id, const std::string& peer) {
  std::shared_ptr<tablet::TabletCopySource> source;
  v1::RebuildRequest request;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end() || !it->second->primary) return;
    for (Peer& p : it->second->peers) {
      if (p.endpoint != peer || !p.copying || p.source == nullptr) continue;
      source = p.source;
      request.set_copy_id(p.copy_id);
      request.set_first(p.chunks_sent++ == 0);
    }
    if (source == nullptr) return;
    request.set_tablet_id(tablet_id);
    request.set_epoch(it->second->epoch);
    request.set_sequence(source->sequence());
  }
  StatusOr<std::string> chunk = source->NextChunk(options_.max_batch_bytes);
  if (!chunk.ok()) {
    OnRebuildDone(tablet_id, peer, request.copy_id(), false, chunk.status());
    return;
  }
  request.set_last(chunk->empty());
  request.set_chunk(*std::move(chunk));
  if (request.last()) {
    for (const auto& [family, sequence] : source->drop_marks()) {
      v1::DropMark* m = request.add_drop_marks();
      m->set_family(family);
      m->set_sequence(sequence);
    }
  }
  const uint64_t copy_id = request.copy_id();
  const bool last = request.last();
  const size_t chunk_bytes = request.chunk().size();
  const int64_t wait_us = stream_limiter_.Reserve(static_cast<int64_t>(chunk_bytes));
  if (wait_us > 0) {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end()) return;
    for (Peer& p : it->second->peers) {
      if (p.endpoint != peer || !p.copying || p.copy_id != copy_id) continue;
      p.held = Peer::HeldChunk{.copy_id = copy_id,
                               .chunk_bytes = chunk_bytes,
                               .last = last,
                               .until_us = clock_->MonotonicMicros() + wait_us,
                               .request = request.SerializeAsString()};
    }
    return;
  }
  SendChunk(tablet_id, peer, copy_id, last, chunk_bytes, request.SerializeAsString());
}

void ReplicaNode::SendChunk(uint64_t tablet_id, const std::string& peer, uint64_t copy_id,
                            bool last, size_t chunk_bytes, std::string request) {
  {
    absl::MutexLock l(&mu_);
    stream_sent_bytes_ += chunk_bytes;
    auto it = tablets_.find(tablet_id);
    if (it != tablets_.end()) {
      for (Peer& p : it->second->peers) {
        if (p.endpoint == peer && p.copy_id == copy_id) p.copy_bytes += chunk_bytes;
      }
    }
  }
  channel_->Call(peer, kRebuildMethod, std::move(request), options_.call_timeout_us,
                 [this, tablet_id, peer, copy_id, last](StatusOr<std::string> response) {
                   OnRebuildDone(tablet_id, peer, copy_id, last, std::move(response));
                 });
}

void ReplicaNode::OnRebuildDone(uint64_t tablet_id, const std::string& peer, uint64_t copy_id,
                                bool last, StatusOr<std::string> response) {
  Effects fx;
  bool next = false;
  {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end()) return;
    Tablet* t = it->second.get();
    Peer* p = nullptr;
    for (Peer& candidate : t->peers) {
      if (candidate.endpoint == peer && candidate.copying && candidate.copy_id == copy_id) {
        p = &candidate;
      }
    }
    if (p == nullptr) return;
    if (!response.ok()) {
      TLOG_WARN("replication: {}: rebuilding {} failed: {}; trying again", TabletName(tablet_id),
                peer, response.status().ToString());
      p->copying = false;
      p->source.reset();
      p->last_send_us = clock_->MonotonicMicros();  // the next tick, not at once
      return;
    }
    if (!last) {
      next = true;
    } else {
      TLOG_INFO("replication: {}: {} rebuilt at sequence {} ({} bytes streamed)",
                TabletName(tablet_id), peer, p->copy_sequence, p->copy_bytes);
      ++copies_done_;
      p->copying = false;
      p->rebuild = false;
      p->source.reset();
      p->known = true;
      p->acked = p->sent = p->copy_sequence;
      p->answering = true;
      CompleteWaitersLocked(t, &fx);
      PumpLocked(t, &fx);
    }
  }
  if (next) SendNextChunk(tablet_id, peer);
  RunAll(&fx);
}

void ReplicaNode::HandleRebuild(const std::string& request, RpcChannel::Responder respond) {
  v1::RebuildRequest r;
  if (!r.ParseFromString(request)) {
    respond(absl::InvalidArgumentError("malformed Rebuild call"));
    return;
  }
  Tablet* t = FindOrAdd(r.tablet_id());
  StatusOr<uint64_t> promise = LoadPromise(t);
  if (!promise.ok()) {
    respond(promise.status());
    return;
  }
  Effects fx;
  Status result;
  {
    absl::WriterMutexLock gate(&t->gate);
    {
      absl::MutexLock l(&mu_);
      if (r.epoch() < PromisedOf(t->promise) || (t->primary && t->epoch >= r.epoch())) {
        respond(absl::FailedPreconditionError(StrCat(TabletName(t->id), ": stale epoch ", r.epoch(),
                                                     "; promised ", PromisedOf(t->promise))));
        return;
      }
      if (!t->config.has_value() || t->config->epoch != r.epoch() ||
          t->config->IndexOf(self()) < 0) {
        respond(absl::UnavailableError(StrCat("the configuration of epoch ", r.epoch(), " naming ",
                                              self(), " has not reached it")));
        return;
      }
      if (t->primary)
        StepDownLocked(t, StrCat("a primary of epoch ", r.epoch(), " rebuilds it"), &fx);
    }
    if (r.first()) {
      StatusOr<std::unique_ptr<tablet::TabletCopySink>> sink = engine_->BeginTabletRebuild(t->id);
      if (!sink.ok()) {
        respond(sink.status());
        return;
      }
      absl::MutexLock l(&mu_);
      t->sink = *std::move(sink);
      t->sink_copy_id = r.copy_id();
    }
    tablet::TabletCopySink* sink = nullptr;
    {
      absl::MutexLock l(&mu_);
      if (t->sink != nullptr && t->sink_copy_id == r.copy_id()) sink = t->sink.get();
    }
    if (sink == nullptr) {
      respond(absl::FailedPreconditionError(
          StrCat(TabletName(t->id), ": no copy ", r.copy_id(), " under way here")));
      return;
    }
    if (!r.chunk().empty()) {
      result = sink->Add(r.chunk());
      absl::MutexLock l(&mu_);
      if (result.ok()) stream_received_bytes_ += r.chunk().size();
    }
    if (result.ok() && r.last()) {
      tablet::DropMarks marks;
      for (const v1::DropMark& m : r.drop_marks()) marks[m.family()] = m.sequence();
      result = sink->Finish(r.sequence(), marks);
      if (result.ok()) {
        // Its content is now the lineage of this epoch at the copy's sequence.
        result =
            RaisePromise(t, MakePromise(std::max(PromisedOf(t->promise), r.epoch()), r.epoch()));
      }
      absl::MutexLock l(&mu_);
      t->sink.reset();
      if (result.ok()) {
        t->last = r.sequence();
        t->retained.clear();
        t->retained_bytes = 0;
        t->floor = r.sequence();
      }
    } else if (!result.ok()) {
      absl::MutexLock l(&mu_);
      t->sink.reset();
    }
  }
  RunAll(&fx);
  if (!result.ok()) {
    respond(result);
    return;
  }
  // Its content is the copy's now: hints it kept as a primary before are not its lineage.
  if (r.last() && hints_ != nullptr) hints_->DropTablet(t->id);
  v1::RebuildResponse response;
  response.set_last_sequence(r.sequence());
  respond(response.SerializeAsString());
}

void ReplicaNode::ScheduleTick() {
  tick_timer_ = executor_->ScheduleAfter(options_.tick_us, [this] { Tick(); });
}

void ReplicaNode::Tick() {
  Effects fx;
  std::vector<PendingSeal> due;
  {
    absl::MutexLock l(&mu_);
    if (!running_) return;
    ticking_ = true;
    const int64_t now = clock_->MonotonicMicros();
    for (auto& [id, t] : tablets_) {
      ExpireDigestLocked(t.get(), now, &fx);
      if (!t->primary) continue;
      for (Peer& p : t->peers) {
        // A call that outlived its timeout without a callback is treated as lost.
        if (p.in_flight && now - p.last_send_us > 2 * options_.call_timeout_us) {
          p.in_flight = false;
          p.sent = p.known ? p.acked : 0;
        }
      }
      CompleteWaitersLocked(t.get(), &fx);
      PumpLocked(t.get(), &fx);
      for (Peer& p : t->peers) {
        if (!p.held.has_value()) continue;
        if (!p.copying || p.copy_id != p.held->copy_id) {
          p.held.reset();  // its copy ended (failed, or the peer left) while it waited
        } else if (now >= p.held->until_us) {
          fx.push_back([this, id = id, peer = p.endpoint, h = *std::move(p.held)]() mutable {
            SendChunk(id, peer, h.copy_id, h.last, h.chunk_bytes, std::move(h.request));
          });
          p.held.reset();
        }
      }
    }
    auto keep = seals_.begin();
    for (auto it = seals_.begin(); it != seals_.end(); ++it) {
      if (now >= it->wait_until_us) {
        due.push_back(std::move(*it));
      } else {
        if (keep != it) *keep = std::move(*it);
        ++keep;
      }
    }
    seals_.erase(keep, seals_.end());
  }
  // Configurations that named this node primary before its engine held the tablet.
  std::vector<TabletConfig> lead_again;
  {
    absl::MutexLock l(&mu_);
    for (auto& [id, t] : tablets_) {
      if (t->lead_pending && !t->primary && t->config.has_value()) lead_again.push_back(*t->config);
    }
  }
  for (const TabletConfig& config : lead_again) UpdateConfig(config);
  for (PendingSeal& s : due) {
    StatusOr<uint64_t> last = engine_->LastSequence(s.tablet_id);
    if (!last.ok()) {
      s.respond(last.status());
      continue;
    }
    Tablet* t = Find(s.tablet_id);
    v1::SealResponse response;
    response.set_last_sequence(*last);
    {
      absl::MutexLock l(&mu_);
      response.set_epoch(PromisedOf(t->promise));
      response.set_joined(JoinedOf(t->promise));
    }
    s.respond(response.SerializeAsString());
  }
  if (hints_ != nullptr) RunHints();
  RunAll(&fx);
  absl::MutexLock l(&mu_);
  ticking_ = false;
  if (running_) ScheduleTick();
}

StatusOr<ReplicaPosition> ReplicaNode::Position(uint64_t tablet_id) {
  Tablet* t = Find(tablet_id);
  if (t == nullptr) {
    return absl::NotFoundError(StrCat(TabletName(tablet_id), " has no replica at ", self()));
  }
  ASSIGN_OR_RETURN(uint64_t promise, LoadPromise(t));
  ASSIGN_OR_RETURN(uint64_t last, engine_->LastSequence(tablet_id));
  return ReplicaPosition{JoinedOf(promise), last};
}

void ReplicaNode::SetStreamBytesPerSecond(int64_t bytes_per_second) {
  stream_limiter_.SetBytesPerSecond(bytes_per_second);
  absl::MutexLock l(&mu_);
  const int64_t now = clock_->MonotonicMicros();
  for (auto& [id, t] : tablets_) {
    for (Peer& p : t->peers) {
      if (p.held.has_value()) p.held->until_us = std::min(p.held->until_us, now);
    }
  }
}

StreamStats ReplicaNode::Streams() const {
  StreamStats s;
  absl::MutexLock l(&mu_);
  for (const auto& [id, t] : tablets_) {
    if (t->sink != nullptr) ++s.receiving;
    if (!t->primary) continue;
    for (const Peer& p : t->peers) {
      if (!p.copying) continue;
      ++s.sending;
      s.sending_bytes += p.copy_bytes;
    }
  }
  s.sent_bytes_total = stream_sent_bytes_;
  s.received_bytes_total = stream_received_bytes_;
  s.copies_done_total = copies_done_;
  return s;
}

std::vector<TabletReplicaState> ReplicaNode::States() const {
  std::vector<TabletReplicaState> out;
  absl::MutexLock l(&mu_);
  const int64_t now = clock_->MonotonicMicros();
  for (const auto& [id, t] : tablets_) {
    TabletReplicaState s;
    s.tablet_id = id;
    s.config_epoch = t->config.has_value() ? t->config->epoch : 0;
    s.promised_epoch = PromisedOf(t->promise);
    s.joined_epoch = JoinedOf(t->promise);
    s.primary = t->primary;
    s.last_sequence = t->last;
    s.retained_bytes = t->retained_bytes;
    if (hints_ != nullptr) {
      const HintTabletStats h = hints_->Stats(id);
      s.hint_bytes = h.bytes;
      s.hint_records = h.records;
    }
    for (const Peer& p : t->peers) {
      s.peers.push_back({p.endpoint, p.known ? p.acked : 0, p.answering, p.lease_until_us > now,
                         p.rebuild, p.copying});
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera::replication
