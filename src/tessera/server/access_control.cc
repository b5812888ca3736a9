#include "tessera/server/access_control.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "tessera/util/logging.h"
#include "tessera/util/strings.h"

namespace tessera::server {
namespace {

constexpr std::string_view kTokens = "tokens/";
constexpr std::string_view kGrants = "grants/";

// Non-empty, and only letters, digits and the characters of `extra`.
bool NameChars(std::string_view s, std::string_view extra) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [extra](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
  });
}

// The key of a grant in the view.
std::string GrantKey(std::string_view principal, std::string_view resource) {
  return StrCat(principal, "\n", resource);
}

Status NoSession(const Status& s) {
  return absl::UnavailableError(
      StrCat("access control: no lock-service session (", std::string(s.message()), ")"));
}

}  // namespace

StatusOr<Permissions> ParsePermissions(std::string_view text) {
  Permissions p = 0;
  for (std::string_view word : Split(text, ',')) {
    if (word == "read") {
      p |= kPermRead;
    } else if (word == "write") {
      p |= kPermWrite;
    } else if (word == "admin") {
      p |= kPermAdmin;
    } else {
      return absl::InvalidArgumentError(
          StrCat("unknown permission \"", word, "\" (the permissions are read, write and admin)"));
    }
  }
  return p;
}

std::string PermissionsString(Permissions permissions) {
  std::vector<std::string_view> words;
  if (permissions & kPermRead) words.push_back("read");
  if (permissions & kPermWrite) words.push_back("write");
  if (permissions & kPermAdmin) words.push_back("admin");
  return Join(words, ",");
}

Status ValidateResource(std::string_view resource) {
  if (resource == kAllResources) return Status();
  std::vector<std::string_view> parts = Split(resource, '/');
  static constexpr std::string_view kLabels[] = {"projects", "instances", "tables", "families"};
  const bool shape = parts.size() == 4 || parts.size() == 6 || parts.size() == 8;
  bool ok = shape;
  for (size_t i = 0; ok && i < parts.size(); i += 2) {
    ok = parts[i] == kLabels[i / 2] && NameChars(parts[i + 1], "-_.");
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        StrCat("\"", resource,
               "\" is not a resource: give *, projects/P/instances/I, "
               "projects/P/instances/I/tables/T or projects/P/instances/I/tables/T/families/F"));
  }
  return Status();
}

std::string WiderResource(std::string_view resource) {
  if (resource == kAllResources) return "";
  // Drop the last "/<label>/<id>": a family's table, a table's instance; an instance's is `*`.
  // Every Check walks up this way, so no pieces are made.
  const size_t last = resource.rfind('/');
  const size_t cut = last == std::string_view::npos || last == 0 ? std::string_view::npos
                                                                 : resource.rfind('/', last - 1);
  if (cut == std::string_view::npos) return std::string(kAllResources);
  const std::string_view wider = resource.substr(0, cut);
  if (wider.find("/instances/") == std::string_view::npos) return std::string(kAllResources);
  return std::string(wider);
}

std::string FamilyResource(std::string_view table, std::string_view family) {
  return StrCat(table, "/families/", family);
}

Status ValidatePrincipal(std::string_view principal) {
  const bool ok = principal.size() <= 128 && NameChars(principal, "-_.@");
  if (!ok) {
    return absl::InvalidArgumentError(StrCat("\"", principal,
                                             "\" is not a principal name: 1 to 128 of "
                                             "letters, digits and -_.@"));
  }
  return Status();
}

std::string TokenHash(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::string NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // The CSPRNG failing is not something to go on from with a guessable token.
    TLOG_ERROR("access control: the system's random source failed");
    std::abort();
  }
  std::string token;
  absl::WebSafeBase64Escape(absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)),
                            &token);
  return token;
}

StatusOr<std::unique_ptr<AccessControl>> AccessControl::Open(AccessControlOptions options) {
  if (options.prefix.empty() || options.prefix.back() != '/') {
    return absl::InvalidArgumentError("the access-control prefix must end with '/'");
  }
  std::unique_ptr<AccessControl> ac(new AccessControl(std::move(options)));
  ASSIGN_OR_RETURN(FileTokens file, ac->ReadTokensFile());
  {
    absl::MutexLock l(&ac->mu_);
    ac->file_ = std::move(file);
  }
  coord::PrefixMirrorOptions mo;
  mo.prefix = ac->options_.prefix;
  mo.what = "the access grants";
  mo.log_name = "access control";
  ASSIGN_OR_RETURN(ac->mirror_, coord::PrefixMirror::Create(ac.get(), mo));
  return ac;
}

AccessControl::~AccessControl() {
  if (mirror_ != nullptr) mirror_->Stop();
}

StatusOr<AccessControl::FileTokens> AccessControl::ReadTokensFile() const {
  FileTokens file;
  const std::string& path = options_.tokens_file;
  if (path.empty()) return file;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(StrCat("--auth-tokens: cannot read ", path));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(
        StrCat("--auth-tokens: ", path,
               " is readable by group or others; make it private (chmod 600 ", path, ")"));
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(StrCat("--auth-tokens: cannot read ", path));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = StrCat("--auth-tokens: ", path, " line ", number);
    std::vector<std::string_view> words;
    for (std::string_view w : Split(line, ' ')) {
      for (std::string_view piece : Split(w, '\t')) {
        if (!piece.empty() && piece.back() == '\r') piece.remove_suffix(1);
        if (!piece.empty()) words.push_back(piece);
      }
    }
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() < 2 || words.size() > 3 || (words.size() == 3 && words[2] != "admin")) {
      return absl::InvalidArgumentError(
          StrCat(where, ": expected \"<principal> <token> [admin]\""));
    }
    if (Status s = ValidatePrincipal(words[0]); !s.ok()) {
      return absl::InvalidArgumentError(StrCat(where, ": ", std::string(s.message())));
    }
    if (words[1].size() < 16) {
      return absl::InvalidArgumentError(StrCat(where, ": the token is shorter than 16 characters"));
    }
    FileEntry entry{.principal = std::string(words[0]), .admin = words.size() == 3};
    if (!file.tokens.emplace(TokenHash(words[1]), entry).second) {
      return absl::InvalidArgumentError(StrCat(where, ": this token is given twice"));
    }
    if (entry.admin) file.admins.insert(entry.principal);
  }
  TLOG_INFO("access control: {} token(s) from {}", file.tokens.size(), path);
  return file;
}

StatusOr<size_t> AccessControl::ReloadTokensFile() {
  if (options_.tokens_file.empty()) {
    return absl::FailedPreconditionError("the node has no tokens file (--auth-tokens)");
  }
  ASSIGN_OR_RETURN(FileTokens file, ReadTokensFile());
  absl::MutexLock l(&mu_);
  file_ = std::move(file);
  return file_.tokens.size();
}

std::string AccessControl::TokenFile(std::string_view hash) const {
  return StrCat(options_.prefix, kTokens, hash);
}

std::string AccessControl::GrantFile(std::string_view principal, std::string_view resource) const {
  return StrCat(options_.prefix, kGrants, principal, "/", resource);
}

Status AccessControl::Attach(coord::Session* session) {
  absl::MutexLock attach(&attach_mu_);
  return mirror_->Start(session);
}

void AccessControl::Detach() {
  absl::MutexLock attach(&attach_mu_);
  mirror_->Stop();
}

StatusOr<std::string> AccessControl::Authenticate(std::string_view token) const {
  const std::string hash = TokenHash(token);
  absl::ReaderMutexLock l(&mu_);
  if (auto it = file_.tokens.find(hash); it != file_.tokens.end()) return it->second.principal;
  if (auto it = tokens_.find(hash); it != tokens_.end()) return it->second;
  if (!synced_) {
    return absl::UnavailableError("the node has not loaded its access tokens yet");
  }
  return absl::UnauthenticatedError("the token is not known");
}

Status AccessControl::Check(std::string_view principal, Permission permission,
                            std::string_view resource) const {
  absl::ReaderMutexLock l(&mu_);
  if (file_.admins.contains(principal)) return Status();
  for (std::string r(resource); !r.empty(); r = WiderResource(r)) {
    auto it = grants_.find(GrantKey(principal, r));
    if (it != grants_.end() && (it->second & permission) != 0) return Status();
  }
  if (!synced_) return absl::UnavailableError("the node has not loaded its access grants yet");
  return absl::PermissionDeniedError(
      StrCat("principal ", principal, " lacks ", PermissionsString(permission), " on ", resource));
}

bool AccessControl::HoldsAnything(std::string_view principal, std::string_view resource) const {
  absl::ReaderMutexLock l(&mu_);
  if (file_.admins.contains(principal)) return true;
  for (std::string r(resource); !r.empty(); r = WiderResource(r)) {
    if (grants_.contains(GrantKey(principal, r))) return true;
  }
  const std::string narrower = GrantKey(principal, StrCat(resource, "/"));
  auto it = grants_.lower_bound(narrower);
  return it != grants_.end() && it->first.starts_with(narrower);
}

StatusOr<Permissions> AccessControl::ChangeGrant(
    const std::string& name, const std::function<StatusOr<Permissions>(Permissions)>& change) {
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    StatusOr<coord::PrefixMirror::SessionUse> use = mirror_->UseSession();
    if (!use.ok()) return NoSession(use.status());
    StatusOr<coord::FileInfo> current = (*use)->Get(name);
    Permissions have = 0;
    int64_t version = 0;
    if (current.ok()) {
      have = ParsePermissions(current->value).value_or(0);
      version = current->version;
    } else if (!absl::IsNotFound(current.status())) {
      return coord::LockServiceCallError("reading a grant", current.status());
    }
    ASSIGN_OR_RETURN(Permissions next, change(have));
    if (next == have && version != 0) return next;
    if (next == 0) {
      if (version == 0) return next;
      Status s = (*use)->Delete(name, version);
      if (absl::IsAborted(s) || absl::IsNotFound(s)) continue;
      if (!s.ok()) return coord::LockServiceCallError("deleting a grant", s);
      RETURN_IF_ERROR(mirror_->DeliverLocalDelete(name, current->mod_revision));
      return next;
    }
    coord::PutOptions po;
    po.expected_version = version;
    StatusOr<coord::FileInfo> put = (*use)->Put(name, PermissionsString(next), po);
    if (absl::IsAborted(put.status())) continue;
    if (!put.ok()) return coord::LockServiceCallError("writing a grant", put.status());
    RETURN_IF_ERROR(mirror_->DeliverLocalPut(*put));
    return next;
  }
  return absl::AbortedError(StrCat("the grant ", name, " kept changing; try again"));
}

StatusOr<Permissions> AccessControl::Grant(std::string_view principal, std::string_view resource,
                                           Permissions permissions) {
  RETURN_IF_ERROR(ValidatePrincipal(principal));
  RETURN_IF_ERROR(ValidateResource(resource));
  if (permissions == 0) return absl::InvalidArgumentError("grant needs a permission");
  return ChangeGrant(
      GrantFile(principal, resource),
      [permissions](Permissions have) -> StatusOr<Permissions> { return have | permissions; });
}

StatusOr<Permissions> AccessControl::Revoke(std::string_view principal, std::string_view resource,
                                            Permissions permissions) {
  RETURN_IF_ERROR(ValidatePrincipal(principal));
  RETURN_IF_ERROR(ValidateResource(resource));
  if (permissions == 0) return absl::InvalidArgumentError("revoke needs a permission");
  const std::string what = StrCat("principal ", principal, " holds nothing on ", resource);
  return ChangeGrant(GrantFile(principal, resource),
                     [permissions, &what](Permissions have) -> StatusOr<Permissions> {
                       if (have == 0) return absl::NotFoundError(what);
                       return static_cast<Permissions>(have & ~permissions);
                     });
}

StatusOr<std::string> AccessControl::AddToken(std::string_view principal) {
  RETURN_IF_ERROR(ValidatePrincipal(principal));
  StatusOr<coord::PrefixMirror::SessionUse> use = mirror_->UseSession();
  if (!use.ok()) return NoSession(use.status());
  const std::string token = NewToken();
  coord::PutOptions po;
  po.expected_version = 0;
  StatusOr<coord::FileInfo> put = (*use)->Put(TokenFile(TokenHash(token)), principal, po);
  if (!put.ok()) return coord::LockServiceCallError("storing a token", put.status());
  RETURN_IF_ERROR(mirror_->DeliverLocalPut(*put));
  return token;
}

StatusOr<int> AccessControl::RemoveTokens(std::string_view principal) {
  RETURN_IF_ERROR(ValidatePrincipal(principal));
  StatusOr<coord::PrefixMirror::SessionUse> use = mirror_->UseSession();
  if (!use.ok()) return NoSession(use.status());
  StatusOr<coord::Listing> listing = (*use)->List(StrCat(options_.prefix, kTokens));
  if (!listing.ok()) return coord::LockServiceCallError("listing tokens", listing.status());
  int removed = 0;
  for (const coord::FileInfo& file : listing->files) {
    if (file.value != principal) continue;
    Status s = (*use)->Delete(file.name, file.version);
    if (absl::IsNotFound(s) || absl::IsAborted(s)) continue;  // gone or changed meanwhile
    if (!s.ok()) return coord::LockServiceCallError("deleting a token", s);
    RETURN_IF_ERROR(mirror_->DeliverLocalDelete(file.name, file.mod_revision));
    ++removed;
  }
  return removed;
}

std::vector<PrincipalInfo> AccessControl::Principals() const {
  std::map<std::string, PrincipalInfo> by_name;
  auto info = [&by_name](const std::string& name) -> PrincipalInfo& {
    PrincipalInfo& p = by_name[name];
    p.name = name;
    return p;
  };
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [hash, entry] : file_.tokens) {
    PrincipalInfo& p = info(entry.principal);
    ++p.file_tokens;
    p.file_admin = p.file_admin || entry.admin;
  }
  for (const auto& [hash, principal] : tokens_) info(principal).token_hashes.push_back(hash);
  for (const auto& [key, permissions] : grants_) {
    const size_t cut = key.find('\n');
    info(key.substr(0, cut)).grants[key.substr(cut + 1)] = permissions;
  }
  std::vector<PrincipalInfo> out;
  for (auto& [name, p] : by_name) out.push_back(std::move(p));
  return out;
}

void AccessControl::ApplyLocked(const std::string& name, const std::string* value) {
  std::string_view rest(name);
  rest.remove_prefix(std::min(rest.size(), options_.prefix.size()));
  if (rest.starts_with(kTokens)) {
    rest.remove_prefix(kTokens.size());
    if (value == nullptr) {
      tokens_.erase(std::string(rest));
    } else if (ValidatePrincipal(*value).ok()) {
      tokens_[std::string(rest)] = *value;
    } else {
      TLOG_WARN("access control: ignoring the malformed token file {}", name);
    }
    return;
  }
  if (!rest.starts_with(kGrants)) return;
  rest.remove_prefix(kGrants.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return;
  const std::string key = GrantKey(rest.substr(0, slash), rest.substr(slash + 1));
  if (value == nullptr) {
    grants_.erase(key);
    return;
  }
  StatusOr<Permissions> p = ParsePermissions(*value);
  if (!p.ok() || !ValidateResource(rest.substr(slash + 1)).ok()) {
    TLOG_WARN("access control: ignoring the malformed grant {}", name);
    grants_.erase(key);
    return;
  }
  grants_[key] = *p;
}

Status AccessControl::OnPut(const coord::FileInfo& file, coord::MirrorCause) {
  absl::MutexLock l(&mu_);
  ApplyLocked(file.name, &file.value);
  return Status();
}

Status AccessControl::OnDelete(const std::string& name, int64_t, coord::MirrorCause) {
  absl::MutexLock l(&mu_);
  ApplyLocked(name, nullptr);
  return Status();
}

Status AccessControl::OnSynced(int64_t, const std::set<std::string, std::less<>>& live) {
  absl::MutexLock l(&mu_);
  std::erase_if(tokens_, [&](const auto& e) { return !live.contains(TokenFile(e.first)); });
  std::erase_if(grants_, [&](const auto& e) {
    const size_t cut = e.first.find('\n');
    return !live.contains(GrantFile(std::string_view(e.first).substr(0, cut),
                                    std::string_view(e.first).substr(cut + 1)));
  });
  synced_ = true;
  return Status();
}

void AccessControl::OnSessionExpired() {}

}  // namespace tessera::server
