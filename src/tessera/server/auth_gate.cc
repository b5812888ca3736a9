#include "tessera/server/auth_gate.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "tessera/server/audit.h"
#include "tessera/server/grpc_status.h"
#include "tessera/util/strings.h"

namespace tessera::server {
namespace {

constexpr std::string_view kData = "google.bigtable.v2.Bigtable";
constexpr std::string_view kTableAdmin = "google.bigtable.admin.v2.BigtableTableAdmin";
constexpr std::string_view kInstanceAdmin = "google.bigtable.admin.v2.BigtableInstanceAdmin";

// "/pkg.Service/Method" -> ("pkg.Service", "Method").
std::pair<std::string_view, std::string_view> SplitPath(std::string_view path) {
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return {path, ""};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

// The table or instance a resource name starts with ("projects/p/instances/i/tables/t/..."),
// or `*` for anything else.
std::string ResourceOfName(std::string_view name) {
  std::vector<std::string_view> parts = Split(name, '/');
  if (parts.size() >= 4 && parts[0] == "projects" && parts[2] == "instances") {
    parts.resize(parts.size() >= 6 && parts[4] == "tables" ? 6 : 4);
    std::string r = Join(parts, "/");
    if (ValidateResource(r).ok()) return r;
  }
  return std::string(kAllResources);
}

// The resource an admin request names: its name, parent or table_name field, else the name of
// a message field (UpdateTable's table, UpdateAppProfile's app_profile).
std::string ResourceOf(const google::protobuf::MessageLite& request) {
  const auto& m = static_cast<const google::protobuf::Message&>(request);
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (const char* field : {"name", "parent", "table_name"}) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(field);
    if (f != nullptr && f->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
        !f->is_repeated()) {
      return ResourceOfName(r->GetString(m, f));
    }
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE || f->is_repeated() ||
        !r->HasField(m, f)) {
      continue;
    }
    const google::protobuf::Message& sub = r->GetMessage(m, f);
    const google::protobuf::FieldDescriptor* name = sub.GetDescriptor()->FindFieldByName("name");
    if (name != nullptr && name->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
      return ResourceOfName(sub.GetReflection()->GetString(sub, name));
    }
  }
  return std::string(kAllResources);
}

}  // namespace

std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() <= kBearer.size()) return {};
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(authorization[i])) != kBearer[i]) return {};
  }
  std::string_view token = authorization.substr(kBearer.size());
  while (!token.empty() && absl::ascii_isspace(static_cast<unsigned char>(token.front()))) {
    token.remove_prefix(1);
  }
  while (!token.empty() && absl::ascii_isspace(static_cast<unsigned char>(token.back()))) {
    token.remove_suffix(1);
  }
  return token;
}

grpc::Status AuthGate::Admit(rpc::ServerContext& context) {
  if (exempt_.contains(SplitPath(context.method()).first)) return grpc::Status::OK;
  std::string_view token;
  auto [begin, end] = context.client_metadata().equal_range("authorization");
  for (auto it = begin; it != end && token.empty(); ++it) {
    token = BearerToken(std::string_view(it->second.data(), it->second.size()));
  }
  Status result;
  if (token.empty()) {
    result = absl::UnauthenticatedError(
        "this node requires a bearer token (--auth): send metadata "
        "\"authorization: Bearer <token>\" (tessera --token, $TESSERA_TOKEN)");
  } else {
    StatusOr<std::string> principal = access_->Authenticate(token);
    if (principal.ok()) {
      context.set_principal(*std::move(principal));
      return grpc::Status::OK;
    }
    result = principal.status();
  }
  AuditRefusal(context, "", result);
  return ToGrpcStatus(result);
}

grpc::Status AuthGate::Require(const rpc::ServerContext& context, Permission permission,
                               const std::string& resource) const {
  Status s = access_->Check(context.principal(), permission, resource);
  if (s.ok()) return grpc::Status::OK;
  AuditRefusal(context, resource, s);
  return ToGrpcStatus(s);
}

grpc::Status AuthGate::AdmitRequest(const rpc::ServerContext& context,
                                    const google::protobuf::MessageLite& request) {
  const auto [service, method] = SplitPath(context.method());
  if (exempt_.contains(service) || service == kData) return grpc::Status::OK;
  if (service == kTableAdmin) {
    if (method == "ListTables") return grpc::Status::OK;
    if (method == "GetTable" || method == "GenerateConsistencyToken" ||
        method == "CheckConsistency") {
      // The table's schema and replication state, not its data: for anyone who holds
      // something on the table or one of its families (as ListTables shows it).
      const std::string resource = ResourceOf(request);
      if (access_->HoldsAnything(context.principal(), resource)) return grpc::Status::OK;
      return Require(context, kPermRead, resource);
    }
    return Require(context, kPermAdmin, ResourceOf(request));
  }
  if (service == kInstanceAdmin) {
    if (method.starts_with("Get") || method.starts_with("List")) return grpc::Status::OK;
    if (method.ends_with("AppProfile")) {
      return Require(context, kPermAdmin, ResourceOf(request));
    }
  }
  return Require(context, kPermAdmin, std::string(kAllResources));
}

}  // namespace tessera::server
