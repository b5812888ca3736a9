#include "tessera/metrics/rpc_metrics.h"

namespace tessera::metrics {

namespace {

// go-grpc-prometheus' buckets reach 10 s; Tessera's calls start in the tens of microseconds.
const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10};
  return *b;
}

const char* TypeName(rpc::Services::Method::Kind kind) {
  switch (kind) {
    case rpc::Services::Method::Kind::kUnary:
      return "unary";
    case rpc::Services::Method::Kind::kServerStreaming:
      return "server_stream";
    case rpc::Services::Method::Kind::kBidi:
      return "bidi_stream";
  }
  return "unknown";
}

}  // namespace

const char* GoCodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {
      "OK",       "Canceled",          "Unknown",          "InvalidArgument", "DeadlineExceeded",
      "NotFound", "AlreadyExists",     "PermissionDenied", "ResourceExhausted",
      "FailedPrecondition", "Aborted", "OutOfRange",       "Unimplemented",   "Internal",
      "Unavailable", "DataLoss",       "Unauthenticated"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < static_cast<int>(std::size(kNames)) ? kNames[i] : "Unknown";
}

RpcMetrics::RpcMetrics(prometheus::Registry* registry, const rpc::Services* services)
    : handled_(prometheus::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("RPCs completed on the server, by status code")
                   .Register(*registry)),
      seconds_(prometheus::BuildHistogram()
                   .Name("grpc_server_handling_seconds")
                   .Help("Time from an RPC's arrival to its end on the server")
                   .Register(*registry)),
      msg_received_(prometheus::BuildCounter()
                        .Name("grpc_server_msg_received_total")
                        .Help("Request messages received on the server")
                        .Register(*registry)),
      msg_sent_(prometheus::BuildCounter()
                    .Name("grpc_server_msg_sent_total")
                    .Help("Response messages sent by the server")
                    .Register(*registry)),
      bytes_received_(prometheus::BuildCounter()
                          .Name("tessera_grpc_server_received_bytes_total")
                          .Help("Bytes of request messages received (serialized, unframed)")
                          .Register(*registry)),
      bytes_sent_(prometheus::BuildCounter()
                      .Name("tessera_grpc_server_sent_bytes_total")
                      .Help("Bytes of response messages sent (serialized, unframed)")
                      .Register(*registry)) {
  for (int i = 0; i < services->size(); ++i) {
    const std::string& path = services->path(i);  // "/package.Service/Method"
    const size_t slash = path.rfind('/');
    labels_.push_back({{"grpc_type", TypeName(services->method(i).kind)},
                       {"grpc_service", path.substr(1, slash - 1)},
                       {"grpc_method", path.substr(slash + 1)}});
  }
  labels_.push_back(
      {{"grpc_type", "unknown"}, {"grpc_service", "unknown"}, {"grpc_method", "unknown"}});
  methods_ = std::make_unique<std::atomic<Method*>[]>(labels_.size());
}

RpcMetrics::~RpcMetrics() = default;

RpcMetrics::Method& RpcMetrics::MethodAt(size_t index) {
  std::atomic<Method*>& slot = methods_[index];
  if (Method* m = slot.load(std::memory_order_acquire); m != nullptr) return *m;
  absl::MutexLock l(&mu_);
  if (Method* m = slot.load(std::memory_order_acquire); m != nullptr) return *m;
  auto m = std::make_unique<Method>();
  m->labels = labels_[index];
  m->seconds = &seconds_.Add(m->labels, SecondsBuckets());
  m->msg_received = &msg_received_.Add(m->labels);
  m->msg_sent = &msg_sent_.Add(m->labels);
  m->bytes_received = &bytes_received_.Add(m->labels);
  m->bytes_sent = &bytes_sent_.Add(m->labels);
  slot.store(m.get(), std::memory_order_release);
  made_.push_back(std::move(m));
  return *made_.back();
}

void RpcMetrics::OnCallEnd(const rpc::CallRecord& record) {
  const size_t unknown = labels_.size() - 1;
  Method& m = MethodAt(record.method >= 0 && static_cast<size_t>(record.method) < unknown
                           ? static_cast<size_t>(record.method)
                           : unknown);
  const int code = static_cast<int>(record.code);
  std::atomic<prometheus::Counter*>& slot = m.handled[code >= 0 && code < kCodes ? code : 2];
  prometheus::Counter* handled = slot.load(std::memory_order_acquire);
  if (handled == nullptr) {
    absl::MutexLock l(&mu_);
    handled = slot.load(std::memory_order_acquire);
    if (handled == nullptr) {
      prometheus::Labels labels = m.labels;
      labels["grpc_code"] = GoCodeName(record.code);
      handled = &handled_.Add(labels);
      slot.store(handled, std::memory_order_release);
    }
  }
  handled->Increment();
  m.seconds->Observe(static_cast<double>(record.micros) / 1e6);
  if (record.messages_received > 0) {
    m.msg_received->Increment(static_cast<double>(record.messages_received));
    m.bytes_received->Increment(static_cast<double>(record.bytes_received));
  }
  if (record.messages_sent > 0) {
    m.msg_sent->Increment(static_cast<double>(record.messages_sent));
    m.bytes_sent->Increment(static_cast<double>(record.bytes_sent));
  }
}

}  // namespace tessera::metrics
