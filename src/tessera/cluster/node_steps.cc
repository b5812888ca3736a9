// ClusterNode's loops (node.h, "Time and threads"): the join wait, gossip rounds and the
// coordinator, each a chain of timer tasks on the node's executor, and how Stop ends them.
#include <algorithm>

#include "tessera/cluster/node.h"
#include "tessera/util/logging.h"

namespace tessera::cluster {

namespace {

// How long AnnounceShutdown waits for its pushes to leave.
constexpr int64_t kAnnounceDrainMs = 1000;

}  // namespace

void ClusterNode::AnnounceShutdown() {
  {
    absl::MutexLock lock(&mu_);
    // A node that never finished starting has nobody to tell.
    if (announced_ || !started_) return;
    announced_ = true;
  }
  gossiper_->AnnounceShutdown();
  transport_->Drain(kAnnounceDrainMs);
}

void ClusterNode::Stop() {
  AnnounceShutdown();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (Loop loop : {Loop::kJoin, Loop::kGossip, Loop::kCoordinator}) {
      LoopState& state = StateOf(loop);
      if (state.timer != 0 && ExecutorOf(loop)->Cancel(state.timer)) --state.scheduled;
      state.timer = 0;
    }
    // A step that is running finishes, and one about to start returns at once (both see
    // stopping_ and schedule nothing).
    mu_.Await(absl::Condition(
        +[](ClusterNode* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
          for (const LoopState* s : {&self->join_, &self->gossip_, &self->coordinator_}) {
            if (s->running || s->scheduled > 0) return false;
          }
          return true;
        },
        this));
  }
  DropSession();
}

ClusterNode::LoopState& ClusterNode::StateOf(Loop loop) {
  switch (loop) {
    case Loop::kJoin:
      return join_;
    case Loop::kGossip:
      return gossip_;
    case Loop::kCoordinator:
      break;
  }
  return coordinator_;
}

Executor* ClusterNode::ExecutorOf(Loop loop) const {
  const bool own = loop == Loop::kGossip && options_.gossip_executor != nullptr;
  return own ? options_.gossip_executor : env_.executor;
}

void ClusterNode::ScheduleLocked(Loop loop, int64_t delay_us) {
  LoopState& state = StateOf(loop);
  ++state.scheduled;
  state.timer = ExecutorOf(loop)->ScheduleAfter(delay_us, [this, loop] { RunStep(loop); });
}

void ClusterNode::RunStep(Loop loop) {
  {
    absl::MutexLock lock(&mu_);
    LoopState& state = StateOf(loop);
    --state.scheduled;
    if (stopping_ || state.running) return;
    state.running = true;
    state.timer = 0;
    state.wake = false;
  }
  const int64_t next_us = Step(loop);
  absl::MutexLock lock(&mu_);
  LoopState& state = StateOf(loop);
  state.running = false;
  if (stopping_ || next_us < 0) return;
  ScheduleLocked(loop, state.wake ? 0 : next_us);
}

int64_t ClusterNode::Step(Loop loop) {
  switch (loop) {
    case Loop::kJoin:
      return JoinStep();
    case Loop::kGossip:
      return GossipStep();
    case Loop::kCoordinator:
      return CoordinatorStep();
  }
  return -1;
}

void ClusterNode::Wake() {
  absl::MutexLock lock(&mu_);
  LoopState& state = coordinator_;
  if (stopping_ || !started_) return;
  if (state.running) {
    state.wake = true;
    return;
  }
  // A timer that can no longer be cancelled is about to run anyway.
  if (state.timer != 0 && env_.executor->Cancel(state.timer)) {
    --state.scheduled;
    ScheduleLocked(Loop::kCoordinator, 0);
  }
}

int64_t ClusterNode::JoinStep() {
  Status joined = JoinCheck();
  if (absl::IsUnavailable(joined) && joined.message().empty()) {
    return std::min<int64_t>(options_.gossip.interval_ms, 100) * 1000;  // keep waiting
  }
  if (joined.ok()) joined = Register();
  std::function<void(Status)> on_started;
  {
    absl::MutexLock lock(&mu_);
    on_started = std::move(on_started_);
    if (joined.ok() && !stopping_) {
      started_ = true;
      ScheduleLocked(Loop::kCoordinator, options_.election_poll_ms * 1000);
    }
  }
  if (on_started) on_started(joined);
  return -1;
}

int64_t ClusterNode::GossipStep() {
  const int64_t interval_us = options_.gossip.interval_ms * 1000;
  gossiper_->Tick();
  const int64_t now = clock_->MonotonicMicros();
  bool publish_load = false;
  {
    absl::MutexLock lock(&mu_);
    if (options_.load && now >= next_load_us_) {
      publish_load = true;
      next_load_us_ = now + options_.load_interval_ms * 1000;
    }
  }
  if (publish_load) gossiper_->SetApplicationState(kLoadKey, tessera::StrCat(options_.load()));
  absl::MutexLock lock(&mu_);
  // Rounds keep their cadence; a late round is not made up with a burst.
  next_round_us_ = std::max(next_round_us_ + interval_us, clock_->MonotonicMicros());
  return next_round_us_ - clock_->MonotonicMicros();
}

int64_t ClusterNode::CoordinatorStep() {
  bool lost;
  bool have_session;
  {
    absl::MutexLock lock(&mu_);
    if (fatal_) return -1;
    lost = session_lost_;
    have_session = session_ != nullptr;
  }
  if (!lost) {
    if (have_session) election_.Step();
    return options_.election_poll_ms * 1000;
  }
  DropSession();
  gossiper_->SetApplicationState(kStatusKey, kStatusJoining);
  if (options_.on_session_loss == SessionLossAction::kExit) {
    Status why = absl::UnavailableError(
        tessera::StrCat("node ", options_.endpoint,
                        " lost its lock-service session and is configured to "
                        "exit (--on-session-loss=exit)"));
    TLOG_ERROR("cluster: {}", why);
    {
      absl::MutexLock lock(&mu_);
      fatal_ = true;
    }
    if (hooks_.on_fatal) hooks_.on_fatal(why);
    return -1;
  }
  Status registered = Register();
  if (registered.ok()) return options_.election_poll_ms * 1000;
  absl::MutexLock lock(&mu_);
  // Once per outage, not every backoff: the end is logged with its duration.
  if (outage_failures_++ == 0) {
    TLOG_WARN("cluster: {} cannot register again: {}; retrying every {} ms", options_.endpoint,
              registered, options_.reregister_backoff_ms);
  } else {
    TLOG_DEBUG("cluster: {} cannot register again yet: {}", options_.endpoint, registered);
  }
  outage_error_ = registered;
  // session_ may hold a half-made session; drop it on the next step.
  session_lost_ = true;
  return options_.reregister_backoff_ms * 1000;
}

}  // namespace tessera::cluster
