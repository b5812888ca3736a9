// AccessControl: who a bearer token names, and what that principal may do (docs/auth.md).
//
// Principals and tokens:
//   * The tokens file (`tessera serve --auth-tokens FILE`), read at start and again by
//     ReloadTokensFile (`tessera serve` does on SIGHUP): lines
//     `<principal> <token> [admin]`, '#' comments and blank lines ignored. `admin` makes the
//     principal an administrator of the whole node (`admin` on `*`) without any grant: that is
//     how the first administrator exists. The file must not be readable by group or others.
//   * The lock service: `<prefix>tokens/<sha256 of the token, hex>` whose value is the
//     principal. Only hashes are stored, so a copy of etcd leaks no token.
// Grants, in the lock service: `<prefix>grants/<principal>/<resource>` whose value is the
// permission set ("read,write"). Resources, widest first: `*`, `projects/P/instances/I`,
// `projects/P/instances/I/tables/T`, `projects/P/instances/I/tables/T/families/F`; a permission
// on a resource covers every narrower one, present and future.
//
// Every node mirrors the prefix (coord::PrefixMirror) once Attach() gives it the node's
// session, so a check reads memory only and a change made through any node applies on every
// node within one watch delivery. Until the first listing has been delivered a check of a
// principal the file does not make an administrator fails with Unavailable (never a wrong
// PERMISSION_DENIED), as does authenticating a token the file does not hold.
//
// Changes (Grant, Revoke, AddToken, RemoveTokens) are compare-and-set on the file's version,
// retried a bounded number of times, and delivered to the node's own view at once.
//
// Thread-safety: every method is safe to call concurrently. Checks take a reader lock; no lock
// is held across a lock-service call. Lock order: attach_mu_, then the mirror's, then mu_.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/coord/lock_service.h"
#include "tessera/coord/prefix_mirror.h"
#include "tessera/util/status.h"

namespace tessera::server {

// A set of permissions, as bits.
enum Permission : uint8_t { kPermRead = 1, kPermWrite = 2, kPermAdmin = 4 };
using Permissions = uint8_t;
constexpr Permissions kAllPermissions = kPermRead | kPermWrite | kPermAdmin;

// "read", "write", "admin" or a comma-separated set of them ("read,write"); InvalidArgument
// naming the word otherwise, or for an empty set.
StatusOr<Permissions> ParsePermissions(std::string_view text);
// "read,write" (in that order; "" for none).
std::string PermissionsString(Permissions permissions);

// The cluster: the widest resource.
inline constexpr std::string_view kAllResources = "*";
// OK for a resource of the forms above (names as Bigtable allows: instance and table ids
// [-_.a-zA-Z0-9]+, family names [-_.a-zA-Z0-9]+); InvalidArgument naming the problem otherwise.
Status ValidateResource(std::string_view resource);
// The resource one step wider: a family's table, a table's instance, an instance's `*`; "" for
// `*`. REQUIRES: a valid resource.
std::string WiderResource(std::string_view resource);
// `table` ("projects/p/instances/i/tables/t") + "/families/" + `family`.
std::string FamilyResource(std::string_view table, std::string_view family);

// OK for a principal name: 1 to 128 of [-_.@a-zA-Z0-9]; InvalidArgument naming it otherwise.
Status ValidatePrincipal(std::string_view principal);
// The SHA-256 of `token`, as 64 lower-case hex digits.
std::string TokenHash(std::string_view token);
// A new random token: 32 bytes from the system's CSPRNG, base64url without padding.
std::string NewToken();

// What `tessera admin principals` shows of one principal.
struct PrincipalInfo {
  std::string name;
  bool file_admin = false;                    // `admin` in the tokens file
  int file_tokens = 0;                        // tokens the file holds for it
  std::vector<std::string> token_hashes;      // of the lock service's tokens, sorted
  std::map<std::string, Permissions> grants;  // resource -> permissions
};

struct AccessControlOptions {
  // The tokens file (see the top); empty: none.
  std::string tokens_file;
  // Where tokens and grants live in the lock service. Non-empty, ends with '/'.
  std::string prefix = "auth/";
  // How many times a change retries a lost compare-and-set before giving up with Aborted.
  int max_attempts = 16;
};

class AccessControl final : public coord::MirrorListener {
 public:
  // Reads the tokens file. InvalidArgument naming the file and line for a malformed line, a
  // token given twice, or a file readable by group or others; NotFound for a missing file.
  static StatusOr<std::unique_ptr<AccessControl>> Open(AccessControlOptions options);
  ~AccessControl() override;

  // Mirrors the prefix with `session` (lists, then watches). Errors: the mirror's.
  Status Attach(coord::Session* session);
  // Stops the mirror; the view kept so far stays (a node without a session serves nothing).
  void Detach();

  // The principal `token` names. Unauthenticated "the token is not known" (the token is never
  // in a message); Unavailable before the first listing for a token the file does not hold.
  StatusOr<std::string> Authenticate(std::string_view token) const;
  // OK when `principal` holds `permission` on `resource` or a wider one (a file admin holds
  // everything). PermissionDenied "principal P lacks read on R" otherwise.
  Status Check(std::string_view principal, Permission permission, std::string_view resource) const;
  // Whether Check would be OK.
  bool Allowed(std::string_view principal, Permission permission, std::string_view resource) const {
    return Check(principal, permission, resource).ok();
  }

  // Whether `principal` holds anything on `resource`, a wider one or a narrower one (a family
  // of a table): what ListTables shows a principal.
  bool HoldsAnything(std::string_view principal, std::string_view resource) const;

  // Adds `permissions` to what `principal` holds on `resource` (exactly that resource). Returns
  // the permissions it holds there now. InvalidArgument for a bad principal or resource;
  // Unavailable without a session; Aborted after max_attempts lost compare-and-sets.
  StatusOr<Permissions> Grant(std::string_view principal, std::string_view resource,
                              Permissions permissions);
  // Takes `permissions` away from what `principal` holds on exactly `resource` (the grant goes
  // when nothing is left). NotFound when it holds nothing there. Errors otherwise as Grant.
  StatusOr<Permissions> Revoke(std::string_view principal, std::string_view resource,
                               Permissions permissions);
  // A new token for `principal`, stored by hash; the token itself is returned once.
  StatusOr<std::string> AddToken(std::string_view principal);
  // Deletes every lock-service token of `principal`; returns how many. The file's stay.
  StatusOr<int> RemoveTokens(std::string_view principal);

  // Reads the tokens file again and, if it is valid, puts its tokens and administrators in
  // place of the previous ones at once (calls checked after this see them); returns how many
  // tokens it holds. A file that does not read or parse changes nothing: the error names it.
  // FailedPrecondition when the node has no tokens file.
  StatusOr<size_t> ReloadTokensFile();

  // Every principal the file, the tokens or the grants name, sorted by name.
  std::vector<PrincipalInfo> Principals() const;

  // --- coord::MirrorListener (one at a time, from the mirror) ---
  Status OnPut(const coord::FileInfo& file, coord::MirrorCause cause) override;
  Status OnDelete(const std::string& name, int64_t revision, coord::MirrorCause cause) override;
  Status OnSynced(int64_t revision, const std::set<std::string, std::less<>>& live) override;
  void OnSessionExpired() override;

 private:
  struct FileEntry {
    std::string principal;
    bool admin = false;
  };

  struct FileTokens {
    std::map<std::string, FileEntry, std::less<>> tokens;  // by token hash
    std::set<std::string, std::less<>> admins;
  };

  explicit AccessControl(AccessControlOptions options) : options_(std::move(options)) {}
  StatusOr<FileTokens> ReadTokensFile() const;
  std::string TokenFile(std::string_view hash) const;
  std::string GrantFile(std::string_view principal, std::string_view resource) const;
  // Applies `change` to the permissions stored in `name` by compare-and-set (0 deletes the
  // file); `change` returns the new set or an error that ends the attempt.
  StatusOr<Permissions> ChangeGrant(
      const std::string& name, const std::function<StatusOr<Permissions>(Permissions)>& change);
  // Applies a file's state to the view. REQUIRES: mu_ held.
  void ApplyLocked(const std::string& name, const std::string* value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AccessControlOptions options_;
  std::unique_ptr<coord::PrefixMirror> mirror_;
  absl::Mutex attach_mu_;
  mutable absl::Mutex mu_;
  // The tokens file as last read.
  FileTokens file_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  // The lock service's view: token hash -> principal; "<principal>\n<resource>" -> permissions
  // (sorted so that a principal's grants on a resource and everything under it are adjacent).
  std::map<std::string, std::string, std::less<>> tokens_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Permissions, std::less<>> grants_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::server
