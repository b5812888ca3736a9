#include "tessera/replication/quorum_read.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "tessera/replication/consistency.h"

namespace tessera::replication {
namespace {

// A copy that holds what `joined` and `last` describe belongs to the lineage of `config`.
bool InLineage(const catalog::TabletConfig& config, uint64_t joined, uint64_t last) {
  return joined <= config.epoch && config.LineageAllows(joined, last);
}

class QuorumReadRun : public std::enable_shared_from_this<QuorumReadRun> {
 public:
  QuorumReadRun(const catalog::TabletConfig& config, ReadPageAt read, PositionAt position,
                CurrentConfig current, ExecutorScope* executor, Clock* clock, int64_t deadline_us,
                const QuorumReadOptions& options, std::function<void(StatusOr<ReadPage>)> done)
      : tablet_id_(config.tablet_id),
        need_(Majority(config.replicas.size())),
        read_(std::move(read)),
        position_(std::move(position)),
        current_(std::move(current)),
        executor_(executor),
        clock_(clock),
        deadline_us_(deadline_us),
        options_(options),
        done_(std::move(done)),
        config_(config) {
    for (size_t i = 0; i < config.replicas.size(); ++i) {
      if (!config.NeedsRebuild(i)) members_.push_back(Member{config.replicas[i]});
    }
  }

  void Start() {
    std::optional<Status> refused;
    {
      absl::MutexLock l(&mu_);
      if (members_.size() < need_) {
        finished_ = true;
        refused = absl::UnavailableError(
            StrCat(NameLocked(), ": ", members_.size(), " of ", config_.replicas.size(),
                   " replicas can serve a QUORUM read, which needs ", need_));
      }
    }
    if (refused.has_value()) return Finish(*refused);
    std::vector<std::string> endpoints;
    {
      absl::MutexLock l(&mu_);
      for (const Member& m : members_) endpoints.push_back(m.endpoint);
    }
    for (size_t i = 0; i < endpoints.size(); ++i) {
      auto self = shared_from_this();
      read_(endpoints[i],
            [self, i](StatusOr<ReadPage> page) { self->OnPage(i, std::move(page)); });
    }
  }

 private:
  struct Member {
    std::string endpoint;
    bool answered = false;  // its page came (or failed)
    std::optional<ReadPage> page;
    std::optional<ReplicaPosition> position;  // latest known
    bool polling = false;
    int64_t poll_us = 0;
  };

  std::string NameLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return StrCat(catalog::TabletName(tablet_id_), " (epoch ", config_.epoch, ")");
  }

  void OnPage(size_t i, StatusOr<ReadPage> page) {
    std::optional<StatusOr<ReadPage>> outcome;
    {
      absl::MutexLock l(&mu_);
      if (finished_) return;
      Member& m = members_[i];
      m.answered = true;
      if (page.ok()) {
        m.position = ReplicaPosition{page->joined_epoch, page->sequence_after};
        m.page = *std::move(page);
      } else {
        errors_.push_back(StrCat(m.endpoint, ": ", page.status().message()));
      }
      outcome = chosen_.has_value() ? RepairLocked() : ChooseLocked();
      if (outcome.has_value()) finished_ = true;
    }
    if (outcome.has_value()) Finish(*std::move(outcome));
  }

  void OnPosition(size_t i, StatusOr<ReplicaPosition> position) {
    std::optional<StatusOr<ReadPage>> outcome;
    {
      absl::MutexLock l(&mu_);
      if (finished_) return;
      members_[i].polling = false;
      if (position.ok()) members_[i].position = *position;
      outcome = RepairLocked();
      if (outcome.has_value()) finished_ = true;
    }
    if (outcome.has_value()) Finish(*std::move(outcome));
  }

  void RefreshConfigLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::optional<catalog::TabletConfig> now = current_();
    if (now.has_value() && now->epoch >= config_.epoch) config_ = *std::move(now);
  }

  // Picks the page once `need_` answers of the lineage are in; an outcome when the read is
  // over (chosen and already repaired, or hopeless).
  std::optional<StatusOr<ReadPage>> ChooseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RefreshConfigLocked();
    size_t lineage = 0, pending = 0;
    std::optional<size_t> best;
    for (size_t i = 0; i < members_.size(); ++i) {
      const Member& m = members_[i];
      if (!m.answered) {
        ++pending;
        continue;
      }
      if (!m.page.has_value()) continue;
      if (!InLineage(config_, m.page->joined_epoch, m.page->sequence_after)) continue;
      ++lineage;
      if (!best.has_value() || m.page->sequence_before > members_[*best].page->sequence_before) {
        best = i;
      }
    }
    if (lineage + pending < need_) {
      return absl::UnavailableError(
          StrCat(NameLocked(), ": ", lineage, " of ", config_.replicas.size(),
                 " replicas answered a QUORUM read with the tablet's current content, which "
                 "needs ",
                 need_, errors_.empty() ? "" : StrCat(" (", absl::StrJoin(errors_, "; "), ")")));
    }
    if (lineage < need_) return std::nullopt;  // wait for more answers
    chosen_ = best;
    return RepairLocked();
  }

  // Counts the members holding the chosen page's content; done once a majority does. Else
  // asks the lagging ones again, until the deadline.
  std::optional<StatusOr<ReadPage>> RepairLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RefreshConfigLocked();
    const ReadPage& page = *members_[*chosen_].page;
    if (!InLineage(config_, page.joined_epoch, page.sequence_after)) {
      // A failover left the chosen content behind (a deposed primary's writes no majority
      // took): it must not be returned.
      return absl::UnavailableError(
          StrCat(NameLocked(), ": the QUORUM read's newest answer is no longer the tablet's content "
                         "(the tablet failed over during the read)"));
    }
    const uint64_t target = page.sequence_after;
    size_t holding = 0;
    for (const Member& m : members_) {
      if (m.position.has_value() && m.position->last_sequence >= target &&
          InLineage(config_, m.position->joined_epoch, m.position->last_sequence)) {
        ++holding;
      }
    }
    if (holding >= need_) return ReadPage(page);
    if (clock_->MonotonicMicros() >= deadline_us_) {
      return absl::UnavailableError(StrCat(NameLocked(), ": read repair: ", holding, " of ",
                                           config_.replicas.size(), " replicas hold sequence ",
                                           target, " within the deadline, a QUORUM read needs ",
                                           need_));
    }
    for (size_t i = 0; i < members_.size(); ++i) {
      Member& m = members_[i];
      if (m.polling) continue;
      if (m.position.has_value() && m.position->last_sequence >= target) continue;
      m.polling = true;
      m.poll_us = m.poll_us == 0 ? options_.first_poll_us
                                 : std::min(2 * m.poll_us, options_.max_poll_us);
      const int64_t wait =
          std::max<int64_t>(1, std::min(m.poll_us, deadline_us_ - clock_->MonotonicMicros()));
      auto self = shared_from_this();
      executor_->ScheduleAfter(
          wait, [self, i] { self->Poll(i); }, [self] { self->Abandon(); });
    }
    return std::nullopt;
  }

  // A poll was dropped: the node is stopping.
  void Abandon() {
    std::string name;
    {
      absl::MutexLock l(&mu_);
      if (finished_) return;
      finished_ = true;
      name = NameLocked();
    }
    Finish(absl::UnavailableError(StrCat(name, ": the node is stopping")));
  }

  void Poll(size_t i) {
    std::string endpoint;
    {
      absl::MutexLock l(&mu_);
      if (finished_) return;
      endpoint = members_[i].endpoint;
    }
    auto self = shared_from_this();
    position_(endpoint, [self, i](StatusOr<ReplicaPosition> p) {
      self->OnPosition(i, std::move(p));
    });
  }

  void Finish(StatusOr<ReadPage> outcome) {
    std::function<void(StatusOr<ReadPage>)> done = std::move(done_);
    done(std::move(outcome));
  }

  const uint64_t tablet_id_;
  const size_t need_;
  const ReadPageAt read_;
  const PositionAt position_;
  const CurrentConfig current_;
  ExecutorScope* const executor_;
  Clock* const clock_;
  const int64_t deadline_us_;
  const QuorumReadOptions options_;
  std::function<void(StatusOr<ReadPage>)> done_;  // called once, by whoever sets finished_

  absl::Mutex mu_;
  catalog::TabletConfig config_ ABSL_GUARDED_BY(mu_);
  std::vector<Member> members_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
  std::optional<size_t> chosen_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

void RunQuorumRead(const catalog::TabletConfig& config, ReadPageAt read, PositionAt position,
                   CurrentConfig current, ExecutorScope* executor, Clock* clock,
                   int64_t deadline_us, const QuorumReadOptions& options,
                   std::function<void(StatusOr<ReadPage>)> done) {
  auto run = std::make_shared<QuorumReadRun>(config, std::move(read), std::move(position),
                                             std::move(current), executor, clock, deadline_us,
                                             options, std::move(done));
  run->Start();
}

}  // namespace tessera::replication
