#include "tessera/cli/admin_access.h"

#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "nlohmann/json.hpp"
#include "tessera/cli/admin_node.h"
#include "tessera/cli/proto_json.h"
#include "tessera/v1/access_admin.grpc.pb.h"

namespace tessera::cli {
namespace v1 = ::tessera::v1;

std::string GrantResource(const std::string& resource, const std::string& family,
                          const std::string& project, const std::string& instance) {
  std::string r = resource;
  if (r != "*" && r.find('/') == std::string::npos) {
    r = fmt::format("projects/{}/instances/{}/tables/{}", project, instance, r);
  }
  if (!family.empty()) r += "/families/" + family;
  return r;
}

namespace {

// One AccessAdmin call; prints the answer as JSON with --json, else as `text` says. Exit status
// as the header says.
template <typename Request, typename Response>
int Ask(const char* command, const std::string& addr, int64_t timeout_ms, bool json,
        grpc::Status (v1::AccessAdmin::Stub::*method)(grpc::ClientContext*, const Request&,
                                                      Response*),
        const Request& request, const std::function<void(const Response&)>& text) {
  Response response;
  if (!AskNode(command, addr, timeout_ms, method, request, &response).ok()) return 1;
  if (json) {
    std::printf("%s\n", ProtoToJson(response).dump().c_str());
  } else {
    text(response);
  }
  return 0;
}

}  // namespace

int RunPrincipals(const std::string& addr, int64_t timeout_ms, bool json) {
  return Ask<v1::ListPrincipalsRequest, v1::ListPrincipalsResponse>(
      "principals", addr, timeout_ms, json, &v1::AccessAdmin::Stub::ListPrincipals,
      v1::ListPrincipalsRequest(), [](const v1::ListPrincipalsResponse& response) {
        std::printf("%-24s %-28s %s\n", "Principal", "Tokens", "Grants");
        for (const v1::Principal& p : response.principals()) {
          std::vector<std::string> tokens;
          if (p.file_tokens() > 0) {
            tokens.push_back(
                fmt::format("file:{}{}", p.file_tokens(), p.file_admin() ? " (admin)" : ""));
          }
          for (const std::string& hash : p.token_hash_prefixes()) tokens.push_back(hash);
          // The map's order is unspecified: sort for a stable listing.
          std::vector<std::string> grants;
          std::map<std::string, std::string> sorted(p.grants().begin(), p.grants().end());
          for (const auto& [resource, permissions] : sorted) {
            grants.push_back(fmt::format("{} {}", permissions, resource));
          }
          std::printf("%-24s %-28s %s\n", p.name().c_str(),
                      tokens.empty() ? "-" : fmt::format("{}", fmt::join(tokens, ",")).c_str(),
                      grants.empty() ? "-" : fmt::format("{}", fmt::join(grants, "; ")).c_str());
        }
      });
}

int RunGrant(const std::string& addr, int64_t timeout_ms, bool json, bool grant,
             const std::string& principal, const std::string& permissions,
             const std::string& resource) {
  v1::GrantRequest request;
  request.set_principal(principal);
  request.set_permissions(permissions);
  request.set_resource(resource);
  return Ask<v1::GrantRequest, v1::GrantResponse>(
      grant ? "grant" : "revoke", addr, timeout_ms, json,
      grant ? &v1::AccessAdmin::Stub::Grant : &v1::AccessAdmin::Stub::Revoke, request,
      [&](const v1::GrantResponse& response) {
        std::printf("%s now holds %s on %s\n", principal.c_str(),
                    response.permissions().empty() ? "nothing" : response.permissions().c_str(),
                    resource.c_str());
      });
}

int RunToken(const std::string& addr, int64_t timeout_ms, bool json, bool add,
             const std::string& principal) {
  if (add) {
    v1::AddTokenRequest request;
    request.set_principal(principal);
    return Ask<v1::AddTokenRequest, v1::AddTokenResponse>(
        "token add", addr, timeout_ms, json, &v1::AccessAdmin::Stub::AddToken, request,
        [&](const v1::AddTokenResponse& response) {
          std::printf("%s\n", response.token().c_str());
          std::fprintf(stderr, "a new token for %s: it is shown only this once\n",
                       principal.c_str());
        });
  }
  v1::RemoveTokensRequest request;
  request.set_principal(principal);
  return Ask<v1::RemoveTokensRequest, v1::RemoveTokensResponse>(
      "token remove", addr, timeout_ms, json, &v1::AccessAdmin::Stub::RemoveTokens, request,
      [&](const v1::RemoveTokensResponse& response) {
        std::printf("removed %d token(s) of %s\n", response.removed(), principal.c_str());
      });
}

}  // namespace tessera::cli
