#include "tessera/coord/open_lock_service.h"

#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"

namespace tessera::coord {

StatusOr<std::unique_ptr<LockService>> OpenLockService(const LockServiceConfig& config,
                                                       FileSystem* fs, Clock* clock) {
  if (config.address.empty() || config.address == "embedded") {
    if (config.data_dir.empty()) {
      return absl::InvalidArgumentError("the embedded lock service needs a data folder");
    }
    EmbeddedLockServiceOptions options;
    options.fs = fs;
    options.clock = clock;
    options.dir = JoinPath(config.data_dir, "coord");
    ASSIGN_OR_RETURN(std::unique_ptr<EmbeddedLockService> service,
                     EmbeddedLockService::Open(options));
    return std::unique_ptr<LockService>(std::move(service));
  }
  std::string_view endpoint = config.address;
  for (std::string_view scheme : {"etcd://", "http://"}) {
    if (endpoint.starts_with(scheme)) endpoint.remove_prefix(scheme.size());
  }
  while (endpoint.ends_with('/')) endpoint.remove_suffix(1);
  // HOST:PORT with a numeric port, and nothing else (no other scheme, no path).
  const size_t colon = endpoint.rfind(':');
  const std::string_view port = colon == std::string_view::npos ? "" : endpoint.substr(colon + 1);
  const bool port_ok = !port.empty() && port.size() <= 5 &&
                       port.find_first_not_of("0123456789") == std::string_view::npos;
  if (colon == 0 || !port_ok || endpoint.find('/') != std::string_view::npos) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "lock service \"", config.address,
        "\" is neither \"embedded\" nor an etcd address (etcd://HOST:PORT, http://HOST:PORT or "
        "HOST:PORT)"));
  }
  EtcdLockServiceOptions options;
  options.endpoint = std::string(endpoint);
  options.key_root = config.key_root;
  options.clock = clock;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLockService> service, EtcdLockService::Open(options));
  return std::unique_ptr<LockService>(std::move(service));
}

}  // namespace tessera::coord
