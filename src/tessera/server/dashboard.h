// The web dashboard every node serves on its HTTP port (Cassandra's web dashboard; docs/
// dashboard.md): a page at / (plain HTML and JavaScript compiled into the binary, no external
// resource) and the JSON it polls, /api/node. The page shows the cluster as this node sees it
// (nodes, DC/rack, up/suspect/down, load, master), the tables' tablets with their replicas and
// primaries, live charts of each node's requests per second and p99 latency, and the operations
// in progress (flushes, compactions, replica rebuilds). It polls /api/node of every node whose
// HTTP address gossip carries (CORS is open on those pages), so one node's page charts them all.
//
// /api/node: {"endpoint", "http", "status": ClusterStatus, "tablets": NodeTablets (as `tessera
// admin tablets`; null while joining), "calls": {"count", "bounds_seconds", "cumulative"} (every
// gRPC call this node answered: CallCounter), "jobs": {"pending", "running", "flushes",
// "compactions"}, "drained", "serving", "auth" (the node runs with --auth)}.
//
// /api/action (POST {"action": "flush"|"compact"|"drain", "table": optional full name}): the
// action on this node, for an administrator (`admin` on `*`, docs/auth.md) named by the bearer
// token of the Authorization header; audited. 401 without a known token, 403 for a principal
// that is not an administrator or on a node without --auth (the page is then read-only), 400
// for a malformed body. The page shows its buttons once a token is given (a box on the page, or
// once #token=... in its URL; kept in the tab's sessionStorage) and posts to the node of the
// row. The action runs on the HTTP thread that received it (a long compaction holds one of
// the port's threads). GET pages need no token: bind --http-listen to a private address when
// the cluster's layout is not for everyone (docs/dashboard.md).
//
// Thread-safety: the pages' functions run on the HTTP threads and read only thread-safe parts
// of the core; CallCounter is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/metrics/http_exporter.h"
#include "tessera/rpc/server.h"
#include "tessera/server/node_core.h"
#include "tessera/util/latency_histogram.h"

namespace tessera::server {

// Counts every call the node's gRPC server ends, with its latency, and passes it on to `next`
// (the Prometheus metrics; may be null).
class CallCounter final : public rpc::CallObserver {
 public:
  explicit CallCounter(rpc::CallObserver* next) : next_(next) {}
  void OnCallEnd(const rpc::CallRecord& record) override {
    calls_.Record(record.micros);
    if (next_ != nullptr) next_->OnCallEnd(record);
  }
  LatencyHistogram::Snapshot Read() const { return calls_.Read(); }

 private:
  rpc::CallObserver* const next_;
  LatencyHistogram calls_;
};

// The dashboard's pages: "/" and "/api/node". `core` and `calls` must outlive the exporter that
// serves them.
std::vector<metrics::HttpPage> DashboardPages(NodeCore* core, const CallCounter* calls);

// The page itself (dashboard_page.cc).
extern const char* const kDashboardHtml;

}  // namespace tessera::server
