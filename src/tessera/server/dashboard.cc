#include "tessera/server/dashboard.h"

#include <string>
#include <utility>

#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "tessera/cluster/node.h"
#include "tessera/server/tablet_admin_service.h"

namespace tessera::server {

namespace {

// A message as JSON (field names as in the .proto, defaults included), or null.
nlohmann::json ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) return nullptr;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string NodeJson(NodeCore* core, const CallCounter* calls) {
  nlohmann::json out;
  cluster::ClusterNode* node = core->node();
  out["endpoint"] = node != nullptr ? node->options().endpoint : "";
  out["status"] = node != nullptr ? ToJson(node->GetStatus()) : nlohmann::json(nullptr);
  StatusOr<::tessera::v1::NodeTablets> tablets = DescribeNodeTablets(*core, "");
  out["tablets"] = tablets.ok() ? ToJson(*tablets) : nlohmann::json(nullptr);
  const LatencyHistogram::Snapshot s = calls->Read();
  out["calls"] = {
      {"count", s.count}, {"bounds_seconds", s.bounds_seconds}, {"cumulative", s.cumulative}};
  const tablet::EngineStats e = core->engine()->GetStats();
  out["jobs"] = {{"pending", e.queued_jobs},
                 {"running", e.running_jobs()},
                 {"flushes", e.flushes},
                 {"compactions", e.compactions}};
  out["drained"] = core->drained();
  out["serving"] = core->CheckServing().ok();
  return out.dump();
}

}  // namespace

std::vector<metrics::HttpPage> DashboardPages(NodeCore* core, const CallCounter* calls) {
  return {
      metrics::HttpPage{"/", "text/html; charset=utf-8",
                        [] { return std::string(kDashboardHtml); }},
      metrics::HttpPage{"/api/node", "application/json",
                        [core, calls] { return NodeJson(core, calls); }},
  };
}

}  // namespace tessera::server
