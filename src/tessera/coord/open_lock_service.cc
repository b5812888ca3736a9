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
  if (endpoint.starts_with("etcd://")) endpoint.remove_prefix(7);
  EtcdLockServiceOptions options;
  options.endpoint = std::string(endpoint);
  options.key_root = config.key_root;
  options.clock = clock;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLockService> service, EtcdLockService::Open(options));
  return std::unique_ptr<LockService>(std::move(service));
}

}  // namespace tessera::coord
