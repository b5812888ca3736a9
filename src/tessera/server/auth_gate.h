// AuthGate: with `tessera serve --auth`, every call of a client-facing service names a principal
// with a bearer token, and the admin services' calls need the permissions docs/auth.md lists
// ("What each call needs"). The data service checks its own calls (data_service.h), because
// what a data call needs depends on the table's families, its filter and each mutation.
//
//   Admit         node-to-node services (`exempt`) pass; any other call needs metadata
//                 `authorization: Bearer <token>` whose token AccessControl knows, else
//                 UNAUTHENTICATED; the principal is set on the call's context.
//   AdmitRequest  table admin: CreateTable and app profiles need admin on the instance; GetTable
//                 and the consistency calls any grant on the table or one of its families;
//                 ListTables passes (the handler leaves out tables the principal holds
//                 nothing on); every other call admin on the table it names. Instance admin: reads
//                 pass; changes need admin on `*`. Tessera's own services (tessera.v1: NodeAdmin,
//                 ClusterAdmin, TabletAdmin, AccessAdmin) need admin on `*`. Unknown services need
//                 admin on `*`.
// Every refusal writes an audit line: `audit: auth action=<method> principal=<p or ?>
// resource=<r> peer=<addr> result=<code>`. The token never appears in a log or a message.
//
// Thread-safety: immutable after construction; AccessControl is thread-safe.
#pragma once

#include <set>
#include <string>

#include "tessera/rpc/server.h"
#include "tessera/server/access_control.h"

namespace tessera::server {

class AuthGate final : public rpc::CallGate {
 public:
  // `access` must outlive the gate. `exempt`: full service names whose calls need no token.
  AuthGate(const AccessControl* access, std::set<std::string, std::less<>> exempt)
      : access_(access), exempt_(std::move(exempt)) {}

  grpc::Status Admit(rpc::ServerContext& context) override;
  grpc::Status AdmitRequest(const rpc::ServerContext& context,
                            const google::protobuf::MessageLite& request) override;

 private:
  // OK, or the refusal (audited).
  grpc::Status Require(const rpc::ServerContext& context, Permission permission,
                       const std::string& resource) const;

  const AccessControl* const access_;
  const std::set<std::string, std::less<>> exempt_;
};

// The token of an `authorization: Bearer <token>` value ("bearer" in any case); empty for
// anything else.
std::string_view BearerToken(std::string_view authorization);

}  // namespace tessera::server
