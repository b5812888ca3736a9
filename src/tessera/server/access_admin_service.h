// AccessAdminService: tessera.v1.AccessAdmin (proto/tessera/v1/access_admin.proto) — the
// principals, tokens and grants of docs/auth.md, changed through any node (`tessera admin
// principals | grant | revoke | token`). The AuthGate admits only `admin` on `*`; every change
// is audited. On a node without --auth every method answers FAILED_PRECONDITION.
//
// Thread-safety: handlers run concurrently on the executor given to Register; AccessControl is
// thread-safe.
#pragma once

#include "tessera/rpc/server.h"
#include "tessera/server/access_control.h"
#include "tessera/util/executor.h"
#include "tessera/v1/access_admin.grpc.pb.h"

namespace tessera::server {

class AccessAdminService final {
 public:
  // `access` may be null (no --auth); else it must outlive the service.
  explicit AccessAdminService(AccessControl* access) : access_(access) {}

  // Registers every method, to run on `executor` (they wait for the lock service).
  void Register(rpc::Services* services, Executor* executor);

  rpc::UnaryReactor* ListPrincipals(rpc::ServerContext* context,
                                    const ::tessera::v1::ListPrincipalsRequest* request,
                                    ::tessera::v1::ListPrincipalsResponse* response);
  rpc::UnaryReactor* Grant(rpc::ServerContext* context, const ::tessera::v1::GrantRequest* request,
                           ::tessera::v1::GrantResponse* response);
  rpc::UnaryReactor* Revoke(rpc::ServerContext* context, const ::tessera::v1::GrantRequest* request,
                            ::tessera::v1::GrantResponse* response);
  rpc::UnaryReactor* AddToken(rpc::ServerContext* context,
                              const ::tessera::v1::AddTokenRequest* request,
                              ::tessera::v1::AddTokenResponse* response);
  rpc::UnaryReactor* RemoveTokens(rpc::ServerContext* context,
                                  const ::tessera::v1::RemoveTokensRequest* request,
                                  ::tessera::v1::RemoveTokensResponse* response);

 private:
  // FailedPrecondition without --auth.
  Status Enabled() const;
  rpc::UnaryReactor* ChangeGrant(rpc::ServerContext* context,
                                 const ::tessera::v1::GrantRequest& request, bool grant,
                                 ::tessera::v1::GrantResponse* response);

  AccessControl* const access_;
};

}  // namespace tessera::server
