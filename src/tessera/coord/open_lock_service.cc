#include "tessera/coord/open_lock_service.h"

#include <string>

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
  // One or more members, comma-separated: each HOST:PORT with a port in 1..65535, and nothing
  // else (no other scheme, no path).
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "lock service \"", config.address, "\" is neither \"embedded\" nor an etcd address ",
        "(etcd://HOST:PORT, or etcd://HOST:PORT,HOST:PORT,... for an etcd cluster; http://HOST:PORT "
        "and HOST:PORT also work): ", why));
  };
  size_t start = 0;
  while (true) {
    size_t comma = endpoint.find(',', start);
    std::string_view member =
        endpoint.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                               : comma - start);
    if (member.starts_with("http://")) member.remove_prefix(7);
    while (member.ends_with('/')) member.remove_suffix(1);
    const size_t colon = member.rfind(':');
    const std::string_view port =
        colon == std::string_view::npos ? "" : member.substr(colon + 1);
    int port_value = 0;
    const bool port_ok = !port.empty() && port.size() <= 5 &&
                         port.find_first_not_of("0123456789") == std::string_view::npos &&
                         (port_value = std::stoi(std::string(port))) >= 1 && port_value <= 65535;
    if (member.empty()) return refuse("an empty member");
    if (colon == 0 || !port_ok || member.find('/') != std::string_view::npos) {
      return refuse(tessera::StrCat("'", member, "' is not HOST:PORT with a port in 1..65535"));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  EtcdLockServiceOptions options;
  options.endpoint = std::string(endpoint);
  options.key_root = config.key_root;
  options.clock = clock;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLockService> service, EtcdLockService::Open(options));
  return std::unique_ptr<LockService>(std::move(service));
}

}  // namespace tessera::coord
