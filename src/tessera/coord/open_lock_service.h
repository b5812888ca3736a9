// Picks and opens a lock-service backend from a node's configuration: the embedded one (a single
// node; the default) or etcd (a cluster). server/ maps flags and config files to this struct.
//
// Thread-safety: OpenLockService may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "tessera/coord/lock_service.h"
#include "tessera/util/clock.h"
#include "tessera/util/file_system.h"

namespace tessera::coord {

struct LockServiceConfig {
  // "embedded", or etcd's client URL: "etcd://HOST:PORT", "http://HOST:PORT" or "HOST:PORT";
  // for an etcd cluster, its members comma-separated: "etcd://H1:P1,H2:P2,H3:P3" (the client
  // fails over between them; see etcd_lock_service.h).
  std::string address = "embedded";
  // Embedded: the node's data folder; the service keeps its snapshot in <data_dir>/coord.
  std::string data_dir;
  // etcd: prefix of every key (put the cluster name in it when clusters share an etcd).
  std::string key_root = "/tessera/";
};

// The embedded backend runs its background thread. `fs` and `clock` must outlive the service.
StatusOr<std::unique_ptr<LockService>> OpenLockService(const LockServiceConfig& config,
                                                       FileSystem* fs = PosixFileSystem(),
                                                       Clock* clock = SystemClock());

}  // namespace tessera::coord
