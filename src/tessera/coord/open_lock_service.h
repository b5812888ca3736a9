// Picks and opens a lock-service backend from a node's configuration: the embedded one (a single
// node; the default) or etcd (a cluster). server/ maps flags and config files to this struct.
//
// Thread-safety: OpenLockService may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/security/credentials.h"
#include "tessera/coord/lock_service.h"
#include "tessera/rpc/loop.h"
#include "tessera/util/clock.h"
#include "tessera/util/file_system.h"
#include "tessera/util/host_port.h"

namespace tessera::coord {

struct LockServiceConfig {
  // "embedded", or etcd's client URL: "etcd://HOST:PORT", "http://HOST:PORT" or "HOST:PORT";
  // for an etcd cluster, its members comma-separated: "etcd://H1:P1,H2:P2,H3:P3" (the client
  // fails over between them; see etcd_lock_service.h). ParseLockServiceAddress reads it.
  std::string address = "embedded";
  // Embedded: the node's data folder; the service keeps its snapshot in <data_dir>/coord.
  std::string data_dir;
  // etcd: prefix of every key (put the cluster name in it when clusters share an etcd).
  std::string key_root = "/tessera/";
  // etcd: the gRPC loop its watches run on (null: the service's own; etcd_lock_service.h).
  rpc::Loop* loop = nullptr;
  // etcd: how its client port is reached (TLS: rpc/tls.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

// A lock-service address, read: the embedded backend, or the members of an etcd cluster.
struct LockServiceAddress {
  enum class Backend { kEmbedded, kEtcd };
  Backend backend = Backend::kEmbedded;
  std::vector<HostPort> etcd_members;  // kEtcd: one or more, in the order given
};

// Reads "embedded" (or "") or a comma list of etcd members, HOST:PORT each, with "etcd://" or
// "http://" once in front, or "http://" before each member; a '/' may follow a member; ports
// 1..65535. InvalidArgument quoting
// `address` otherwise. The one parser of the address: `tessera serve --lock-service` checks
// its flag with it, and OpenLockService opens what it returns.
StatusOr<LockServiceAddress> ParseLockServiceAddress(std::string_view address);

// The embedded backend runs its background thread. `fs` and `clock` must outlive the service.
StatusOr<std::unique_ptr<LockService>> OpenLockService(const LockServiceConfig& config,
                                                       FileSystem* fs = PosixFileSystem(),
                                                       Clock* clock = SystemClock());

}  // namespace tessera::coord
