// Issue 13's metrics with real processes: three `tessera serve` with etcd, each serving
// Prometheus metrics on its HTTP port; what they show moves as the test works, and Prometheus'
// own promtool accepts it. Part of the cluster_process_test binary (main() in
// cluster_process_test.cc).
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tessera/testing/http_get.h"

namespace tessera::integration {
namespace {

using namespace cluster_testing;  // NOLINT: the fixture and its helpers

// The address a node printed for its metrics ("tessera: metrics on http://A/metrics").
std::string MetricsAddress(const ServerProcess& node) {
  static const std::regex kLine("metrics on http://([0-9.]+:[0-9]+)/metrics");
  std::smatch m;
  const std::string log = node.LogTail(1 << 20);
  return std::regex_search(log, m, kLine) ? m[1].str() : "";
}

// The sum of every sample of `name` whose labels contain each of `labels` ("k=\"v\"").
double Sum(const std::string& text, const std::string& name,
           const std::vector<std::string>& labels = {}) {
  double sum = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.rfind(name, 0) != 0 || (line.size() > name.size() && line[name.size()] != '{' &&
                                     line[name.size()] != ' ')) {
      continue;
    }
    bool all = true;
    for (const std::string& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) sum += std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
  }
  return sum;
}

class MetricsClusterTest : public ClusterTest {
 protected:
  MetricsClusterTest() { extra_args_ = {"--http-listen", "127.0.0.1:0"}; }
};

TEST_F(MetricsClusterTest, EveryNodeServesMetricsThatMoveWithTheWork) {
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);  // two tablets, split at "m"
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(WaitFor([&] { return WriteRow(*nodes_[1], "first", "1").ok(); },
                      milliseconds(15'000)));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(WriteRow(*nodes_[1], StrCat("k", i), "v").ok());
  ASSERT_TRUE(ReadRow(*nodes_[1], "k3").ok());

  const std::string mutate_ok =
      "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"MutateRow\","
      "grpc_service=\"google.bigtable.v2.Bigtable\",grpc_type=\"unary\"}";
  double primaries = 0, replicas = 0, masters = 0, rows_written = 0;
  std::set<std::string> families;  // every node's, from its "# TYPE name type" lines
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::string address = MetricsAddress(*nodes_[i]);
    ASSERT_FALSE(address.empty()) << FullLog(*nodes_[i]);
    StatusOr<std::string> text = testing::HttpGet(address, "/metrics");
    ASSERT_TRUE(text.ok()) << text.status();
    SCOPED_TRACE(StrCat("node ", i, " at ", address));
    if (i == 1) EXPECT_GE(Sum(*text, mutate_ok), 21);  // the client's writes, through node 1
    EXPECT_EQ(Sum(*text, "tessera_serving"), 1);
    EXPECT_EQ(Sum(*text, "tessera_cluster_nodes", {"state=\"up\""}), 3);
    EXPECT_EQ(Count(*text, "\ntessera_cluster_peer_phi{peer="), 2u);  // the two others
    EXPECT_GT(Sum(*text, "tessera_memtable_bytes"), 0);  // every replica holds the rows
    // --sync periodic (the cluster tests' setting): the syncer's fdatasyncs.
    EXPECT_GE(Sum(*text, "tessera_commit_log_sync_seconds_count"), 1);
    primaries += Sum(*text, "tessera_tablets", {"role=\"primary\""});
    replicas += Sum(*text, "tessera_tablets", {"role=\"replica\""});
    masters += Sum(*text, "tessera_is_master");
    // No replica was away: no stream; the stream rate is --stream-mb-per-s's default.
    EXPECT_EQ(Count(*text, "\ntessera_streams_in_progress{direction="), 2u);
    EXPECT_EQ(Sum(*text, "tessera_streams_in_progress"), 0);
    EXPECT_EQ(Sum(*text, "tessera_stream_throughput_bytes_per_second"), 24 << 20);
    EXPECT_EQ(Count(*text, "\ntessera_repairs_in_progress "), 1u);  // no repair yet
    EXPECT_EQ(Sum(*text, "tessera_repair_bytes_total"), 0);
    static const std::regex kType("# TYPE ([a-z_:]+) ");
    for (auto it = std::sregex_iterator(text->begin(), text->end(), kType);
         it != std::sregex_iterator(); ++it) {
      families.insert((*it)[1].str());
    }
    rows_written += Sum(*text, "tessera_table_rows_written_total", {"tables/r\""});
    Status checked = testing::PromtoolCheckMetrics(*text);
    if (absl::IsNotFound(checked)) {
      std::printf("*** SKIPPING promtool: %s ***\n", checked.ToString().c_str());
    } else {
      EXPECT_TRUE(checked.ok()) << checked;
    }
  }
  EXPECT_EQ(masters, 1);
  // The sample dashboard asks only for what the nodes serve.
  std::ifstream file(std::string(TESSERA_SOURCE_DIR) + "/docs/grafana-dashboard.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json dashboard = nlohmann::json::parse(file);
  // A series is a name and its labels in braces (label names, as grpc_method, are not).
  static const std::regex kName("\\b((?:grpc|tessera)_[a-z_]+?)(?:_bucket|_count|_sum)?\\{");
  int exprs = 0;
  for (const nlohmann::json& panel : dashboard["panels"]) {
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = target["expr"].get<std::string>();
      ++exprs;
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
           it != std::sregex_iterator(); ++it) {
        EXPECT_TRUE(families.count((*it)[1].str()))
            << "panel '" << panel["title"] << "' asks for " << (*it)[1] << ", which no node serves";
      }
    }
  }
  EXPECT_GE(exprs, 14);
  // Each of the 21 rows is durable on at least a quorum (2) of its tablet's 3 replicas.
  EXPECT_GE(rows_written, 2 * 21);
  // The user table's two tablets and the METADATA tablet(s), three replicas each, one primary.
  EXPECT_GE(primaries, 2);
  EXPECT_EQ(replicas, 2 * primaries);
}

}  // namespace
}  // namespace tessera::integration
