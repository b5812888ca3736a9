// `tessera admin principals | grant | revoke | token add | token remove` (docs/auth.md): the
// principals, tokens and grants of a cluster whose nodes run with --auth, through the node at
// `addr` (tessera.v1.AccessAdmin; the caller's --token must name an admin of `*`). A change
// made through one node applies on every node.
//
// Exit status: 0; 1 when the node cannot be reached or refuses (its message on stderr: an
// unknown permission, a malformed resource, a revoke of nothing, a node without --auth);
// 2 on bad flags (admin.cc).
#pragma once

#include <cstdint>
#include <string>

namespace tessera::cli {

// The resource a grant names, from the command line: `*`, a full resource
// (projects/P/instances/I[/tables/T[/families/F]]), or a table id expanded with `project` and
// `instance`; `family` (may be empty) narrows a table to one family.
std::string GrantResource(const std::string& resource, const std::string& family,
                          const std::string& project, const std::string& instance);

int RunPrincipals(const std::string& addr, int64_t timeout_ms, bool json);
// `grant`: true for grant, false for revoke.
int RunGrant(const std::string& addr, int64_t timeout_ms, bool json, bool grant,
             const std::string& principal, const std::string& permissions,
             const std::string& resource);
// `add`: a new token, printed once; else every lock-service token of the principal removed.
int RunToken(const std::string& addr, int64_t timeout_ms, bool json, bool add,
             const std::string& principal);

}  // namespace tessera::cli
