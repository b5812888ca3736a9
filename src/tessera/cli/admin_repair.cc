#include "tessera/cli/admin_repair.h"

#include <cstdio>
#include <map>

#include "fmt/format.h"
#include "tessera/cli/admin_fanout.h"
#include "tessera/cli/admin_tablets_format.h"
#include "tessera/cli/proto_json.h"
#include "tessera/cli/shell_format.h"

namespace tessera::cli {
namespace {

namespace v1 = ::tessera::v1;

std::string Rows(const v1::TabletRepair& t) {
  return fmt::format("[{}, {})", t.start_row().empty() ? "-inf" : shell::EscapeBytes(t.start_row()),
                     t.end_row().empty() ? "+inf" : shell::EscapeBytes(t.end_row()));
}

std::string ShortTable(const std::string& full) {
  const size_t slash = full.rfind('/');
  return slash == std::string::npos ? full : full.substr(slash + 1);
}

}  // namespace

std::string FormatRepair(const std::vector<v1::RepairResponse>& answers, bool* ok) {
  std::vector<std::vector<std::string>> rows = {
      {"Table", "Rows", "Primary", "Sequence", "Replica", "Result"}};
  std::map<std::string, size_t> results;  // result -> replicas
  size_t tablets = 0, unchecked = 0;
  for (const v1::RepairResponse& answer : answers) {
    for (const v1::TabletRepair& t : answer.tablets()) {
      ++tablets;
      const std::vector<std::string> head = {ShortTable(t.table_name()), Rows(t), answer.endpoint(),
                                             std::to_string(t.sequence())};
      auto line = [&](const std::string& replica, const std::string& result) {
        std::vector<std::string> row = head;
        row.push_back(replica);
        row.push_back(result);
        rows.push_back(std::move(row));
      };
      if (!t.error().empty()) {
        ++unchecked;
        line("-", "not checked: " + t.error());
        continue;
      }
      if (t.replicas_size() == 0) line("-", "one copy: nothing to compare");
      for (const v1::ReplicaRepair& r : t.replicas()) {
        ++results[r.result()];
        line(r.endpoint(), r.message().empty() ? r.result() : r.result() + ": " + r.message());
      }
    }
  }
  size_t replicas = 0, good = 0;
  std::string counts;
  for (const auto& [result, n] : results) {
    replicas += n;
    if (result == "consistent" || result == "rebuilding") good += n;
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, result);
  }
  if (ok != nullptr) *ok = unchecked == 0 && good == replicas;
  std::string out = tablets == 0 ? std::string() : Columns(rows);
  out += fmt::format("Repaired {} tablets: {} replicas{}{}{}\n", tablets, replicas,
                     counts.empty() ? "" : " (", counts, counts.empty() ? "" : ")");
  if (unchecked > 0) out += fmt::format("{} tablets could not be checked\n", unchecked);
  return out;
}

int RunRepair(const std::vector<std::string>& nodes, int64_t timeout_ms, bool json,
              const std::string& table) {
  v1::RepairRequest request;
  request.set_table_name(table);
  auto answers = AskAll("repair", nodes, timeout_ms, &v1::NodeAdmin::Stub::Repair, request);
  std::vector<v1::RepairResponse> answered;
  const int status = ForEachAnswer<v1::RepairResponse>(
      nodes, answers, json,
      [&](const std::string& node, const v1::RepairResponse& response, nlohmann::json* out) {
        answered.push_back(response);
        if (answered.back().endpoint().empty()) answered.back().set_endpoint(node);
        out->push_back(ProtoToJson(answered.back()));
      });
  bool ok = false;
  const std::string text = FormatRepair(answered, &ok);
  if (!json) std::fputs(text.c_str(), stdout);
  return status == 0 && ok ? 0 : 1;
}

}  // namespace tessera::cli
