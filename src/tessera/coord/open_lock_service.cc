#include "tessera/coord/open_lock_service.h"

#include <string>

#include "tessera/coord/embedded_lock_service.h"
#include "tessera/coord/etcd_lock_service.h"

namespace tessera::coord {

StatusOr<LockServiceAddress> ParseLockServiceAddress(std::string_view address) {
  LockServiceAddress out;
  if (address.empty() || address == "embedded") return out;
  auto refuse = [&](std::string_view why) {
    return absl::InvalidArgumentError(tessera::StrCat(
        "lock service \"", address,
        "\" is neither \"embedded\" nor etcd's address (etcd://HOST:PORT, http://HOST:PORT or "
        "HOST:PORT, several separated by commas): ", why));
  };
  out.backend = LockServiceAddress::Backend::kEtcd;
  // The scheme comes once, in front ("etcd://h1:p1,h2:p2"); members may also be written as
  // etcd's own client URLs ("http://h1:p1,http://h2:p2").
  std::string_view members = address;
  for (std::string_view scheme : {"etcd://", "http://"}) {
    if (members.starts_with(scheme)) members.remove_prefix(scheme.size());
  }
  size_t start = 0;
  while (start <= members.size()) {
    size_t comma = members.find(',', start);
    if (comma == std::string_view::npos) comma = members.size();
    std::string_view member = members.substr(start, comma - start);
    start = comma + 1;
    while (!member.empty() && member.front() == ' ') member.remove_prefix(1);
    while (!member.empty() && member.back() == ' ') member.remove_suffix(1);
    if (member.starts_with("https://")) return refuse("TLS (https://) is not supported");
    if (member.starts_with("http://")) member.remove_prefix(7);
    while (member.ends_with('/')) member.remove_suffix(1);
    if (member.empty()) return refuse("a member is empty");
    StatusOr<HostPort> hp = ParseHostPort(member, PortZero::kRefused);
    if (!hp.ok()) return refuse(std::string(hp.status().message()));
    out.etcd_members.push_back(*std::move(hp));
  }
  return out;
}

StatusOr<std::unique_ptr<LockService>> OpenLockService(const LockServiceConfig& config,
                                                       FileSystem* fs, Clock* clock) {
  ASSIGN_OR_RETURN(LockServiceAddress address, ParseLockServiceAddress(config.address));
  if (address.backend == LockServiceAddress::Backend::kEmbedded) {
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
  std::string endpoints;
  for (const HostPort& member : address.etcd_members) {
    endpoints += (endpoints.empty() ? "" : ",") + member.ToString();
  }
  EtcdLockServiceOptions options;
  options.endpoint = endpoints;
  options.key_root = config.key_root;
  options.clock = clock;
  options.loop = config.loop;
  options.credentials = config.credentials;
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLockService> service, EtcdLockService::Open(options));
  return std::unique_ptr<LockService>(std::move(service));
}

}  // namespace tessera::coord
