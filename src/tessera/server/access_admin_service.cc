#include "tessera/server/access_admin_service.h"

#include <string>

#include "tessera/server/audit.h"
#include "tessera/server/grpc_status.h"

namespace tessera::server {
namespace v1 = ::tessera::v1;

void AccessAdminService::Register(rpc::Services* services, Executor* executor) {
  constexpr const char* kService = v1::AccessAdmin::service_full_name();
  services->Add(kService, "ListPrincipals", this, &AccessAdminService::ListPrincipals, executor);
  services->Add(kService, "Grant", this, &AccessAdminService::Grant, executor);
  services->Add(kService, "Revoke", this, &AccessAdminService::Revoke, executor);
  services->Add(kService, "AddToken", this, &AccessAdminService::AddToken, executor);
  services->Add(kService, "RemoveTokens", this, &AccessAdminService::RemoveTokens, executor);
}

Status AccessAdminService::Enabled() const {
  if (access_ != nullptr) return Status();
  return absl::FailedPreconditionError(
      "this node runs without --auth: there are no principals or grants to manage");
}

rpc::UnaryReactor* AccessAdminService::ListPrincipals(rpc::ServerContext* context,
                                                      const v1::ListPrincipalsRequest*,
                                                      v1::ListPrincipalsResponse* response) {
  if (Status s = Enabled(); !s.ok()) return Reply(context, s);
  for (const PrincipalInfo& p : access_->Principals()) {
    v1::Principal* out = response->add_principals();
    out->set_name(p.name);
    out->set_file_admin(p.file_admin);
    out->set_file_tokens(p.file_tokens);
    for (const std::string& hash : p.token_hashes) out->add_token_hash_prefixes(hash.substr(0, 12));
    for (const auto& [resource, permissions] : p.grants) {
      (*out->mutable_grants())[resource] = PermissionsString(permissions);
    }
  }
  return Reply(context, Status());
}

rpc::UnaryReactor* AccessAdminService::ChangeGrant(rpc::ServerContext* context,
                                                   const v1::GrantRequest& request, bool grant,
                                                   v1::GrantResponse* response) {
  if (Status s = Enabled(); !s.ok()) return Reply(context, s);
  StatusOr<Permissions> now = ParsePermissions(request.permissions());
  if (now.ok()) {
    now = grant ? access_->Grant(request.principal(), request.resource(), *now)
                : access_->Revoke(request.principal(), request.resource(), *now);
  }
  AuditAdmin(*context, grant ? "grant" : "revoke",
             StrCat(request.principal(), " ", request.permissions(), " ", request.resource()),
             now.status());
  if (!now.ok()) return Reply(context, now.status());
  response->set_permissions(PermissionsString(*now));
  return Reply(context, Status());
}

rpc::UnaryReactor* AccessAdminService::Grant(rpc::ServerContext* context,
                                             const v1::GrantRequest* request,
                                             v1::GrantResponse* response) {
  return ChangeGrant(context, *request, /*grant=*/true, response);
}

rpc::UnaryReactor* AccessAdminService::Revoke(rpc::ServerContext* context,
                                              const v1::GrantRequest* request,
                                              v1::GrantResponse* response) {
  return ChangeGrant(context, *request, /*grant=*/false, response);
}

rpc::UnaryReactor* AccessAdminService::AddToken(rpc::ServerContext* context,
                                                const v1::AddTokenRequest* request,
                                                v1::AddTokenResponse* response) {
  if (Status s = Enabled(); !s.ok()) return Reply(context, s);
  StatusOr<std::string> token = access_->AddToken(request->principal());
  AuditAdmin(*context, "token add", request->principal(), token.status());
  if (!token.ok()) return Reply(context, token.status());
  response->set_token(*std::move(token));
  return Reply(context, Status());
}

rpc::UnaryReactor* AccessAdminService::RemoveTokens(rpc::ServerContext* context,
                                                    const v1::RemoveTokensRequest* request,
                                                    v1::RemoveTokensResponse* response) {
  if (Status s = Enabled(); !s.ok()) return Reply(context, s);
  StatusOr<int> removed = access_->RemoveTokens(request->principal());
  AuditAdmin(*context, "token remove", request->principal(), removed.status());
  if (!removed.ok()) return Reply(context, removed.status());
  response->set_removed(*removed);
  return Reply(context, Status());
}

}  // namespace tessera::server
