#include "tessera/coord/lock_service.h"

namespace tessera::coord {

std::string_view SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kAlive:
      return "alive";
    case SessionState::kExpired:
      return "expired";
  }
  return "unknown";
}

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kPut:
      return "put";
    case WatchEventType::kDelete:
      return "delete";
    case WatchEventType::kSessionExpired:
      return "session-expired";
    case WatchEventType::kReset:
      return "reset";
  }
  return "unknown";
}

Status ValidateName(std::string_view what, std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError(StrCat(what, " name is empty"));
  if (name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        StrCat(what, " name is ", name.size(), " bytes; the limit is ", kMaxNameBytes));
  }
  return absl::OkStatus();
}

Status ValidatePrefix(std::string_view prefix) {
  if (prefix.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        StrCat("prefix is ", prefix.size(), " bytes; the limit is ", kMaxNameBytes));
  }
  return absl::OkStatus();
}

Status ValidateValue(std::string_view value) {
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        StrCat("value is ", value.size(), " bytes; the limit is ", kMaxValueBytes));
  }
  return absl::OkStatus();
}

Status ValidateTtl(int64_t ttl_ms) {
  if (ttl_ms < 1 || ttl_ms > 3'600'000) {
    return absl::InvalidArgumentError(
        StrCat("session ttl_ms ", ttl_ms, " is outside [1, 3600000]"));
  }
  return absl::OkStatus();
}

Status ValidateWatchOptions(const WatchOptions& options) {
  if (options.prefix) {
    RETURN_IF_ERROR(ValidatePrefix(options.key));
  } else {
    RETURN_IF_ERROR(ValidateName("watched", options.key));
  }
  if (options.start_revision < 0) {
    return absl::InvalidArgumentError(
        StrCat("watch start_revision ", options.start_revision, " is negative"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::coord
