// RingStore: the ring's tokens and the live nodes as the lock service holds them
// (docs/replication.md, "Placement"). Every node has a token (placement.h), chosen when it
// first registers and kept in a persistent file of its own, `tokens/<endpoint>`, written once:
// a restart, or a new session after a session loss, reads it back, so the ring survives
// restarts. The live nodes are the directory's ephemeral files, `nodes/<endpoint>`
// (cluster/node.h writes them, with the node's dc and rack in a JSON object).
//
// Choosing a token: ChooseToken over every token of the ring, then a create-only put of the
// node's file. Two nodes joining at once may choose the same token; so after writing (and
// after reading its file back, in case it crashed before looking), a node lists the ring, and
// of two equal tokens the one created later (the higher create revision) is deleted and its
// node chooses again. The later writer always sees the earlier one, so the ring's tokens end
// up distinct, and a token once standing alone is never changed.
//
// Thread-safety: the functions take a session, which is thread-safe. A RingStore may be read
// from any thread; Attach and Detach come from the node's registration hooks, and Detach
// waits for reads under way (which hold a reader lock across lock-service calls).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/catalog/placement.h"
#include "tessera/coord/lock_service.h"
#include "tessera/util/status.h"

namespace tessera::catalog {

inline constexpr std::string_view kTokenPrefix = "tokens/";
// The directory of live nodes (cluster/election.h's kDirectoryPrefix, which writes it).
inline constexpr std::string_view kNodeDirectoryPrefix = "nodes/";

// Nodes being decommissioned (docs/repair.md, "Decommission"): a persistent file
// `leaving/<endpoint>` each, written by the node when told to leave; the master moves every
// replica off it and places nothing new on it. The node deletes it, with its token, once no
// tablet names it.
inline constexpr std::string_view kLeavingPrefix = "leaving/";

// "tokens/<endpoint>".
std::string TokenFileName(std::string_view endpoint);

// The cluster as placement sees it, read at one moment.
struct ClusterView {
  // The nodes with a live session, by endpoint, with their dc, rack and token ("" for a node
  // that has registered but not chosen its token yet). Load is 0.
  std::vector<PlacementNode> live;
  // Every node's token, live or not: endpoint -> token.
  std::map<std::string, std::string, std::less<>> tokens;
  // The nodes being decommissioned, live or not.
  std::set<std::string, std::less<>> leaving;

  // The ring: one node per token, live or not (the dc and rack of live ones), by endpoint.
  // A node down for a while stays on the ring (Cassandra §5.4): tables are cut at its token.
  std::vector<PlacementNode> Ring() const;
};

// Lists the directory and the tokens. A directory entry that is not a JSON object gives a node
// with no dc or rack. Errors: the lock service's.
StatusOr<ClusterView> ReadClusterView(coord::Session* session);

// The token of the node `endpoint`: its file's, or a new one written there (see above).
// Errors: the lock service's; Aborted when `max_attempts` choices in a row met another node's
// token (nodes joining faster than that are not expected).
StatusOr<std::string> EnsureToken(coord::Session* session, std::string_view endpoint,
                                  int max_attempts = 16);

// A node's ring, for readers on request threads (CreateTable, `tessera admin ring`).
class RingStore {
 public:
  // `endpoint`: this node's, as in the directory.
  explicit RingStore(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  RingStore(const RingStore&) = delete;
  RingStore& operator=(const RingStore&) = delete;

  // Reads or chooses this node's token (EnsureToken) and keeps `session` for Read() until
  // Detach(). `session` must outlive that. Errors: EnsureToken's (then still detached).
  Status Attach(coord::Session* session);
  // Waits for reads under way; Read() then fails until the next Attach. Idempotent.
  void Detach();

  // ReadClusterView on the attached session; Unavailable "no lock-service session" when
  // detached.
  StatusOr<ClusterView> Read() const;
  // Decommission: marks this node leaving (kLeavingPrefix), idempotent; then, once no tablet
  // names it, Leave deletes its token and the mark, so that the ring and placement forget it.
  // Unavailable while detached; otherwise the lock service's errors.
  Status MarkLeaving();
  Status Leave();
  // This node's token: "" before the first Attach succeeded; kept across Detach.
  std::string token() const;
  const std::string& endpoint() const { return endpoint_; }

 private:
  // Unavailable: the error of a call while detached.
  Status NoSession() const;

  const std::string endpoint_;
  mutable absl::Mutex mu_;  // readers hold it shared across their lock-service calls
  coord::Session* session_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string token_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::catalog
