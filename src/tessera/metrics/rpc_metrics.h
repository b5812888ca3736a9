// RpcMetrics: every gRPC call a server ends, counted for Prometheus under the names of
// go-grpc-prometheus (the exporter most gRPC dashboards are drawn for):
//
//   grpc_server_handled_total{grpc_type, grpc_service, grpc_method, grpc_code}   counter
//   grpc_server_handling_seconds{grpc_type, grpc_service, grpc_method}          histogram
//   grpc_server_msg_received_total / grpc_server_msg_sent_total{...}            counters
//   tessera_grpc_server_received_bytes_total / ..._sent_bytes_total{...}        counters
//
// grpc_type is unary, server_stream or bidi_stream; grpc_code Go's name of the status code
// (OK, NotFound, Unavailable, ...); a method nobody serves counts under grpc_service="unknown".
// A method's series appear once it has been called (a node serves some 45 methods, most of
// them never called: their zeros would be a thousand lines of every scrape).
// The bytes are the serialized messages, without gRPC's framing or compression.
//
// Thread-safety: OnCallEnd runs concurrently from any threads; it takes no lock except the
// first time a method is called or ends with a given code (the series are created then).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "tessera/rpc/server.h"

namespace tessera::metrics {

// Go's name of a gRPC status code ("OK", "Canceled", "InvalidArgument", ...).
const char* GoCodeName(grpc::StatusCode code);

class RpcMetrics final : public rpc::CallObserver {
 public:
  // Registers the families on `registry`, for `services`' methods. Both must outlive this
  // object.
  RpcMetrics(prometheus::Registry* registry, const rpc::Services* services);
  ~RpcMetrics() override;

  void OnCallEnd(const rpc::CallRecord& record) override;

 private:
  static constexpr int kCodes = 17;  // OK .. UNAUTHENTICATED
  struct Method {
    prometheus::Labels labels;  // grpc_type, grpc_service, grpc_method
    std::array<std::atomic<prometheus::Counter*>, kCodes> handled{};
    prometheus::Histogram* seconds = nullptr;
    prometheus::Counter* msg_received = nullptr;
    prometheus::Counter* msg_sent = nullptr;
    prometheus::Counter* bytes_received = nullptr;
    prometheus::Counter* bytes_sent = nullptr;
  };
  // The method of `index` in services_ (the last: unknown), made on its first call.
  Method& MethodAt(size_t index);

  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& seconds_;
  prometheus::Family<prometheus::Counter>& msg_received_;
  prometheus::Family<prometheus::Counter>& msg_sent_;
  prometheus::Family<prometheus::Counter>& bytes_received_;
  prometheus::Family<prometheus::Counter>& bytes_sent_;
  std::vector<prometheus::Labels> labels_;            // by Services index; the last: unknown
  std::unique_ptr<std::atomic<Method*>[]> methods_;  // the same; null until first called
  std::vector<std::unique_ptr<Method>> made_ ABSL_GUARDED_BY(mu_);  // owns what methods_ holds
  absl::Mutex mu_;  // creates series
};

}  // namespace tessera::metrics
