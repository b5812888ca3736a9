// ReplicaNode's repair (docs/repair.md): the primary of a tablet hashes its copy at its last
// sequence S and asks every other replica for the digest of its copy at exactly S; replicas
// that differ are marked for a rebuild. A replica below S waits for it: the apply that reaches
// S is split there (ApplyReplicatedAt), so the copy is taken between two applies and no write
// waits for the hashing, which runs on the executor.
#include <algorithm>
#include <utility>

#include "tessera/catalog/tablet_id.h"
#include "tessera/replication/replica_node.h"
#include "tessera/replication/replica_node_state.h"
#include "tessera/util/logging.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::replication {
namespace {

using catalog::TabletName;
using replica_internal::PromisedOf;
using replica_internal::RunAll;
using v1::DigestResponse;

// A replica that writes keep moving past the sequence asked for is asked again at a newer one
// this many times in all.
constexpr int kMaxAttempts = 3;

std::string Answer(DigestResponse::Result result, uint64_t last) {
  DigestResponse r;
  r.set_result(result);
  r.set_last_sequence(last);
  return r.SerializeAsString();
}

std::string Hex(std::string_view bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < std::min(n, bytes.size()); ++i) {
    out += kDigits[static_cast<unsigned char>(bytes[i]) >> 4];
    out += kDigits[static_cast<unsigned char>(bytes[i]) & 15];
  }
  return out;
}

}  // namespace

// One RepairTablet under way, shared by the callbacks of its attempt.
struct ReplicaNode::RepairRun {
  uint64_t tablet_id = 0;
  int64_t timeout_us = 0;
  int attempts = 0;
  std::function<void(StatusOr<TabletRepairReport>)> done;

  absl::Mutex mu;
  uint64_t epoch ABSL_GUARDED_BY(mu) = 0;
  uint64_t sequence ABSL_GUARDED_BY(mu) = 0;
  size_t waiting ABSL_GUARDED_BY(mu) = 0;
  std::optional<StatusOr<TabletDigest>> own ABSL_GUARDED_BY(mu);
  std::vector<std::string> asked ABSL_GUARDED_BY(mu);
  std::vector<StatusOr<DigestResponse>> answers ABSL_GUARDED_BY(mu);
  std::vector<ReplicaRepair> settled ABSL_GUARDED_BY(mu);  // not asked: a rebuild is under way

  // True for the last of the attempt's answers.
  bool Arrived() {
    absl::MutexLock l(&mu);
    return --waiting == 0;
  }
};

// ---------------------------------------------------------------------------------------------
// The replica

void ReplicaNode::HandleDigest(const std::string& request, RpcChannel::Responder respond) {
  v1::DigestRequest parsed;
  if (!parsed.ParseFromString(request) || parsed.sequence() == 0) {
    respond(absl::InvalidArgumentError("malformed Digest call"));
    return;
  }
  Tablet* t = FindOrAdd(parsed.tablet_id());
  StatusOr<uint64_t> promise = LoadPromise(t);
  if (!promise.ok()) {
    if (!absl::IsNotFound(promise.status())) {
      respond(promise.status());
    } else {
      respond(Answer(DigestResponse::NOT_A_REPLICA, 0));
    }
    return;
  }
  // Exclusive: no apply moves the copy between the look at its sequence and the snapshot, or
  // between the look and the digest's being recorded for the apply that reaches it.
  absl::WriterMutexLock gate(&t->gate);
  StatusOr<uint64_t> last = engine_->LastSequence(t->id);
  if (!last.ok()) {
    respond(last.status());
    return;
  }
  PendingDigest pending{.sequence = parsed.sequence(),
                        .gc_as_of_micros = parsed.gc_as_of_micros(),
                        .deadline_us = clock_->MonotonicMicros() + parsed.wait_us(),
                        .respond = std::move(respond)};
  {
    absl::MutexLock l(&mu_);
    if (parsed.epoch() < PromisedOf(t->promise)) {
      pending.respond(Answer(DigestResponse::STALE_EPOCH, *last));
      return;
    }
    if (*last < pending.sequence) {
      if (t->digest.has_value()) {
        pending.respond(Answer(DigestResponse::BUSY, *last));
      } else {
        t->digest = std::move(pending);
      }
      return;
    }
  }
  if (*last > pending.sequence) {
    pending.respond(Answer(DigestResponse::MOVED_PAST, *last));
    return;
  }
  DigestNow(t, std::move(pending));
}

StatusOr<uint64_t> ReplicaNode::ApplyReplicatedAt(Tablet* t, uint64_t first,
                                                  std::span<const model::RowMutation> mutations) {
  auto apply = [&](uint64_t from, std::span<const model::RowMutation> part) {
    return part.empty() ? engine_->LastSequence(t->id)
                        : engine_->ApplyReplicated(t->id, from, part);
  };
  // Where a digest's sequence ends a mutation of the batch, the batch is applied in two parts
  // and the copy hashed between them.
  std::optional<PendingDigest> digest;
  size_t split = 0;
  {
    absl::MutexLock l(&mu_);
    if (t->digest.has_value() && !mutations.empty()) {
      uint64_t end = first - 1;
      for (size_t i = 0; i <= mutations.size(); ++i) {
        if (end == t->digest->sequence) {
          split = i;
          digest = std::move(t->digest);
          t->digest.reset();
          break;
        }
        if (i < mutations.size()) end += mutations[i].size();
      }
    }
  }
  if (!digest.has_value()) return apply(first, mutations);
  StatusOr<uint64_t> last = apply(first, mutations.first(split));
  if (!last.ok()) {
    // The digest waits on for a retransmit (unless another came meanwhile: then it is busy).
    absl::MutexLock l(&mu_);
    if (t->digest.has_value()) {
      digest->respond(Answer(DigestResponse::BUSY, 0));
    } else {
      t->digest = std::move(digest);
    }
    return last;
  }
  const uint64_t at = digest->sequence;
  DigestNow(t, *std::move(digest));
  return apply(at + 1, mutations.subspan(split));
}

void ReplicaNode::DigestNow(Tablet* t, PendingDigest pending) {
  tablet::ScanOptions options;
  options.gc_as_of_micros = pending.gc_as_of_micros;
  StatusOr<std::unique_ptr<tablet::RowIterator>> rows =
      engine_->Scan(t->id, model::RowRange{}, model::ReadSpec{}, options);
  if (!rows.ok()) {
    pending.respond(rows.status());
    return;
  }
  // A concurrent apply (a retransmit) may have moved the copy between the two looks: the
  // snapshot, taken between them, is at the sequence only if both saw it.
  StatusOr<uint64_t> last = engine_->LastSequence(t->id);
  if (!last.ok() || *last != pending.sequence) {
    pending.respond(Answer(DigestResponse::MOVED_PAST, last.ok() ? *last : 0));
    return;
  }
  HashLater(*std::move(rows), [respond = std::move(pending.respond),
                               sequence = pending.sequence](StatusOr<TabletDigest> digest) {
    if (!digest.ok()) {
      respond(digest.status());
      return;
    }
    DigestResponse r;
    r.set_result(DigestResponse::OK);
    r.set_last_sequence(sequence);
    r.set_sha256(digest->sha256);
    r.set_rows(digest->rows);
    r.set_cells(digest->cells);
    r.set_bytes(digest->bytes);
    respond(r.SerializeAsString());
  });
}

void ReplicaNode::ExpireDigestLocked(Tablet* t, int64_t now, Effects* fx) {
  if (!t->digest.has_value()) return;
  if (t->last > t->digest->sequence) {
    fx->push_back([respond = std::move(t->digest->respond), last = t->last] {
      respond(Answer(DigestResponse::MOVED_PAST, last));
    });
  } else if (now >= t->digest->deadline_us) {
    fx->push_back([respond = std::move(t->digest->respond), last = t->last] {
      respond(Answer(DigestResponse::BEHIND, last));
    });
  } else {
    return;
  }
  t->digest.reset();
}

void ReplicaNode::HashLater(std::unique_ptr<tablet::RowIterator> rows,
                            std::function<void(StatusOr<TabletDigest>)> done) {
  uint64_t id = 0;
  {
    absl::MutexLock l(&mu_);
    if (!running_) {
      done(absl::UnavailableError("the node is stopping"));
      return;
    }
    id = next_hash_job_++;
    hash_jobs_.emplace(id, HashJob{std::move(rows), std::move(done)});
  }
  executor_->Schedule([this, id, life = life_] {
    if (!life->Enter()) return;
    HashJob job;
    {
      absl::MutexLock l(&mu_);
      auto it = hash_jobs_.find(id);
      if (it == hash_jobs_.end()) {
        life->Leave();
        return;
      }
      job = std::move(it->second);
      hash_jobs_.erase(it);
    }
    StatusOr<TabletDigest> digest = DigestRows(*job.rows, &repair_hashed_bytes_);
    job.rows.reset();
    job.done(std::move(digest));
    life->Leave();
  });
}

// ---------------------------------------------------------------------------------------------
// The primary

void ReplicaNode::RepairTablet(uint64_t tablet_id, int64_t timeout_us,
                               std::function<void(StatusOr<TabletRepairReport>)> done) {
  auto run = std::make_shared<RepairRun>();
  run->tablet_id = tablet_id;
  run->timeout_us = timeout_us;
  run->done = [this, done = std::move(done)](StatusOr<TabletRepairReport> report) {
    repairs_in_progress_.fetch_sub(1, std::memory_order_relaxed);
    done(std::move(report));
  };
  repairs_in_progress_.fetch_add(1, std::memory_order_relaxed);
  StartRepairAttempt(std::move(run));
}

RepairStats ReplicaNode::Repairs() const {
  return RepairStats{.in_progress = repairs_in_progress_.load(std::memory_order_relaxed),
                     .hashed_bytes_total = repair_hashed_bytes_.load(std::memory_order_relaxed)};
}

void ReplicaNode::StartRepairAttempt(std::shared_ptr<RepairRun> run) {
  ++run->attempts;
  Tablet* t = Find(run->tablet_id);
  if (t == nullptr) return run->done(CheckPrimary(run->tablet_id, 0));
  std::vector<std::string> ask;
  std::vector<ReplicaRepair> settled;
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  const int64_t gc_as_of = clock_->NowMicros();
  StatusOr<std::unique_ptr<tablet::RowIterator>> rows;
  {
    // Exclusive: no write is numbered between the look at the sequence and the snapshot.
    absl::WriterMutexLock gate(&t->gate);
    {
      absl::MutexLock l(&mu_);
      if (Status s = CheckPrimaryLocked(*t, 0); !s.ok()) return run->done(s);
      epoch = t->epoch;
      for (const Peer& p : t->peers) {
        if (p.rebuild || p.copying) {
          settled.push_back(ReplicaRepair{.endpoint = p.endpoint,
                                          .outcome = RepairOutcome::kRebuilding,
                                          .message = "a rebuild of it is under way"});
        } else {
          ask.push_back(p.endpoint);
        }
      }
    }
    StatusOr<uint64_t> last = engine_->LastSequence(t->id);
    if (!last.ok()) return run->done(last.status());
    sequence = *last;
    tablet::ScanOptions options;
    options.gc_as_of_micros = gc_as_of;
    rows = engine_->Scan(t->id, model::RowRange{}, model::ReadSpec{}, options);
  }
  if (!rows.ok()) return run->done(rows.status());
  if (sequence == 0) {
    // Nothing was ever written: every copy is empty there (a digest asks for a sequence >= 1).
    for (const std::string& endpoint : ask) {
      settled.push_back(ReplicaRepair{.endpoint = endpoint,
                                      .outcome = RepairOutcome::kConsistent,
                                      .message = "nothing written yet"});
    }
    ask.clear();
  }
  {
    absl::MutexLock l(&run->mu);
    run->epoch = epoch;
    run->sequence = sequence;
    run->waiting = ask.size() + 1;
    run->own.reset();
    run->asked = ask;
    run->answers.assign(ask.size(), absl::UnavailableError("not answered"));
    run->settled = std::move(settled);
  }
  HashLater(*std::move(rows), [this, run](StatusOr<TabletDigest> digest) {
    {
      absl::MutexLock l(&run->mu);
      run->own = std::move(digest);
    }
    if (run->Arrived()) FinishRepairAttempt(run);
  });
  v1::DigestRequest request;
  request.set_tablet_id(run->tablet_id);
  request.set_epoch(epoch);
  request.set_sequence(sequence);
  request.set_gc_as_of_micros(gc_as_of);
  request.set_wait_us(run->timeout_us / 2);  // the other half hashes
  for (size_t i = 0; i < ask.size(); ++i) {
    channel_->Call(ask[i], kDigestMethod, request.SerializeAsString(), run->timeout_us,
                   [this, run, i](StatusOr<std::string> response) {
                     StatusOr<DigestResponse> answer =
                         absl::InternalError("a malformed Digest answer");
                     if (!response.ok()) {
                       answer = response.status();
                     } else if (DigestResponse parsed; parsed.ParseFromString(*response)) {
                       answer = std::move(parsed);
                     }
                     {
                       absl::MutexLock l(&run->mu);
                       run->answers[i] = std::move(answer);
                     }
                     if (run->Arrived()) FinishRepairAttempt(run);
                   });
  }
}

void ReplicaNode::FinishRepairAttempt(std::shared_ptr<RepairRun> run) {
  TabletRepairReport report;
  report.tablet_id = run->tablet_id;
  std::vector<std::string> rebuild;
  bool again = false;
  uint64_t epoch = 0;
  Status own_failed;
  {
    absl::MutexLock l(&run->mu);
    if (!run->own.has_value() || !run->own->ok()) {
      own_failed = run->own.has_value() ? run->own->status() : absl::InternalError("no digest");
    }
  }
  if (!own_failed.ok()) return run->done(own_failed);
  {
    absl::MutexLock l(&run->mu);
    epoch = run->epoch;
    report.sequence = run->sequence;
    report.primary = **run->own;
    report.replicas = run->settled;
    for (size_t i = 0; i < run->asked.size(); ++i) {
      ReplicaRepair r;
      r.endpoint = run->asked[i];
      const StatusOr<DigestResponse>& answer = run->answers[i];
      if (!answer.ok()) {
        r.outcome = RepairOutcome::kFailed;
        r.message = std::string(answer.status().message());
      } else {
        r.rows = answer->rows();
        r.cells = answer->cells();
        switch (answer->result()) {
          case DigestResponse::OK:
            if (answer->sha256() == report.primary.sha256) {
              r.outcome = RepairOutcome::kConsistent;
            } else {
              r.outcome = RepairOutcome::kRebuilding;
              r.message =
                  StrCat("its copy differs (", answer->rows(), " rows, ", answer->cells(),
                         " cells, sha256 ", Hex(answer->sha256(), 4), "…; here ",
                         report.primary.rows, " rows, ", report.primary.cells, " cells, sha256 ",
                         Hex(report.primary.sha256, 4), "…): rebuilt from a copy");
              rebuild.push_back(r.endpoint);
            }
            break;
          case DigestResponse::MOVED_PAST:
            if (run->attempts < kMaxAttempts) again = true;
            r.outcome = RepairOutcome::kBusy;
            r.message = StrCat("writes moved it past each of the ", run->attempts,
                               " sequences tried (now at ", answer->last_sequence(), ")");
            break;
          case DigestResponse::BEHIND:
            r.outcome = RepairOutcome::kBehind;
            r.message = StrCat("at sequence ", answer->last_sequence(), " of ", report.sequence);
            break;
          case DigestResponse::BUSY:
            r.outcome = RepairOutcome::kBusy;
            r.message = "another repair of the tablet waits there";
            break;
          case DigestResponse::STALE_EPOCH:
            r.outcome = RepairOutcome::kFailed;
            r.message = "it promised a newer epoch: this node is no longer the primary";
            break;
          default:
            r.outcome = RepairOutcome::kFailed;
            r.message = "it holds no copy of the tablet";
            break;
        }
      }
      report.replicas.push_back(std::move(r));
    }
  }
  if (again) return StartRepairAttempt(std::move(run));
  Effects fx;
  if (!rebuild.empty()) {
    absl::MutexLock l(&mu_);
    auto it = tablets_.find(run->tablet_id);
    Tablet* t = it == tablets_.end() ? nullptr : it->second.get();
    if (t != nullptr && t->primary && t->epoch == epoch) {
      for (Peer& p : t->peers) {
        if (std::find(rebuild.begin(), rebuild.end(), p.endpoint) == rebuild.end()) continue;
        TLOG_WARN("repair: {}: {}'s copy differs from the primary's at sequence {}: rebuilding it",
                  TabletName(t->id), p.endpoint, report.sequence);
        p.rebuild = true;
      }
      PumpLocked(t, &fx);
    }
  }
  RunAll(&fx);
  std::sort(report.replicas.begin(), report.replicas.end(),
            [](const ReplicaRepair& a, const ReplicaRepair& b) { return a.endpoint < b.endpoint; });
  run->done(std::move(report));
}

}  // namespace tessera::replication
