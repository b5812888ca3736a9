// The metrics a node serves: gRPC calls counted by RpcMetrics as a real server ends them,
// families built at a scrape, the HTTP port, and Prometheus' own check of what is served.
#include <cstdlib>
#include <memory>
#include <string>

#include "google/bigtable/v2/bigtable.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tessera/metrics/http_exporter.h"
#include "tessera/metrics/rpc_metrics.h"
#include "tessera/metrics/samples.h"
#include "tessera/testing/http_get.h"
#include "tessera/testing/rpc_server.h"

namespace tessera::metrics {
namespace {

namespace v2 = ::google::bigtable::v2;
constexpr char kBigtable[] = "google.bigtable.v2.Bigtable";

// The value of `series` (its name and labels, exactly as served) in `text`; -1 if absent.
double Sample(const std::string& text, const std::string& series) {
  const std::string line = series + " ";
  for (size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::strtod(text.c_str() + at + line.size(), nullptr);
  }
  return -1;
}

// Streams rows_limit responses.
class Rows final : public rpc::WriteReactor<v2::ReadRowsResponse> {
 public:
  Rows(rpc::ServerContext* c, int64_t n) : WriteReactor(c), left_(n) { Next(); }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::CANCELLED);
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (left_-- == 0) return Finish(grpc::Status::OK);
    response_.set_last_scanned_row_key("a row key");
    StartWrite(&response_);
  }
  int64_t left_;
  v2::ReadRowsResponse response_;
};

class Service {
 public:
  void Register(rpc::Services* s) {
    s->Add(kBigtable, "PingAndWarm", this, &Service::PingAndWarm);
    s->Add(kBigtable, "ReadRows", this, &Service::ReadRows);
  }
  // name "missing" answers NOT_FOUND.
  rpc::UnaryReactor* PingAndWarm(rpc::ServerContext* c, const v2::PingAndWarmRequest* req,
                                 v2::PingAndWarmResponse*) {
    rpc::UnaryReactor* r = c->DefaultReactor();
    r->Finish(req->name() == "missing" ? grpc::Status(grpc::StatusCode::NOT_FOUND, "missing")
                                       : grpc::Status::OK);
    return r;
  }
  rpc::WriteReactor<v2::ReadRowsResponse>* ReadRows(rpc::ServerContext* c,
                                                    const v2::ReadRowsRequest* req) {
    return new Rows(c, req->rows_limit());
  }
};

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_.Register(server_.services());
    metrics_ = std::make_unique<RpcMetrics>(registry_.get(), server_.services());
    ASSERT_TRUE(server_.Start("127.0.0.1:0", metrics_.get()).ok());
    auto exporter = HttpExporter::Start("127.0.0.1:0", {registry_});
    ASSERT_TRUE(exporter.ok()) << exporter.status();
    exporter_ = *std::move(exporter);
    stub_ = v2::Bigtable::NewStub(
        grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_.Shutdown(); }

  grpc::Status Ping(const std::string& name) {
    grpc::ClientContext ctx;
    v2::PingAndWarmRequest req;
    req.set_name(name);
    v2::PingAndWarmResponse resp;
    return stub_->PingAndWarm(&ctx, req, &resp);
  }

  std::string Scrape() {
    StatusOr<std::string> text = testing::HttpGet(exporter_->address(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  Service service_;
  testing::RpcServer server_;
  std::unique_ptr<RpcMetrics> metrics_;
  std::unique_ptr<HttpExporter> exporter_;
  std::unique_ptr<v2::Bigtable::Stub> stub_;
};

constexpr char kPing[] =
    "grpc_method=\"PingAndWarm\",grpc_service=\"google.bigtable.v2.Bigtable\",grpc_type=\"unary\"";

TEST_F(MetricsTest, CallsAreCountedByMethodAndCodeWithTheirTimeMessagesAndBytes) {
  ASSERT_TRUE(Ping("p").ok());
  ASSERT_TRUE(Ping("p").ok());
  ASSERT_EQ(Ping("missing").error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    v2::ReadRowsRequest req;
    req.set_rows_limit(3);
    auto reader = stub_->ReadRows(&ctx, req);
    v2::ReadRowsResponse resp;
    int n = 0;
    while (reader->Read(&resp)) ++n;
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(n, 3);
  }
  {
    // A method nobody serves.
    grpc::ClientContext ctx;
    v2::MutateRowResponse resp;
    ASSERT_EQ(stub_->MutateRow(&ctx, v2::MutateRowRequest(), &resp).error_code(),
              grpc::StatusCode::UNIMPLEMENTED);
  }
  // A call is counted once it is over, which may be just after the client has its answer.
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text = Scrape();
    if (Sample(text, "grpc_server_handled_total{grpc_code=\"Unimplemented\",grpc_method="
                     "\"unknown\",grpc_service=\"unknown\",grpc_type=\"unknown\"}") == 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Sample(text, StrCat("grpc_server_handled_total{grpc_code=\"OK\",", kPing, "}")), 2);
  EXPECT_EQ(Sample(text, StrCat("grpc_server_handled_total{grpc_code=\"NotFound\",", kPing, "}")),
            1);
  EXPECT_EQ(Sample(text, StrCat("grpc_server_handling_seconds_count{", kPing, "}")), 3);
  EXPECT_EQ(Sample(text, StrCat("grpc_server_handling_seconds_bucket{", kPing, ",le=\"+Inf\"}")),
            3);
  EXPECT_EQ(Sample(text, StrCat("grpc_server_msg_received_total{", kPing, "}")), 3);
  // "p" twice and "missing": each request is its field's tag, length and bytes.
  EXPECT_EQ(Sample(text, StrCat("tessera_grpc_server_received_bytes_total{", kPing, "}")),
            (2 + 1) * 2 + (2 + 7));
  const std::string rows =
      "grpc_method=\"ReadRows\",grpc_service=\"google.bigtable.v2.Bigtable\","
      "grpc_type=\"server_stream\"";
  EXPECT_EQ(Sample(text, StrCat("grpc_server_msg_sent_total{", rows, "}")), 3);
  EXPECT_EQ(Sample(text, StrCat("tessera_grpc_server_sent_bytes_total{", rows, "}")),
            3 * (2 + 9));
  EXPECT_EQ(Sample(text, StrCat("grpc_server_handled_total{grpc_code=\"OK\",", rows, "}")), 1);
  EXPECT_EQ(Sample(text, "grpc_server_handled_total{grpc_code=\"Unimplemented\",grpc_method="
                         "\"unknown\",grpc_service=\"unknown\",grpc_type=\"unknown\"}"),
            1);

  Status checked = testing::PromtoolCheckMetrics(text);
  if (absl::IsNotFound(checked)) {
    std::printf("*** SKIPPING promtool: %s ***\n", checked.ToString().c_str());
  } else {
    EXPECT_TRUE(checked.ok()) << checked << "\n" << text;
  }
}

TEST(SamplesTest, AHistogramSnapshotBecomesCumulativeBucketsEndingInInf) {
  LatencyHistogram h;
  h.Record(40);
  h.Record(3000);
  prometheus::MetricFamily f = Family("x_seconds", "help", prometheus::MetricType::Histogram);
  AddHistogram(&f, h.Read(), {{"a", "b"}});
  ASSERT_EQ(f.metric.size(), 1u);
  const auto& m = f.metric[0];
  EXPECT_EQ(m.histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(m.histogram.sample_sum, 0.00304);
  ASSERT_EQ(m.histogram.bucket.size(), LatencyHistogram::kBoundsMicros.size() + 1);
  EXPECT_EQ(m.histogram.bucket.front().cumulative_count, 1u);
  EXPECT_EQ(m.histogram.bucket.back().cumulative_count, 2u);
  EXPECT_TRUE(std::isinf(m.histogram.bucket.back().upper_bound));
}

TEST(HttpExporterTest, ABadAddressOrOneInUseIsAClearError) {
  auto bad = HttpExporter::Start("no port here", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("no port here"), std::string::npos);

  auto first = HttpExporter::Start("127.0.0.1:0", {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT((*first)->port(), 0);
  EXPECT_EQ((*first)->address(), StrCat("127.0.0.1:", (*first)->port()));
  auto second = HttpExporter::Start((*first)->address(), {});
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_NE(second.status().message().find((*first)->address()), std::string::npos);
  // Anything but /metrics is not there.
  auto other = testing::HttpGet((*first)->address(), "/nothing");
  EXPECT_FALSE(other.ok());
}

}  // namespace
}  // namespace tessera::metrics
