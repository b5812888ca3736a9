// GossipOptions: Tessera's and the paper's settings, and their validation (gossip.h).
#include "tessera/cluster/gossip.h"

namespace tessera::cluster {

const char* LivenessName(Liveness liveness) {
  switch (liveness) {
    case Liveness::kUp:
      return "up";
    case Liveness::kSuspect:
      return "suspect";
    case Liveness::kDown:
      return "down";
  }
  return "unknown";
}

void SetGossipInterval(GossipOptions* o, int64_t interval_ms) {
  o->interval_ms = interval_ms;
  const int64_t us = interval_ms * 1000;
  // The first gap assumed for a new peer: two rounds, so a peer learned second-hand is not
  // convicted before its heartbeat had a fair chance to arrive (Cassandra also starts at 2x).
  o->detector.bootstrap_interval_us = 2 * us;
  // A silence of more than 10 rounds is an outage, not a sample of the arrival process.
  o->detector.max_sample_us = 10 * us;
  // kNormal: never trust a spread below half a round (rounds are themselves that jittery).
  o->detector.min_std_dev_us = us / 2;
}

GossipOptions DefaultGossipOptions() {
  GossipOptions o;
  o.fanout = 1;
  o.convict_phi = 5;
  o.suspect_phi = 2.5;
  o.detector.model = PhiModel::kExponential;
  o.detector.window_size = 1000;
  SetGossipInterval(&o, 200);
  return o;
}

GossipOptions PaperGossipOptions() {
  // The paper's model and threshold are Tessera's; only the round is five times longer.
  GossipOptions o = DefaultGossipOptions();
  SetGossipInterval(&o, 1000);
  return o;
}

Status ValidateGossipOptions(const GossipOptions& o) {
  if (o.self.empty()) return absl::InvalidArgumentError("gossip: self must not be empty");
  if (o.self.size() > kMaxGossipNameBytes || o.cluster_name.size() > kMaxGossipNameBytes) {
    return absl::InvalidArgumentError(
        StrCat("gossip: node id and cluster name must be at most ", kMaxGossipNameBytes, " bytes"));
  }
  for (const auto& s : o.seeds) {
    if (s.empty()) return absl::InvalidArgumentError("gossip: a seed is an empty string");
  }
  if (o.interval_ms <= 0) {
    return absl::InvalidArgumentError(
        StrCat("gossip: interval_ms must be > 0, not ", o.interval_ms));
  }
  if (o.fanout < 1) {
    return absl::InvalidArgumentError(StrCat("gossip: fanout must be >= 1, not ", o.fanout));
  }
  if (!(o.convict_phi > 0) || !(o.suspect_phi > 0) || o.suspect_phi > o.convict_phi) {
    return absl::InvalidArgumentError(
        StrCat("gossip: need 0 < suspect_phi <= convict_phi, got suspect_phi ", o.suspect_phi,
               " and convict_phi ", o.convict_phi));
  }
  const auto& d = o.detector;
  if (d.window_size < 1) {
    return absl::InvalidArgumentError(
        StrCat("gossip: detector window_size must be >= 1, not ", d.window_size));
  }
  if (d.max_sample_us <= 0 || d.bootstrap_interval_us <= 0 ||
      (d.model == PhiModel::kNormal && d.min_std_dev_us <= 0)) {
    return absl::InvalidArgumentError(
        "gossip: detector max_sample_us, bootstrap_interval_us and (normal model) "
        "min_std_dev_us must be > 0");
  }
  if (d.max_sample_us > kMaxSampleUs || d.bootstrap_interval_us > kMaxSampleUs) {
    return absl::InvalidArgumentError(
        StrCat("gossip: detector max_sample_us and bootstrap_interval_us must be at most ",
               kMaxSampleUs, " (the interval is too long)"));
  }
  if (o.max_delta_bytes == 0) {
    return absl::InvalidArgumentError("gossip: max_delta_bytes must be > 0");
  }
  return absl::OkStatus();
}

}  // namespace tessera::cluster
