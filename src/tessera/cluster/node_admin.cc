// ClusterNode's operator side (node.h): the status `tessera admin status` prints and the
// removal of a dead node (`tessera admin removenode`). Split from node.cc, which holds the
// node's life: start, join, registration, session loss, stop.
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "nlohmann/json.hpp"
#include "tessera/cluster/node.h"
#include "tessera/util/logging.h"

namespace tessera::cluster {

StatusOr<std::string> ClusterNode::RemoveNode(const std::string& endpoint, bool force) {
  if (endpoint == options_.endpoint) {
    return absl::InvalidArgumentError(
        tessera::StrCat("node ", endpoint, " cannot remove itself; stop it and ask another node"));
  }
  // A live node is never removed, --force or not: it would only come back.
  std::optional<PeerView> view = gossiper_->ViewOf(endpoint);
  if (view.has_value() && view->liveness != Liveness::kDown) {
    return absl::FailedPreconditionError(fmt::format(
        "node {} is {} (phi {:.2f}) as {} sees it: only a node that is down can be removed; "
        "stop it first",
        endpoint, LivenessName(view->liveness), view->phi, options_.endpoint));
  }
  std::shared_ptr<coord::Session> session;
  {
    absl::MutexLock lock(&mu_);
    session = session_;
  }
  if (session == nullptr) {
    return absl::UnavailableError(tessera::StrCat(
        "node ", options_.endpoint, " has no lock-service session; ask another node"));
  }
  std::string done;
  StatusOr<coord::FileInfo> entry = session->Get(DirectoryName(endpoint));
  if (entry.ok()) {
    if (!force) {
      return absl::FailedPreconditionError(tessera::StrCat(
          "node ", endpoint,
          " is down in gossip but still registered in the directory: its "
          "lock-service session is live (a paused or partitioned process keeps it for up to its "
          "TTL). Wait for the TTL to run out, or pass --force to end that session now"));
    }
    RETURN_IF_ERROR(lock_service_->RevokeSession(entry->owner));
    done = tessera::StrCat("ended its lock-service session ", entry->owner.value,
                           " (its directory entry is gone); ");
  } else if (!absl::IsNotFound(entry.status())) {
    return entry.status();
  }
  Status removed = gossiper_->RemoveEndpoint(endpoint);
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  if (hooks_.on_removed) RETURN_IF_ERROR(hooks_.on_removed(session.get(), endpoint));
  if (absl::IsNotFound(removed)) {
    if (!done.empty()) {
      return tessera::StrCat("removed ", endpoint, ": ", done, "gossip did not know it");
    }
    return removed;
  }
  TLOG_INFO("cluster: {} removed node {} at an operator's request", options_.endpoint, endpoint);
  return tessera::StrCat("removed ", endpoint, ": ", done,
                         "a tombstone in gossip reaches every node within a few rounds");
}

::tessera::v1::ClusterStatus ClusterNode::GetStatus() const {
  ::tessera::v1::ClusterStatus status;
  status.set_cluster_name(options_.cluster_name);
  status.set_self(options_.endpoint);
  status.set_lock_service(std::string(lock_service_->backend_name()));
  std::shared_ptr<coord::Session> session;
  {
    absl::MutexLock lock(&mu_);
    status.set_serving(serving_.load());
    session = session_;
  }
  // The directory and the master from the lock service (the authority on both).
  std::map<std::string, nlohmann::json> directory;
  bool have_directory = false;
  if (session == nullptr) {
    status.set_lock_service_error("this node has no lock-service session");
  } else {
    StatusOr<coord::Listing> listing = session->List(kDirectoryPrefix);
    StatusOr<coord::LockHolder> holder = session->GetLockHolder(kMasterLock);
    if (!listing.ok()) {
      status.set_lock_service_error(listing.status().ToString());
    } else {
      have_directory = true;
      for (const coord::FileInfo& f : listing->files) {
        nlohmann::json entry = nlohmann::json::parse(f.value, nullptr, /*allow_exceptions=*/false);
        if (entry.is_discarded() || !entry.is_object()) entry = nlohmann::json::object();
        directory[f.name.substr(kDirectoryPrefix.size())] = std::move(entry);
      }
    }
    if (holder.ok()) {
      status.set_master(holder->value);
      status.set_master_term(holder->revision);
    } else if (!absl::IsNotFound(holder.status()) && status.lock_service_error().empty()) {
      status.set_lock_service_error(holder.status().ToString());
    }
  }

  // Everyone gossip knows, then directory entries gossip has not reached yet.
  std::vector<PeerView> views = gossiper_->View();
  int64_t gossip_master_term = -1;
  std::map<std::string, ::tessera::v1::NodeStatus> nodes;
  for (const PeerView& v : views) {
    ::tessera::v1::NodeStatus& n = nodes[v.endpoint];
    n.set_endpoint(v.endpoint);
    const std::string* dc = v.state.Find(kDcKey);
    const std::string* rack = v.state.Find(kRackKey);
    const std::string* load = v.state.Find(kLoadKey);
    const std::string* st = v.state.Find(kStatusKey);
    const std::string* term = v.state.Find(kMasterKey);
    if (const std::string* http = v.state.Find(kHttpKey); http != nullptr) {
      n.set_http_address(*http);
    }
    if (dc != nullptr) n.set_dc(*dc);
    if (rack != nullptr) n.set_rack(*rack);
    int64_t load_bytes = -1;
    if (load == nullptr || !absl::SimpleAtoi(*load, &load_bytes)) load_bytes = -1;
    n.set_load_bytes(load_bytes);
    if (st != nullptr) n.set_status(*st);
    n.set_liveness(v.is_self ? "up" : LivenessName(v.liveness));
    n.set_phi(v.is_self ? 0 : v.phi);
    n.set_generation(v.state.generation);
    n.set_heartbeat(v.state.heartbeat_version);
    n.set_is_self(v.is_self);
    n.set_registered(directory.count(v.endpoint) > 0);
    // Without the lock service, the master is the live node gossiping the highest term.
    if (!have_directory && term != nullptr && v.liveness != Liveness::kDown) {
      int64_t t = 0;
      if (absl::SimpleAtoi(*term, &t) && t > gossip_master_term) {
        gossip_master_term = t;
        status.set_master(v.endpoint);
        status.set_master_term(t);
      }
    }
  }
  for (const auto& [endpoint, entry] : directory) {
    if (nodes.count(endpoint) > 0) continue;
    ::tessera::v1::NodeStatus& n = nodes[endpoint];
    n.set_endpoint(endpoint);
    n.set_dc(entry.value("dc", ""));
    n.set_rack(entry.value("rack", ""));
    n.set_generation(entry.value("generation", int64_t{0}));
    n.set_load_bytes(-1);
    n.set_liveness("down");  // registered, but never heard from through gossip
    n.set_registered(true);
  }
  for (auto& [endpoint, n] : nodes) {
    n.set_is_master(endpoint == status.master());
    *status.add_nodes() = std::move(n);
  }
  const GossipStats gossip_stats = gossiper_->stats();
  status.set_refused_messages(gossip_stats.refused_cluster_name + gossip_stats.refused_cluster_id);
  return status;
}

}  // namespace tessera::cluster
