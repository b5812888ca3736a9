// Audit lines (docs/operations.md, "Audit"; docs/auth.md): one structured log line for every
// admin action that changes something, and one for every call refused by authentication or
// authorization. Tokens never appear in them.
//
//   audit: admin action=<a> target="<t>" principal=<p or -> peer=<addr> result=<OK or status>
//   audit: auth action=<method> principal=<p or ?> resource=<r or -> peer=<addr> result=<code>
//
// Thread-safety: safe from any thread.
#pragma once

#include <string_view>

#include "tessera/rpc/server.h"
#include "tessera/util/status.h"

namespace tessera::server {

void AuditAdmin(const rpc::ServerContext& context, std::string_view action, std::string_view target,
                const Status& result);
// The same for an action that came another way (the dashboard's POST /api/action).
void AuditAdmin(std::string_view principal, std::string_view peer, std::string_view action,
                std::string_view target, const Status& result);

void AuditRefusal(const rpc::ServerContext& context, std::string_view resource,
                  const Status& result);

}  // namespace tessera::server
