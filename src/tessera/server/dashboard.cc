#include "tessera/server/dashboard.h"

#include <string>
#include <utility>

#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "tessera/cluster/node.h"
#include "tessera/server/audit.h"
#include "tessera/server/auth_gate.h"
#include "tessera/server/node_admin_service.h"
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
  const replication::StreamStats streams = core->Streams();
  out["streams"] = {{"sending", streams.sending},
                    {"receiving", streams.receiving},
                    {"sending_bytes", streams.sending_bytes},
                    {"sent_bytes_total", streams.sent_bytes_total},
                    {"received_bytes_total", streams.received_bytes_total},
                    {"throughput_bytes_per_second", core->stream_bytes_per_second()}};
  out["drained"] = core->drained();
  out["auth"] = core->access_control() != nullptr;
  out["serving"] = core->CheckServing().ok();
  return out.dump();
}

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kFailedPrecondition:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

metrics::HttpReply Reply(const Status& s, const std::string& message) {
  if (!s.ok()) {
    return {HttpStatusOf(s), nlohmann::json{{"error", std::string(s.message())}}.dump()};
  }
  return {200, nlohmann::json{{"ok", true}, {"message", message}}.dump()};
}

// Who may act: an admin of `*` named by the request's bearer token. Sets *principal to whom
// the token names, once known.
Status CheckActor(NodeCore* core, const metrics::HttpRequest& request, std::string* principal) {
  const AccessControl* access = core->access_control();
  if (access == nullptr) {
    return absl::FailedPreconditionError(
        "this node runs without --auth: the dashboard is read-only (use tessera admin)");
  }
  const std::string_view token = BearerToken(request.authorization);
  if (token.empty()) return absl::UnauthenticatedError("an admin's bearer token is needed");
  ASSIGN_OR_RETURN(*principal, access->Authenticate(token));
  return access->Check(*principal, kPermAdmin, kAllResources);
}

// "repaired 2 tablets: 4 replicas consistent, 0 rebuilding, 0 not checked".
std::string RepairSummary(const ::tessera::v1::RepairResponse& r) {
  size_t consistent = 0, rebuilding = 0, unchecked = 0;
  for (const auto& t : r.tablets()) {
    if (!t.error().empty()) ++unchecked;
    for (const auto& replica : t.replicas()) {
      if (replica.result() == "consistent") {
        ++consistent;
      } else if (replica.result() == "rebuilding") {
        ++rebuilding;
      } else {
        ++unchecked;
      }
    }
  }
  return StrCat("repaired ", r.tablets_size(), " tablets this node is the primary of: ", consistent,
                " replicas consistent, ", rebuilding, " rebuilding, ", unchecked, " not checked");
}

metrics::HttpReply Action(NodeCore* core, const metrics::HttpRequest& request) {
  const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  const std::string action =
      body.is_object() && body.contains("action") && body["action"].is_string()
          ? body["action"].get<std::string>()
          : "";
  const std::string table = body.is_object() && body.contains("table") && body["table"].is_string()
                                ? body["table"].get<std::string>()
                                : "";
  std::string principal;
  const std::string what = StrCat("dashboard ", action.empty() ? "?" : action);
  if (Status allowed = CheckActor(core, request, &principal); !allowed.ok()) {
    AuditAdmin(principal.empty() ? "?" : principal, request.peer, what, table, allowed);
    return Reply(allowed, "");
  }
  Status s;
  std::string message;
  if (action == "flush") {
    StatusOr<::tessera::v1::FlushResponse> r = FlushTablets(*core, table);
    s = r.status();
    if (s.ok()) message = StrCat("flushed ", r->tablets(), " tablets");
  } else if (action == "compact") {
    StatusOr<::tessera::v1::CompactResponse> r = CompactTablets(*core, table);
    s = r.status();
    if (s.ok()) {
      message = StrCat("compacted ", r->tablets(), " tablets: ", r->sstables_before(), " -> ",
                       r->sstables_after(), " SSTables");
    }
  } else if (action == "repair") {
    StatusOr<::tessera::v1::RepairResponse> r = RepairTablets(*core, table);
    s = r.status();
    if (s.ok()) message = RepairSummary(*r);
  } else if (action == "decommission") {
    // At most ten minutes on this HTTP thread; `tessera admin decommission` waits longer.
    StatusOr<uint64_t> moved =
        DecommissionNode(*core, std::chrono::system_clock::now() + std::chrono::minutes(10));
    s = moved.status();
    if (s.ok()) {
      message = StrCat("decommissioned: ", *moved,
                       " tablet replicas moved to other nodes; the node left the ring and "
                       "serves no more");
    }
  } else if (action == "drain") {
    s = core->Drain();
    message = "drained: the node serves no more and waits to be stopped";
  } else {
    s = absl::InvalidArgumentError(
        "the body must be {\"action\": \"flush\"|\"compact\"|\"repair\"|\"decommission\"|"
        "\"drain\", \"table\": optional}");
  }
  AuditAdmin(principal, request.peer, what, table, s);
  return Reply(s, message);
}

}  // namespace

std::vector<metrics::HttpPage> DashboardPages(NodeCore* core, const CallCounter* calls) {
  return {
      metrics::HttpPage{"/", "text/html; charset=utf-8",
                        [] { return std::string(kDashboardHtml); }},
      metrics::HttpPage{"/api/node", "application/json",
                        [core, calls] { return NodeJson(core, calls); }},
      metrics::HttpPage{
          "/api/action", "application/json", nullptr,
          [core](const metrics::HttpRequest& request) { return Action(core, request); }},
  };
}

}  // namespace tessera::server
