// The YcsbDb of `tessera bench` over the Cloud Bigtable v2 gRPC API, for any endpoint that
// speaks it (`tessera serve`, the official emulator), through the generated stubs.
//
// A record is one row; field i is the cell `family:field<i>`. A read is ReadRows of one row key
// with rows_limit 1 and a cells_per_column_limit 1 filter (the newest version of each field);
// a scan is ReadRows from a start key (closed) with rows_limit and the same filter; a write is
// one MutateRow of SetCell mutations stamped with the client's clock in milliseconds (as the
// official clients stamp them); a batch is one MutateRows with an entry per row.
//
// Channels: gRPC multiplexes calls over one HTTP/2 connection per channel, so a handful of
// channels (ChannelPool), each its own connection, serve any number of threads; a stub is a
// cheap per-thread handle on a shared channel. A pool may span several endpoints (the nodes of
// a cluster): thread t talks to endpoint t mod N, so the threads spread evenly over the nodes.
//
// Thread-safety: ChannelPool is thread-safe after construction. A YcsbDb from NewBigtableDb is
// for one thread at a time (it reuses its request messages). EnsureTable is thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/channel.h"
#include "tessera/cli/ycsb_driver.h"
#include "tessera/util/status.h"

namespace tessera::cli::ycsb {

struct BigtableTarget {
  std::string endpoint;  // HOST:PORT
  std::string project;
  std::string instance;
  std::string table;
  std::string family;

  std::string InstanceName() const;  // projects/{project}/instances/{instance}
  std::string TableName() const;     // .../tables/{table}
};

class ChannelPool {
 public:
  // `per_endpoint` insecure (h2c) channels to each of `endpoints`, each channel on its own
  // connection. Connecting starts at WaitConnected().
  // REQUIRES: !endpoints.empty(), per_endpoint >= 1.
  ChannelPool(std::vector<std::string> endpoints, int per_endpoint);

  // Connects every channel; Unavailable naming the endpoint if one is not connected within
  // `timeout`.
  Status WaitConnected(std::chrono::milliseconds timeout);

  int size() const { return static_cast<int>(channels_.size()); }
  // The channel of thread (or any index) i >= 0: to endpoint i mod N (N endpoints), and among
  // that endpoint's channels number (i / N) mod per_endpoint.
  const std::shared_ptr<grpc::Channel>& Get(int i) const { return channels_[Index(i)]; }
  // The endpoint Get(i) talks to.
  const std::string& EndpointOf(int i) const { return endpoints_[i % endpoints_.size()]; }

 private:
  size_t Index(int i) const;

  std::vector<std::string> endpoints_;
  int per_endpoint_;
  // Endpoint e's channel c is channels_[e * per_endpoint_ + c].
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
};

// Creates table `target.table` with the one family `target.family` (GC rule: keep one
// version), split at `splits`, unless the table exists. Fails with FailedPrecondition when the
// table exists without that family, and with the server's error otherwise.
Status EnsureTable(const std::shared_ptr<grpc::Channel>& channel, const BigtableTarget& target,
                   const std::vector<std::string>& splits, std::chrono::milliseconds timeout);

// A YcsbDb writing `fields` fields per record, each call bounded by `rpc_timeout`.
std::unique_ptr<YcsbDb> NewBigtableDb(std::shared_ptr<grpc::Channel> channel,
                                      const BigtableTarget& target, int fields,
                                      std::chrono::milliseconds rpc_timeout);

}  // namespace tessera::cli::ycsb
