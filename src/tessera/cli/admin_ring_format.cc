#include "tessera/cli/admin_ring_format.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/escaping.h"
#include "fmt/format.h"
#include "tessera/catalog/placement.h"
#include "tessera/cli/admin_tablets_format.h"

namespace tessera::cli {

namespace {

namespace v1 = ::tessera::v1;

std::string Hex(const std::string& token) { return absl::BytesToHexString(token); }

}  // namespace

std::vector<RingLine> MergeRing(const v1::ClusterStatus& status, const v1::Ring& ring) {
  std::map<std::string, RingLine> by_endpoint;
  for (const v1::NodeStatus& n : status.nodes()) {
    RingLine& line = by_endpoint[n.endpoint()];
    line.endpoint = n.endpoint();
    line.dc = n.dc();
    line.rack = n.rack();
    line.state = n.liveness() + " " + n.status();
  }
  std::vector<std::string> tokens;
  for (const v1::RingToken& t : ring.tokens()) {
    RingLine& line = by_endpoint[t.endpoint()];
    if (line.endpoint.empty()) {
      line.endpoint = t.endpoint();
      line.state = "?";
    }
    line.token = t.token();
    tokens.push_back(t.token());
  }
  const std::map<std::string, double> shares = catalog::RingShares(tokens);
  std::vector<RingLine> lines;
  for (auto& [endpoint, line] : by_endpoint) {
    if (auto share = shares.find(line.token); share != shares.end()) line.owns = share->second;
    lines.push_back(std::move(line));
  }
  // Two nodes sharing a token (a race the ring store resolves) split nothing: the first by
  // endpoint keeps the share, the other shows 0.
  std::sort(lines.begin(), lines.end(), [](const RingLine& a, const RingLine& b) {
    return std::make_tuple(a.token.empty(), a.token, a.endpoint) <
           std::make_tuple(b.token.empty(), b.token, b.endpoint);
  });
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!lines[i].token.empty() && lines[i].token == lines[i - 1].token) lines[i].owns = 0.0;
  }
  return lines;
}

std::string FormatRing(const std::string& cluster_name, const std::vector<RingLine>& lines) {
  std::vector<std::vector<std::string>> rows = {
      {"ADDRESS", "DC", "RACK", "STATE", "OWNS", "TOKEN"}};
  for (const RingLine& l : lines) {
    rows.push_back({l.endpoint, l.dc.empty() ? "?" : l.dc, l.rack.empty() ? "?" : l.rack, l.state,
                    l.owns ? fmt::format("{:.2f}%", *l.owns * 100) : "-",
                    l.token.empty() ? "-" : Hex(l.token)});
  }
  return fmt::format("{} node{} on the ring of cluster {}\n", lines.size(),
                     lines.size() == 1 ? "" : "s", cluster_name) +
         Columns(rows);
}

nlohmann::json RingToJson(const std::string& cluster_name, const std::vector<RingLine>& lines) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const RingLine& l : lines) {
    nodes.push_back(
        {{"endpoint", l.endpoint},
         {"dc", l.dc},
         {"rack", l.rack},
         {"state", l.state},
         {"token", l.token.empty() ? nlohmann::json(nullptr) : nlohmann::json(Hex(l.token))},
         {"owns", l.owns ? nlohmann::json(*l.owns) : nlohmann::json(nullptr)}});
  }
  return {{"cluster", cluster_name}, {"nodes", nodes}};
}

}  // namespace tessera::cli
