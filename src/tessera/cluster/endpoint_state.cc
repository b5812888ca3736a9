#include "tessera/cluster/endpoint_state.h"

#include <algorithm>

namespace tessera::cluster {

int64_t EndpointState::MaxVersion() const { return std::max(heartbeat_version, MaxAppVersion()); }

int64_t EndpointState::MaxAppVersion() const {
  int64_t max = 0;
  for (const auto& [key, v] : app_states) max = std::max(max, v.version);
  return max;
}

const std::string* EndpointState::Find(std::string_view key) const {
  auto it = app_states.find(key);
  return it == app_states.end() ? nullptr : &it->second.value;
}

EndpointDelta MakeDelta(std::string_view endpoint, const EndpointState& state,
                        int64_t from_version) {
  EndpointDelta delta;
  delta.endpoint = std::string(endpoint);
  delta.generation = state.generation;
  delta.from_version = from_version;
  delta.heartbeat_version = state.heartbeat_version;
  for (const auto& [key, v] : state.app_states) {
    if (v.version > from_version) delta.app_states.emplace(key, v);
  }
  return delta;
}

MergeResult MergeDelta(const EndpointDelta& delta, EndpointState* copy) {
  MergeResult result;
  if (delta.generation < copy->generation) {
    result.outcome = MergeOutcome::kStaleGeneration;
    return result;
  }
  if (delta.generation > copy->generation) {
    if (delta.from_version != 0) {
      result.outcome = MergeOutcome::kRejectedHole;
      return result;
    }
    copy->generation = delta.generation;
    copy->heartbeat_version = delta.heartbeat_version;
    copy->app_states = delta.app_states;
    result.outcome = MergeOutcome::kNewGeneration;
    return result;
  }
  // Same generation. A delta that starts above what we hold would leave the versions in between
  // missing while our max version claimed them.
  if (delta.from_version > copy->heartbeat_version && delta.from_version > copy->MaxVersion()) {
    result.outcome = MergeOutcome::kRejectedHole;
    return result;
  }
  bool changed = false;
  if (delta.heartbeat_version > copy->heartbeat_version) {
    copy->heartbeat_version = delta.heartbeat_version;
    result.heartbeat_advanced = true;
    changed = true;
  }
  for (const auto& [key, v] : delta.app_states) {
    auto it = copy->app_states.find(key);
    if (it == copy->app_states.end()) {
      copy->app_states.emplace(key, v);
      changed = true;
    } else if (v.version > it->second.version) {
      it->second = v;
      changed = true;
    }
  }
  result.outcome = changed ? MergeOutcome::kUpdated : MergeOutcome::kUnchanged;
  return result;
}

std::optional<EndpointState> StateFromDelta(const EndpointDelta& delta) {
  if (delta.from_version != 0) return std::nullopt;
  EndpointState state;
  state.generation = delta.generation;
  state.heartbeat_version = delta.heartbeat_version;
  state.app_states = delta.app_states;
  return state;
}

const char* MergeOutcomeName(MergeOutcome outcome) {
  switch (outcome) {
    case MergeOutcome::kNewGeneration:
      return "new-generation";
    case MergeOutcome::kUpdated:
      return "updated";
    case MergeOutcome::kUnchanged:
      return "unchanged";
    case MergeOutcome::kStaleGeneration:
      return "stale-generation";
    case MergeOutcome::kRejectedHole:
      return "rejected-hole";
  }
  return "unknown";
}

}  // namespace tessera::cluster
