// Issue 13's web dashboard in a real browser: three `tessera serve` with etcd; Debian's
// chromium, headless, loads node 1's page and the test reads what a person would see — every
// node by name, up, one master, the table's tablets with their primaries, and a chart that has
// been drawn from several samples — then keeps a screenshot (dashboard.png in the test's
// working folder). Skips without chromium (install_deps.sh installs it). Part of the
// cluster_process_test binary (main() in cluster_process_test.cc).
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

#include "bigtable_calls.h"
#include "cluster_test_fixture.h"
#include "gtest/gtest.h"
#include "tessera/testing/http_get.h"

namespace tessera::integration {
namespace {

using namespace cluster_testing;  // NOLINT: the fixture and its helpers

constexpr char kChromium[] = "/usr/bin/chromium";

class DashboardClusterTest : public ClusterTest {};

// The node's HTTP address, as it printed it ("tessera: metrics on http://A/metrics").
std::string HttpAddress(const ServerProcess& node) {
  static const std::regex kLine("metrics on http://([0-9.]+:[0-9]+)/metrics");
  std::smatch m;
  const std::string log = node.LogTail(1 << 20);
  return std::regex_search(log, m, kLine) ? m[1].str() : "";
}

// Headless chromium on `url`, running the page's script for `budget_ms` of virtual time, with
// `what` ("--dump-dom", "--screenshot=FILE"); its stdout and exit status.
int Chromium(const std::string& url, const std::string& what, int budget_ms, const std::string& dir,
             std::string* out) {
  return RunCommand(StrCat("timeout 90 ", kChromium,
                           " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                           "--no-first-run --user-data-dir=",
                           dir, " --window-size=1280,1100 --virtual-time-budget=", budget_ms, " ",
                           what, " ", url, " 2>/dev/null"),
                    out);
}

TEST_F(DashboardClusterTest, APersonSeesTheNodesTheTabletsAndLiveCharts) {
  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "no " << kChromium;
  StartCluster(3);
  ASSERT_TRUE(WaitFor([&] { return Converged(Endpoints()); }, milliseconds(20'000)));
  {
    grpc::Status s = CreateTableR(*nodes_[0]);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(
      WaitFor([&] { return WriteRow(*nodes_[1], "first", "1").ok(); }, milliseconds(15'000)));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(WriteRow(*nodes_[1], StrCat("k", i), "v").ok());
  const std::string http = HttpAddress(*nodes_[0]);
  ASSERT_FALSE(http.empty());
  // The JSON the page polls names every node's HTTP port.
  StatusOr<std::string> api = testing::HttpGet(http, "/api/node");
  ASSERT_TRUE(api.ok()) << api.status();
  for (const auto& n : nodes_) {
    EXPECT_NE(api->find(HttpAddress(*n)), std::string::npos) << *api;
  }

  const std::string url = StrCat("http://", http, "/");
  std::string dom;
  ASSERT_EQ(Chromium(url, "--dump-dom", 6000, StrCat(dir_.path(), "/chromium1"), &dom), 0) << dom;
  for (const auto& n : nodes_) {
    const std::string row = StrCat("<tr data-endpoint=\"", n->endpoint(), "\">");
    const size_t at = dom.find(row);
    ASSERT_NE(at, std::string::npos) << "no row for " << n->endpoint() << " in\n" << dom;
    const std::string line = dom.substr(at, dom.find("</tr>", at) - at);
    EXPECT_NE(line.find("<td class=\"up\">up</td>"), std::string::npos) << line;
  }
  EXPECT_EQ(Count(dom, "<td>master</td>"), 1u) << dom;
  EXPECT_EQ(Count(dom, "<td>0 out, 0 in</td>"), 3u) << dom;  // no rebuild streams on any node
  // Both tablets of r, each with its primary.
  EXPECT_EQ(Count(dom, "<td>r</td>"), 2u) << dom;
  // The charts were drawn from several polls, one line per node.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(dom, m, std::regex("id=\"chart-rps\"[^>]*data-samples=\"([0-9]+)\"")))
      << dom;
  EXPECT_GE(std::stoi(m[1].str()), 3) << dom;
  EXPECT_GE(Count(dom, "<polyline"), 6u) << dom;  // 3 nodes x 2 charts

  // The screenshot, kept as the test's artifact.
  std::string shot_out;
  const std::string shot = "dashboard.png";
  std::remove(shot.c_str());
  EXPECT_EQ(Chromium(url, StrCat("--screenshot=", shot), 5000, StrCat(dir_.path(), "/chromium2"),
                     &shot_out),
            0)
      << shot_out;
  EXPECT_EQ(access(shot.c_str(), R_OK), 0) << shot_out;
}

}  // namespace
}  // namespace tessera::integration
