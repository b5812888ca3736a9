#include "tessera/catalog/ring_store.h"

#include <utility>

#include "nlohmann/json.hpp"
#include "tessera/util/logging.h"

namespace tessera::catalog {

std::string TokenFileName(std::string_view endpoint) {
  return tessera::StrCat(kTokenPrefix, endpoint);
}

StatusOr<ClusterView> ReadClusterView(coord::Session* session) {
  ASSIGN_OR_RETURN(coord::Listing directory, session->List(kNodeDirectoryPrefix));
  ASSIGN_OR_RETURN(coord::Listing tokens, session->List(kTokenPrefix));
  ASSIGN_OR_RETURN(coord::Listing leaving, session->List(kLeavingPrefix));
  ClusterView view;
  for (const coord::FileInfo& f : leaving.files) {
    view.leaving.insert(f.name.substr(kLeavingPrefix.size()));
  }
  for (const coord::FileInfo& f : tokens.files) {
    view.tokens.emplace(f.name.substr(kTokenPrefix.size()), f.value);
  }
  for (const coord::FileInfo& f : directory.files) {
    PlacementNode node;
    node.endpoint = f.name.substr(kNodeDirectoryPrefix.size());
    nlohmann::json j = nlohmann::json::parse(f.value, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      node.dc = j.value("dc", "");
      node.rack = j.value("rack", "");
    }
    if (auto t = view.tokens.find(node.endpoint); t != view.tokens.end()) node.token = t->second;
    view.live.push_back(std::move(node));
  }
  return view;
}

std::vector<PlacementNode> ClusterView::Ring() const {
  std::vector<PlacementNode> ring;
  for (const auto& [endpoint, token] : tokens) {
    PlacementNode& node = ring.emplace_back();
    node.endpoint = endpoint;
    node.token = token;
    for (const PlacementNode& n : live) {
      if (n.endpoint == endpoint) node = n;
    }
  }
  return ring;
}

StatusOr<std::string> EnsureToken(coord::Session* session, std::string_view endpoint,
                                  int max_attempts) {
  const std::string name = TokenFileName(endpoint);
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    StatusOr<coord::FileInfo> mine = session->Get(name);
    if (!mine.ok() && !absl::IsNotFound(mine.status())) return mine.status();
    if (!mine.ok()) {
      ASSIGN_OR_RETURN(coord::Listing ring, session->List(kTokenPrefix));
      std::vector<std::string> existing;
      for (const coord::FileInfo& f : ring.files) existing.push_back(f.value);
      coord::PutOptions create;
      create.expected_version = 0;
      mine = session->Put(name, ChooseToken(existing), create);
      if (absl::IsAborted(mine.status())) continue;  // written meanwhile: read it back
      RETURN_IF_ERROR(mine.status());
    }
    // Another node may have chosen the same token at the same time (or this node crashed
    // before looking, last time): the one created later gives way.
    ASSIGN_OR_RETURN(coord::Listing ring, session->List(kTokenPrefix));
    bool later = false;
    for (const coord::FileInfo& f : ring.files) {
      if (f.name != name && f.value == mine->value && f.create_revision < mine->create_revision) {
        later = true;
      }
    }
    if (!later) return mine->value;
    TLOG_INFO("ring: {} holds the token of another node, which chose it first; choosing again",
              endpoint);
    Status deleted = session->Delete(name, mine->version);
    if (!deleted.ok() && !absl::IsAborted(deleted) && !absl::IsNotFound(deleted)) return deleted;
  }
  return absl::AbortedError(tessera::StrCat("ring: ", endpoint, " met another node's token ",
                                            max_attempts, " times in a row"));
}

Status RingStore::Attach(coord::Session* session) {
  ASSIGN_OR_RETURN(std::string token, EnsureToken(session, endpoint_));
  absl::WriterMutexLock l(&mu_);
  session_ = session;
  token_ = std::move(token);
  return Status();
}

void RingStore::Detach() {
  absl::WriterMutexLock l(&mu_);
  session_ = nullptr;
}

Status RingStore::NoSession() const {
  return absl::UnavailableError(
      tessera::StrCat("node ", endpoint_, " has no lock-service session"));
}

Status RingStore::MarkLeaving() {
  absl::ReaderMutexLock l(&mu_);
  if (session_ == nullptr) return NoSession();
  return session_->Put(tessera::StrCat(kLeavingPrefix, endpoint_), "", coord::PutOptions())
      .status();
}

Status RingStore::Leave() {
  absl::ReaderMutexLock l(&mu_);
  if (session_ == nullptr) return NoSession();
  for (const std::string& name :
       {TokenFileName(endpoint_), tessera::StrCat(kLeavingPrefix, endpoint_)}) {
    Status s = session_->Delete(name, std::nullopt);
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return Status();
}

StatusOr<ClusterView> RingStore::Read() const {
  absl::ReaderMutexLock l(&mu_);
  if (session_ == nullptr) return NoSession();
  return ReadClusterView(session_);
}

std::string RingStore::token() const {
  absl::ReaderMutexLock l(&mu_);
  return token_;
}

}  // namespace tessera::catalog
